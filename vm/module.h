#pragma once
// The decoded form of a WebAssembly module (https://webassembly.github.io/spec/core/syntax/modules.html).
// Produced by vm/decoder.cc, checked by vm/validate_module.cc (module level) and
// vm/lower/ (function bodies, which it also lowers to the internal code).
// A Module is immutable once loaded and may be instantiated many times.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vm/code.h"
#include "vm/result.h"

namespace wzvm::vm {

enum class ValType : uint8_t {
  I32 = 0x7F,
  I64 = 0x7E,
  F32 = 0x7D,
  F64 = 0x7C,
  V128 = 0x7B,
  FuncRef = 0x70,
  ExternRef = 0x6F,
};

const char* valtype_name(ValType t);
inline bool is_ref(ValType t) { return t == ValType::FuncRef || t == ValType::ExternRef; }
inline bool is_num(ValType t) { return !is_ref(t) && t != ValType::V128; }
// Value-stack slots (8 bytes each) a value of this type occupies.
inline uint32_t slot_count(ValType t) { return t == ValType::V128 ? 2 : 1; }
// Whether byte `b` encodes a value type (one of ValType's values).
inline bool is_valtype_byte(uint8_t b) {
  switch (static_cast<ValType>(b)) {
    case ValType::I32:
    case ValType::I64:
    case ValType::F32:
    case ValType::F64:
    case ValType::V128:
    case ValType::FuncRef:
    case ValType::ExternRef:
      return true;
  }
  return false;
}

struct FuncType {
  std::vector<ValType> params;
  std::vector<ValType> results;
  bool operator==(const FuncType&) const = default;
  std::string to_string() const;  // "(i32, i64) -> (f32)"
};

struct Limits {
  uint64_t min = 0;
  std::optional<uint64_t> max;
  bool shared = false;  // threads proposal
  bool is64 = false;    // memory64 proposal
};

struct TableType {
  ValType elem = ValType::FuncRef;
  Limits limits;
};

struct MemoryType {
  Limits limits;  // in 64 KiB pages
};

struct GlobalType {
  ValType type = ValType::I32;
  bool mut = false;
};

enum class ExternKind : uint8_t {
  Func = 0,
  Table = 1,
  Memory = 2,
  Global = 3,
  Tag = 4 /* exception-handling */
};
const char* extern_kind_name(ExternKind k);

// A constant expression (global initialisers, segment offsets, element items),
// https://webassembly.github.io/spec/core/valid/instructions.html#constant-expressions.
struct ConstInstr {
  enum class Op : uint8_t {
    I32Const,
    I64Const,
    F32Const,
    F64Const,
    V128Const,
    RefNull,
    RefFunc,
    GlobalGet,
    // extended-const proposal
    I32Add,
    I32Sub,
    I32Mul,
    I64Add,
    I64Sub,
    I64Mul
  };
  Op op;
  ValType ref_type = ValType::FuncRef;  // for RefNull
  uint64_t value = 0;                   // constant bits, or function / global index
  uint64_t value_hi = 0;                // upper half of a v128 constant
};
// A constant expression's instructions. Nearly every one has a single
// instruction (an element item's ref.func, an offset's i32.const), kept
// inline: a vector per expression was an allocation per element item
// (Go's encoding/json test binary: 100 K items; 45 M host instructions
// decoding, validating and freeing them, of 1,082 M for loading it).
// Two or more (extended-const) are all in `more_`.
class ConstCode {
 public:
  void push_back(const ConstInstr& in) {
    if (n_ == 0) {
      first_ = in;
    } else {
      if (n_ == 1) more_.push_back(first_);
      more_.push_back(in);
    }
    ++n_;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const ConstInstr* begin() const { return n_ <= 1 ? &first_ : more_.data(); }
  const ConstInstr* end() const { return begin() + n_; }
  const ConstInstr& operator[](size_t i) const { return begin()[i]; }
  const ConstInstr& back() const { return begin()[n_ - 1]; }
  ConstInstr* begin() { return n_ <= 1 ? &first_ : more_.data(); }
  ConstInstr* end() { return begin() + n_; }
  ConstInstr& operator[](size_t i) { return begin()[i]; }

 private:
  ConstInstr first_{};
  std::vector<ConstInstr> more_;
  uint32_t n_ = 0;
};
struct ConstExpr {
  ConstCode code;
  uint32_t offset = 0;  // byte offset of the expression in the module, for errors
};

struct Import {
  std::string module;
  std::string field;
  ExternKind kind = ExternKind::Func;
  uint32_t func_type = 0;  // kind == Func: type index
  TableType table;         // kind == Table
  MemoryType memory;       // kind == Memory
  GlobalType global;       // kind == Global
  uint32_t tag_type = 0;   // kind == Tag: type index (exception-handling)
};

struct Function {
  uint32_t type_index = 0;
  std::vector<ValType> locals;  // declared locals (not params), expanded
  uint32_t body_offset = 0;     // offset in Module::bytes of the first instruction
  uint32_t body_end = 0;        // offset just past the final `end`
};

struct Global {
  GlobalType type;
  ConstExpr init;
};

struct Export {
  std::string name;
  ExternKind kind = ExternKind::Func;
  uint32_t index = 0;
};

enum class SegmentMode : uint8_t { Active, Passive, Declarative };

struct ElemSegment {
  SegmentMode mode = SegmentMode::Active;
  uint32_t table = 0;
  ConstExpr offset;  // Active only
  ValType type = ValType::FuncRef;
  std::vector<ConstExpr> items;  // each yields one reference (ref.func / ref.null / global.get)
};

struct DataSegment {
  SegmentMode mode = SegmentMode::Active;  // Active or Passive
  uint32_t memory = 0;
  ConstExpr offset;          // Active only
  uint32_t data_offset = 0;  // bytes in Module::bytes
  uint32_t size = 0;
};

struct CustomSection {
  std::string name;
  uint32_t offset = 0;  // payload (after the name) in Module::bytes
  uint32_t size = 0;
};

// The "name" custom section (https://webassembly.github.io/spec/core/appendix/custom.html).
struct Names {
  std::string module;
  std::map<uint32_t, std::string> functions;
  std::map<uint32_t, std::map<uint32_t, std::string>> locals;
};

// Proposals beyond wasm 2.0 that a module may use (vm/features.def).
enum class Feature : uint8_t {
#define WZVM_FEATURE(Id, ...) Id,
#include "vm/features.def"
#undef WZVM_FEATURE
};

struct FeatureInfo {
  Feature id;
  const char* name;   // --enable-<name>
  const char* alias;  // wabt's flag name, or ""
  bool implemented;
  bool default_on;
};
// Every row of vm/features.def, in order.
std::span<const FeatureInfo> feature_table();
// The row whose name or alias is `name`; nullptr if none.
const FeatureInfo* find_feature(std::string_view name);

// A set of enabled proposals. Default-constructed: the DefaultOn column
// (what `wzvm` runs with); wasm2() is plain WebAssembly 2.0 (the spec runner's
// starting point); all() is every implemented proposal (--enable-all).
struct Features {
  uint32_t bits = default_bits();
  bool has(Feature f) const { return (bits >> static_cast<unsigned>(f)) & 1; }
  void set(Feature f, bool on) {
    if (on) bits |= 1u << static_cast<unsigned>(f);
    else bits &= ~(1u << static_cast<unsigned>(f));
  }
  static Features wasm2() { return Features{0}; }
  static Features all();
  static uint32_t default_bits();
};

struct Module;

// A function body the VM knows by heart (vm/known_bodies.def): in plain
// code, Go's run as one op at their direct calls, wasi-libc's as one op at
// their own entry (vm/lower/function_compiler.cc, begin_known_body).
enum class KnownBody : uint8_t {
  None,
  GoMul64,       // Go's math/bits.Mul64
  GoMulAddWWW,   // Go's math/big.mulAddWWW_g
  GoAddMulVVW,   // Go's math/big.addMulVVW_g
  GoMulAddVWW,   // Go's math/big.mulAddVWW_g
  LibcMemcpy,    // wasi-libc's memcpy (musl's C one)
  LibcMemmove,   // wasi-libc's memmove
  LibcMemset,    // wasi-libc's memset
  LibcMemcmp,    // wasi-libc's memcmp
  LibcStrlen,    // wasi-libc's strlen
  LibcDlfree,    // wasi-libc's dlfree (dlmalloc's free)
  LibcDlmalloc,  // wasi-libc's dlmalloc
};
// The kinds that run at their own entry: wasi-libc's.
inline bool runs_at_entry(KnownBody k) { return k >= KnownBody::LibcMemcpy; }
struct KnownBodyMatch {
  KnownBody kind = KnownBody::None;
  uint64_t constant = 0;         // the row's {K} hole, as the body has it; G of its {G+k} and {g+k}
  uint64_t callee_constant = 0;  // the {K} of the function its {MulAddWWW} hole names; its {H}
};

struct LoadOptions {
  // Run the bodies of vm/known_bodies.def natively (find_known_bodies); false
  // runs every function as written (wzvm --no-known-bodies: for checking
  // that both leave the same memory, results and instruction counts).
  bool known_bodies = true;
  // Lower with instruction-count segments (vm/profiling.h).
  bool count_instructions = false;
  // Lower for an instruction budget (Profiling::fuel): counting segments
  // that also charge the fuel (CountFuel), so counting without a budget pays
  // nothing for it. Implies count_instructions.
  bool fuel = false;
  // Memory profiling: a non-zero hook id marks a function whose calls the
  // profiler must see (allocators, found by name). Direct calls to it are
  // lowered to hooked calls; the profiling loop reports their arguments and
  // results to ProfileSink. Asked once per function index, after decoding.
  std::function<uint8_t(const Module&, uint32_t func_index)> call_hook{};
  // Profiling: true marks a function whose indirect calls resume code whose
  // callers are not on the wasm stack (Go's wasm_pc_f_loop, which continues
  // goroutines after their wasm frames were unwound). Its call_indirect is
  // lowered to call_table.graft, and a profiled run asks the ProfileSink
  // (graft) for the callee's real callers. Asked once per function index.
  std::function<bool(const Module&, uint32_t func_index)> graft_calls{};
  // Instruction counting (without fuel): a non-zero N marks the dispatch
  // loop of an interpreter compiled to wasm (CPython's
  // _PyEval_EvalFrameDefault); each of its br_tables with at least N targets
  // is preceded by a ProbeCounted op (vm/counted_ops.def), at which the
  // ProfileSink (probe) may move the frame's counting to another call-tree
  // node: the guest language's own function and line. Asked once per
  // defined function, when counting.
  std::function<uint32_t(const Module&, uint32_t func_index)> probe_dispatch{};
  // Proposals the module may use; anything else is rejected as in wasm 2.0.
  Features features{};
  // Validate every body at load, lower each on its first call: a Go test
  // binary runs a fraction of its functions, and lowering them all was two
  // thirds of a short run (docs/RATIONALE.md, "Bodies are lowered on their
  // first call"). Counted modules too: a stub's first entry is lowered
  // before it is counted (CompiledFunc::kUnlowered). Ignored for a module
  // with a shared memory (threads would race to lower a body in place). A
  // lazily loaded module must run on one thread at a time.
  bool lazy = false;
};

struct Module {
  std::vector<uint8_t> bytes;  // the binary; bodies, data and custom sections point into it

