// Floating point: C = A x B for n x n matrices of doubles (n up to 512), with
// the i-k-j loop order; returns a checksum of C.
#define MAXN 512
static double a[MAXN * MAXN], b[MAXN * MAXN], c[MAXN * MAXN];

__attribute__((export_name("run"))) int run(int n) {
  if (n > MAXN) n = MAXN;
  if (n < 1) return 0;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      a[i * n + j] = (double)((i * 7 + j * 3) % 17) * 0.25 - 1.5;
      b[i * n + j] = (double)((i * 5 + j * 11) % 13) * 0.125 + 0.5;
      c[i * n + j] = 0.0;
    }
  }
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < n; k++) {
      double aik = a[i * n + k];
      for (int j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
    }
  }
  double sum = 0.0;
  for (int i = 0; i < n * n; i++) sum += c[i] * (double)(i % 7 + 1);
  long long s = (long long)sum;
  return (int)(s & 0x7fffffff);
}
