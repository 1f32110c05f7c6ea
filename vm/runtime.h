#pragma once
// Runtime objects (https://webassembly.github.io/spec/core/exec/runtime.html):
// a Store owns function, table, memory and global instances and module
// instances; `instantiate` links a Module against imports; `invoke` runs a
// function. Host functions (WASI, the spec tests' `spectest`, embedders) are
// FuncInsts with a C++ callable, all entered through one boundary in
// vm/interp.cc where the profiler's host-call hook sits.

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "vm/module.h"

namespace wzvm::vm {

// A reference value: 0 is null. A funcref is a FuncInst*; an externref is an
// opaque host value chosen by the embedder (non-zero).
using Ref = uintptr_t;

enum class TrapCode : uint8_t {
  None = 0,
#define WZVM_TRAP(Name, Message) Name,
#include "vm/traps.def"
#undef WZVM_TRAP
};
const char* trap_message(TrapCode code);

// A typed value at the API boundary (inside the interpreter values are untyped slots).
struct Value {
  ValType type = ValType::I32;
  union {
    uint32_t i32;
    uint64_t i64;
    float f32;
    double f64;
    Ref ref;
    uint8_t v128[16];
  };
  Value() : i64(0) { std::memset(v128, 0, 16); }
  static Value from_i32(uint32_t v) {
    Value x;
    x.type = ValType::I32;
    x.i32 = v;
    return x;
  }
  static Value from_i64(uint64_t v) {
    Value x;
    x.type = ValType::I64;
    x.i64 = v;
    return x;
  }
  static Value from_f32_bits(uint32_t b) {
    Value x;
    x.type = ValType::F32;
    x.i32 = b;
    return x;
  }
  static Value from_f64_bits(uint64_t b) {
    Value x;
    x.type = ValType::F64;
    x.i64 = b;
    return x;
  }
  static Value from_ref(ValType t, Ref r) {
    Value x;
    x.type = t;
    x.ref = r;
    return x;
  }
  static Value zero(ValType t) {
    Value x;
    x.type = t;
    return x;
  }
};

struct FrameInfo {
  uint32_t func_index = 0;  // in its module
  std::string name;         // best name (name section, export, wasm-function[N])
  int64_t offset = -1;      // byte offset in the module of the current instruction, -1 if unknown
};

// The result of running code: TrapCode::None, a trap with its backtrace
// (innermost frame first), or an Exit with a status (WASI proc_exit).
struct Trap {
  TrapCode code = TrapCode::None;
  std::string message;  // spec message, or the host's message for HostError
  int exit_code = 0;    // for Exit
  std::vector<FrameInfo> backtrace;
  explicit operator bool() const { return code != TrapCode::None; }
  static Trap make(TrapCode c, std::string msg = {}) {
    Trap t;
    t.code = c;
    t.message = msg.empty() ? trap_message(c) : std::move(msg);
    return t;
  }
};

struct Instance;
struct MemInst;
class Store;

// What a host function sees of its caller.
struct HostContext {
  Store& store;
  Instance* caller;  // the instance whose code made the call (nullptr when invoked from the API)
  MemInst* memory;   // caller's memory 0, or nullptr
};

using HostFn = std::function<Trap(HostContext& ctx, std::span<const Value> args, std::span<Value> results)>;

struct FuncInst {
  FuncType type;
  uint32_t type_id = 0;                // canonical id in the Store: equal ids <=> equal types
  Instance* instance = nullptr;        // defining instance (nullptr for host functions)
  const CompiledFunc* code = nullptr;  // wasm functions
  uint32_t func_index = 0;             // index in the defining module
  uint8_t call_hook = 0;               // Module::call_hooks: reported while profiling
  // Its type's index in its module, the first of equal ones
  // (Module::canonical_types); UINT32_MAX for host functions. A
  // call_indirect to a function of the running instance compares it with
  // the op's type word (vm/interp.cc, CallTable).
  uint32_t module_type = UINT32_MAX;
  HostFn host;                          // host functions
  std::string host_module, host_field;  // host functions: the import names they were created for
  bool is_host() const { return code == nullptr; }
};

struct MemInst {
  MemoryType type;
  uint8_t* data = nullptr;  // base of the reservation; never moves
  uint64_t size = 0;        // current size in bytes (see current_size)
  uint64_t max_pages = 0;   // effective maximum (type's max, capped by the implementation)
  size_t reserved = 0;      // bytes reserved (mapped PROT_NONE beyond `size`)
  std::mutex grow_mu;       // threads: two threads growing a shared memory take turns