  std::vector<FuncType> types;
  // The first index of an equal type, for each type: equal types have one
  // index, so a call_indirect's expected type and a function of the same
  // module compare as two words (FuncInst::module_type; vm/interp.cc,
  // CallTable). Empty in a hand-built module: each type is its own.
  std::vector<uint32_t> canonical_types;
  uint32_t canonical_type(uint32_t t) const { return t < canonical_types.size() ? canonical_types[t] : t; }
  std::vector<Import> imports;
  std::vector<Function> functions;   // defined functions only
  std::vector<TableType> tables;     // defined tables only
  std::vector<MemoryType> memories;  // defined memories only
  std::vector<Global> globals;       // defined globals only
  std::vector<Export> exports;
  std::optional<uint32_t> start;
  std::vector<ElemSegment> elems;
  std::vector<DataSegment> datas;
  std::optional<uint32_t> data_count;
  std::vector<CustomSection> customs;
  Names names;
  // The proposals this module was decoded with: validation and lowering
  // accept what they allow (set by decode_module).
  Features features;

  // Index spaces (imports first, then definitions), filled by the decoder.
  uint32_t num_imported_funcs = 0;
  uint32_t num_imported_tables = 0;
  uint32_t num_imported_memories = 0;
  uint32_t num_imported_globals = 0;
  std::vector<uint32_t> func_type_indices;  // type index of every function
  std::vector<TableType> all_tables;
  std::vector<MemoryType> all_memories;
  std::vector<GlobalType> all_globals;
  // exception-handling: tags (exception types) as type indices; `tags` are
  // the defined ones, `all_tag_types` imports first.
  std::vector<uint32_t> tags;
  uint32_t num_imported_tags = 0;
  std::vector<uint32_t> all_tag_types;
  // C.refs: functions that may appear in ref.func inside bodies (referenced in
  // element segments, exports or global initialisers), indexed by function index.
  std::vector<bool> declared_refs;

