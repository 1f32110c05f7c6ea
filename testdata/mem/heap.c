// Memory-profile test program (C, wasi-libc's malloc). Every function makes
// a known pattern of allocations; tests/memory_profile_test.cc checks the
// exact numbers per function in alloc_* and inuse_* (the allocator's caller
// is the leaf of each stack). noinline and the global `keep` stop clang from
// merging the functions or eliding malloc/free pairs.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void* volatile keep[256];
static volatile size_t huge = SIZE_MAX;  // a size no allocator can satisfy, unknown to clang

// 100 allocations of 64 bytes, every other one freed: 50 (3200 bytes) stay.
__attribute__((noinline)) static void f(void) {
  for (int i = 0; i < 100; ++i) keep[i] = malloc(64);
  for (int i = 0; i < 100; i += 2) free(keep[i]);
}

// A leak: one block of 1000 bytes, never freed.
__attribute__((noinline)) static void g(void) { keep[100] = malloc(1000); }

// realloc growing from NULL: 16, 32, ..., 1024 (7 allocations, 2032 bytes in
// all); the last block, 1024 bytes, stays.
__attribute__((noinline)) static void grow(void) {
  void* p = NULL;
  for (size_t n = 16; n <= 1024; n *= 2) p = realloc(p, n);
  keep[101] = p;
}

// realloc shrinking (an allocation of 100, then one of 40 that stays), and
// realloc to size 0 of an 8-byte block, which wasi-libc's dlmalloc answers
// with a fresh minimal block: counted as an allocation of 0 bytes that
// stays. In all: 4 allocations, 148 bytes; 2 objects, 40 bytes in use.
__attribute__((noinline)) static void shrink(void) {
  void* p = malloc(100);
  keep[102] = realloc(p, 40);
  void* q = malloc(8);
  keep[103] = realloc(q, 0);
}

// calloc: 10 x 24 = 240 bytes, freed; an overflowing n * size fails and is
// not counted; nor is a failed malloc; free(NULL) is nothing.
__attribute__((noinline)) static void zeroed(void) {
  void* p = calloc(10, 24);
  keep[104] = p;
  free(p);
  keep[105] = calloc(huge / 2, 4);
  keep[106] = malloc(huge);
  free(NULL);
}

// Aligned: aligned_alloc(64, 128) stays; posix_memalign (pointer returned
// through memory) of 96 bytes stays.
__attribute__((noinline)) static void aligned(void) {
  keep[107] = aligned_alloc(64, 128);
  void* p = NULL;
  if (posix_memalign(&p, 32, 96) == 0) keep[108] = p;
}

int main(void) {
  f();
  g();
  grow();
  shrink();
  zeroed();
  aligned();
  printf("%d\n", keep[105] == NULL && keep[106] == NULL);
  return 0;
}
