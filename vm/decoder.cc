// The binary decoder: bytes -> Module
// (https://webassembly.github.io/spec/core/binary/modules.html, wasm 2.0).
//
// This is the front door for untrusted input. Every read goes through a
// bounds-checked vm::Reader; every section and code entry gets its own Reader
// limited to its declared size, so nothing can read across a boundary; and no
// vector is sized from a declared count before that count has been checked
// against the bytes that are left (each item takes at least one byte).
//
// Function bodies are not decoded here: the decoder only records where each
// body's instructions are, and vm/lower/ decodes, validates and lowers
// them in one pass. Module-level validation is vm/validate_module.cc.
//
// Error messages follow the spec interpreter's (the testsuite's
// assert_malformed texts), which test runners match as prefixes.

#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vm/module.h"
#include "vm/reader.h"
#include "vm/result.h"

namespace wzvm::vm {
namespace {

// The spec only requires the local count to fit in u32, but every local costs
// a frame slot at run time, so a hostile module could make each call reserve
// gigabytes. 50000 is far above what compilers emit.
constexpr uint64_t kMaxLocals = 50000;
// Counts checked against the bytes left keep allocations proportional to the
// input, but not small: a function costs one byte to declare and hundreds in
// Module, CompiledFunc and FuncInst, so a 100 MB module of empty functions
// would take tens of GB. These caps (V8's, far above what compilers emit)
// bound that factor before anything is allocated.
constexpr uint64_t kMaxTypes = 1'000'000;
constexpr uint64_t kMaxFunctions = 1'000'000;      // imported + defined
constexpr uint64_t kMaxParamsOrResults = 1000;     // per function type
constexpr uint64_t kMaxSegmentItems = 10'000'000;  // = the table size cap (vm/instance.cc)

enum SectionId : uint8_t {
  kCustom = 0,
  kType = 1,
  kImport = 2,
  kFunction = 3,
  kTable = 4,
  kMemory = 5,
  kGlobal = 6,
  kExport = 7,
  kStart = 8,
  kElement = 9,
  kCode = 10,
  kData = 11,
  kDataCount = 12,
  kTag = 13,  // exception-handling
};

const char* section_name(uint8_t id) {
  static constexpr const char* names[] = {"custom", "type",   "import",    "function", "table",
                                          "memory", "global", "export",    "start",    "element",
                                          "code",   "data",   "datacount", "tag"};
  return id < std::size(names) ? names[id] : "unknown";
}

// Position of a non-custom section in the required order. The data count
// section (id 12) was added later and goes between element and code, the tag
// section (13, exception-handling) between memory and global.
int section_order(uint8_t id) {
  static constexpr int order[] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 22, 24, 20, 11};
  return order[id];
}

// Whether an opcode exists at all (from the one opcode table). Decides between
// "illegal opcode" (malformed) and "constant expression required" (invalid)
// for an instruction that is not allowed in a constant expression.
bool known_opcode(unsigned prefix, uint32_t code) {
#define WZVM_OP(Name, Prefix, Code, ...) \
  if (prefix == (Prefix) && code == (Code)) return true;
#include "vm/opcodes.def"
#undef WZVM_OP
  return false;
}

class Decoder {
 public:
  explicit Decoder(Module& m) : m_(m), data_(m.bytes.data()), size_(m.bytes.size()) {}

  Status run();

 private:
  Reader sub_reader(const Reader& outer, size_t n) const {
    return Reader(outer.pos(), outer.pos() + n, outer.offset());
  }

  // Copies the first failure of `r` into error_. Returns r.ok().
  bool check(const Reader& r) {
    if (!r.ok() && !failed_) {
      failed_ = true;
      error_.kind = kind_;
      error_.message = r.error();
      // A Reader bounded by a section or body ran off its end: say which
      // kind of end it was, as the spec interpreter does.
      if (!section_.empty() && error_.message == "unexpected end")
        error_.message = "unexpected end of section or function";
      error_.section = section_;
      error_.function = function_;
      error_.offset = static_cast<int64_t>(r.error_offset());
    }
    return r.ok();
  }
  // A validation error found while decoding (a non-constant instruction in a
  // constant expression, which the spec classifies as invalid).
  bool invalid(Reader& r, std::string message) {
    if (r.ok()) kind_ = Error::Kind::Invalid;
    return r.fail(std::move(message));
  }
  Error top_error(std::string message, size_t offset) const {
    Error e;
    e.kind = Error::Kind::Malformed;
    e.message = std::move(message);
    e.section = section_;
    e.offset = static_cast<int64_t>(offset);
    return e;
  }

