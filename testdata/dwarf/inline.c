// DWARF test program (tests/symbolize_test.cc, tests/source_profile_test.cc).
// The tests assert line and column numbers of this file worked out by hand:
// do not move the code in lines 1-60; add new code at the end.
//
// Built with clang-14 --target=wasm32-wasi -g -O2 against wasi-libc. The
// helpers are always_inline so inlining does not depend on heuristics, and
// the callers noinline so each is a function of its own in the module.
#include <stdio.h>
#include <stdlib.h>

// One level of inlining: mix() inlined into hash().
static inline __attribute__((always_inline)) unsigned mix(unsigned h, unsigned x) {
  h ^= x;            // line 13
  h *= 0x01000193u;  // line 14
  return h;
}

__attribute__((noinline)) unsigned hash(const unsigned* p, int n) {
  unsigned h = 2166136261u;
  for (int i = 0; i < n; ++i)
    h = mix(h, p[i]);  // line 21: call of mix at column 9
  return h;
}

// Two levels: square() inlined into sum_squares(), inlined into work().
static inline __attribute__((always_inline)) unsigned square(unsigned x) {
  return x * x;  // line 27
}

static inline __attribute__((always_inline)) unsigned sum_squares(const unsigned* p, int n) {
  unsigned s = 0;
  for (int i = 0; i < n; ++i) s += square(p[i]);  // line 32: call of square at column 36
  return s;
}

__attribute__((noinline)) unsigned work(unsigned* p, int n, int rounds) {
  unsigned acc = 0;
  for (int r = 0; r < rounds; ++r) {
    acc += sum_squares(p, n);  // line 39: call of sum_squares at column 12
    acc += hash(p, n);         // line 40
    p[r % n] = acc;            // line 41: new data each round (no hoisting)
  }
  return acc;
}

static unsigned data[256];

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 1000;
  for (int i = 0; i < 256; ++i) data[i] = (unsigned)i * 2654435761u;
  printf("%u\n", work(data, 256, rounds));
  return 0;
}
