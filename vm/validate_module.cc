// Module-level validation (https://webassembly.github.io/spec/core/valid/modules.html):
// everything except function bodies, which vm/lower/ validates as it
// lowers them. Runs on a decoded Module; the first problem is reported with
// the spec testsuite's assert_invalid text, which runners match as a prefix,
// so messages may add detail after it ("unknown function 7").

#include <cstdint>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vm/module.h"
#include "vm/result.h"

namespace wzvm::vm {
namespace {

// 2^16 pages of 64 KiB: the 32-bit address space.
constexpr uint64_t kMaxMemoryPages = 65536;
constexpr uint64_t kMaxTableSize = UINT32_MAX;
constexpr uint64_t kMaxMemoryPages64 = uint64_t{1} << 48;

Error invalid(std::string message, const char* section, int64_t offset = -1) {
  Error e;
  e.kind = Error::Kind::Invalid;
  e.message = std::move(message);
  e.section = section;
  e.offset = offset;
  return e;
}

class Validator {
 public:
  explicit Validator(const Module& m) : m_(m) {}
  Status run();

 private:
  std::optional<Error> check_type_index(uint32_t idx, const char* section) const {
    if (idx >= m_.types.size()) return invalid("unknown type " + std::to_string(idx), section);
    return std::nullopt;
  }
  // exception-handling: an exception's type has parameters only.
  std::optional<Error> check_tag_type(uint32_t idx, const char* section) const {
    if (auto e = check_type_index(idx, section)) return e;
    if (!m_.types[idx].results.empty()) return invalid("non-empty tag result type", section);
    return std::nullopt;
  }
  std::optional<Error> check_table_type(const TableType& t, const char* section) const;
  std::optional<Error> check_memory_type(const MemoryType& t, const char* section) const;
  std::optional<Error> check_const_expr(const ConstExpr& e, ValType expected, const char* section) const;

  uint64_t num_funcs() const { return m_.func_type_indices.size(); }

