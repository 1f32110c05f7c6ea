#include "cli/values.h"

#include <bit>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>

namespace wzvm::cli {
namespace {

using vm::ValType;
using vm::Value;

bool starts_with_hex_prefix(std::string_view s) {
  return s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

// An integer of `bits` bits: signed or unsigned decimal, or 0x hex (optionally negated).
std::optional<uint64_t> parse_int(std::string_view s, int bits) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (starts_with_hex_prefix(s)) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  const uint64_t umax = bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
  const uint64_t neg_max = uint64_t{1} << (bits - 1);  // magnitude of the most negative value
  if (neg) {
    if (v > neg_max) return std::nullopt;
    return (uint64_t{0} - v) & umax;
  }
  if (v > umax) return std::nullopt;
  return v;
}

// A float of type F (float or double) with bit type U; handles nan:0x payloads.
template <class F, class U>
std::optional<U> parse_float(std::string_view s) {
  constexpr int kMantBits = std::numeric_limits<F>::digits - 1;
  constexpr U kExpMask = (~U{0} >> 1) & ~((U{1} << kMantBits) - 1);
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  U bits;
  if (s == "nan") {
    bits = kExpMask | (U{1} << (kMantBits - 1));
  } else if (s.starts_with("nan:0x")) {
    std::string_view p = s.substr(6);
    U payload = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), payload, 16);
    if (ec != std::errc() || end != p.data() + p.size()) return std::nullopt;
    if (payload == 0 || payload >= (U{1} << kMantBits)) return std::nullopt;
    bits = kExpMask | payload;
  } else if (s == "inf" || s == "infinity") {
    bits = kExpMask;
  } else {
    F f;
    auto fmt = std::chars_format::general;
    if (starts_with_hex_prefix(s)) {
      s.remove_prefix(2);
      fmt = std::chars_format::hex;
    }
    // Reject what from_chars would take but we do not want ("nan(...)", "inf" spelled oddly).
    for (char c : s) {
      if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' || c == 'p' ||
            c == 'P' ||
            (fmt == std::chars_format::hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))))
        return std::nullopt;
    }
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), f, fmt);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    bits = std::bit_cast<U>(f);
  }
  if (neg) bits |= kSign;
  return bits;
}

template <class F, class U>
std::string format_float(U bits) {
  constexpr int kMantBits = std::numeric_limits<F>::digits - 1;
  constexpr U kMantMask = (U{1} << kMantBits) - 1;
  constexpr U kExpMask = (~U{0} >> 1) & ~kMantMask;
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  const bool neg = (bits & kSign) != 0;
  if ((bits & kExpMask) == kExpMask) {
    U payload = bits & kMantMask;
    std::string s = neg ? "-" : "";
    if (payload == 0) return s + "inf";
    if (payload == (U{1} << (kMantBits - 1))) return s + "nan";
    char buf[32];
    std::snprintf(buf, sizeof buf, "nan:0x%" PRIx64, static_cast<uint64_t>(payload));
    return s + buf;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::bit_cast<F>(bits));
  (void)ec;  // 64 bytes always suffice for the shortest form
  return std::string(buf, end);
}

}  // namespace

std::optional<Value> parse_value(ValType type, std::string_view text) {
  switch (type) {
    case ValType::I32:
      if (auto v = parse_int(text, 32)) return Value::from_i32(static_cast<uint32_t>(*v));
      return std::nullopt;
    case ValType::I64:
      if (auto v = parse_int(text, 64)) return Value::from_i64(*v);
      return std::nullopt;
    case ValType::F32:
      if (auto b = parse_float<float, uint32_t>(text)) return Value::from_f32_bits(*b);
      return std::nullopt;
    case ValType::F64:
      if (auto b = parse_float<double, uint64_t>(text)) return Value::from_f64_bits(*b);
      return std::nullopt;
    case ValType::V128: {
      if (!starts_with_hex_prefix(text) || text.size() > 34) return std::nullopt;
      std::string_view hex = text.substr(2);
      Value v = Value::zero(ValType::V128);
      // Little-endian: the last hex digits are byte 0.
      for (size_t i = 0; i < hex.size(); ++i) {
        char c = hex[hex.size() - 1 - i];
        int d = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (d < 0) return std::nullopt;
        v.v128[i / 2] |= static_cast<uint8_t>(d << (4 * (i % 2)));
      }
      return v;
    }
    case ValType::FuncRef:
      if (text == "null") return Value::from_ref(type, 0);
      return std::nullopt;
    case ValType::ExternRef: {
      if (text == "null") return Value::from_ref(type, 0);
      auto v = parse_int(text, 64);
      if (!v || *v == 0) return std::nullopt;
      return Value::from_ref(type, static_cast<vm::Ref>(*v));
    }
  }
  return std::nullopt;
}

std::string format_value(const Value& value) {
  switch (value.type) {
    case ValType::I32:
      return std::to_string(static_cast<int32_t>(value.i32));
    case ValType::I64:
      return std::to_string(static_cast<int64_t>(value.i64));
    case ValType::F32:
      return format_float<float, uint32_t>(value.i32);
    case ValType::F64:
      return format_float<double, uint64_t>(value.i64);
    case ValType::V128: {
      std::string s = "0x";
      static const char kHex[] = "0123456789abcdef";
      for (int i = 15; i >= 0; --i) {
        s += kHex[value.v128[i] >> 4];
        s += kHex[value.v128[i] & 15];
      }
      return s;
    }
    case ValType::FuncRef:
    case ValType::ExternRef:
      return value.ref == 0 ? "null" : "ref";
  }
  return "?";
}

}  // namespace wzvm::cli