  // Primitive pieces.
  static bool read_count(Reader& r, uint32_t& n, size_t min_item_bytes);
  static bool read_name(Reader& r, std::string& out);
  static bool read_valtype(Reader& r, ValType& t);
  static bool read_reftype(Reader& r, ValType& t);
  bool read_limits(Reader& r, Limits& l, bool memory);
  bool read_table_type(Reader& r, TableType& t);
  static bool read_global_type(Reader& r, GlobalType& t);
  bool read_const_expr(Reader& r, ConstExpr& e);

  bool parse_section(uint8_t id, Reader& s);
  bool parse_custom(Reader& s);
  bool parse_types(Reader& s);
  bool parse_imports(Reader& s);
  bool parse_functions(Reader& s);
  bool parse_tables(Reader& s);
  bool parse_memories(Reader& s);
  bool parse_globals(Reader& s);
  bool parse_exports(Reader& s);
  bool parse_start(Reader& s);
  bool parse_elements(Reader& s);
  bool parse_data_count(Reader& s);
  bool parse_tags(Reader& s);
  static bool read_tag_type(Reader& r, uint32_t& type_index);
  bool parse_code(Reader& s);
  bool parse_data(Reader& s);
  void parse_name_section(Reader r);
  void collect_declared_refs();

  Module& m_;
  const uint8_t* data_;
  size_t size_;

  std::string section_;  // section being decoded, for errors
  int64_t function_ = -1;
  Error::Kind kind_ = Error::Kind::Malformed;
  bool failed_ = false;
  Error error_;

