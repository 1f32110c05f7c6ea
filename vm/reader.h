#pragma once
// A bounds-checked cursor over module bytes with the spec's LEB128 rules
// (https://webassembly.github.io/spec/core/binary/values.html#integers):
// at most ceil(N/7) bytes, and unused bits of the last byte must be zero
// (unsigned) or copies of the sign bit (signed). Every read reports failure
// instead of reading past the end; the first failure sticks, and its message
// and offset are kept for the error report.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace wzvm::vm {

class Reader {
 public:
  Reader(const uint8_t* begin, const uint8_t* end, size_t base_offset = 0)
      : begin_(begin), p_(begin), end_(end), base_(base_offset) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t error_offset() const { return error_offset_; }
  // Offset of the cursor in the whole module.
  size_t offset() const { return base_ + static_cast<size_t>(p_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  bool at_end() const { return p_ >= end_; }
  const uint8_t* pos() const { return p_; }
  const uint8_t* end() const { return end_; }

  bool fail(std::string message) {
    if (error_.empty()) {
      error_ = std::move(message);
      error_offset_ = offset();
    }
    p_ = end_;
    return false;
  }

  // Every read sets its output, even on failure, so callers never see
  // uninitialised values.
  bool u8(uint8_t& out) {
    out = 0;
    if (p_ >= end_) return fail("unexpected end");
    out = *p_++;
    return true;
  }

  bool bytes(size_t n, const uint8_t*& out) {
    out = nullptr;
    if (remaining() < n) return fail("unexpected end");
    out = p_;
    p_ += n;
    return true;
  }

  bool skip(size_t n) {
    const uint8_t* ignored;
    return bytes(n, ignored);
  }

  bool u32(uint32_t& out) {
    // One byte: most indices and immediates. Inline here, where the rest
    // is not (lowering calls this per instruction): with the loop inline,
    // GCC stopped inlining u32 itself into some of lowering's callers.
    if (p_ < end_ && *p_ < 0x80) {
      out = *p_++;
      return true;
    }
    return u32_long(out);
  }
  bool u64(uint64_t& out) { return uleb_long(64, out); }
  bool s32(int32_t& out) {
    // One byte, as in u32: any 7-bit value is in range, sign-extended.
    if (p_ < end_ && *p_ < 0x80) {
      out = static_cast<int8_t>(*p_++ << 1) >> 1;
      return true;
    }
    return s32_long(out);
  }
  bool s33(int64_t& out) { return p_ < end_ && *p_ < 0x80 ? one_signed_byte(out) : sleb_long(33, out); }
  bool s64(int64_t& out) { return p_ < end_ && *p_ < 0x80 ? one_signed_byte(out) : sleb_long(64, out); }

  bool f32(uint32_t& bits) {
    bits = 0;
    const uint8_t* b;
    if (!bytes(4, b)) return false;
    std::memcpy(&bits, b, 4);
    return true;
  }
  bool f64(uint64_t& bits) {
    bits = 0;
    const uint8_t* b;
    if (!bytes(8, b)) return false;
    std::memcpy(&bits, b, 8);
    return true;
  }

  // A vector length or count that is followed by at least `min_item_bytes`
  // per item: rejects absurd counts before anything is allocated for them.
  bool count(uint32_t& out, size_t min_item_bytes = 1) {
    if (!u32(out)) return false;
    if (min_item_bytes && static_cast<uint64_t>(out) * min_item_bytes > remaining())
      return fail("unexpected end");  // the spec calls a too-short vector "unexpected end"
    return true;
  }

  // A name: length-prefixed, valid UTF-8.
  bool name(std::string& out);

 private:
  bool uleb(unsigned bits, uint64_t& out) {
    out = 0;
    uint64_t result = 0;
    unsigned shift = 0;
    // Far from the end, the bytes before the last permitted one need
    // neither a bounds check nor the last byte's checks: the same decoding,
    // fewer instructions a byte. The last byte, or a value that reaches
    // it, takes the loop below from the start.
    if (end_ - p_ >= 10) {
      const unsigned last = (bits - 1) / 7;  // index of the last permitted byte
      for (unsigned i = 0; i < last; ++i) {
        const uint8_t byte = p_[i];
        result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
          p_ += i + 1;
          out = result;
          return true;
        }
      }
      result = 0;
    }
    for (;;) {
      if (p_ >= end_) return fail("unexpected end");
      uint8_t byte = *p_++;
      if (shift + 7 >= bits && shift < 64) {
        // Last permitted byte: no continuation, unused bits zero.
        unsigned used = bits - shift;
        if (byte & 0x80) return fail("integer representation too long");
        if (used < 7 && (byte >> used) != 0) return fail("integer too large");
        result |= static_cast<uint64_t>(byte) << shift;
        out = result;
        return true;
      }
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (!(byte & 0x80)) {
        out = result;
        return true;
      }
    }
  }

  // Two bytes, the second one the last: 14 bits, in range for every width
  // read here (32, 33, 64), and no unused bits to check. Go's i64.const
  // immediates and memarg offsets are often two bytes (the loops below
  // cost 50-80 host instructions a call: callgrind, validating json.wasm).
  bool two_bytes() const { return end_ - p_ >= 2 && p_[1] < 0x80; }
  uint64_t take_two_bytes() {
    uint64_t v = (p_[0] & 0x7fu) | static_cast<uint64_t>(p_[1]) << 7;
    p_ += 2;
    return v;
  }
  // Out of line, and the loops apart from the two-byte case: inline, the
  // loops made their callers too big to inline in turn (read_memarg).
  __attribute__((noinline)) bool u32_long(uint32_t& out) {
    if (two_bytes()) {
      out = static_cast<uint32_t>(take_two_bytes());
      return true;
    }
    uint64_t v;
    const bool ok = uleb_loop(32, v);
    out = static_cast<uint32_t>(v);
    return ok;
  }
  __attribute__((noinline)) bool uleb_long(unsigned bits, uint64_t& out) {
    if (p_ < end_ && *p_ < 0x80) {
      out = *p_++;
      return true;
    }
    if (two_bytes()) {
      out = take_two_bytes();
      return true;
    }
    return uleb_loop(bits, out);
  }
  __attribute__((noinline)) bool uleb_loop(unsigned bits, uint64_t& out) { return uleb(bits, out); }
  __attribute__((noinline)) bool sleb_loop(unsigned bits, int64_t& out) { return sleb(bits, out); }
  __attribute__((noinline)) bool s32_long(int32_t& out) {
    int64_t v;
    bool ok = sleb_long(32, v);
    out = static_cast<int32_t>(v);
    return ok;
  }
  __attribute__((noinline)) bool sleb_long(unsigned bits, int64_t& out) {
    if (two_bytes()) {
      out = static_cast<int64_t>(take_two_bytes() << 50) >> 50;  // sign bit: bit 13
      return true;
    }
    return sleb_loop(bits, out);
  }

  bool one_signed_byte(int64_t& out) {
    out = static_cast<int8_t>(*p_++ << 1) >> 1;
    return true;
  }
  bool sleb(unsigned bits, int64_t& out) {
    out = 0;
    uint64_t result = 0;
    unsigned shift = 0;
    if (end_ - p_ >= 10) {  // as in uleb
      const unsigned last = (bits - 1) / 7;
      for (unsigned i = 0; i < last; ++i) {
        const uint8_t byte = p_[i];
        result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
          p_ += i + 1;
          const unsigned used = 7 * (i + 1);  // below 64: i < 9
          if (byte & 0x40) result |= ~uint64_t{0} << used;
          out = static_cast<int64_t>(result);
          return true;
        }
      }
      result = 0;
    }
    for (;;) {
      if (p_ >= end_) return fail("unexpected end");
      uint8_t byte = *p_++;
      if (shift + 7 >= bits) {
        unsigned used = bits - shift;  // value bits in this byte, 1..7
        if (byte & 0x80) return fail("integer representation too long");
        // Bits above `used` (within the 7 payload bits) must equal the sign bit.
        int sign = (byte >> (used - 1)) & 1;
        uint8_t rest = static_cast<uint8_t>((byte & 0x7f) >> used);
        uint8_t expect = sign ? static_cast<uint8_t>(0x7f >> used) : 0;
        if (used < 7 && rest != expect) return fail("integer too large");
        result |= static_cast<uint64_t>(byte & 0x7f) << shift;
        shift += 7;
        if (shift < 64 && (byte & 0x40)) result |= ~uint64_t{0} << shift;
        out = static_cast<int64_t>(result);
        return true;
      }
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (!(byte & 0x80)) {
        if (shift < 64 && (byte & 0x40)) result |= ~uint64_t{0} << shift;
        out = static_cast<int64_t>(result);
        return true;
      }
    }
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  size_t base_;
  std::string error_;
  size_t error_offset_ = 0;
};

// True when [data, data+size) is well-formed UTF-8 (no overlongs, no
// surrogates, nothing above U+10FFFF).
bool valid_utf8(const uint8_t* data, size_t size);

inline bool Reader::name(std::string& out) {
  uint32_t len;
  if (!u32(len)) return false;
  const uint8_t* b;
  if (!bytes(len, b)) return false;
  if (!valid_utf8(b, len)) return fail("malformed UTF-8 encoding");
  out.assign(reinterpret_cast<const char*>(b), len);
  return true;
}

}  // namespace wzvm::vm
