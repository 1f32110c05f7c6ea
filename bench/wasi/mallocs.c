// Allocation-heavy guest for the memory profiler's overhead
// (bench/mem-overhead.sh): a ring of live blocks of mixed sizes, the oldest
// freed as each new one is made, plus growing buffers by realloc, with
// little work per allocation, so the hooks' share of the time is as large
// as real programs make it. wasi-libc's dlmalloc; prints a checksum.
//   mallocs [ROUNDS [FILL]]   (default 2000000 allocations; FILL 1: write
//                             every byte of each block, as programs that use
//                             their memory do)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 1024

// Where the grown buffers go, so clang cannot drop the realloc chain.
static unsigned char* volatile sink;

static uint32_t rng = 12345;
static uint32_t next(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}

int main(int argc, char** argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 2000000;
  int fill = argc > 2 ? atoi(argv[2]) : 0;
  static unsigned char* ring[RING];
  uint64_t sum = 0;
  for (long i = 0; i < rounds; ++i) {
    size_t slot = (size_t)i % RING;
    free(ring[slot]);
    size_t n = 8 + next() % 248;
    unsigned char* p = malloc(n);
    if (!p) return 1;
    if (fill)
      for (size_t k = 0; k < n; ++k) p[k] = (unsigned char)(k ^ (size_t)i);
    p[0] = (unsigned char)i;
    p[n - 1] = (unsigned char)n;
    sum += p[0] + p[n - 1];
    ring[slot] = p;
    // Now and then a buffer grown by doubling and dropped.
    if (i % 64 == 0) {
      unsigned char* b = NULL;
      for (size_t cap = 16; cap <= 4096; cap *= 2) {
        b = realloc(b, cap);
        if (!b) return 1;
        b[cap - 1] = 1;
      }
      sink = b;
      sum += sink[4095];
      free(sink);
    }
  }
  for (size_t i = 0; i < RING; ++i) free(ring[i]);
  printf("%llu\n", (unsigned long long)sum);
  return 0;
}
