#include "spec-tests/values.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

namespace wzvm::spectest {

using vm::Ref;
using vm::ValType;
using vm::Value;

namespace {

std::optional<ValType> parse_type(const std::string& s) {
  if (s == "i32") return ValType::I32;
  if (s == "i64") return ValType::I64;
  if (s == "f32") return ValType::F32;
  if (s == "f64") return ValType::F64;
  if (s == "v128") return ValType::V128;
  if (s == "funcref") return ValType::FuncRef;
  if (s == "externref") return ValType::ExternRef;
  return std::nullopt;
}

// Decimal (wast2json writes unsigned bit patterns; accept a sign anyway).
bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  if (s[0] == '-') {
    long long v = std::strtoll(s.c_str(), &end, 10);
    out = static_cast<uint64_t>(v);
  } else {
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    out = static_cast<uint64_t>(v);
  }
  return errno == 0 && end && *end == '\0';
}

Expected::Nan parse_nan(const std::string& s) {
  if (s == "nan:canonical") return Expected::Nan::Canonical;
  if (s == "nan:arithmetic") return Expected::Nan::Arithmetic;
  return Expected::Nan::None;
}

unsigned lane_bits(const std::string& lane_type) {
  if (lane_type == "i8") return 8;
  if (lane_type == "i16") return 16;
  if (lane_type == "i32" || lane_type == "f32") return 32;
  if (lane_type == "i64" || lane_type == "f64") return 64;
  return 0;
}

uint64_t get_lane(const uint8_t* bytes, unsigned bits, unsigned i) {
  uint64_t v = 0;
  std::memcpy(&v, bytes + i * (bits / 8), bits / 8);  // little-endian host
  return v;
}

void set_lane(uint8_t* bytes, unsigned bits, unsigned i, uint64_t v) {
  std::memcpy(bytes + i * (bits / 8), &v, bits / 8);
}

bool nan_ok(Expected::Nan nan, bool is_f32, uint64_t b) {
  if (is_f32) {
    uint32_t x = static_cast<uint32_t>(b);
    if (nan == Expected::Nan::Canonical) return (x & 0x7fffffffu) == 0x7fc00000u;
    return (x & 0x7fc00000u) == 0x7fc00000u;
  }
  if (nan == Expected::Nan::Canonical) return (b & 0x7fffffffffffffffull) == 0x7ff8000000000000ull;
  return (b & 0x7ff8000000000000ull) == 0x7ff8000000000000ull;
}

uint32_t bits32(const Value& v) {
  uint32_t b;
  std::memcpy(&b, v.v128, 4);
  return b;
}
uint64_t bits64(const Value& v) {
  uint64_t b;
  std::memcpy(&b, v.v128, 8);
  return b;
}

std::string format_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  char buf[64];
  std::snprintf(buf, sizeof buf, "f32:0x%08" PRIx32 " (%.9g)", b, static_cast<double>(f));
  return buf;
}
std::string format_f64(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  char buf[80];
  std::snprintf(buf, sizeof buf, "f64:0x%016" PRIx64 " (%.17g)", b, d);
  return buf;
}
std::string format_ref(ValType t, Ref r) {
  std::string s = t == ValType::FuncRef ? "funcref:" : "externref:";
  if (r == 0) return s + "null";
  if (t == ValType::ExternRef) return s + std::to_string(static_cast<uint64_t>(r) - 1);
  return s + "non-null";
}
const char* nan_name(Expected::Nan n) {
  return n == Expected::Nan::Canonical ? "nan:canonical" : "nan:arithmetic";
}

}  // namespace

