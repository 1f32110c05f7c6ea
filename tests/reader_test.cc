// vm/reader.h's LEB128 reads against a plain reading of the spec's rules
// (https://webassembly.github.io/spec/core/binary/values.html#integers):
// the reader has short cuts (one byte inline, two bytes, no bounds checks far
// from the end), and each must decode and reject exactly as the rules do,
// with the same message, near the end of the bytes and far from it.

#include "vm/reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace wzvm::vm {
namespace {

struct Leb {
  bool ok = false;
  uint64_t value = 0;
  size_t used = 0;  // bytes read, when ok
  std::string error;
  bool operator==(const Leb& o) const {
    return ok == o.ok && (ok ? value == o.value && used == o.used : error == o.error);
  }
};

// The spec's rules, one byte at a time: at most ceil(bits/7) bytes; the
// last one's unused bits zero (unsigned) or copies of the sign bit (signed).
Leb reference(const std::vector<uint8_t>& b, unsigned bits, bool is_signed) {
  Leb r;
  const unsigned max_bytes = (bits + 6) / 7;
  uint64_t v = 0;
  for (unsigned i = 0;; ++i) {
    if (i >= b.size()) {
      r.error = "unexpected end";
      return r;
    }
    const uint8_t byte = b[i];
    const unsigned shift = 7 * i;
    if (i + 1 == max_bytes) {
      const unsigned used = bits - shift;
      if (byte & 0x80) {
        r.error = "integer representation too long";
        return r;
      }
      if (used < 7) {
        const uint8_t rest = static_cast<uint8_t>(byte >> used);
        const bool sign = is_signed && ((byte >> (used - 1)) & 1);
        if (rest != (sign ? (0x7f >> used) : 0)) {
          r.error = "integer too large";
          return r;
        }
      }
    }
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      const unsigned end = shift + 7;
      if (is_signed && end < 64 && (byte & 0x40)) v |= ~uint64_t{0} << end;
      if (is_signed && bits == 32) v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v)));
      if (!is_signed && bits == 32) v = static_cast<uint32_t>(v);
      r.ok = true;
      r.value = v;
      r.used = i + 1;
      return r;
    }
  }
}

enum class Width { U32, U64, S32, S33, S64 };

Leb read(const std::vector<uint8_t>& b, size_t padding, Width w) {
  std::vector<uint8_t> bytes = b;
  bytes.resize(b.size() + padding, 0x80);  // more continuation bytes: must not be read as the value's
  Reader r(bytes.data(), bytes.data() + bytes.size());
  Leb out;
  switch (w) {
    case Width::U32: {
      uint32_t v;
      out.ok = r.u32(v);
      out.value = v;
      break;
    }
    case Width::U64:
      out.ok = r.u64(out.value);
      break;
    case Width::S32: {
      int32_t v;
      out.ok = r.s32(v);
      out.value = static_cast<uint64_t>(static_cast<int64_t>(v));
      break;
    }
    case Width::S33:
    case Width::S64: {
      int64_t v;
      out.ok = w == Width::S33 ? r.s33(v) : r.s64(v);
      out.value = static_cast<uint64_t>(v);
      break;
    }
  }
  out.used = r.offset();
  out.error = r.error();
  return out;
}

TEST(Reader, LebShortCutsDecodeAsTheSpecRules) {
  std::mt19937_64 rng(27);
  const struct {
    Width w;
    unsigned bits;
    bool is_signed;
  } widths[] = {{Width::U32, 32, false},
                {Width::U64, 64, false},
                {Width::S32, 32, true},
                {Width::S33, 33, true},
                {Width::S64, 64, true}};
  int checked = 0;
  for (const auto& [w, bits, is_signed] : widths) {
    for (int n = 0; n < 20000; ++n) {
      // 1 to 11 bytes, continuation bits set on all but the last (mostly),
      // payloads random or all ones/zeros (the sign and range edges).
      const size_t len = 1 + rng() % 11;
      std::vector<uint8_t> b(len);
      for (size_t i = 0; i < len; ++i) {
        const uint64_t x = rng();
        uint8_t payload = static_cast<uint8_t>(x & 0x7f);
        if ((x >> 8) % 4 == 0) payload = 0x7f;
        if ((x >> 8) % 4 == 1) payload = 0;
        b[i] = payload | (i + 1 < len ? 0x80 : 0);
        if ((x >> 16) % 16 == 0) b[i] ^= 0x80;  // a continuation bit wrong now and then
      }
      const Leb want = reference(b, bits, is_signed);
      for (size_t padding : {0, 1, 4, 12}) {
        const Leb got = read(b, padding, w);
        // The reference reads only `b`: past its end it sees the end, where
        // the padding's continuation bytes make the reader go on. Those
        // differ only for a value not finished within `b`.
        if (!want.ok && want.error == "unexpected end" && padding) continue;
        EXPECT_TRUE(got == want) << "width " << bits << (is_signed ? " signed" : " unsigned") << ", " << len
                                 << " bytes, padding " << padding << ": got "
                                 << (got.ok ? std::to_string(got.value) : got.error) << ", want "
                                 << (want.ok ? std::to_string(want.value) : want.error);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300000);
}

}  // namespace
}  // namespace wzvm::vm
