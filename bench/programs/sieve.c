// Memory-heavy: sieve of Eratosthenes over n bytes (n up to 64 MiB), then a
// pass that folds the positions of the primes into a checksum.
static unsigned char composite[64 << 20];

__attribute__((export_name("run"))) int run(int n) {
  if (n > (int)sizeof composite) n = sizeof composite;
  if (n < 2) return 0;
  for (int i = 0; i < n; i++) composite[i] = 0;
  for (int i = 2; (long long)i * i < n; i++) {
    if (composite[i]) continue;
    for (int j = i * i; j < n; j += i) composite[j] = 1;
  }
  unsigned count = 0, sum = 0;
  for (int i = 2; i < n; i++) {
    if (!composite[i]) {
      count++;
      sum = sum * 31u + (unsigned)i;
    }
  }
  return (int)((count ^ sum) & 0x7fffffff);
}
