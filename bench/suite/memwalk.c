/* Memory-bound: over an 8 MiB working set (beyond the L2 cache), a random
 * pointer chase around one Sattolo cycle (every load depends on the last),
 * then strided read-modify-write sweeps and a byte histogram. Size: chase
 * steps in units of 100000; the sweeps scale with it. */
#include "common.h"

int main(int argc, char **argv) {
  long steps = suite_size(argc, argv, 30) * 100000L;
  /* 2 Mi words = 8 MiB; smaller only for small sizes (quick runs), which
   * would otherwise spend all their time building the cycle. */
  uint32_t words = 1u << 21;
  while (words > 1024 && (long)words / 2 >= steps) words /= 2;
  uint32_t *next = malloc((size_t)words * sizeof(uint32_t));
  if (!next) { fprintf(stderr, "memwalk: out of memory\n"); return 1; }
  /* Sattolo's algorithm: a random permutation that is one single cycle. */
  for (uint32_t i = 0; i < words; i++) next[i] = i;
  uint32_t seed = 0xc0ffee11;
  for (uint32_t i = words - 1; i > 0; i--) {
    uint32_t j = suite_rand(&seed) % i;
    uint32_t t = next[i]; next[i] = next[j]; next[j] = t;
  }
  uint32_t p = 0;
  uint64_t sum = 0;
  for (long s = 0; s < steps; s++) { p = next[p]; sum += p; }
  /* Strided sweeps: one touch per cache line, then per page. */
  long sweeps = steps / 1000000 + 1;
  for (long r = 0; r < sweeps; r++)
    for (uint32_t stride = 16; stride <= 1024; stride *= 4)
      for (uint32_t i = (uint32_t)r; i < words; i += stride) next[i] ^= i * 2654435761u;
  uint32_t hist[256] = {0};
  const uint8_t *bytes = (const uint8_t *)next;
  for (long r = 0; r < sweeps; r++)
    for (size_t i = 0; i < (size_t)words * 4; i += 3) hist[bytes[i]]++;
  uint64_t h = SUITE_FOLD_INIT;
  h = suite_fold(h, hist, sizeof hist);
  printf("memwalk: end=%u sum=%llu hist=%016llx\n", p, (unsigned long long)sum, (unsigned long long)h);
  return 0;
}
