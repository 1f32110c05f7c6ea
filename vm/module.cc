// Small helpers of the module representation: names of types and kinds, the
// human name of a function, and the UTF-8 check used for every name the
// decoder reads.

#include "vm/module.h"

#include "vm/reader.h"

namespace wzvm::vm {

const char* valtype_name(ValType t) {
  switch (t) {
    case ValType::I32:
      return "i32";
    case ValType::I64:
      return "i64";
    case ValType::F32:
      return "f32";
    case ValType::F64:
      return "f64";
    case ValType::V128:
      return "v128";
    case ValType::FuncRef:
      return "funcref";
    case ValType::ExternRef:
      return "externref";
  }
  return "<invalid type>";
}

const char* extern_kind_name(ExternKind k) {
  switch (k) {
    case ExternKind::Func:
      return "func";
    case ExternKind::Table:
      return "table";
    case ExternKind::Memory:
      return "memory";
    case ExternKind::Global:
      return "global";
    case ExternKind::Tag:
      return "tag";
  }
  return "<invalid kind>";
}

namespace {
std::string type_list(const std::vector<ValType>& types) {
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) s += ", ";
    s += valtype_name(types[i]);
  }
  s += ")";
  return s;
}
}  // namespace

std::string FuncType::to_string() const { return type_list(params) + " -> " + type_list(results); }

std::string Module::function_name(uint32_t func_index) const {
  if (auto it = names.functions.find(func_index); it != names.functions.end() && !it->second.empty())
    return it->second;
  for (const Export& e : exports)
    if (e.kind == ExternKind::Func && e.index == func_index) return e.name;
  return "wasm-function[" + std::to_string(func_index) + "]";
}

// https://webassembly.github.io/spec/core/binary/values.html#names: names are
// UTF-8 as defined by Unicode, i.e. shortest form only, no surrogate code
// points, nothing above U+10FFFF.
bool valid_utf8(const uint8_t* data, size_t size) {
  size_t i = 0;
  while (i < size) {
    uint8_t c = data[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {  // 0xC0/0xC1 could only start overlong 2-byte forms
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {  // 0xF5.. would encode above U+10FFFF
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;  // continuation byte without a lead, or an invalid lead byte
    }
    if (size - i - 1 < extra) return false;  // truncated sequence
    for (size_t k = 1; k <= extra; ++k) {
      uint8_t b = data[i + k];
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (extra == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return false;
    if (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) return false;
    i += extra + 1;
  }
  return true;
}

}  // namespace wzvm::vm
