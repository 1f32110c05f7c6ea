/* zlib on generated text (bench/real.sh, zlib): deflate at levels 1, 6 and 9,
   inflate each result, check it round-trips, print the sizes and the CRC-32.
   The text is words from a fixed generator, so every run and every runtime
   compresses the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { kSize = 2 << 20 };

static unsigned long long state = 12345;
static unsigned next(void) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(state >> 33);
}

int main(void) {
  static const char* const words[] = {"profile", "sample", "wasm", "frame", "line", "count", "heap",
                                      "call", "tree", "node", "trap", "memory", "stack", "go", "python"};
  unsigned char* text = malloc(kSize);
  size_t n = 0;
  while (n + 16 < kSize) {
    const char* w = words[next() % (sizeof words / sizeof *words)];
    size_t len = strlen(w);
    memcpy(text + n, w, len);
    n += len;
    text[n++] = next() % 13 ? ' ' : '\n';
  }
  uLong crc = crc32(0, text, (uInt)n);
  uLongf cap = compressBound(n);
  unsigned char* packed = malloc(cap);
  unsigned char* back = malloc(n);
  for (int level = 1; level <= 9; level += level == 1 ? 5 : 3) {
    uLongf size = cap, out = n;
    if (compress2(packed, &size, text, n, level) != Z_OK || uncompress(back, &out, packed, size) != Z_OK ||
        out != n || memcmp(back, text, n) != 0) {
      printf("level %d: round trip failed\n", level);
      return 1;
    }
    printf("level %d: %zu -> %lu bytes\n", level, n, (unsigned long)size);
  }
  printf("crc32 %08lx\n", crc);
  return 0;
}