  const Module& m_;
};

std::optional<Error> Validator::check_table_type(const TableType& t, const char* section) const {
  const Limits& l = t.limits;
  if (l.min > kMaxTableSize || (l.max && *l.max > kMaxTableSize))
    return invalid("table size must be at most 2^32-1", section);
  if (l.max && l.min > *l.max) return invalid("size minimum must not be greater than maximum", section);
  return std::nullopt;
}

std::optional<Error> Validator::check_memory_type(const MemoryType& t, const char* section) const {
  const Limits& l = t.limits;
  if (l.is64) {
    // memory64: 2^48 pages of 64 KiB, the 64-bit address space.
    if (l.min > kMaxMemoryPages64 || (l.max && *l.max > kMaxMemoryPages64))
      return invalid("memory size must be at most 2^48 pages", section);
  } else if (l.min > kMaxMemoryPages || (l.max && *l.max > kMaxMemoryPages)) {
    return invalid("memory size must be at most 65536 pages (4GiB)", section);
  }
  if (l.max && l.min > *l.max) return invalid("size minimum must not be greater than maximum", section);
  // threads: a shared memory never moves while other threads use it, so its
  // whole size must be known up front.
  if (l.shared && !l.max) return invalid("shared memory must have maximum", section);
  return std::nullopt;
}

// https://webassembly.github.io/spec/core/valid/instructions.html#constant-expressions.
// In wasm 2.0 every constant expression sees only the imported globals, and
// only immutable ones are constant.
std::optional<Error> Validator::check_const_expr(const ConstExpr& e, ValType expected,
                                                 const char* section) const {
  using Op = ConstInstr::Op;
  const int64_t at = e.offset;
  // Each instruction pushes one value at most: a short expression (nearly
  // all are one instruction) checks on the C++ stack, allocating nothing.
  ValType small[8];
  std::vector<ValType> big(e.code.size() > std::size(small) ? e.code.size() : 0);
  ValType* const stack = big.empty() ? small : big.data();
  size_t depth = 0;
  for (const ConstInstr& in : e.code) {
    switch (in.op) {
      case Op::I32Const:
        stack[depth++] = ValType::I32;
        break;
      case Op::I64Const:
        stack[depth++] = ValType::I64;
        break;
      case Op::F32Const:
        stack[depth++] = ValType::F32;
        break;
      case Op::F64Const:
        stack[depth++] = ValType::F64;
        break;
      case Op::V128Const:
        stack[depth++] = ValType::V128;
        break;
      case Op::RefNull:
        stack[depth++] = in.ref_type;
        break;
      case Op::RefFunc:
        if (in.value >= num_funcs())
          return invalid("unknown function " + std::to_string(in.value), section, at);
        stack[depth++] = ValType::FuncRef;
        break;
      case Op::GlobalGet:
        if (in.value >= m_.num_imported_globals)
          return invalid("unknown global " + std::to_string(in.value), section, at);
        if (m_.all_globals[in.value].mut) return invalid("constant expression required", section, at);
        stack[depth++] = m_.all_globals[in.value].type;
        break;
      case Op::I32Add:
      case Op::I32Sub:
      case Op::I32Mul:
      case Op::I64Add:
      case Op::I64Sub:
      case Op::I64Mul: {
        // extended-const: [t t] -> [t].
        if (!m_.features.has(Feature::ExtendedConst))
          return invalid("constant expression required", section, at);
        ValType t =
            in.op == Op::I32Add || in.op == Op::I32Sub || in.op == Op::I32Mul ? ValType::I32 : ValType::I64;
        if (depth < 2 || stack[depth - 1] != t || stack[depth - 2] != t)
          return invalid("type mismatch", section, at);
        --depth;
        break;
      }
    }
  }
  if (depth != 1 || stack[0] != expected) return invalid("type mismatch", section, at);
  return std::nullopt;
}

Status Validator::run() {
#define WZVM_CHECK(expr)                  \
  do {                                    \
    if (auto err_ = (expr)) return *err_; \
  } while (0)

  for (const Import& im : m_.imports) {
    switch (im.kind) {
      case ExternKind::Func:
        WZVM_CHECK(check_type_index(im.func_type, "import"));
        break;
      case ExternKind::Table:
        WZVM_CHECK(check_table_type(im.table, "import"));
        break;
      case ExternKind::Memory:
        WZVM_CHECK(check_memory_type(im.memory, "import"));
        break;
      case ExternKind::Global:
        break;  // any value type, either mutability
      case ExternKind::Tag:
        WZVM_CHECK(check_tag_type(im.tag_type, "import"));
        break;
    }
  }
  for (const Function& f : m_.functions) WZVM_CHECK(check_type_index(f.type_index, "function"));
  for (uint32_t t : m_.tags) WZVM_CHECK(check_tag_type(t, "tag"));
  for (const TableType& t : m_.tables) WZVM_CHECK(check_table_type(t, "table"));
  for (const MemoryType& mem : m_.memories) WZVM_CHECK(check_memory_type(mem, "memory"));
  if (m_.all_memories.size() > 1 && !m_.features.has(Feature::MultiMemory))
    return invalid("multiple memories", "memory");

  for (const Global& g : m_.globals) WZVM_CHECK(check_const_expr(g.init, g.type.type, "global"));

  std::set<std::string_view> names;
  for (const Export& e : m_.exports) {
    if (!names.insert(e.name).second) return invalid("duplicate export name", "export");
    const std::string idx = std::to_string(e.index);
    switch (e.kind) {
      case ExternKind::Func:
        if (e.index >= num_funcs()) return invalid("unknown function " + idx, "export");
        break;
      case ExternKind::Table:
        if (e.index >= m_.all_tables.size()) return invalid("unknown table " + idx, "export");
        break;
      case ExternKind::Memory:
        if (e.index >= m_.all_memories.size()) return invalid("unknown memory " + idx, "export");
        break;
      case ExternKind::Global:
        if (e.index >= m_.all_globals.size()) return invalid("unknown global " + idx, "export");
        break;
      case ExternKind::Tag:
        if (e.index >= m_.all_tag_types.size()) return invalid("unknown tag " + idx, "export");
        break;
    }
  }

  if (m_.start) {
    uint32_t idx = *m_.start;
    if (idx >= num_funcs()) return invalid("unknown function " + std::to_string(idx), "start");
    const FuncType& ft = m_.func_type(idx);
    if (!ft.params.empty() || !ft.results.empty()) return invalid("start function", "start");
  }

  for (const ElemSegment& seg : m_.elems) {
    if (seg.mode == SegmentMode::Active) {
      if (seg.table >= m_.all_tables.size())
        return invalid("unknown table " + std::to_string(seg.table), "element", seg.offset.offset);
      WZVM_CHECK(check_const_expr(seg.offset, ValType::I32, "element"));
      if (m_.all_tables[seg.table].elem != seg.type)
        return invalid("type mismatch", "element", seg.offset.offset);
    }
    for (const ConstExpr& item : seg.items) WZVM_CHECK(check_const_expr(item, seg.type, "element"));
  }

  for (const DataSegment& seg : m_.datas) {
    if (seg.mode != SegmentMode::Active) continue;
    if (seg.memory >= m_.all_memories.size())
      return invalid("unknown memory " + std::to_string(seg.memory), "data", seg.offset.offset);
    WZVM_CHECK(check_const_expr(
        seg.offset, m_.all_memories[seg.memory].limits.is64 ? ValType::I64 : ValType::I32, "data"));
  }
#undef WZVM_CHECK
  return {};
}

}  // namespace

Status validate_module(const Module& module) { return Validator(module).run(); }

}  // namespace wzvm::vm
