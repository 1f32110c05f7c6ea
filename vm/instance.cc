// Runtime objects and instantiation
// (https://webassembly.github.io/spec/core/exec/runtime.html,
//  https://webassembly.github.io/spec/core/exec/modules.html).
// Store::invoke, Store::thread and the interpreter itself live in vm/interp.cc.

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vm/interp.h"
#include "vm/runtime.h"

namespace wzvm::vm {

namespace {

constexpr uint64_t kPageSize = 64 * 1024;
constexpr uint64_t kMaxPages32 = 65536;  // 4 GiB: the whole 32-bit address space
// Tables hold 8 bytes per entry in a std::vector; without a cap a module could
// ask for 2^32 entries (32 GiB) and take the host down with bad_alloc. V8 uses
// the same cap of 10 million entries.
constexpr uint64_t kMaxTableElems = 10'000'000;

Error link_error(std::string message) {
  Error e;
  e.kind = Error::Kind::Link;
  e.message = std::move(message);
  e.section = "import";
  return e;
}

// A module that asks for more than the host allows (StoreLimits, the table
// cap): refused before anything is allocated or run. Kind Link, not
// Instantiate: nothing trapped, the module cannot be linked in this store.
Error limit_error(const char* section, std::string message) {
  Error e;
  e.kind = Error::Kind::Link;
  e.message = std::move(message);
  e.section = section;
  return e;
}

Error instantiate_error(std::string message) {
  Error e;
  e.kind = Error::Kind::Instantiate;
  e.message = std::move(message);
  return e;
}

Error host_out_of_memory() {
  Error e = instantiate_error(trap_message(TrapCode::HostOutOfMemory));
  e.host_out_of_memory = true;
  return e;
}

// --- Constant expressions ---------------------------------------------------
// https://webassembly.github.io/spec/core/valid/instructions.html#constant-expressions
// The validator has already checked types and indices; the checks here only
// keep a hand-built or buggy Module from reading out of bounds.

Result<Value> eval_const(const ConstExpr& expr, const Instance& inst) {
  Value stack[8];            // extended-const nests binary ops, but validated exprs rarely go deep
  std::vector<Value> spill;  // used only when an expression is deeper than `stack`
  size_t sp = 0;
  auto push = [&](const Value& v) {
    if (sp < std::size(stack)) {
      stack[sp] = v;
    } else {
      spill.push_back(v);
    }
    ++sp;
  };
  auto pop = [&]() -> Value {
    --sp;
    if (sp < std::size(stack)) return stack[sp];
    Value v = spill.back();
    spill.pop_back();
    return v;
  };
  auto bad = [&](const char* what) {
    Error e = instantiate_error(std::string("invalid constant expression: ") + what);
    e.offset = expr.offset;
    return e;
  };

  for (const ConstInstr& in : expr.code) {
    using Op = ConstInstr::Op;
    switch (in.op) {
      case Op::I32Const:
        push(Value::from_i32(static_cast<uint32_t>(in.value)));
        break;
      case Op::I64Const:
        push(Value::from_i64(in.value));
        break;
      case Op::F32Const:
        push(Value::from_f32_bits(static_cast<uint32_t>(in.value)));
        break;
      case Op::F64Const:
        push(Value::from_f64_bits(in.value));
        break;
      case Op::V128Const: {
        Value v;
        v.type = ValType::V128;
        std::memcpy(v.v128, &in.value, 8);
        std::memcpy(v.v128 + 8, &in.value_hi, 8);
        push(v);
        break;
      }
      case Op::RefNull:
        push(Value::from_ref(in.ref_type, 0));
        break;
      case Op::RefFunc:
        if (in.value >= inst.funcs.size()) return bad("unknown function");
        push(Value::from_ref(ValType::FuncRef, reinterpret_cast<Ref>(inst.funcs[in.value])));
        break;
      case Op::GlobalGet: {
        // Only globals already allocated are visible: imported ones in wasm 2.0
        // (and earlier defined ones under extended-const/GC rules).
        if (in.value >= inst.globals.size()) return bad("unknown global");
        const GlobalInst& g = *inst.globals[in.value];
        Value v;
        v.type = g.type.type;
        if (g.type.type == ValType::V128) {
          std::memcpy(v.v128, &g.value, 8);
          std::memcpy(v.v128 + 8, &g.value_hi, 8);
        } else {
          v.i64 = g.value;
        }
        push(v);
        break;
      }
      case Op::I32Add:
      case Op::I32Sub:
      case Op::I32Mul: {
        if (sp < 2) return bad("stack underflow");
        uint32_t b = pop().i32, a = pop().i32;
        uint32_t r = in.op == Op::I32Add ? a + b : in.op == Op::I32Sub ? a - b : a * b;
        push(Value::from_i32(r));
        break;
      }
      case Op::I64Add:
      case Op::I64Sub:
      case Op::I64Mul: {
        if (sp < 2) return bad("stack underflow");
        uint64_t b = pop().i64, a = pop().i64;
        uint64_t r = in.op == Op::I64Add ? a + b : in.op == Op::I64Sub ? a - b : a * b;
        push(Value::from_i64(r));
        break;
      }
      default:
        return bad("unsupported instruction");
    }
  }
  if (sp != 1) return bad("expected one value");
  return pop();
}

// The slot form of a value, as GlobalInst and the interpreter keep it: i32/f32
// zero-extended, refs as their pointer bits.
void store_value(GlobalInst& g, const Value& v) {
  if (v.type == ValType::V128) {
    std::memcpy(&g.value, v.v128, 8);
    std::memcpy(&g.value_hi, v.v128 + 8, 8);
  } else {
    g.value = v.i64;
    g.value_hi = 0;
  }
}

// A segment offset: i32 in wasm 2.0 (i64 for memory64), always unsigned.
uint64_t offset_of(const Value& v) { return v.type == ValType::I64 ? v.i64 : v.i32; }

// https://webassembly.github.io/spec/core/valid/types.html#import-subtyping
// `cur_min` is the instance's current size: growing updates the instance's
// type, so a grown table or memory may satisfy a larger declared minimum.
bool limits_match(uint64_t cur_min, const std::optional<uint64_t>& cur_max, const Limits& want) {
  if (cur_min < want.min) return false;
  if (want.max) {
    if (!cur_max || *cur_max > *want.max) return false;
  }
  return true;
}

std::string describe_limits(uint64_t min, const std::optional<uint64_t>& max) {
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on `" " + to_string(...)`.
  std::string s = std::to_string(min);
  if (max) {
    s += ' ';
    s += std::to_string(*max);
  }
  return s;
}

}  // namespace

// --- MemInst ------------------------------------------------------------------

MemInst::MemInst(const MemoryType& t, uint64_t page_cap) : type(t) {
  const uint64_t min = type.limits.min;
  // memory64 memories too stop at 4 GiB for now: the interpreter narrows
  // 64-bit addresses to 32 bits after checking them (Addr64, Narrow64 in
  // vm/interp.cc), which is exact only while no memory is larger.
  const uint64_t hard = kMaxPages32;
  if (min > hard) return;  // cannot be represented: ok() is false
  uint64_t max = std::min({type.limits.max.value_or(hard), page_cap, hard});
  // The cap limits growth only; an initial size the module insists on is honoured
  // (or fails below when the host cannot map it).
  max = std::max(max, min);
  max_pages = max;
  if (max == 0) return;  // a memory that can never hold a byte needs no mapping

  // Reserve the whole maximum up front so `data` never moves: the interpreter
  // caches the base pointer across calls that may grow memory. PROT_NONE with
  // MAP_NORESERVE costs address space only, not commit charge.
  uint64_t want = max * kPageSize;
  const uint64_t need = min * kPageSize;
  void* p = MAP_FAILED;
  while (true) {
    p = mmap(nullptr, static_cast<size_t>(want), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0);
    if (p != MAP_FAILED) break;
    // Address space is finite (many instances, ulimit -v): settle for less and
    // let grow fail past it, which wasm permits (memory.grow may return -1).
    if (want <= need || want <= kPageSize) return;
    want = std::max(need, (want / 2) & ~(kPageSize - 1));
  }
  if (need > 0 && mprotect(p, static_cast<size_t>(need), PROT_READ | PROT_WRITE) != 0) {
    munmap(p, static_cast<size_t>(want));
    return;
  }
  data = static_cast<uint8_t*>(p);
  reserved = static_cast<size_t>(want);
  max_pages = want / kPageSize;  // truthful after a fallback to a smaller reservation
  size = need;
}

MemInst::~MemInst() {
  if (data) munmap(data, reserved);
}

int64_t MemInst::grow(uint64_t delta_pages) {
  // Only a shared memory can be grown by two threads; the lock is uncontended otherwise.
  std::lock_guard lock(grow_mu);
  const uint64_t old_pages = pages();
  if (delta_pages > max_pages - old_pages) return -1;  // max_pages >= old_pages always
  if (delta_pages == 0) return static_cast<int64_t>(old_pages);
  const uint64_t new_size = (old_pages + delta_pages) * kPageSize;
  if (!data || new_size > reserved) return -1;
  // Fresh anonymous pages read as zero, as memory.grow requires.
  if (mprotect(data + size, static_cast<size_t>(new_size - size), PROT_READ | PROT_WRITE) != 0) return -1;
  __atomic_store_n(&size, new_size, __ATOMIC_RELEASE);  // after mprotect: see current_size()
  type.limits.min = old_pages + delta_pages;            // the instance's type tracks its size (spec: growmem)
  return static_cast<int64_t>(old_pages);
}

// --- TableInst ----------------------------------------------------------------

int64_t TableInst::grow(uint64_t delta, Ref init) {
  const uint64_t old = elems.size();
  const uint64_t limit = std::min<uint64_t>(type.limits.max.value_or(UINT32_MAX), UINT32_MAX);
  if (delta > limit - std::min(limit, old)) return -1;
  if (old + delta > kMaxTableElems) return -1;
  if (delta == 0) return static_cast<int64_t>(old);
  try {
    elems.resize(old + delta, init);
  } catch (const std::bad_alloc&) {
    return -1;  // table.grow is allowed to fail; never let the host die of it
  }
  type.limits.min = old + delta;
  return static_cast<int64_t>(old);
}

// --- Instance -------------------------------------------------------------------

FuncInst* Instance::exported_func(const std::string& name) const {
  auto it = exports.find(name);
  return it != exports.end() && it->second.kind == ExternKind::Func ? it->second.func : nullptr;
}

MemInst* Instance::exported_memory(const std::string& name) const {
  auto it = exports.find(name);
  return it != exports.end() && it->second.kind == ExternKind::Memory ? it->second.memory : nullptr;
}

GlobalInst* Instance::exported_global(const std::string& name) const {
  auto it = exports.find(name);
  return it != exports.end() && it->second.kind == ExternKind::Global ? it->second.global : nullptr;
}

TableInst* Instance::exported_table(const std::string& name) const {
  auto it = exports.find(name);
  return it != exports.end() && it->second.kind == ExternKind::Table ? it->second.table : nullptr;
}

// --- Store ----------------------------------------------------------------------

Store::Store(StoreLimits limits) : limits_(limits), thread_(std::make_unique<Thread>(limits_)) {}

Store::~Store() = default;

template <class T>
T* Store::keep(std::vector<std::unique_ptr<T>>& list, std::unique_ptr<T> item) {
  std::lock_guard lock(mu_);
  list.push_back(std::move(item));
  return list.back().get();
}

uint32_t Store::intern_type(const FuncType& type) {
  std::lock_guard lock(mu_);
  // Linear: a store sees few distinct signatures, and interning happens at
  // instantiation, never on the call path (call_indirect compares ids).
  for (size_t i = 0; i < types_.size(); ++i) {
    if (types_[i] == type) return static_cast<uint32_t>(i);
  }
  types_.push_back(type);
  return static_cast<uint32_t>(types_.size() - 1);
}

FuncInst* Store::add_host_func(std::string module, std::string field, FuncType type, HostFn fn) {
  auto f = std::make_unique<FuncInst>();
  f->type_id = intern_type(type);
  f->type = std::move(type);
  f->host = std::move(fn);
  f->host_module = std::move(module);
  f->host_field = std::move(field);
  return keep(funcs_, std::move(f));
}

MemInst* Store::add_memory(const MemoryType& type) {
  if (type.limits.min > limits_.max_memory_pages) return nullptr;
  auto m = std::make_unique<MemInst>(type, limits_.max_memory_pages);
  if (!m->ok()) return nullptr;
  return keep(memories_, std::move(m));
}

TableInst* Store::add_table(const TableType& type, Ref init) {
  if (type.limits.min > kMaxTableElems) return nullptr;
  auto t = std::make_unique<TableInst>();
  t->type = type;
  try {
    t->elems.assign(type.limits.min, init);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return keep(tables_, std::move(t));
}

GlobalInst* Store::add_global(const GlobalType& type, uint64_t value, uint64_t value_hi) {
  auto g = std::make_unique<GlobalInst>();
  g->type = type;
  g->value = value;
  g->value_hi = value_hi;
  return keep(globals_, std::move(g));
}

TagInst* Store::add_tag(const FuncType& type) {
  auto t = std::make_unique<TagInst>();
  t->type = type;
  for (ValType v : type.params) t->slots += slot_count(v);
  return keep(tags_, std::move(t));
}

FuncInst* Store::add_wasm_func(Instance* inst, uint32_t func_index) {
  const Module& m = *inst->module;
  auto f = std::make_unique<FuncInst>();
  f->type = m.func_type(func_index);
  f->type_id = intern_type(f->type);
  f->instance = inst;
  f->func_index = func_index;
  f->module_type = m.canonical_type(m.func_type_indices[func_index]);
  const size_t defined = func_index - m.num_imported_funcs;
  // `code` is empty only for a module that skipped compile_functions (hand-built
  // in tests); such a function cannot run, and is_host() would misreport it, but
  // nothing calls it.
  if (defined < m.code.size()) f->code = &m.code[defined];
  if (func_index < m.call_hooks.size()) f->call_hook = m.call_hooks[func_index];
  return keep(funcs_, std::move(f));
}

namespace {

// Instantiation step 1 for one import: the extern given for it has its
// declared type.
Status check_import(Store& store, const Module& m, const Import& imp, const Extern& ext) {
  const std::string what = "incompatible import type for \"" + imp.module + "\".\"" + imp.field + "\": ";
  if (ext.kind != imp.kind) {
    return link_error(what + "expected " + extern_kind_name(imp.kind) + ", got " +
                      extern_kind_name(ext.kind));
  }
  switch (imp.kind) {
    case ExternKind::Func: {
      if (!ext.func) return link_error(what + "missing function");
      const FuncType& want = m.types[imp.func_type];
      if (ext.func->type_id != store.intern_type(want)) {
        return link_error(what + "expected " + want.to_string() + ", got " + ext.func->type.to_string());
      }
      break;
    }
    case ExternKind::Table: {
      if (!ext.table) return link_error(what + "missing table");
      const TableType& want = imp.table;
      const TableType& have = ext.table->type;
      if (have.elem != want.elem) {
        return link_error(what + "expected " + valtype_name(want.elem) + " table, got " +
                          valtype_name(have.elem));
      }
      if (!limits_match(ext.table->elems.size(), have.limits.max, want.limits)) {
        return link_error(what + "expected table limits " +
                          describe_limits(want.limits.min, want.limits.max) + ", got " +
                          describe_limits(ext.table->elems.size(), have.limits.max));
      }
      break;
    }
    case ExternKind::Memory: {
      if (!ext.memory) return link_error(what + "missing memory");
      const Limits& want = imp.memory.limits;
      const Limits& have = ext.memory->type.limits;
      if (have.shared != want.shared || have.is64 != want.is64) {
        return link_error(what + "shared or index type differs");
      }
      if (!limits_match(ext.memory->pages(), have.max, want)) {
        return link_error(what + "expected memory limits " + describe_limits(want.min, want.max) + ", got " +
                          describe_limits(ext.memory->pages(), have.max));
      }
      break;
    }
    case ExternKind::Global: {
      if (!ext.global) return link_error(what + "missing global");
      const GlobalType& want = imp.global;
      const GlobalType& have = ext.global->type;
      if (have.type != want.type || have.mut != want.mut) {
        return link_error(what + "expected " + (want.mut ? "mut " : "") + valtype_name(want.type) + ", got " +
                          (have.mut ? "mut " : "") + valtype_name(have.type));
      }
      break;
    }
    case ExternKind::Tag: {
      if (!ext.tag) return link_error(what + "missing tag");
      const FuncType& want = m.types[imp.tag_type];
      if (ext.tag->type != want)
        return link_error(what + "expected tag " + want.to_string() + ", got " + ext.tag->type.to_string());
      break;
    }
  }
  return Status();
}

// Instantiation step 3: the exports, by name.
Status add_exports(const Module& m, Instance& inst) {
  for (const Export& e : m.exports) {
    Extern ext;
    ext.kind = e.kind;
    bool in_range = false;
    switch (e.kind) {
      case ExternKind::Func:
        if ((in_range = e.index < inst.funcs.size())) ext.func = inst.funcs[e.index];
        break;
      case ExternKind::Table:
        if ((in_range = e.index < inst.tables.size())) ext.table = inst.tables[e.index];
        break;
      case ExternKind::Memory:
        if ((in_range = e.index < inst.memories.size())) ext.memory = inst.memories[e.index];
        break;
      case ExternKind::Global:
        if ((in_range = e.index < inst.globals.size())) ext.global = inst.globals[e.index];
        break;
      case ExternKind::Tag:
        if ((in_range = e.index < inst.tags.size())) ext.tag = inst.tags[e.index];
        break;
    }
    if (!in_range)
      return instantiate_error("export \"" + e.name + "\" names an unknown " + extern_kind_name(e.kind));
    inst.exports[e.name] = ext;
  }
  return Status();
}

// Instantiation steps 4 and 5: segment instances, then active segments
// written to their tables and memories.
Status init_segments(const Module& m, Instance& inst) {
  // 4. Segment instances. Element items are evaluated now (spec step 9-10),
  // before any segment is written.
  inst.elems.resize(m.elems.size());
  for (size_t i = 0; i < m.elems.size(); ++i) {
    const ElemSegment& seg = m.elems[i];
    ElemInst& ei = inst.elems[i];
    ei.type = seg.type;
    ei.refs.reserve(seg.items.size());
    for (const ConstExpr& item : seg.items) {
      Result<Value> v = eval_const(item, inst);
      if (!v) return v.error();
      ei.refs.push_back(v->ref);
    }
  }
  inst.datas.resize(m.datas.size());
  for (size_t i = 0; i < m.datas.size(); ++i) {
    const DataSegment& seg = m.datas[i];
    // The decoder guarantees the range; checked again in 64 bits so a hand-built
    // Module cannot make memory.init read past the binary.
    if (static_cast<uint64_t>(seg.data_offset) + seg.size > m.bytes.size()) {
      return instantiate_error("data segment " + std::to_string(i) + " lies outside the module");
    }
    inst.datas[i].bytes = m.bytes.data() + seg.data_offset;
    inst.datas[i].size = seg.size;
  }

  // 5. Initialise tables, then memories, segment by segment (wasm 2.0: each
  // active segment is a table.init/memory.init followed by a drop, so a failing
  // segment traps without writing and earlier ones stay written).
  for (size_t i = 0; i < m.elems.size(); ++i) {
    const ElemSegment& seg = m.elems[i];
    ElemInst& ei = inst.elems[i];
    if (seg.mode == SegmentMode::Active) {
      if (seg.table >= inst.tables.size()) return instantiate_error("element segment names an unknown table");
      Result<Value> off = eval_const(seg.offset, inst);
      if (!off) return off.error();
      TableInst& table = *inst.tables[seg.table];
      const uint64_t start = offset_of(*off);
      const uint64_t n = ei.refs.size();
      // start < 2^64 and n < 2^32: the sum cannot wrap.
      if (start > table.elems.size() || n > table.elems.size() - start) {
        return instantiate_error(trap_message(TrapCode::TableOutOfBounds));
      }
      std::copy(ei.refs.begin(), ei.refs.end(), table.elems.begin() + static_cast<ptrdiff_t>(start));
    }
    if (seg.mode != SegmentMode::Passive) {
      ei.refs.clear();
      ei.refs.shrink_to_fit();
    }
  }
  for (size_t i = 0; i < m.datas.size(); ++i) {
    const DataSegment& seg = m.datas[i];
    DataInst& di = inst.datas[i];
    if (seg.mode != SegmentMode::Active) continue;
    if (seg.memory >= inst.memories.size()) return instantiate_error("data segment names an unknown memory");
    Result<Value> off = eval_const(seg.offset, inst);
    if (!off) return off.error();
    MemInst& mem = *inst.memories[seg.memory];
    const uint64_t start = offset_of(*off);
    if (start > mem.size || di.size > mem.size - start) {
      return instantiate_error(trap_message(TrapCode::MemoryOutOfBounds));
    }
    if (di.size > 0) std::memcpy(mem.data + start, di.bytes, di.size);
    di.size = 0;
  }
  return Status();
}

}  // namespace

Instance* Store::add_instance(std::shared_ptr<const Module> module) {
  auto inst = std::make_unique<Instance>();
  inst->module = std::move(module);
  return keep(instances_, std::move(inst));
}

// https://webassembly.github.io/spec/core/exec/modules.html#instantiation
Result<Instance*> Store::instantiate(std::shared_ptr<const Module> module,
                                     const std::vector<Extern>& imports) {
  const Module& m = *module;
  needs_counting_ |= m.needs_counting;

  // 1. Imports: one extern per import, each matching its declared type.
  if (imports.size() != m.imports.size()) {
    return link_error("wrong number of imports: expected " + std::to_string(m.imports.size()) + ", got " +
                      std::to_string(imports.size()));
  }
  for (size_t i = 0; i < imports.size(); ++i)
    if (Status s = check_import(*this, m, m.imports[i], imports[i]); !s) return s.error();

  // 2. Allocate the instance: imports first in each index space, then definitions.
  Instance* inst = add_instance(module);
  inst->type_ids.reserve(m.types.size());
  for (const FuncType& t : m.types) inst->type_ids.push_back(intern_type(t));

  for (const Extern& ext : imports) {
    switch (ext.kind) {
      case ExternKind::Func:
        inst->funcs.push_back(ext.func);
        break;
      case ExternKind::Table:
        inst->tables.push_back(ext.table);
        break;
      case ExternKind::Memory:
        inst->memories.push_back(ext.memory);
        break;
      case ExternKind::Global:
        inst->globals.push_back(ext.global);
        break;
      case ExternKind::Tag:
        inst->tags.push_back(ext.tag);
        break;
    }
  }
  // All functions exist before any constant expression runs: ref.func in a
  // global initialiser may name any function of this instance.
  const uint32_t num_funcs = m.num_imported_funcs + static_cast<uint32_t>(m.functions.size());
  for (uint32_t i = m.num_imported_funcs; i < num_funcs; ++i) inst->funcs.push_back(add_wasm_func(inst, i));

  // Sizes are checked against the limits before anything is allocated, so an
  // absurd module gets an error that names the limit, not "out of host memory".
  for (size_t i = 0; i < m.tables.size(); ++i) {
    if (m.tables[i].limits.min > kMaxTableElems)
      return limit_error("table", "table " + std::to_string(m.num_imported_tables + i) +
                                      ": initial size of " + std::to_string(m.tables[i].limits.min) +
                                      " entries exceeds the limit of " + std::to_string(kMaxTableElems));
  }
  for (size_t i = 0; i < m.memories.size(); ++i) {
    if (m.memories[i].limits.min > limits_.max_memory_pages)
      return limit_error("memory", "memory " + std::to_string(m.num_imported_memories + i) +
                                       ": initial size of " + std::to_string(m.memories[i].limits.min) +
                                       " pages exceeds the limit of " +
                                       std::to_string(limits_.max_memory_pages) + " pages (" +
                                       std::to_string(limits_.max_memory_pages * kPageSize) + " bytes)");
  }
  for (const TableType& t : m.tables) {
    TableInst* table = add_table(t, 0);
    if (!table) return host_out_of_memory();
    inst->tables.push_back(table);
  }
  for (const MemoryType& t : m.memories) {
    MemInst* mem = add_memory(t);
    if (!mem) return host_out_of_memory();
    inst->memories.push_back(mem);
  }
  for (uint32_t t : m.tags) inst->tags.push_back(add_tag(m.types[t]));
  for (const Global& g : m.globals) {
    Result<Value> v = eval_const(g.init, *inst);
    if (!v) return v.error();
    GlobalInst* gi = add_global(g.type, 0);
    store_value(*gi, *v);
    inst->globals.push_back(gi);
  }

  // 3. Exports.
  if (Status st = add_exports(m, *inst); !st) return st.error();

  // 4, 5. Segments.
  if (Status st = init_segments(m, *inst); !st) return st.error();

  // 6. The start function.
  if (m.start) {
    if (*m.start >= inst->funcs.size()) return instantiate_error("start function is unknown");
    std::vector<Value> results;
    Trap trap = invoke(inst->funcs[*m.start], {}, results);
    if (trap) {
      Error e = instantiate_error(trap.message);
      e.function = *m.start;
      e.host_out_of_memory = trap.code == TrapCode::HostOutOfMemory;
      return e;
    }
  }
  return inst;
}

}  // namespace wzvm::vm