  // Lowered code of each defined function (same order as `functions`), filled by compile.
  // A lazily loaded module (LoadOptions::lazy) holds a stub for each body
  // until its first call lowers it in place (lower_on_first_call).
  std::vector<CompiledFunc> code;
  bool lazy = false;
  // The options the bodies are lowered with, a lazy module's on their first
  // calls (call_hook and graft_calls cleared: their answers are below).
  LoadOptions lowering;
  // Lowered for counting without fuel (vm/counted_ops.def): only a thread
  // that counts instructions may run it (a Store holding it refuses others).
  bool needs_counting = false;
  // LoadOptions::call_hook of every function (imports included); empty when none is hooked.
  std::vector<uint8_t> call_hooks;
  // LoadOptions::graft_calls of every function (imports included); empty when none grafts.
  std::vector<bool> graft_calls;
  // What each defined function's body is, if one of vm/known_bodies.def's
  // (find_known_bodies); empty when none is.
  std::vector<KnownBodyMatch> known_bodies;
  KnownBodyMatch known_match(uint32_t func_index) const {
    const uint32_t i = func_index - num_imported_funcs;
    return func_index >= num_imported_funcs && i < known_bodies.size() ? known_bodies[i] : KnownBodyMatch{};
  }
  KnownBody known_body(uint32_t func_index) const { return known_match(func_index).kind; }

  const FuncType& func_type(uint32_t func_index) const { return types[func_type_indices[func_index]]; }
  // Best human name of a function: name section, then export name, then wasm-function[N].
  std::string function_name(uint32_t func_index) const;
};

// Decode, validate and lower a module. The error names section, function and offset.
Result<std::shared_ptr<const Module>> load_module(std::vector<uint8_t> bytes,
                                                  const LoadOptions& options = {});

// Pieces of load_module, for tests and tools.
Result<std::unique_ptr<Module>> decode_module(std::vector<uint8_t> bytes,
                                              const Features& features = {});  // vm/decoder.cc
Status validate_module(const Module& module);                          // vm/validate_module.cc (not bodies)
Status compile_functions(Module& module, const LoadOptions& options);  // vm/lower/
void find_known_bodies(Module& module);                                // vm/lower/known_bodies.cc
// A lazily loaded module's function `func_index` (defined, still a stub):
// lowered in place, as compile_functions would have. Fails only on an
// internal error (the body was validated at load).
Status lower_on_first_call(const Module& module, uint32_t func_index);  // vm/lower/

}  // namespace wzvm::vm
