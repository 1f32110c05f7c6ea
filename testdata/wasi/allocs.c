// wasi-libc's allocator (dlmalloc), which wzvm runs by translation in plain
// code (vm/known_bodies.def, LibcDlfree and LibcDlmalloc), driven through
// every path it has: small and large requests (the small bins, the
// designated victim, the tree bins, the top, sbrk for more), frees that
// merge with either neighbour or both, with the top and with the victim,
// reallocs that grow and shrink in place and move, calloc, and frees of
// null. The program folds every returned address and, every 1,000 steps, the
// heap's bytes into a hash and prints it, so a run that ran the bodies
// (counted, --profile=instructions) and one that ran them translated print
// the same lines (tests/known_bodies_test.cc).
//
//   allocs.wasm            the steps
//   allocs.wasm corrupt    a free of a chunk whose header says it is in use
//                          but lies out of memory: the body's own out-of-bounds
//                          trap (the translation gives the call back to it)

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 2048
static unsigned char* slot[SLOTS];
static size_t len[SLOTS];

static uint64_t state = 0x2545f4914f6cdd1dull;
static uint32_t next(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (uint32_t)(state >> 16);
}

static uint64_t hash = 1469598103934665603ull;
static void fold(const void* p, size_t n) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; ++i) hash = (hash ^ b[i]) * 1099511628211ull;
}
static void fold_pointer(const void* p) {
  const uintptr_t v = (uintptr_t)p;
  fold(&v, sizeof v);
}

// Sizes that reach every bin: mostly small, a few for the tree bins, rarely
// past the top's trim threshold.
static size_t size(void) {
  const uint32_t r = next() % 100;
  if (r < 60) return next() % 64;
  if (r < 85) return 64 + next() % 200;
  if (r < 97) return 256 + next() % 8000;
  if (r < 99) return 8192 + next() % 100000;
  return 300000 + next() % 400000;
}

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "corrupt")) {
    unsigned char* volatile p = malloc(40);  // volatile: not elided with its free
    // the chunk's size field claims a chunk that runs past memory's end
    ((uint32_t*)p)[-1] = 0x7ffffff0u | 3u;
    free(p);
    printf("no trap\n");
    return 0;
  }
  for (int step = 1; step <= 60000; ++step) {
    const uint32_t k = next() % SLOTS;
    const uint32_t what = next() % 10;
    if (slot[k] == 0) {
      const size_t n = size();
      slot[k] = what == 0 ? calloc(1, n) : malloc(n);
      len[k] = slot[k] ? n : 0;
      if (slot[k]) memset(slot[k], (int)(k + (uint32_t)step), n);
      fold_pointer(slot[k]);
    } else if (what < 7) {
      fold(slot[k], len[k] < 16 ? len[k] : 16);
      free(slot[k]);
      slot[k] = 0;
    } else {
      const size_t n = what == 9 ? len[k] / 2 : size();
      unsigned char* p = realloc(slot[k], n);
      if (p || n == 0) {
        slot[k] = p;
        if (p && n > len[k]) memset(p + len[k], 0x5a, n - len[k]);
        len[k] = p ? n : 0;
      }
      fold_pointer(p);
    }
    if ((next() & 63) == 0) free(0);
    if (step % 1000 == 0) {
      for (int i = 0; i < SLOTS; ++i)
        if (slot[i]) fold(slot[i], len[i]);
      printf("%d %016llx\n", step, (unsigned long long)hash);
    }
  }
  // everything back, in an order that merges neighbours and the top
  for (int i = SLOTS - 1; i >= 0; i -= 2) free(slot[i]);
  for (int i = 0; i < SLOTS; i += 2) free(slot[i]);
  unsigned char* big = malloc(1 << 20);
  fold_pointer(big);
  printf("end %016llx\n", (unsigned long long)hash);
  return 0;
}