  bool have_code_section_ = false;
};

// A vector length: checked against the bytes left, given that every item takes
// at least `min_item_bytes`, before anyone allocates for it. Any minimum of one
// or more keeps allocations proportional to the input; the larger minimums
// (a function type is at least 3 bytes) only report hopeless counts earlier.
bool Decoder::read_count(Reader& r, uint32_t& n, size_t min_item_bytes) {
  if (!r.u32(n)) return false;
  if (static_cast<uint64_t>(n) * min_item_bytes > r.remaining()) return r.fail("unexpected end");
  return true;
}

bool Decoder::read_name(Reader& r, std::string& out) {
  uint32_t len;
  if (!r.u32(len)) return false;
  if (len > r.remaining()) return r.fail("length out of bounds");
  const uint8_t* b;
  if (!r.bytes(len, b)) return false;
  if (!valid_utf8(b, len)) return r.fail("malformed UTF-8 encoding");
  out.assign(reinterpret_cast<const char*>(b), len);
  return true;
}

bool Decoder::read_valtype(Reader& r, ValType& t) {
  uint8_t b;
  if (!r.u8(b)) return false;
  if (!is_valtype_byte(b)) return r.fail("malformed value type");
  t = static_cast<ValType>(b);
  return true;
}

bool Decoder::read_reftype(Reader& r, ValType& t) {
  uint8_t b;
  if (!r.u8(b)) return false;
  if (b != 0x70 && b != 0x6F) return r.fail("malformed reference type");
  t = static_cast<ValType>(b);
  return true;
}

// https://webassembly.github.io/spec/core/binary/types.html#limits. The flag
// is one byte, 0 or 1 in wasm 2.0 (shared and 64-bit flags belong to later
// proposals and the 2.0 testsuite requires them to be rejected); the spec
// interpreter reads it as a LEB, hence its messages.
bool Decoder::read_limits(Reader& r, Limits& l, bool memory) {
  uint8_t flag;
  if (!r.u8(flag)) return false;
  if (flag & 0x80) return r.fail("integer representation too long");
  // threads: flag 2 marks a memory shared (validation requires a maximum).
  if (memory && (flag & 0x02) && m_.features.has(Feature::Threads)) {
    l.shared = true;
    flag &= ~0x02;
  }
  if (m_.features.has(Feature::Memory64)) {
    // memory64: flag 4 makes a memory's limits 64-bit (u64 page counts).
    if (flag & ~(memory ? 0x05 : 0x01)) return r.fail("malformed limits flags");
    if (flag & 0x04) {
      l.is64 = true;
      if (!r.u64(l.min)) return false;
      if (flag & 1) {
        uint64_t max;
        if (!r.u64(max)) return false;
        l.max = max;
      }
      return true;
    }
  }
  if (flag > 1) return r.fail("integer too large");
  uint32_t v;
  if (!r.u32(v)) return false;
  l.min = v;
  if (flag & 1) {
    if (!r.u32(v)) return false;
    l.max = v;
  }
  return true;
}

bool Decoder::read_table_type(Reader& r, TableType& t) {
  return read_reftype(r, t.elem) && read_limits(r, t.limits, false);
}

bool Decoder::read_global_type(Reader& r, GlobalType& t) {
  if (!read_valtype(r, t.type)) return false;
  uint8_t mut;
  if (!r.u8(mut)) return false;
  if (mut > 1) return r.fail("malformed mutability");
  t.mut = mut == 1;
  return true;
}

// https://webassembly.github.io/spec/core/valid/instructions.html#constant-expressions.
// Types are checked by validate_module; here only the shape is read.
bool Decoder::read_const_expr(Reader& r, ConstExpr& e) {
  using Op = ConstInstr::Op;
  e.offset = static_cast<uint32_t>(r.offset());
  for (;;) {
    uint8_t op;
    if (!r.u8(op)) return false;
    ConstInstr in{};
    switch (op) {
      case 0x0B:  // end
        return true;
      case 0x41: {
        int32_t v;
        if (!r.s32(v)) return false;
        in.op = Op::I32Const;
        in.value = static_cast<uint32_t>(v);
        break;
      }
      case 0x42: {
        int64_t v;
        if (!r.s64(v)) return false;
        in.op = Op::I64Const;
        in.value = static_cast<uint64_t>(v);
        break;
      }
      case 0x43: {
        uint32_t bits;
        if (!r.f32(bits)) return false;
        in.op = Op::F32Const;
        in.value = bits;
        break;
      }
      case 0x44:
        in.op = Op::F64Const;
        if (!r.f64(in.value)) return false;
        break;
      case 0xD0:
        in.op = Op::RefNull;
        if (!read_reftype(r, in.ref_type)) return false;
        break;
      case 0xD2: {
        uint32_t idx;
        if (!r.u32(idx)) return false;
        in.op = Op::RefFunc;
        in.value = idx;
        break;
      }
      case 0x23: {
        uint32_t idx;
        if (!r.u32(idx)) return false;
        in.op = Op::GlobalGet;
        in.value = idx;
        break;
      }
      // extended-const proposal; validate_module decides whether they are allowed.
      case 0x6A:
        in.op = Op::I32Add;
        break;
      case 0x6B:
        in.op = Op::I32Sub;
        break;
      case 0x6C:
        in.op = Op::I32Mul;
        break;
      case 0x7C:
        in.op = Op::I64Add;
        break;
      case 0x7D:
        in.op = Op::I64Sub;
        break;
      case 0x7E:
        in.op = Op::I64Mul;
        break;
      case 0xFD: {
        uint32_t sub;
        if (!r.u32(sub)) return false;
        if (sub != 12) return invalid(r, "constant expression required");  // only v128.const is constant
        const uint8_t* b;
        if (!r.bytes(16, b)) return false;
        in.op = Op::V128Const;
        std::memcpy(&in.value, b, 8);  // little-endian lanes, as in memory
        std::memcpy(&in.value_hi, b + 8, 8);
        break;
      }
      case 0xFC: {
        uint32_t sub;
        if (!r.u32(sub)) return false;
        if (!known_opcode(0xFC, sub)) return r.fail("illegal opcode");
        return invalid(r, "constant expression required");
      }
      default:
        if (!known_opcode(0x00, op)) return r.fail("illegal opcode");
        return invalid(r, "constant expression required");
    }
    e.code.push_back(in);  // each instruction consumed at least one byte: bounded by the input
  }
}

Status Decoder::run() {
  // Offsets into the module are stored as u32.
  if (size_ > UINT32_MAX) return top_error("module too large", 0);
  static constexpr uint8_t kMagic[4] = {0x00, 0x61, 0x73, 0x6D};
  static constexpr uint8_t kVersion[4] = {0x01, 0x00, 0x00, 0x00};
  if (size_ < 4) return top_error("unexpected end", size_);
  if (std::memcmp(data_, kMagic, 4) != 0) return top_error("magic header not detected", 0);
  if (size_ < 8) return top_error("unexpected end", size_);
  if (std::memcmp(data_ + 4, kVersion, 4) != 0) return top_error("unknown binary version", 4);

  Reader r(data_ + 8, data_ + size_, 8);
  int last_order = 0;
  while (!r.at_end()) {
    size_t start = r.offset();
    uint8_t id;
    if (!r.u8(id)) break;
    if (id > kTag || (id == kTag && !m_.features.has(Feature::ExceptionHandling)))
      return top_error("malformed section id", start);
    uint32_t size;
    if (!r.u32(size)) {
      check(r);
      return error_;
    }
    if (size > r.remaining()) return top_error("length out of bounds", r.offset());
    if (id != kCustom) {
      int order = section_order(id);
      // A repeated or misplaced section: the spec interpreter has read the
      // sections it expects and finds content after them.
      if (order <= last_order) return top_error("unexpected content after last section", start);
      last_order = order;
    }
    section_ = section_name(id);
    Reader s = sub_reader(r, size);
    bool ok = parse_section(id, s);
    if (ok && s.ok() && !s.at_end()) s.fail("section size mismatch");
    if (!check(s) || failed_) return error_;
    if (!r.skip(size)) break;
    section_.clear();
  }
  section_.clear();

  if (m_.functions.size() != 0 && !have_code_section_)
    return top_error("function and code section have inconsistent lengths", size_);
  if (m_.data_count && *m_.data_count != m_.datas.size())
    return top_error("data count and data section have inconsistent lengths", size_);

  collect_declared_refs();
  return {};
}

bool Decoder::parse_section(uint8_t id, Reader& s) {
  switch (id) {
    case kCustom:
      return parse_custom(s);
    case kType:
      return parse_types(s);
    case kImport:
      return parse_imports(s);
    case kFunction:
      return parse_functions(s);
    case kTable:
      return parse_tables(s);
    case kMemory:
      return parse_memories(s);
    case kGlobal:
      return parse_globals(s);
    case kExport:
      return parse_exports(s);
    case kStart:
      return parse_start(s);
    case kElement:
      return parse_elements(s);
    case kCode:
      return parse_code(s);
    case kData:
      return parse_data(s);
    case kDataCount:
      return parse_data_count(s);
    case kTag:
      return parse_tags(s);
  }
  return s.fail("malformed section id");
}

// https://webassembly.github.io/spec/core/binary/modules.html#custom-section.
// The name must be well-formed; the contents are not validated, so a broken
// name section only stops us reading it.
bool Decoder::parse_custom(Reader& s) {
  CustomSection c;
  if (!read_name(s, c.name)) return false;
  c.offset = static_cast<uint32_t>(s.offset());
  c.size = static_cast<uint32_t>(s.remaining());
  if (c.name == "name") parse_name_section(sub_reader(s, s.remaining()));
  m_.customs.push_back(std::move(c));
  return s.skip(s.remaining());
}

// https://webassembly.github.io/spec/core/appendix/custom.html#name-section
void Decoder::parse_name_section(Reader r) {
  int last_id = -1;
  while (!r.at_end()) {
    uint8_t id;
    uint32_t size;
    if (!r.u8(id) || !r.u32(size) || size > r.remaining()) return;
    if (static_cast<int>(id) <= last_id) return;  // subsections are ordered and unique
    last_id = id;
    Reader sub = sub_reader(r, size);
    if (!r.skip(size)) return;
    switch (id) {
      case 0: {
        std::string name;
        if (!read_name(sub, name) || !sub.at_end()) return;
        m_.names.module = std::move(name);
        break;
      }
      case 1: {
        std::map<uint32_t, std::string> funcs;
        uint32_t n;
        if (!read_count(sub, n, 2)) return;
        for (uint32_t i = 0; i < n; ++i) {
          uint32_t idx;
          std::string name;
          if (!sub.u32(idx) || !read_name(sub, name)) return;
          funcs[idx] = std::move(name);
        }
        if (!sub.at_end()) return;
        m_.names.functions = std::move(funcs);
        break;
      }
      case 2: {
        std::map<uint32_t, std::map<uint32_t, std::string>> locals;
        uint32_t n;
        if (!read_count(sub, n, 2)) return;
        for (uint32_t i = 0; i < n; ++i) {
          uint32_t func, count;
          if (!sub.u32(func) || !read_count(sub, count, 2)) return;
          auto& map = locals[func];
          for (uint32_t j = 0; j < count; ++j) {
            uint32_t idx;
            std::string name;
            if (!sub.u32(idx) || !read_name(sub, name)) return;
            map[idx] = std::move(name);
          }
        }
        if (!sub.at_end()) return;
        m_.names.locals = std::move(locals);
        break;
      }
      default:
        break;  // other subsections (labels, types, ... from later proposals) are skipped
    }
  }
}

bool Decoder::parse_types(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 3)) return false;
  if (n > kMaxTypes) return s.fail("too many types");
  m_.types.reserve(n);
  m_.canonical_types.reserve(n);
  // Module::canonical_types, keyed by the type's value types in bytes.
  std::unordered_map<std::string, uint32_t> first;
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t form;
    if (!s.u8(form)) return false;
    // The spec interpreter reads the form as a signed LEB.
    if (form & 0x80) return s.fail("integer representation too long");
    if (form != 0x60) return s.fail("malformed function type");
    FuncType ft;
    uint32_t np, nr;
    if (!read_count(s, np, 1)) return false;
    if (np > kMaxParamsOrResults) return s.fail("too many parameters");
    ft.params.resize(np);
    for (auto& t : ft.params)
      if (!read_valtype(s, t)) return false;
    if (!read_count(s, nr, 1)) return false;
    if (nr > kMaxParamsOrResults) return s.fail("too many results");
    ft.results.resize(nr);
    for (auto& t : ft.results)
      if (!read_valtype(s, t)) return false;
    std::string key(reinterpret_cast<const char*>(ft.params.data()), ft.params.size());
    key += '\xff';  // no value type's byte
    key.append(reinterpret_cast<const char*>(ft.results.data()), ft.results.size());
    m_.canonical_types.push_back(first.try_emplace(std::move(key), i).first->second);
    m_.types.push_back(std::move(ft));
  }
  return true;
}

