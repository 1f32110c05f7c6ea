#pragma once
// A bounded little-endian reader over a DWARF section, shared by the line
// program decoder (dwarf_lines.cc) and the DIE reader (dwarf_info.cc): every
// read fails rather than pass `end`, so malformed DWARF is declined, never
// read past. A LEB128 longer than kMaxLeb bytes is refused as well: libdwarf
// reads those by rules of its own, and each reader leaves such input to it
// (the line decoder at 8 bytes, the DIE reader at 10, all that 64 bits take:
// CPython's and Rust's units hold 9- and 10-byte constants).

#include <cstdint>
#include <cstring>

namespace wzvm::profiler::dwarf {

inline uint64_t read_le(const uint8_t* p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

template <unsigned kMaxLeb>
struct BoundedCursor {
  static_assert(kMaxLeb >= 1 && kMaxLeb <= 10, "a LEB128 of 64 bits takes at most 10 bytes");
  const uint8_t* p;
  const uint8_t* end;
  bool fixed(unsigned n, uint64_t& v) {
    if (static_cast<uint64_t>(end - p) < n) return false;
    v = read_le(p, n);
    p += n;
    return true;
  }
  bool skip(uint64_t n) {
    if (static_cast<uint64_t>(end - p) < n) return false;
    p += n;
    return true;
  }
  bool uleb(uint64_t& v) {
    v = 0;
    for (unsigned shift = 0; shift < 7 * kMaxLeb; shift += 7) {
      if (p >= end) return false;
      const uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool sleb(int64_t& v) {
    uint64_t u = 0;
    for (unsigned shift = 0; shift < 7 * kMaxLeb; shift += 7) {
      if (p >= end) return false;
      const uint8_t b = *p++;
      u |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        shift += 7;
        if ((b & 0x40) && shift < 64) u |= ~uint64_t(0) << shift;  // sign-extend
        v = static_cast<int64_t>(u);
        return true;
      }
    }
    return false;
  }
  // Steps past a NUL-terminated string.
  bool cstring() {
    const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
    if (!nul) return false;
    p = static_cast<const uint8_t*>(nul) + 1;
    return true;
  }
};

}  // namespace wzvm::profiler::dwarf
