// SIMD kernels: an int16 dot product and a sum of absolute byte differences
// (the inner loops of audio filters and video motion search). Built twice by
// bench/CMakeLists.txt: plain (scalar wasm) and with -msimd128, where clang's
// vectorizer turns both loops into 128-bit SIMD; bench/simd-ratio.sh
// compares the two on wzvm. run(n) repeats both kernels n times over 4096
// elements and returns a checksum (the same for both builds).
#define N 4096
static short a[N], b[N];
static unsigned char p[N], q[N];

static int dot(const short* x, const short* y) {
  int s = 0;
  for (int i = 0; i < N; i++) s += x[i] * y[i];
  return s;
}

static unsigned sad(const unsigned char* x, const unsigned char* y) {
  unsigned s = 0;
  for (int i = 0; i < N; i++) {
    int d = x[i] - y[i];
    s += (unsigned)(d < 0 ? -d : d);
  }
  return s;
}

__attribute__((export_name("run"))) int run(int n) {
  unsigned seed = 12345;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    a[i] = (short)(seed >> 16);
    b[i] = (short)(seed >> 8);
    p[i] = (unsigned char)(seed >> 24);
    q[i] = (unsigned char)(seed >> 4);
  }
  unsigned acc = 0;
  for (int r = 0; r < n; r++) {
    // One element changes per round, so neither kernel is loop-invariant.
    a[r & (N - 1)] = (short)r;
    p[(r * 7) & (N - 1)] = (unsigned char)r;
    acc = acc * 31u + (unsigned)dot(a, b) + sad(p, q);
  }
  return (int)(acc & 0x7fffffff);
}