bool Decoder::parse_imports(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 1)) return false;
  m_.imports.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    Import im;
    if (!read_name(s, im.module) || !read_name(s, im.field)) return false;
    uint8_t kind;
    if (!s.u8(kind)) return false;
    switch (kind) {
      case 0:
        im.kind = ExternKind::Func;
        if (!s.u32(im.func_type)) return false;
        if (m_.num_imported_funcs >= kMaxFunctions) return s.fail("too many functions");
        m_.func_type_indices.push_back(im.func_type);
        ++m_.num_imported_funcs;
        break;
      case 1:
        im.kind = ExternKind::Table;
        if (!read_table_type(s, im.table)) return false;
        m_.all_tables.push_back(im.table);
        ++m_.num_imported_tables;
        break;
      case 2:
        im.kind = ExternKind::Memory;
        if (!read_limits(s, im.memory.limits, true)) return false;
        m_.all_memories.push_back(im.memory);
        ++m_.num_imported_memories;
        break;
      case 3:
        im.kind = ExternKind::Global;
        if (!read_global_type(s, im.global)) return false;
        m_.all_globals.push_back(im.global);
        ++m_.num_imported_globals;
        break;
      case 4:
        if (!m_.features.has(Feature::ExceptionHandling)) return s.fail("malformed import kind");
        im.kind = ExternKind::Tag;
        if (!read_tag_type(s, im.tag_type)) return false;
        m_.all_tag_types.push_back(im.tag_type);
        ++m_.num_imported_tags;
        break;
      default:
        return s.fail("malformed import kind");
    }
    m_.imports.push_back(std::move(im));
  }
  return true;
}

