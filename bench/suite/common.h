/* Shared helpers of the whole-program suite (bench/suite.sh). Every program is
 * a WASI command: `prog [SIZE]`, one line on stdout naming a checksum, so the
 * outputs of native and wasm runs can be compared byte for byte. */
#ifndef WZVM_BENCH_SUITE_COMMON_H
#define WZVM_BENCH_SUITE_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The size argument: argv[1] if given (a positive decimal), else the default. */
static long suite_size(int argc, char **argv, long dflt) {
  if (argc < 2) return dflt;
  char *end;
  long v = strtol(argv[1], &end, 10);
  if (*argv[1] == '\0' || *end != '\0' || v <= 0) {
    fprintf(stderr, "%s: size must be a positive integer, got '%s'\n", argv[0], argv[1]);
    exit(2);
  }
  return v;
}

/* xorshift32: a deterministic input generator identical on every target. */
static inline uint32_t suite_rand(uint32_t *s) {
  uint32_t x = *s;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *s = x;
}

/* FNV-1a over bytes, to fold results (including doubles' bits) into a checksum. */
static inline uint64_t suite_fold(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}
#define SUITE_FOLD_INIT 0xcbf29ce484222325ull

#endif
