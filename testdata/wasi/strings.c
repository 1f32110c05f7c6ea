// wasi-libc's memcpy, memmove, memset, memcmp and strlen, which wzvm runs
// natively at their entry in plain code (vm/known_bodies.def), called with
// pseudo-random arguments: sizes from 0 to a few thousand, every alignment,
// overlapping and disjoint ranges, and ranges that end at the last byte of
// linear memory. After every call the program folds the result and the
// buffer's bytes into a hash and prints it every 512 calls, so a run that
// ran the bodies (counted, --profile=instructions) and one that ran the ops
// must print the same lines (tests/known_bodies_test.cc).
//
//   strings.wasm                the calls
//   strings.wasm strlen-end     strlen of bytes without a terminator up to the
//                               end of memory: the body's out-of-bounds trap
//   strings.wasm memcpy-end     memcpy of a range that runs past the end
//   strings.wasm memset-end     memset of a range that runs past the end
//   strings.wasm memcmp-end     memcmp of equal ranges that run past the end

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BUF 16384
static unsigned char buf[BUF];

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint32_t next(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (uint32_t)(state >> 16);
}

static uint64_t hash = 1469598103934665603ull;
static void fold(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
}
static void fold_value(uint32_t v) { fold((const unsigned char*)&v, sizeof v); }

// A size: mostly small, sometimes up to a few thousand bytes.
static size_t size(void) {
  const uint32_t r = next();
  return (r & 7) == 0 ? r % 4000 : (r & 7) == 1 ? 0 : r % 70;
}

// The last page of linear memory, grown for the program's own use (wasi-libc's
// sbrk grows past it), and its end.
static unsigned char* end_page(void) {
  const size_t pages = __builtin_wasm_memory_grow(0, 1);
  if (pages == (size_t)-1) return 0;
  return (unsigned char*)((pages + 1) * 65536);
}

int main(int argc, char** argv) {
  unsigned char* end = end_page();
  if (!end) {
    printf("no page to grow\n");
    return 1;
  }
  unsigned char* page = end - 65536;
  for (size_t i = 0; i < BUF; ++i) buf[i] = (unsigned char)next();
  for (size_t i = 0; i < 65536; ++i) page[i] = (unsigned char)(next() | 1);  // no terminator
  if (argc > 1) {
    volatile size_t n = 100;
    if (!strcmp(argv[1], "strlen-end")) printf("%zu\n", strlen((char*)end - 5000));
    if (!strcmp(argv[1], "memcpy-end")) memcpy(end - 50, buf, n);
    if (!strcmp(argv[1], "memset-end")) memset(end - 50, 7, n);
    if (!strcmp(argv[1], "memcmp-end")) {
      memcpy(buf, end - 50, 50);  // equal for the 50 bytes that are in memory
      printf("%d\n", memcmp(end - 50, buf, n));
    }
    printf("no trap\n");
    return 0;
  }
  for (int call = 1; call <= 40000; ++call) {
    const uint32_t what = next() % 6;
    const int at_end = (next() & 15) == 0;  // ranges that end at memory's end
    unsigned char* base = at_end ? page : buf;
    const size_t span = at_end ? 65536 : BUF;
    size_t n = size();
    if (n > span / 2) n = span / 2;
    size_t d = next() % (span - n + 1), s = next() % (span - n + 1);
    if (at_end && (next() & 1)) d = span - n;  // the last byte of memory
    switch (what) {
      case 0:  // memcpy, disjoint (and sometimes overlapping: the body's own bytes)
        if ((next() & 3) != 0 && d < s + n && s < d + n) s = d + n <= span - n ? d + n : 0;
        fold_value(memcpy(base + d, base + s, n) == base + d);
        break;
      case 1:  // memmove, often overlapping
        if (next() & 1) {
          const size_t near = d + next() % 64;
          s = near <= span - n ? near : d;
        }
        fold_value(memmove(base + d, base + s, n) == base + d);
        break;
      case 2:  // memset, with c beyond a byte at times
        fold_value(memset(base + d, (int)(next() % 300) - 20, n) == base + d);
        break;
      case 3: {  // memcmp of a range against a copy with at most one byte changed
        if (n > 2000 || (d < s + n && s < d + n)) break;
        memmove(base + s, base + d, n);
        if (n && (next() & 1)) base[s + next() % n] ^= (unsigned char)(1 + next() % 255);
        fold_value((uint32_t)memcmp(base + d, base + s, n));
        fold_value((uint32_t)memcmp(base + s, base + d, n));
        break;
      }
      case 4: {  // strlen of a string ending in memory (at its last byte at times)
        const size_t z = n ? d + n - 1 : d;
        if (z >= span) break;
        base[z] = 0;
        fold_value((uint32_t)strlen((const char*)base + d));
        base[z] = (unsigned char)(next() | 1);
        break;
      }
      case 5:  // strlen of a short string with its terminator a few bytes on
        if (n > 0) {
          const size_t z = d + next() % n;
          const unsigned char was = base[z];
          base[z] = 0;
          fold_value((uint32_t)strlen((const char*)base + d));
          base[z] = was;
        }
        break;
    }
    fold(buf, 64);
    fold(buf + (call % (BUF / 64)) * 64, 64);
    fold(page + 65536 - 64, 64);
    if (call % 512 == 0) {
      fold(buf, BUF);
      fold(page, 65536);
      printf("%d %016llx\n", call, (unsigned long long)hash);
    }
  }
  return 0;
}