bool Decoder::parse_functions(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 1)) return false;
  if (n > kMaxFunctions - m_.num_imported_funcs) return s.fail("too many functions");
  m_.functions.resize(n);
  for (Function& f : m_.functions) {
    if (!s.u32(f.type_index)) return false;
    m_.func_type_indices.push_back(f.type_index);
  }
  return true;
}

bool Decoder::parse_tables(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 1)) return false;
  m_.tables.resize(n);
  for (TableType& t : m_.tables) {
    if (!read_table_type(s, t)) return false;
    m_.all_tables.push_back(t);
  }
  return true;
}

bool Decoder::parse_memories(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 1)) return false;
  m_.memories.resize(n);
  for (MemoryType& mem : m_.memories) {
    if (!read_limits(s, mem.limits, true)) return false;
    m_.all_memories.push_back(mem);
  }
  return true;
}

bool Decoder::parse_globals(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 1)) return false;
  m_.globals.resize(n);
  for (Global& g : m_.globals) {
    if (!read_global_type(s, g.type) || !read_const_expr(s, g.init)) return false;
    m_.all_globals.push_back(g.type);
  }
  return true;
}

bool Decoder::parse_exports(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 3)) return false;
  m_.exports.resize(n);
  for (Export& e : m_.exports) {
    if (!read_name(s, e.name)) return false;
    uint8_t kind;
    if (!s.u8(kind)) return false;
    if (kind > (m_.features.has(Feature::ExceptionHandling) ? 4 : 3)) return s.fail("malformed export kind");
    e.kind = static_cast<ExternKind>(kind);
    if (!s.u32(e.index)) return false;
  }
  return true;
}

