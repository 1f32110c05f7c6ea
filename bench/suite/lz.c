/* Compression: an LZ77 compressor with hash chains (32 KiB window, matches of
 * 4..258 bytes, lazy matching by one byte) and its decompressor, on generated
 * text (words drawn from a skewed vocabulary, so it compresses like prose).
 * The round trip is checked. Size: KiB of input. */
#include "common.h"

enum { WINDOW = 1 << 15, HASH_BITS = 15, MIN_MATCH = 4, MAX_MATCH = 258, MAX_CHAIN = 32 };

/* Output format: a control byte announces 8 items, one bit each: 0 = literal
 * byte, 1 = match (2 bytes: length - MIN_MATCH, then 15-bit distance - 1 in
 * 2 bytes). */
static int32_t head[1 << HASH_BITS]; /* newest position per hash */
static int32_t prev[WINDOW];          /* older position with the same hash */

static inline uint32_t hash4(const uint8_t *p) {
  uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  return (v * 2654435761u) >> (32 - HASH_BITS);
}

static inline void insert(const uint8_t *in, size_t pos) {
  uint32_t h = hash4(in + pos);
  prev[pos & (WINDOW - 1)] = head[h];
  head[h] = (int32_t)pos;
}

/* Longest match for position at (at + MIN_MATCH <= n) among earlier positions
 * with the same hash, following at most MAX_CHAIN links. */
static size_t longest(const uint8_t *in, size_t n, size_t at, size_t *dist) {
  size_t limit = n - at < MAX_MATCH ? n - at : MAX_MATCH, best = 0;
  int32_t cand = head[hash4(in + at)];
  for (int chain = 0; cand >= 0 && at - (size_t)cand < WINDOW && chain < MAX_CHAIN; chain++) {
    size_t l = 0;
    while (l < limit && in[cand + l] == in[at + l]) l++;
    if (l > best) { best = l; *dist = at - (size_t)cand; }
    int32_t older = prev[cand & (WINDOW - 1)];
    if (older >= cand) break; /* the slot was reused by a newer position: chain ends */
    cand = older;
  }
  return best;
}

/* Output format: a control byte announces up to 8 items, one bit each: 0 = a
 * literal byte, 1 = a match (3 bytes: length - MIN_MATCH, distance - 1 as
 * 16-bit little endian). */
static size_t compress(const uint8_t *in, size_t n, uint8_t *out) {
  for (size_t i = 0; i < (1u << HASH_BITS); i++) head[i] = -1;
  size_t o = 0, ctl = 0, i = 0;
  int bit = 8;
  while (i < n) {
    size_t len = 0, dist = 0;
    if (i + MIN_MATCH <= n) {
      len = longest(in, n, i, &dist);
      insert(in, i);
      if (len >= MIN_MATCH && i + 1 + MIN_MATCH <= n) {
        size_t dist2; /* lazy matching: a longer match one byte on wins */
        if (longest(in, n, i + 1, &dist2) > len) len = 0;
      }
    }
    if (bit == 8) { ctl = o++; out[ctl] = 0; bit = 0; }
    if (len >= MIN_MATCH) {
      out[ctl] |= (uint8_t)(1u << bit);
      out[o++] = (uint8_t)(len - MIN_MATCH);
      out[o++] = (uint8_t)((dist - 1) & 0xff);
      out[o++] = (uint8_t)((dist - 1) >> 8);
      for (size_t k = 1; k < len; k++)
        if (i + k + MIN_MATCH <= n) insert(in, i + k);
      i += len;
    } else {
      out[o++] = in[i++];
    }
    bit++;
  }
  return o;
}

static size_t decompress(const uint8_t *in, size_t n, uint8_t *out) {
  size_t i = 0, o = 0;
  while (i < n) {
    uint8_t ctl = in[i++];
    for (int bit = 0; bit < 8 && i < n; bit++) {
      if (ctl & (1u << bit)) {
        size_t len = (size_t)in[i] + MIN_MATCH;
        size_t dist = ((size_t)in[i + 1] | (size_t)in[i + 2] << 8) + 1;
        i += 3;
        const uint8_t *src = out + o - dist;
        for (size_t k = 0; k < len; k++) out[o + k] = src[k]; /* may overlap: byte by byte */
        o += len;
      } else {
        out[o++] = in[i++];
      }
    }
  }
  return o;
}

int main(int argc, char **argv) {
  long kib = suite_size(argc, argv, 2048);
  size_t n = (size_t)kib << 10;
  uint8_t *text = malloc(n), *packed = malloc(n + n / 8 + 16), *back = malloc(n);
  if (!text || !packed || !back) { fprintf(stderr, "lz: out of memory\n"); return 1; }
  /* A vocabulary of 512 made-up words; word choice is skewed (min of two
   * draws), punctuation and newlines now and then. */
  static char vocab[512][12];
  uint32_t seed = 0xfeedbeef;
  for (int w = 0; w < 512; w++) {
    int len = 2 + (int)(suite_rand(&seed) % 9);
    for (int c = 0; c < len; c++) vocab[w][c] = (char)('a' + suite_rand(&seed) % 26);
    vocab[w][len] = 0;
  }
  size_t pos = 0;
  while (pos < n) {
    uint32_t a = suite_rand(&seed) % 512, b = suite_rand(&seed) % 512;
    const char *w = vocab[a < b ? a : b];
    for (const char *c = w; *c && pos < n; c++) text[pos++] = (uint8_t)*c;
    uint32_t r = suite_rand(&seed) % 16;
    if (pos < n) text[pos++] = r == 0 ? '\n' : r == 1 ? ',' : r == 2 ? '.' : ' ';
  }
  size_t packed_n = compress(text, n, packed);
  size_t back_n = decompress(packed, packed_n, back);
  if (back_n != n || memcmp(text, back, n) != 0) {
    fprintf(stderr, "lz: round trip failed (%zu bytes back of %zu)\n", back_n, n);
    return 1;
  }
  uint64_t h = suite_fold(SUITE_FOLD_INIT, packed, packed_n);
  printf("lz: in=%zu out=%zu packed=%016llx\n", n, packed_n, (unsigned long long)h);
  return 0;
}
