#pragma once
// Values as wast2json writes them, and how the spec runner compares results
// against them (https://github.com/WebAssembly/spec/tree/main/interpreter#scripts).
//
// wast2json encodes every number as the decimal of its bit pattern:
//   {"type":"i32","value":"4294967295"}, {"type":"f32","value":"2143289344"},
//   {"type":"v128","lane_type":"i16","value":["1","65535",...]},
//   {"type":"externref","value":"null"|"N"}, {"type":"funcref","value":"null"}.
// Expected floats may be "nan:canonical" or "nan:arithmetic" (also per v128 lane).

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vm/runtime.h"

namespace wzvm::spectest {

// externref N of the script is the host value N+1, so `ref.extern 0` is not null.
inline vm::Ref externref_to_host(uint64_t n) { return static_cast<vm::Ref>(n + 1); }

// One expected result. Floats (scalar or per lane) may be a NaN pattern instead of bits.
struct Expected {
  enum class Nan : uint8_t { None, Canonical, Arithmetic };
  vm::ValType type = vm::ValType::I32;
  uint64_t bits = 0;  // i32/i64/f32/f64 bits; for refs: the host Ref (0 = null)
  Nan nan = Nan::None;
  bool any_nonnull = false;  // funcref with a non-null expectation: only nullness is checked

  // v128: lane shape and per-lane expectations.
  std::string lane_type;  // "i8".."i64", "f32", "f64"
  std::vector<uint64_t> lanes;
  std::vector<Nan> lane_nans;
};

// Parse an argument. Returns nullopt (and sets `error`) when it cannot be represented.
std::optional<vm::Value> parse_value(const nlohmann::json& j, std::string& error);
std::optional<Expected> parse_expected(const nlohmann::json& j, std::string& error);

// True when `got` satisfies `want`.
bool matches(const Expected& want, const vm::Value& got);

// Human-readable forms for failure messages: "i32:42", "f32:0x7fc00000 (nan)".
std::string format_value(const vm::Value& v);
std::string format_expected(const Expected& e);
std::string format_values(const std::vector<vm::Value>& vs);
std::string format_expecteds(const std::vector<Expected>& es);

// Value of a global as the API type.
vm::Value global_value(const vm::GlobalInst& g);

}  // namespace wzvm::spectest