// exception-handling: a tag is an attribute (0: exception) and a type index.
bool Decoder::read_tag_type(Reader& r, uint32_t& type_index) {
  uint8_t attribute;
  if (!r.u8(attribute)) return false;
  if (attribute != 0) return r.fail("malformed tag attribute");
  return r.u32(type_index);
}

bool Decoder::parse_tags(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 2)) return false;
  m_.tags.resize(n);
  for (uint32_t& t : m_.tags) {
    if (!read_tag_type(s, t)) return false;
    m_.all_tag_types.push_back(t);
  }
  return true;
}

bool Decoder::parse_start(Reader& s) {
  uint32_t idx;
  if (!s.u32(idx)) return false;
  m_.start = idx;
  return true;
}

// https://webassembly.github.io/spec/core/binary/modules.html#element-section:
// a flags field whose bits say passive/declarative (bit 0), explicit table
// index (bit 1, active) and expressions instead of function indices (bit 2).
bool Decoder::parse_elements(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 3)) return false;
  m_.elems.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t flags;
    if (!s.u32(flags)) return false;
    if (flags > 7) return s.fail("malformed elements segment kind");
    ElemSegment seg;
    bool passive_or_declarative = flags & 1;
    bool explicit_table = flags & 2;
    bool exprs = flags & 4;
    if (!passive_or_declarative) {
      seg.mode = SegmentMode::Active;
      if (explicit_table && !s.u32(seg.table)) return false;
      if (!read_const_expr(s, seg.offset)) return false;
    } else {
      seg.mode = explicit_table ? SegmentMode::Declarative : SegmentMode::Passive;
    }
    // Flags 0 and 4 have an implicit funcref type; the others spell it out.
    if (flags != 0 && flags != 4) {
      if (exprs) {
        if (!read_reftype(s, seg.type)) return false;
      } else {
        uint8_t elemkind;
        if (!s.u8(elemkind)) return false;
        if (elemkind != 0x00) return s.fail("malformed element kind");
        seg.type = ValType::FuncRef;
      }
    }
    uint32_t count;
    if (!read_count(s, count, 1)) return false;
    if (count > kMaxSegmentItems) return s.fail("too many elements in segment");
    seg.items.resize(count);
    for (ConstExpr& item : seg.items) {
      if (exprs) {
        if (!read_const_expr(s, item)) return false;
      } else {
        item.offset = static_cast<uint32_t>(s.offset());
        uint32_t idx;
        if (!s.u32(idx)) return false;
        ConstInstr in{};
        in.op = ConstInstr::Op::RefFunc;
        in.value = idx;
        item.code.push_back(in);
      }
    }
    m_.elems.push_back(std::move(seg));
  }
  return true;
}

bool Decoder::parse_data_count(Reader& s) {
  uint32_t n;
  if (!s.u32(n)) return false;
  m_.data_count = n;
  return true;
}