std::optional<Value> parse_value(const nlohmann::json& j, std::string& error) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    error = "malformed value " + j.dump();
    return std::nullopt;
  }
  auto type = parse_type(j["type"].get<std::string>());
  if (!type) {
    error = "unsupported value type " + j["type"].get<std::string>();
    return std::nullopt;
  }
  Value v = Value::zero(*type);
  const auto& jv = j.contains("value") ? j["value"] : nlohmann::json();
  if (*type == ValType::V128) {
    std::string lt = j.value("lane_type", "");
    unsigned bits = lane_bits(lt);
    if (bits == 0 || !jv.is_array() || jv.size() != 128 / bits) {
      error = "malformed v128 value " + j.dump();
      return std::nullopt;
    }
    for (unsigned i = 0; i < jv.size(); i++) {
      uint64_t lane;
      if (!jv[i].is_string() || !parse_u64(jv[i].get<std::string>(), lane)) {
        error = "malformed v128 lane " + j.dump();
        return std::nullopt;
      }
      set_lane(v.v128, bits, i, lane);
    }
    return v;
  }
  if (!jv.is_string()) {
    error = "value without \"value\": " + j.dump();
    return std::nullopt;
  }
  std::string s = jv.get<std::string>();
  if (vm::is_ref(*type)) {
    if (s == "null") return Value::from_ref(*type, 0);
    uint64_t n;
    if (*type == ValType::ExternRef && parse_u64(s, n)) return Value::from_ref(*type, externref_to_host(n));
    // A non-null funcref argument would need a function the script cannot name.
    error = "unsupported reference argument " + j.dump();
    return std::nullopt;
  }
  uint64_t n;
  if (!parse_u64(s, n)) {
    error = "malformed number " + j.dump();
    return std::nullopt;
  }
  switch (*type) {
    case ValType::I32:
      return Value::from_i32(static_cast<uint32_t>(n));
    case ValType::I64:
      return Value::from_i64(n);
    case ValType::F32:
      return Value::from_f32_bits(static_cast<uint32_t>(n));
    case ValType::F64:
      return Value::from_f64_bits(n);
    default:
      break;
  }
  error = "unsupported value " + j.dump();
  return std::nullopt;
}

std::optional<Expected> parse_expected(const nlohmann::json& j, std::string& error) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    error = "malformed expected value " + j.dump();
    return std::nullopt;
  }
  auto type = parse_type(j["type"].get<std::string>());
  if (!type) {
    error = "unsupported expected type " + j["type"].get<std::string>();
    return std::nullopt;
  }
  Expected e;
  e.type = *type;
  const auto& jv = j.contains("value") ? j["value"] : nlohmann::json();
  if (*type == ValType::V128) {
    e.lane_type = j.value("lane_type", "");
    unsigned bits = lane_bits(e.lane_type);
    if (bits == 0 || !jv.is_array() || jv.size() != 128 / bits) {
      error = "malformed v128 expected value " + j.dump();
      return std::nullopt;
    }
    for (const auto& l : jv) {
      std::string s = l.is_string() ? l.get<std::string>() : "";
      uint64_t n = 0;
      Expected::Nan nan = parse_nan(s);
      if (nan != Expected::Nan::None && e.lane_type[0] != 'f') nan = Expected::Nan::None, s.clear();
      if (nan == Expected::Nan::None && !parse_u64(s, n)) {
        error = "malformed v128 expected lane " + j.dump();
        return std::nullopt;
      }
      if (bits < 64) n &= (uint64_t{1} << bits) - 1;
      e.lanes.push_back(n);
      e.lane_nans.push_back(nan);
    }
    return e;
  }
  if (!jv.is_string()) {
    error = "expected value without \"value\": " + j.dump();
    return std::nullopt;
  }
  std::string s = jv.get<std::string>();
  if (vm::is_ref(*type)) {
    if (s == "null") return e;  // bits 0
    uint64_t n;
    if (!parse_u64(s, n)) {
      error = "malformed reference " + j.dump();
      return std::nullopt;
    }
    if (*type == ValType::FuncRef)
      e.any_nonnull = true;  // the script cannot name a function; only non-nullness is checked
    else e.bits = externref_to_host(n);
    return e;
  }
  if (*type == ValType::F32 || *type == ValType::F64) {
    e.nan = parse_nan(s);
    if (e.nan != Expected::Nan::None) return e;
  }
  if (!parse_u64(s, e.bits)) {
    error = "malformed number " + j.dump();
    return std::nullopt;
  }
  if (*type == ValType::I32 || *type == ValType::F32) e.bits &= 0xffffffffu;
  return e;
}