  // Allocates type.limits.min pages; check ok(). `page_cap` is the implementation's
  // limit on growth (StoreLimits::max_memory_pages); it never refuses the initial size.
  MemInst(const MemoryType& type, uint64_t page_cap = 65536);
  ~MemInst();
  MemInst(const MemInst&) = delete;
  MemInst& operator=(const MemInst&) = delete;
  bool ok() const { return data != nullptr || type.limits.min == 0; }
  uint64_t pages() const { return current_size() >> 16; }
  // threads: a shared memory may grow in another thread. The size is
  // published with release after the new pages are accessible, and read
  // with acquire: whoever sees the new size can use the new pages.
  uint64_t current_size() const { return __atomic_load_n(&size, __ATOMIC_ACQUIRE); }
  // memory.grow: returns the old size in pages, or -1 when it cannot grow.
  int64_t grow(uint64_t delta_pages);
};

struct TableInst {
  TableType type;
  std::vector<Ref> elems;
  // table.grow: returns the old size, or -1.
  int64_t grow(uint64_t delta, Ref init);
};

struct GlobalInst {
  GlobalType type;
  uint64_t value = 0;     // one slot, as in the interpreter
  uint64_t value_hi = 0;  // upper half of a v128
};

struct ElemInst {
  ValType type = ValType::FuncRef;
  std::vector<Ref> refs;  // emptied by elem.drop
};

struct DataInst {
  const uint8_t* bytes = nullptr;
  uint32_t size = 0;  // set to 0 by data.drop
};

// exception-handling: a tag, the identity of an exception type. Two tags
// are the same only if they are the same TagInst (an import shares it).
struct TagInst {
  FuncType type;       // params: the exception's values; no results
  uint32_t slots = 0;  // value slots the params take
};

// An external value: what imports take and exports give.
struct Extern {
  ExternKind kind = ExternKind::Func;
  FuncInst* func = nullptr;
  TableInst* table = nullptr;
  MemInst* memory = nullptr;
  GlobalInst* global = nullptr;
  TagInst* tag = nullptr;
};

struct Instance {
  std::shared_ptr<const Module> module;
  std::vector<FuncInst*> funcs;
  std::vector<TableInst*> tables;
  std::vector<MemInst*> memories;
  std::vector<GlobalInst*> globals;
  std::vector<TagInst*> tags;
  std::vector<ElemInst> elems;
  std::vector<DataInst> datas;
  std::vector<uint32_t> type_ids;  // canonical Store id of each of the module's types
  std::unordered_map<std::string, Extern> exports;

  // Convenience lookups; nullptr when absent or of another kind.
  FuncInst* exported_func(const std::string& name) const;
  MemInst* exported_memory(const std::string& name) const;
  GlobalInst* exported_global(const std::string& name) const;
  TableInst* exported_table(const std::string& name) const;
};

struct StoreLimits {
  uint32_t max_call_depth = 20000;       // frames
  uint32_t value_stack_slots = 1 << 22;  // 32 MiB of 8-byte slots
  uint64_t max_memory_pages = 65536;     // 4 GiB
  // threads: the longest one memory.atomic.wait may block, in ns (-1: as
  // long as the guest asks). A guest alone can wait forever for a notify
  // that never comes; the fuzz targets set a cap so that cannot hang them.
  int64_t max_wait_ns = -1;
};

class Store {
 public:
  explicit Store(StoreLimits limits = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const StoreLimits& limits() const { return limits_; }
  // Some instance's code was lowered for counting without fuel
  // (Module::needs_counting): threads that do not count may not run wasm.
  bool needs_counting() const { return needs_counting_; }

  // Canonical id of a function type (structural equality).
  uint32_t intern_type(const FuncType& type);

  FuncInst* add_host_func(std::string module, std::string field, FuncType type, HostFn fn);
  MemInst* add_memory(const MemoryType& type);  // nullptr if it cannot be allocated
  TableInst* add_table(const TableType& type, Ref init = 0);
  GlobalInst* add_global(const GlobalType& type, uint64_t value, uint64_t value_hi = 0);
  TagInst* add_tag(const FuncType& type);

  // Link `module` against `imports` (one per module import, in order), run
  // segment initialisation and the start function. Link errors have
  // Error::Kind::Link; a trap during initialisation or start is returned as
  // Error::Kind::Instantiate with the trap message (the partly initialised
  // instance stays in the store, as the spec says).
  Result<Instance*> instantiate(std::shared_ptr<const Module> module, const std::vector<Extern>& imports);

  // Call a function (wasm or host). Arguments are checked against its type.
  Trap invoke(FuncInst* func, std::span<const Value> args, std::vector<Value>& results);

  // Interpreter state of the calling OS thread, owned here so the profiler
  // can read frames (vm/interp.h): the Store's own, unless this OS thread
  // runs with a ThreadScope for this store (threads: wasi-threads gives each
  // spawned thread its own value and frame stacks).
  struct Thread* thread();

 private:
  StoreLimits limits_;
  bool needs_counting_ = false;
  std::vector<std::unique_ptr<FuncInst>> funcs_;
  std::vector<std::unique_ptr<MemInst>> memories_;
  std::vector<std::unique_ptr<TableInst>> tables_;
  std::vector<std::unique_ptr<GlobalInst>> globals_;
  std::vector<std::unique_ptr<TagInst>> tags_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::vector<FuncType> types_;  // index = canonical id
  std::unique_ptr<struct Thread> thread_;
  // threads: several OS threads may instantiate (wasi-threads spawns an
  // instance per thread) while others run. Guards the vectors above; code
  // that runs never touches them.
  std::mutex mu_;
  template <class T>
  T* keep(std::vector<std::unique_ptr<T>>& list, std::unique_ptr<T> item);
  friend struct InstanceBuilder;

 public:
  // Used by instantiation (vm/instance.cc).
  FuncInst* add_wasm_func(Instance* inst, uint32_t func_index);
  Instance* add_instance(std::shared_ptr<const Module> module);
};

}  // namespace wzvm::vm