bool Decoder::parse_code(Reader& s) {
  have_code_section_ = true;
  size_t section_offset = s.offset();
  uint32_t n;
  if (!read_count(s, n, 2)) return false;
  if (n != m_.functions.size()) {
    failed_ = true;
    error_ = top_error("function and code section have inconsistent lengths", section_offset);
    return false;
  }
  for (uint32_t i = 0; i < n; ++i) {
    function_ = static_cast<int64_t>(m_.num_imported_funcs) + i;
    Function& f = m_.functions[i];
    uint32_t body_size;
    if (!s.u32(body_size)) return false;
    if (body_size > s.remaining()) return s.fail("unexpected end of section or function");
    Reader b = sub_reader(s, body_size);
    if (!s.skip(body_size)) return false;

    // Locals come run-length encoded; the total is checked before anything is
    // expanded.
    uint32_t groups;
    if (!read_count(b, groups, 2)) return check(b);
    std::vector<std::pair<uint32_t, ValType>> runs(groups);
    uint64_t total = 0;
    for (auto& [count, type] : runs) {
      if (!b.u32(count) || !read_valtype(b, type)) return check(b);
      total += count;
      if (total > kMaxLocals) {
        b.fail("too many locals");
        return check(b);
      }
    }
    f.locals.reserve(total);
    for (auto& [count, type] : runs) f.locals.insert(f.locals.end(), count, type);

    f.body_offset = static_cast<uint32_t>(b.offset());
    f.body_end = static_cast<uint32_t>(b.offset() + b.remaining());
    if (b.at_end()) {
      b.fail("unexpected end of section or function");
      return check(b);
    }
    // The compiler decodes the instructions; it relies on the body ending in `end`.
    if (b.end()[-1] != 0x0B) {
      (void)b.skip(b.remaining() - 1);
      b.fail("END opcode expected");
      return check(b);
    }
  }
  function_ = -1;
  return true;
}

bool Decoder::parse_data(Reader& s) {
  uint32_t n;
  if (!read_count(s, n, 2)) return false;
  m_.datas.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t flags;
    if (!s.u32(flags)) return false;
    DataSegment seg;
    switch (flags) {
      case 0:
        seg.mode = SegmentMode::Active;
        if (!read_const_expr(s, seg.offset)) return false;
        break;
      case 1:
        seg.mode = SegmentMode::Passive;
        break;
      case 2:
        seg.mode = SegmentMode::Active;
        if (!s.u32(seg.memory) || !read_const_expr(s, seg.offset)) return false;
        break;
      default:
        return s.fail("malformed data segment kind");
    }
    uint32_t size;
    if (!s.u32(size)) return false;
    seg.data_offset = static_cast<uint32_t>(s.offset());
    seg.size = size;
    if (!s.skip(size)) return false;
    m_.datas.push_back(std::move(seg));
  }
  return true;
}

// C.refs (https://webassembly.github.io/spec/core/valid/modules.html#valid-module):
// function indices that occur in the module outside function bodies and the
// start section. Out-of-range indices are left to validate_module to report.
void Decoder::collect_declared_refs() {
  m_.declared_refs.assign(m_.func_type_indices.size(), false);
  auto mark = [&](uint64_t idx) {
    if (idx < m_.declared_refs.size()) m_.declared_refs[idx] = true;
  };
  auto scan = [&](const ConstExpr& e) {
    for (const ConstInstr& in : e.code)
      if (in.op == ConstInstr::Op::RefFunc) mark(in.value);
  };
  for (const Global& g : m_.globals) scan(g.init);
  for (const ElemSegment& seg : m_.elems) {
    scan(seg.offset);
    for (const ConstExpr& item : seg.items) scan(item);
  }
  for (const DataSegment& seg : m_.datas) scan(seg.offset);
  for (const Export& e : m_.exports)
    if (e.kind == ExternKind::Func) mark(e.index);
}

}  // namespace

Result<std::unique_ptr<Module>> decode_module(std::vector<uint8_t> bytes, const Features& features) {
  auto module = std::make_unique<Module>();
  module->bytes = std::move(bytes);
  module->features = features;
  Decoder d(*module);
  Status st = d.run();
  if (!st.ok()) return st.error();
  return module;
}

}  // namespace wzvm::vm