bool matches(const Expected& want, const Value& got) {
  if (want.type != got.type) return false;
  switch (want.type) {
    case ValType::I32:
      return bits32(got) == want.bits;
    case ValType::I64:
      return bits64(got) == want.bits;
    case ValType::F32:
      return want.nan != Expected::Nan::None ? nan_ok(want.nan, true, bits32(got)) : bits32(got) == want.bits;
    case ValType::F64:
      return want.nan != Expected::Nan::None ? nan_ok(want.nan, false, bits64(got))
                                             : bits64(got) == want.bits;
    case ValType::FuncRef:
      return want.any_nonnull ? got.ref != 0 : got.ref == 0;
    case ValType::ExternRef:
      return got.ref == static_cast<Ref>(want.bits);
    case ValType::V128: {
      unsigned bits = lane_bits(want.lane_type);
      bool is_float = want.lane_type[0] == 'f';
      for (unsigned i = 0; i < want.lanes.size(); i++) {
        uint64_t lane = get_lane(got.v128, bits, i);
        if (is_float && want.lane_nans[i] != Expected::Nan::None) {
          if (!nan_ok(want.lane_nans[i], bits == 32, lane)) return false;
        } else if (lane != want.lanes[i]) {
          return false;
        }
      }
      return true;
    }
  }
  return false;
}

std::string format_value(const Value& v) {
  switch (v.type) {
    case ValType::I32: {
      uint32_t b = bits32(v);
      std::string s = "i32:" + std::to_string(b);
      if (static_cast<int32_t>(b) < 0) s += " (" + std::to_string(static_cast<int32_t>(b)) + ")";
      return s;
    }
    case ValType::I64: {
      uint64_t b = bits64(v);
      std::string s = "i64:" + std::to_string(b);
      if (static_cast<int64_t>(b) < 0) s += " (" + std::to_string(static_cast<int64_t>(b)) + ")";
      return s;
    }
    case ValType::F32:
      return format_f32(bits32(v));
    case ValType::F64:
      return format_f64(bits64(v));
    case ValType::FuncRef:
    case ValType::ExternRef:
      return format_ref(v.type, v.ref);
    case ValType::V128: {
      char buf[64];
      uint64_t lo = get_lane(v.v128, 64, 0), hi = get_lane(v.v128, 64, 1);
      std::snprintf(buf, sizeof buf, "v128:0x%016" PRIx64 "%016" PRIx64, hi, lo);
      return buf;
    }
  }
  return "?";
}

std::string format_expected(const Expected& e) {
  switch (e.type) {
    case ValType::I32:
      return format_value(Value::from_i32(static_cast<uint32_t>(e.bits)));
    case ValType::I64:
      return format_value(Value::from_i64(e.bits));
    case ValType::F32:
      return e.nan != Expected::Nan::None ? std::string("f32:") + nan_name(e.nan)
                                          : format_f32(static_cast<uint32_t>(e.bits));
    case ValType::F64:
      return e.nan != Expected::Nan::None ? std::string("f64:") + nan_name(e.nan) : format_f64(e.bits);
    case ValType::FuncRef:
      return e.any_nonnull ? "funcref:non-null" : "funcref:null";
    case ValType::ExternRef:
      return format_ref(e.type, static_cast<Ref>(e.bits));
    case ValType::V128: {
      std::string s = "v128:" + e.lane_type + "x" + std::to_string(e.lanes.size()) + "[";
      for (size_t i = 0; i < e.lanes.size(); i++) {
        if (i) s += " ";
        s += e.lane_nans[i] != Expected::Nan::None ? nan_name(e.lane_nans[i]) : std::to_string(e.lanes[i]);
      }
      return s + "]";
    }
  }
  return "?";
}

std::string format_values(const std::vector<Value>& vs) {
  std::string s = "(";
  for (size_t i = 0; i < vs.size(); i++) s += (i ? ", " : "") + format_value(vs[i]);
  return s + ")";
}

std::string format_expecteds(const std::vector<Expected>& es) {
  std::string s = "(";
  for (size_t i = 0; i < es.size(); i++) s += (i ? ", " : "") + format_expected(es[i]);
  return s + ")";
}

Value global_value(const vm::GlobalInst& g) {
  Value v = Value::zero(g.type.type);
  switch (g.type.type) {
    case ValType::I32:
    case ValType::F32:
      v.i32 = static_cast<uint32_t>(g.value);
      break;
    case ValType::I64:
    case ValType::F64:
      v.i64 = g.value;
      break;
    case ValType::FuncRef:
    case ValType::ExternRef:
      v.ref = static_cast<Ref>(g.value);
      break;
    case ValType::V128:
      std::memcpy(v.v128, &g.value, 8);
      std::memcpy(v.v128 + 8, &g.value_hi, 8);
      break;
  }
  return v;
}

}  // namespace wzvm::spectest
