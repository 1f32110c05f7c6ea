#pragma once
// Text <-> Value conversions for `wzvm --invoke`: parsing command-line
// arguments by a function's parameter types, and printing results so that
// they read back to the same bits (shortest round-trip floats, NaN payloads).

#include <optional>
#include <string>
#include <string_view>

#include "vm/runtime.h"

namespace wzvm::cli {

// Parses `text` as a value of type `type`:
//   i32/i64  decimal (a leading '-' allowed; both the signed and unsigned
//            ranges are accepted) or 0x hex
//   f32/f64  decimal, inf, -inf, nan, -nan, nan:0xPAYLOAD, hex floats (0x1.8p3)
//   v128     0x followed by up to 32 hex digits (the 128-bit little-endian value)
//   funcref  null
//   externref null, or a non-zero integer (the host value)
// Returns nullopt when the text is not a valid value of that type.
std::optional<vm::Value> parse_value(vm::ValType type, std::string_view text);

// Formats a result: integers as signed decimal (like wasmtime), floats as the
// shortest decimal that parses back to the same value, NaNs as nan / -nan
// (canonical payload) or nan:0x... / -nan:0x... (other payloads), v128 as
// 0x + 32 hex digits, references as null or ref.
std::string format_value(const vm::Value& value);

}  // namespace wzvm::cli
