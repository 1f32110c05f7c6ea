/* Matrix kernel: PolyBench-style gemm (C = alpha*A*B + beta*C) followed by 2mm
 * (D = alpha*A*B*C + beta*D) on doubles, SIZE x SIZE. The checksum folds every
 * result's bits: no reassociation happens at -O2, so native and wasm agree. */
#include "common.h"

static double *matrix(long n, int salt) {
  double *m = malloc((size_t)(n * n) * sizeof(double));
  if (!m) { fprintf(stderr, "gemm: out of memory\n"); exit(1); }
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) m[i * n + j] = (double)((i * j + salt) % n) / (double)n;
  return m;
}

/* c = alpha * a * b + beta * c, the i-k-j order PolyBench's gemm uses. */
static void gemm(long n, double alpha, double beta, double *c, const double *a, const double *b) {
  for (long i = 0; i < n; i++) {
    for (long j = 0; j < n; j++) c[i * n + j] *= beta;
    for (long k = 0; k < n; k++) {
      double aik = alpha * a[i * n + k];
      for (long j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
    }
  }
}

int main(int argc, char **argv) {
  long n = suite_size(argc, argv, 300);
  double *a = matrix(n, 1), *b = matrix(n, 2), *c = matrix(n, 3), *d = matrix(n, 4);
  double *tmp = calloc((size_t)(n * n), sizeof(double));
  if (!tmp) { fprintf(stderr, "gemm: out of memory\n"); return 1; }
  gemm(n, 1.5, 1.2, c, a, b);     /* gemm */
  gemm(n, 1.5, 0.0, tmp, a, b);   /* 2mm: tmp = alpha*A*B */
  gemm(n, 1.0, 1.2, d, tmp, c);   /*      D = tmp*C + beta*D */
  uint64_t h = SUITE_FOLD_INIT;
  double sum = 0;
  for (long i = 0; i < n * n; i++) { h = suite_fold(h, &d[i], sizeof(double)); sum += d[i]; }
  printf("gemm: sum=%.6e bits=%016llx\n", sum, (unsigned long long)h);
  return 0;
}
