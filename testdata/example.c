// The bundled example (README quick start): plain C compiled to wasm32 by
// clang-14 at build time, no libc calls and no imports, so it runs with
// `wzvm --invoke NAME build/testdata/example.wasm ARGS...`.

// noinline: each export stays a function of its own, so `demo` below shows
// them as separate functions in a profile.
#define EXPORT(name) __attribute__((export_name(name), noinline))

// Recursive Fibonacci: exercises calls. fib(30) = 832040.
EXPORT("fib") int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

// Number of primes below n (sieve of Eratosthenes): exercises memory.
// count_primes(1000000) = 78498.
static unsigned char composite[1 << 24];
EXPORT("count_primes") int count_primes(int n) {
  if (n > (int)sizeof composite) n = sizeof composite;
  if (n < 2) return 0;
  for (int i = 0; i < n; i++) composite[i] = 0;
  int count = 0;
  for (int i = 2; i < n; i++) {
    if (composite[i]) continue;
    count++;
    for (long long j = (long long)i * i; j < n; j += i) composite[j] = 1;
  }
  return count;
}

// Greatest common divisor of two 64-bit integers: exercises i64.
EXPORT("gcd") long long gcd(long long a, long long b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    long long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Newton's square root: exercises f64. sqrt_newton(2) = 1.414213562373095.
EXPORT("sqrt_newton") double sqrt_newton(double x) {
  if (x <= 0) return 0;
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 64; i++) r = 0.5 * (r + x / r);
  return r;
}

// All of the above, for the profile that `scripts/dev.sh demo` shows
// (`wzvm --profile=cpu --invoke demo example.wasm 30`, then `go tool pprof -top`).
EXPORT("demo") int demo(int n) {
  int acc = fib(n);
  acc += count_primes(n * 100000);
  for (int i = 1; i <= n * 10000; i++) acc += (int)gcd(7919LL * i, 104729LL * i + 13);
  for (int i = 1; i <= n * 1000; i++) acc += (int)sqrt_newton(i);
  return acc;
}
