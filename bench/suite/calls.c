/* Call-heavy: doubly recursive functions (Fibonacci, Takeuchi, Ackermann), so
 * almost all the time is call and return. Size: the Fibonacci argument. */
#include "common.h"

__attribute__((noinline)) static uint32_t fib(uint32_t n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static int tak(int x, int y, int z) {
  if (y >= x) return z;
  return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y));
}

__attribute__((noinline)) static uint32_t ack(uint32_t m, uint32_t n) {
  if (m == 0) return n + 1;
  if (n == 0) return ack(m - 1, 1);
  return ack(m - 1, ack(m, n - 1));
}

int main(int argc, char **argv) {
  long n = suite_size(argc, argv, 37);
  uint32_t f = fib((uint32_t)n);
  /* tak and ack scale with n as well, so --quick sizes shrink all three. */
  int t = 0;
  for (long i = 0; i < n / 4; i++) t += tak(18 + (int)(i % 3), 12, 6);
  uint32_t a = 0;
  for (long i = 0; i < n / 8; i++) a += ack(2, 200 + (uint32_t)i);
  printf("calls: fib=%u tak=%d ack=%u\n", f, t, a);
  return 0;
}
