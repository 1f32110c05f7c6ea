// find_known_bodies (vm/module.h): which defined functions have one of
// vm/known_bodies.def's bodies, byte for byte.

#include <cstring>
#include <string_view>
#include <vector>

#include "vm/module.h"

namespace wzvm::vm {
namespace {

struct Template {
  KnownBody kind;
  std::vector<ValType> locals;  // declared locals, expanded
  std::vector<uint8_t> code;    // instructions through the final end
};

uint8_t hex_digit(char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); }

// A row's code entry: its run-length locals expanded, then the instructions.
// The rows are ours (lower-case hex, locals counts below 128), so nothing
// here fails.
Template parse(KnownBody kind, std::string_view hex) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<uint8_t>(hex_digit(hex[i]) << 4 | hex_digit(hex[i + 1])));
  Template t{kind, {}, {}};
  size_t at = 1;
  for (uint8_t group = 0; group < bytes[0]; ++group, at += 2)
    t.locals.insert(t.locals.end(), bytes[at], static_cast<ValType>(bytes[at + 1]));
  t.code.assign(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.end());
  return t;
}

const std::vector<Template>& templates() {
  static const std::vector<Template> rows = {
#define WZVM_KNOWN_BODY(Kind, what, hex) parse(KnownBody::Kind, hex),
#include "vm/known_bodies.def"
#undef WZVM_KNOWN_BODY
  };
  return rows;
}

// The function type each kind's body is written for: Go's (i32) -> i32.
bool has_type(const Module& m, uint32_t func_index, KnownBody) {
  const FuncType& t = m.func_type(func_index);
  return t.params == std::vector<ValType>{ValType::I32} && t.results == std::vector<ValType>{ValType::I32};
}

}  // namespace

void find_known_bodies(Module& m) {
  m.known_bodies.clear();
  const auto& rows = templates();
  for (uint32_t i = 0; i < m.functions.size(); ++i) {
    const Function& f = m.functions[i];
    const size_t size = f.body_end - f.body_offset;
    for (const Template& t : rows) {
      if (t.code.size() != size || f.locals != t.locals || !has_type(m, m.num_imported_funcs + i, t.kind) ||
          std::memcmp(m.bytes.data() + f.body_offset, t.code.data(), size) != 0)
        continue;
      m.known_bodies.resize(m.functions.size(), KnownBody::None);
      m.known_bodies[i] = t.kind;
      break;
    }
  }
}

}  // namespace wzvm::vm
