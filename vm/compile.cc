// Function bodies: validation (the spec's algorithm,
// https://webassembly.github.io/spec/core/appendix/algorithm.html) and
// lowering to the internal code of vm/code.h, in one streaming pass over the
// bytes. The interpreter trusts what comes out of here.
//
// Lowering maps every position of the wasm value stack to a fixed frame slot
// (locals first, then the stack), so each instruction becomes one operation
// that names its operand and result slots. Two things make it cheap:
//  - `local.get` pushes a *virtual* operand that refers to the local's slot;
//    the consumer reads the local directly. A virtual operand is materialised
//    (copied to its own stack slot) only when its local is about to be
//    written, at block boundaries, and where values must sit in place
//    (call arguments, branch values).
//  - `local.set`/`local.tee` right after the instruction that computed the
//    value rewrite that instruction's destination to the local.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "vm/atomics.h"  // the access types of the AtomicRmw rows (their sizes)
#include "vm/module.h"
#include "vm/reader.h"
#include "vm/simd.h"  // v128_t and the v128 load types of the Load rows (their sizes)

namespace wzvm::vm {
namespace {

enum class Kind : uint8_t {
  Special,
  Unary,
  Binary,
  Load,
  Store,
  AtomicLoad,
  AtomicStore,
  AtomicRmw,
  AtomicCmpxchg
};

// Operand types as the validator sees them; Unknown is the spec's bottom type
// on a polymorphic (unreachable) stack.
constexpr ValType kUnknown = static_cast<ValType>(0);
constexpr ValType kNone = static_cast<ValType>(1);

struct OpInfo {
  bool valid = false;
  IOp op = IOp::Count;
  Kind kind = Kind::Special;
  ValType result = kNone, p1 = kNone, p2 = kNone;
  uint8_t mem_bytes = 0;  // Load/Store: access size (natural alignment)
  int8_t feature = -1;    // the proposal it needs (vm/features.def), -1 for wasm 2.0
  const char* name = "";
};

// Load/Store rows name the C type of the access in their Extra column; the
// other kinds name a functor there, which lowering does not need.
#define WZVM_MEM_BYTES_Load(T) sizeof(T)
#define WZVM_MEM_BYTES_Store(T) sizeof(T)
#define WZVM_MEM_BYTES_Unary(T) 0
#define WZVM_MEM_BYTES_Binary(T) 0
#define WZVM_MEM_BYTES_Special(T) 0
#define WZVM_MEM_BYTES_AtomicLoad(T) sizeof(T)
#define WZVM_MEM_BYTES_AtomicStore(T) sizeof(T)
#define WZVM_MEM_BYTES_AtomicRmw(F) sizeof(F::type)
#define WZVM_MEM_BYTES_AtomicCmpxchg(T) sizeof(T)

// Per-prefix lookup tables, expanded from vm/opcodes.def.
struct OpTables {
  std::array<OpInfo, 256> single{};
  std::array<OpInfo, 32> fc{};
  std::array<OpInfo, 512> fd{};
  std::array<OpInfo, 80> fe{};  // threads: up to i64.atomic.rmw32.cmpxchg_u (0x4E)
  OpTables() {
    constexpr ValType I32 = ValType::I32, I64 = ValType::I64, F32 = ValType::F32, F64 = ValType::F64,
                      V128 = ValType::V128, ___ = kNone;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  {                                                            \
    OpInfo& info = table_for(prefix)[code];                    \
    info.valid = true;                                         \
    info.op = IOp::Name;                                       \
    info.kind = Kind::K;                                       \
    info.result = R;                                           \
    info.p1 = P1;                                              \
    info.p2 = P2;                                              \
    info.mem_bytes = WZVM_MEM_BYTES_##K(Extra);                \
    info.name = text;                                          \
  }
#define WZVM_PROPOSAL_OP(F, Name, prefix, code, ...) \
  WZVM_OP(Name, prefix, code, __VA_ARGS__)           \
  table_for(prefix)[code].feature = static_cast<int8_t>(Feature::F);
#include "vm/opcodes.def"
#undef WZVM_PROPOSAL_OP
#undef WZVM_OP
    init_fused();
  }
  // JumpIf_X / JumpUnless_X for each IOp X that can fuse with a following branch.
  std::array<std::pair<IOp, IOp>, static_cast<size_t>(IOp::Count)> fused{};
  // The back-edge form of each jump op that a backward jump can be (itself
  // for Switch, which tests the direction, and for the back-edge forms);
  // IOp::Count for the others.
  std::array<IOp, static_cast<size_t>(IOp::Count)> back_edge{};
  // LoadAdd_X and LoadShlAdd_X for each load X (vm/code.h), IOp::Count for the others.
  std::array<IOp, static_cast<size_t>(IOp::Count)> load_add{};
  std::array<IOp, static_cast<size_t>(IOp::Count)> load_shl_add{};
  // BinLoad_X / StoreBin_X for each f64 binary X (vm/code.h), and
  // StoreBinLoad_X for BinLoad_X.
  std::array<std::pair<IOp, IOp>, static_cast<size_t>(IOp::Count)> f64_mem{};
  std::array<IOp, static_cast<size_t>(IOp::Count)> store_bin_load{};
  // The counted form (JumpIfExit, JumpCounted, ...) of each jump, for code
  // counted without fuel (vm/counted_ops.def); IOp::Count for the others.
  std::array<IOp, static_cast<size_t>(IOp::Count)> counted{};
  // The integer comparison that is `i32.eqz` of each one (lt_u <-> ge_u,
  // eq <-> ne, ...); IOp::Count for the others. Floats have none: with a
  // NaN operand both f64.lt and f64.ge are 0.
  std::array<IOp, static_cast<size_t>(IOp::Count)> negated{};
  // Imm_X for each integer binary X (vm/code.h), IOp::Count for the others.
  std::array<IOp, static_cast<size_t>(IOp::Count)> imm{};
  void init_negated() {
    negated.fill(IOp::Count);
    const std::pair<IOp, IOp> pairs[] = {{IOp::I32Eq, IOp::I32Ne},   {IOp::I32LtS, IOp::I32GeS},
                                         {IOp::I32LtU, IOp::I32GeU}, {IOp::I32GtS, IOp::I32LeS},
                                         {IOp::I32GtU, IOp::I32LeU}, {IOp::I64Eq, IOp::I64Ne},
                                         {IOp::I64LtS, IOp::I64GeS}, {IOp::I64LtU, IOp::I64GeU},
                                         {IOp::I64GtS, IOp::I64LeS}, {IOp::I64GtU, IOp::I64LeU}};
    for (auto [a, b] : pairs) {
      negated[static_cast<size_t>(a)] = b;
      negated[static_cast<size_t>(b)] = a;
    }
  }
  void init_fused() {
    init_negated();
    imm.fill(IOp::Count);
#define WZVM_IMM_MAP_(Name, R, P1) imm[static_cast<size_t>(IOp::Name)] = IOp::Imm_##Name;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) WZVM_IMM_ROW_(WZVM_IMM_MAP_, Name, K, R, P1)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_IMM_MAP_
    f64_mem.fill({IOp::Count, IOp::Count});
    store_bin_load.fill(IOp::Count);
#define WZVM_F64BIN_MAP_(Name, Extra)                                                    \
  f64_mem[static_cast<size_t>(IOp::Name)] = {IOp::BinLoad_##Name, IOp::StoreBin_##Name}; \
  store_bin_load[static_cast<size_t>(IOp::BinLoad_##Name)] = IOp::StoreBinLoad_##Name;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_F64BIN_ROW_(WZVM_F64BIN_MAP_, Name, K, R, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_F64BIN_MAP_
    load_add.fill(IOp::Count);
    load_shl_add.fill(IOp::Count);
#define WZVM_LOADADD_MAP_(Name, R, Extra)                         \
  load_add[static_cast<size_t>(IOp::Name)] = IOp::LoadAdd_##Name; \
  load_shl_add[static_cast<size_t>(IOp::Name)] = IOp::LoadShlAdd_##Name;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_LOADADD_ROW_(WZVM_LOADADD_MAP_, Name, K, R, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_LOADADD_MAP_
    fused.fill({IOp::Count, IOp::Count});
    back_edge.fill(IOp::Count);
    for (IOp op : {IOp::Switch, IOp::JumpBack, IOp::JumpIfBack, IOp::JumpUnlessBack})
      back_edge[static_cast<size_t>(op)] = op;
    back_edge[static_cast<size_t>(IOp::Jump)] = IOp::JumpBack;
    back_edge[static_cast<size_t>(IOp::JumpIf)] = IOp::JumpIfBack;
    back_edge[static_cast<size_t>(IOp::JumpUnless)] = IOp::JumpUnlessBack;
    counted.fill(IOp::Count);
    // A jump's counted form, and the counted form's back-edge form (patch()
    // runs after add_edge), as for the plain ones; back = Count: none.
    auto count_as = [&](IOp plain, IOp back, IOp c, IOp c_back) {
      counted[static_cast<size_t>(plain)] = c;
      back_edge[static_cast<size_t>(c)] = c_back;
      if (back == IOp::Count) return;
      counted[static_cast<size_t>(back)] = c_back;
      back_edge[static_cast<size_t>(c_back)] = c_back;
    };
    count_as(IOp::Jump, IOp::JumpBack, IOp::JumpCounted, IOp::JumpBackCounted);
    count_as(IOp::JumpIf, IOp::JumpIfBack, IOp::JumpIfExit, IOp::JumpIfBackExit);
    count_as(IOp::JumpUnless, IOp::JumpUnlessBack, IOp::JumpUnlessExit, IOp::JumpUnlessBackExit);
    count_as(IOp::Switch, IOp::Count, IOp::SwitchCounted, IOp::SwitchCounted);
#define WZVM_FUSED_MAP_(Name, R, P1, Extra)                                                                 \
  fused[static_cast<size_t>(IOp::Name)] = {IOp::JumpIf_##Name, IOp::JumpUnless_##Name};                     \
  back_edge[static_cast<size_t>(IOp::JumpIf_##Name)] = IOp::JumpIfBack_##Name;                              \
  back_edge[static_cast<size_t>(IOp::JumpIfBack_##Name)] = IOp::JumpIfBack_##Name;                          \
  count_as(IOp::JumpIf_##Name, IOp::JumpIfBack_##Name, IOp::JumpIfExit_##Name, IOp::JumpIfBackExit_##Name); \
  count_as(IOp::JumpUnless_##Name, IOp::Count, IOp::JumpUnlessExit_##Name, IOp::Count);
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_FUSED_ROW_(WZVM_FUSED_MAP_, Name, K, R, P1, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_FUSED_MAP_
  }
  OpInfo* table_for(int prefix) {
    return prefix == 0xFC   ? fc.data()
           : prefix == 0xFD ? fd.data()
           : prefix == 0xFE ? fe.data()
                            : single.data();
  }
};

const OpTables& op_tables() {
  static const OpTables tables;
  return tables;
}

uint32_t slots_of(ValType t) { return t == ValType::V128 ? 2 : 1; }

bool is_valtype_byte(uint8_t b) {
  switch (b) {
    case 0x7F:
    case 0x7E:
    case 0x7D:
    case 0x7C:
    case 0x7B:
    case 0x70:
    case 0x6F:
      return true;
    default:
      return false;
  }
}

// A value on the compile-time stack.
// Operand locations with this bit set name the k-th constant of the
// function's constant area, whose frame slot is known only at the end.
constexpr uint32_t kConstTag = 0x80000000u;
constexpr size_t kMaxConsts = 64;
// Operand locations with this bit set name the k-th exception slot
// (exception-handling: where a catch keeps its exception for rethrow). They
// sit after the constants and are zeroed on entry with them.
constexpr uint32_t kExnTag = 0x40000000u;
constexpr size_t kConstsOutsideLoops = 4;

struct Operand {
  ValType type;
  uint32_t slot;  // the frame slot of this stack position
  uint32_t src;   // where the value is now: `slot`, or a local's slot (virtual local.get)
  bool is_virtual() const { return src != slot; }
};

// What opened a control frame. Try is a `try` body; Catch and CatchAll its
// handlers (exception-handling); Else an `if` past its `else`.
enum class BlockKind : uint8_t { Body, Block, Loop, If, Else, Try, Catch, CatchAll };

// The kind a block instruction opens (block, loop, if, try).
inline BlockKind block_kind(IOp op) {
  switch (op) {
    case IOp::Loop:
      return BlockKind::Loop;
    case IOp::If:
      return BlockKind::If;
    case IOp::Try:
      return BlockKind::Try;
    default:
      return BlockKind::Block;
  }
}

struct Ctrl {
  BlockKind kind = BlockKind::Body;
  std::vector<ValType> params, results;
  uint32_t height = 0;       // operand stack size at entry, params excluded
  uint32_t base_slot = 0;    // slot of stack position `height`: where label values go
  bool unreachable = false;  // the spec's flag: the rest of this block is polymorphic
  bool dead = false;         // the whole block sits in unreachable code: validate, emit nothing
  uint32_t loop_start = 0;   // loops: branch target
  // Loops, code counted without fuel: instructions counted before the loop's
  // first one (its back-edges' target). Not found from the word: counted
  // instructions that emit nothing (nop, drop, local.get) may lie between an
  // earlier label at the same word and the loop.
  uint32_t loop_count = 0;
  // Loops whose first op is a switch on a local with no values to carry
  // (Go's resume-point dispatch): its entry in FunctionCompiler::heads_,
  // else UINT32_MAX (jump threading, resolve_threaded_jumps).
  uint32_t head = UINT32_MAX;
  bool outermost = false;  // a loop in no other loop: entered from above once per call
  // Jumps to the end label: (op word position, offset word position).
  std::vector<std::pair<uint32_t, uint32_t>> fixups;
  // if: the conditional jump to patch to the else arm or end (op word, offset word).
  int64_t else_op = -1;
  uint32_t else_word = 0;
  // try: its TryRegion (-1 in dead code) and exception slot (kExnTag | k).
  int32_t region = -1;
  uint32_t exn_slot = 0;
  const std::vector<ValType>& label_types() const { return kind == BlockKind::Loop ? params : results; }
};

class FunctionCompiler {
 public:
  FunctionCompiler(const Module& m, uint32_t func_index, const LoadOptions& options)
      : m_(m),
        func_index_(func_index),
        fn_(m.functions[func_index - m.num_imported_funcs]),
        type_(m.func_type(func_index)),
        r_(m.bytes.data() + fn_.body_offset, m.bytes.data() + fn_.body_end, fn_.body_offset),
        counting_(options.count_instructions || options.fuel),
        fuel_(options.fuel),
        probe_min_(counting_ && !fuel_ && options.probe_dispatch ? options.probe_dispatch(m, func_index) : 0),
        multi_memory_(m.features.has(Feature::MultiMemory)) {}

  Status compile(CompiledFunc& out);

 private:
  // ---- errors
  bool fail(std::string msg, Error::Kind kind = Error::Kind::Invalid) {
    if (!failed_) {
      failed_ = true;
      error_.kind = kind;
      error_.message = std::move(msg);
      error_.section = "code";
      error_.function = func_index_;
      error_.offset = static_cast<int64_t>(instr_offset_);
    }
    return false;
  }
  bool malformed(std::string msg) { return fail(std::move(msg), Error::Kind::Malformed); }
  bool check_reader() {
    if (r_.ok()) return true;
    instr_offset_ = r_.error_offset();
    return malformed(r_.error() == "unexpected end" ? "unexpected end of section or function" : r_.error());
  }

  // ---- emission
  bool emitting() const { return !ctrls_.back().unreachable && !ctrls_.back().dead; }
  uint32_t here() const { return static_cast<uint32_t>(code_.size()); }
  uint32_t emit_op(IOp op) {
    uint32_t pos = here();
    if (source_map_.empty() || source_map_.back().second != instr_offset_)
      source_map_.emplace_back(pos, static_cast<uint32_t>(instr_offset_));
    code_.push_back(static_cast<uint32_t>(op));
    last_dst_ = UINT32_MAX;
    prev_op_ = last_op_;
    last_op_ = pos;
    if (counting_) {
      // What ran before this op: at a label, what was counted before it
      // (a jump there counted its edge); else what the op before it ran,
      // fusions included (counted instructions that emit nothing, such as
      // a constant the op takes as an operand, have not run yet).
      uint32_t before = label_since_op_ ? label_count_
                        : !count_marks_.empty() && count_marks_.back().seg == seg_pos_
                            ? count_marks_.back().index
                            : 0;
      label_since_op_ = false;
      count_marks_.push_back({pos, seg_pos_, seg_pos_ == UINT32_MAX ? 0 : code_[seg_pos_], before});
    }
    return pos;
  }
  void word(uint32_t w) { code_.push_back(w); }
  // Starts an instruction-count segment here, of no instructions yet.
  void open_segment() {
    emit_op(fuel_ ? IOp::CountFuel : IOp::CountInstr);
    seg_pos_ = here();
    word(0);
    word(static_cast<uint32_t>(seg_begin_.size()));  // the segment's index
    seg_begin_.push_back(static_cast<uint32_t>(seg_offsets_.size()));
  }
  // An operand word naming a frame slot. The constant area sits between the
  // locals and the value stack, and its size is known only at the end, so
  // every slot word is recorded and renumbered then (see compile()).
  void slot_word(uint32_t slot) {
    slot_words_.push_back(here());
    code_.push_back(slot);
  }
  void src_word(uint32_t src) { slot_word(src); }
  // The virtual location of a constant in the function's constant area
  // (copied into the frame on entry, so hot loops read constants without an
  // instruction of their own). Few per function, and mostly in loops, since
  // every call pays for the copy.
  bool want_const_slot() const {
    return consts_.size() < kMaxConsts && (loop_depth_ > 0 || consts_.size() < kConstsOutsideLoops);
  }
  uint32_t const_ref(uint64_t value) {
    for (size_t i = 0; i < consts_.size(); ++i)
      if (consts_[i] == value) return kConstTag | static_cast<uint32_t>(i);
    consts_.push_back(value);
    return kConstTag | static_cast<uint32_t>(consts_.size() - 1);
  }
  // A v128 constant takes two adjacent entries of the constant area (its two
  // slots); an operand names the first.
  bool want_const_slots_v128() const {
    return consts_.size() + 2 <= kMaxConsts && (loop_depth_ > 0 || consts_.size() + 2 <= kConstsOutsideLoops);
  }
  uint32_t const_ref_v128(uint64_t lo, uint64_t hi) {
    for (size_t i = 0; i + 1 < consts_.size(); ++i)
      if (consts_[i] == lo && consts_[i + 1] == hi) return kConstTag | static_cast<uint32_t>(i);
    consts_.push_back(lo);
    consts_.push_back(hi);
    return kConstTag | static_cast<uint32_t>(consts_.size() - 2);
  }
  // The op just emitted writes its single result to the word at `pos`: a
  // following local.set may redirect it (see the file comment).
  void mark_dst(uint32_t pos) { last_dst_ = pos; }

  // ---- super-instructions: the op just emitted, merged with the current
  // instruction. Only across no label (a branch could enter between the two)
  // and only when the first op's result was a stack temporary that the
  // second consumes (read once, dead after), so dropping its write is safe.
  //
  // The op emitted at `p` with a single result `dst` (at p + 1), unchanged
  // since (no redirect by local.set, nothing emitted after it, no label).
  bool last_op_is(IOp op, uint32_t len, const Operand& consumed) const {
    return last_op_ != UINT32_MAX && here() == last_op_ + len && last_dst_ == last_op_ + 1 &&
           static_cast<IOp>(code_[last_op_]) == op && !consumed.is_virtual() &&
           code_[last_op_ + 1] == consumed.slot;
  }
  // The chained op (vm/chains.def) of the op just emitted followed by binary
  // `second` with operands a, b, when one of them is its temporary result.
  IOp chain_with_last(IOp second, const Operand& a, const Operand& b) const {
    if (last_op_ == UINT32_MAX) return IOp::Count;
    const IOp first = static_cast<IOp>(code_[last_op_]);
#define WZVM_CHAIN(Name, First, Second, T, text)                                            \
  if (first == IOp::First && second == IOp::Second &&                                       \
      (last_op_is(first, 4, a) || (ValType::T != ValType::F64 && last_op_is(first, 4, b)))) \
    return IOp::Name;
#include "vm/chains.def"
#undef WZVM_CHAIN
    return IOp::Count;
  }
  // The op at `p` now also does the current instruction: what a trap there
  // reports (source offset) and how many of its segment's instructions have
  // run once it has (instruction counting) become the current instruction's.
  // Ops fused here trap only for the reason of the later instruction (the
  // earlier one is an i32.add or a copy, which never trap).
  void retarget_fused(uint32_t p) {
    if (!source_map_.empty() && source_map_.back().first == p)
      source_map_.back().second = static_cast<uint32_t>(instr_offset_);
    else source_map_.emplace_back(p, static_cast<uint32_t>(instr_offset_));
    if (counting_ && !count_marks_.empty() && count_marks_.back().pos == p && seg_pos_ != UINT32_MAX &&
        count_marks_.back().seg == seg_pos_)
      count_marks_.back().index = code_[seg_pos_];
  }
  // [i64.extend_i32_u t x] [i64.add d t c] i32.wrap_i64 -> [i32.add d x c]:
  // the low half of zext(x) + c is x + c's low half. Go addresses its stack
  // this way (`SP + 24` as i64, wrapped, then the access), so the sum can
  // then fuse with a load (load_add). `a` is the wrap's operand. Not in
  // counted code, whose count marks would need moving.
  void narrow_extended_add(const Operand& a) {
    const uint32_t q = last_op_, e = prev_op_;
    if (counting_ || !last_op_is(IOp::I64Add, 4, a) || e == UINT32_MAX || q != e + 3 ||
        code_[e] != static_cast<uint32_t>(IOp::I64ExtendI32U))
      return;
    const uint32_t t = code_[e + 1];
    if (t < local_slots_ || (t & (kConstTag | kExnTag))) return;  // a stack temporary, read once by the add
    uint32_t other;
    if (code_[q + 2] == t) other = code_[q + 3];
    else if (code_[q + 3] == t) other = code_[q + 2];
    else return;
    const size_t n = slot_words_.size();
    if (n < 5 || slot_words_[n - 5] != e + 1 || slot_words_[n - 4] != e + 2 || slot_words_[n - 3] != q + 1 ||
        slot_words_[n - 2] != q + 2 || slot_words_[n - 1] != q + 3)
      return;
    const uint32_t d = code_[q + 1];
    code_[e] = static_cast<uint32_t>(IOp::I32Add);
    code_[e + 1] = d;  // e + 2 keeps x
    code_[e + 3] = other;
    code_.resize(e + 4);
    slot_words_.resize(n - 2);  // e + 1, e + 2, e + 3
    slot_words_[n - 3] = e + 3;
    if (!source_map_.empty() && source_map_.back().first == q) source_map_.pop_back();
    last_op_ = e;
    last_dst_ = e + 1;
    prev_op_ = UINT32_MAX;
  }
  // [i32.add d1 a1 b1] [i32.add d2 a2 b2] -> [i32.add2 d1 a1 b1 d2 a2 b2],
  // in order, once the second one's result has gone into a local: then
  // nothing can fuse with it any more (every fusion takes a result still on
  // the stack), and the pair costs one dispatch instead of two. Compiled
  // loops step their induction variables and pointers in such pairs
  // (bench/suite: 18% of gemm's ops, 3.5-4.6% of nbody's, sha256's, interp's).
  // Neither add traps, so a position captured between the two (a try
  // region's bound) only decides whether a non-throwing op is inside it.
  void merge_add_pair() {
    const uint32_t p = prev_op_, q = last_op_;
    if (p == UINT32_MAX || q != p + 4 || here() != q + 4 || code_[p] != static_cast<uint32_t>(IOp::I32Add) ||
        code_[q] != static_cast<uint32_t>(IOp::I32Add))
      return;
    if (absorb_last_op(q, 3)) code_[p] = static_cast<uint32_t>(IOp::I32Add2);
  }
  // The op at `q`, the last one emitted, with `nslots` slot operands right
  // after its op word, becomes part of the op just before it: its op word
  // goes, its operands follow that op's. No instruction boundary is left at
  // q, so q's source offset and count mark go too (a sample or a count at
  // the merged op is before its first instruction): only for a `q` that
  // cannot trap. False, changing nothing, when q's operands are not where expected.
  bool absorb_last_op(uint32_t q, size_t nslots) {
    const size_t n = slot_words_.size();
    if (n < nslots) return false;
    for (size_t i = 0; i < nslots; ++i)
      if (slot_words_[n - nslots + i] != q + 1 + i) return false;
    code_.erase(code_.begin() + q);
    for (size_t i = n - nslots; i < n; ++i) --slot_words_[i];
    if (!source_map_.empty() && source_map_.back().first == q) source_map_.pop_back();
    if (counting_ && !count_marks_.empty() && count_marks_.back().pos == q) count_marks_.pop_back();
    last_op_ = prev_op_ = last_dst_ = UINT32_MAX;
    return true;
  }
  // [i32.add d a b] [jump_if.back(I32Ne) x y offset] -> [i32.add+jump_if.back(I32Ne)
  // d a b x y offset]: the step and test that close most of clang's loops
  // (`i += s; if (i != n) continue`; bench/suite lz: 10% of its ops were
  // such pairs, sha256 2%). `q` is the jump just patched to `target`.
  void merge_add_into_back_jump(uint32_t q, uint32_t target) {
    const uint32_t p = prev_op_;
    if (p == UINT32_MAX || last_op_ != q || q != p + 4 || here() != q + 4 ||
        code_[p] != static_cast<uint32_t>(IOp::I32Add) ||
        code_[q] != static_cast<uint32_t>(IOp::JumpIfBack_I32Ne))
      return;
    if (!absorb_last_op(q, 2)) return;
    code_[p] = static_cast<uint32_t>(IOp::I32AddJumpIfNeBack);
    // The offset was relative to the jump's op word, now to the add's.
    code_[p + 6] = static_cast<uint32_t>(static_cast<int32_t>(target) - static_cast<int32_t>(p));
  }
  // A branch target: no instruction may be merged across it; with fuel, an
  // instruction-count segment ends here (without, the body is one).
  void bind_label() {
    last_copy2_ = UINT32_MAX;
    last_dst_ = UINT32_MAX;
    last_op_ = UINT32_MAX;
    prev_op_ = UINT32_MAX;
    if (fuel_) seg_pos_ = UINT32_MAX;
    label_since_op_ = true;
    label_count_ = counted_so_far();
  }
  // Every jump offset is set here, so here a jump that goes backward (or
  // to itself: `(loop (br 0))`) becomes its back-edge form (why these
  // remain: vm/internal_ops.def).
  // `target_count`: counted without fuel, the instructions counted before
  // the target; kHere: as many as now (a label bound here, or code to come).
  static constexpr uint32_t kHere = UINT32_MAX;
  void patch(uint32_t op_pos, uint32_t word_pos, uint32_t target, uint32_t target_count = kHere) {
    code_[word_pos] = static_cast<uint32_t>(static_cast<int32_t>(target) - static_cast<int32_t>(op_pos));
    if (counting_ && !fuel_) {
      // Every jump is in its counted form (add_edge): its edge word, after
      // the offset or after switch's offsets, holds 1 + the edge's index.
      const bool table = code_[op_pos] == static_cast<uint32_t>(IOp::SwitchCounted);
      Edge& e = edges_[code_[word_pos + (table ? code_[op_pos + 2] + 1 : 1)] - 1];
      e.tgt = target_count == kHere ? counted_so_far() : target_count;
    }
    if (target > op_pos) return;
    IOp back = op_tables().back_edge[code_[op_pos]];
    if (back == IOp::Count) {
      // Not reachable: only br, br_if and br_table jump to a loop, and they
      // lower to ops that have a back-edge form. Refusing the module beats
      // a loop that no sampler or --timeout could stop.
      fail(std::string("internal error: backward ") + iop_name(static_cast<IOp>(code_[op_pos])));
      return;
    }
    code_[op_pos] = static_cast<uint32_t>(back);
  }
  // The instruction at `p` lost its destination word (p + 1): its other
  // operands moved one word down.
  void drop_dst_word(uint32_t p) {
    auto it =
        std::find(slot_words_.end() - std::min<size_t>(slot_words_.size(), 4), slot_words_.end(), p + 1);
    if (it != slot_words_.end()) slot_words_.erase(it);
    for (size_t i = slot_words_.size(); i-- > 0 && slot_words_[i] > p;) --slot_words_[i];
  }

  // A jump taken when `cond` is non-zero (or zero), with the offset left to
  // patch; returns (op word, offset word). When `cond` was computed by the
  // instruction just emitted, that instruction becomes a fused
  // compare-and-branch in place (same length, no result slot written).
  std::pair<uint32_t, uint32_t> emit_cond_jump(bool if_true, const Operand& cond) {
    if (!cond.is_virtual() && last_dst_ != UINT32_MAX && code_[last_dst_] == cond.slot) {
      uint32_t p = last_dst_ - 1;
      IOp prev = static_cast<IOp>(code_[p]);
      auto [jif, junless] = op_tables().fused[static_cast<size_t>(prev)];
      if (jif != IOp::Count) {  // [X dst a b] -> [Jump*_X a b offset]
        code_[p] = static_cast<uint32_t>(if_true ? jif : junless);
        code_[p + 1] = code_[p + 2];
        code_[p + 2] = code_[p + 3];
        code_[p + 3] = 0;
        drop_dst_word(p);
        last_dst_ = UINT32_MAX;
        return {p, p + 3};
      }
      if (prev == IOp::I32Eqz) {  // [eqz dst a] -> [JumpUnless/JumpIf a offset]
        code_[p] = static_cast<uint32_t>(if_true ? IOp::JumpUnless : IOp::JumpIf);
        code_[p + 1] = code_[p + 2];
        code_[p + 2] = 0;
        drop_dst_word(p);
        last_dst_ = UINT32_MAX;
        return {p, p + 2};
      }
      if (prev == IOp::I64Eqz && here() == p + 3 && want_const_slot()) {
        // [i64.eqz dst a] -> [JumpIf/JumpUnless_I64Eq a zero offset], zero
        // from the constant area: Go tests its i64 booleans and pointers so
        // (2.8% of the ops compress/flate's tests ran were the pair).
        code_[p] = static_cast<uint32_t>(if_true ? IOp::JumpIf_I64Eq : IOp::JumpUnless_I64Eq);
        code_[p + 1] = code_[p + 2];
        drop_dst_word(p);
        code_[p + 2] = const_ref(0);
        slot_words_.push_back(p + 2);
        word(0);
        last_dst_ = UINT32_MAX;
        return {p, p + 3};
      }
    }
    uint32_t op = emit_op(if_true ? IOp::JumpIf : IOp::JumpUnless);
    src_word(cond.src);
    word(0);
    return {op, op + 2};
  }

  // Code counted without fuel (vm/counted_ops.def): the jump just lowered
  // at `op`, its offset word at `w`, becomes its counted form, which counts
  // its edge when taken; the edge's target is set when the offset is
  // (patch), its counter index once all are known (compile()).
  void add_edge(uint32_t op, uint32_t w) {
    if (!counting_ || fuel_) return;
    const IOp c = op_tables().counted[code_[op]];
    if (c == IOp::Count || here() != w + 1) {
      fail(std::string("internal error: no counted form of ") + iop_name(static_cast<IOp>(code_[op])));
      return;
    }
    code_[op] = static_cast<uint32_t>(c);
    edges_.push_back({here(), counted_so_far(), kUnpatched});
    word(static_cast<uint32_t>(edges_.size()));  // counter 1 + k is edge k (compile())
  }
  // Counted without fuel: a return or tail call here leaves the rest of the
  // body unrun (kToEnd as the target), or a catch handler starts here, entered
  // from anywhere (kToEnd as the source): a CountEdge counts it.
  void emit_count_edge(bool landing) {
    if (!counting_ || fuel_) return;
    emit_op(IOp::CountEdge);
    rest_of_body_edge(landing);
  }
  // The operand word of an edge from here to the body's end (the rest left
  // unrun), or, landing, from anywhere to here (the rest run from here on).
  void rest_of_body_edge(bool landing) {
    edges_.push_back({here(), landing ? kToEnd : counted_so_far(), landing ? counted_so_far() : kToEnd});
    word(static_cast<uint32_t>(edges_.size()));
  }
  // An interpreter's dispatch (LoadOptions::probe_dispatch): ProbeCounted
  // before its br_table, with the table's index and the function's i32
  // locals, and its two edges at this point of the body: the rest of it,
  // left (taken back) and landed in (vm/counted_ops.def).
  void emit_probe(const Operand& index) {
    emit_op(IOp::ProbeCounted);
    src_word(index.src);
    rest_of_body_edge(false);
    rest_of_body_edge(true);
    uint32_t n = 0;
    for (ValType t : local_types_) n += t == ValType::I32;
    word(n);
    for (size_t i = 0; i < local_types_.size(); ++i)
      if (local_types_[i] == ValType::I32) slot_word(local_slot_[i]);
    last_dst_ = UINT32_MAX;
  }
  uint32_t counted_so_far() const { return seg_pos_ == UINT32_MAX ? 0 : code_[seg_pos_]; }

  void emit_copy(uint32_t dst, uint32_t src, ValType t) {
    if (dst == src) return;
    if (slots_of(t) == 1 && last_op_ != UINT32_MAX && here() == last_op_ + 3 &&
        static_cast<IOp>(code_[last_op_]) == IOp::Copy) {
      // [copy d1 s1] [copy d2 s2] -> [copy2 d1 s1 d2 s2], still in order.
      uint32_t p = last_op_;
      code_[p] = static_cast<uint32_t>(IOp::Copy2);
      slot_word(dst);
      src_word(src);
      retarget_fused(p);
      last_op_ = UINT32_MAX;  // no third one: copy2 is as long as they go
      last_copy2_ = p;
      return;
    }
    if (slots_of(t) == 1) {
      emit_op(IOp::Copy);
      slot_word(dst);
      src_word(src);
    } else {
      emit_op(IOp::CopyN);
      slot_word(dst);
      src_word(src);
      word(slots_of(t));
    }
  }

  // ---- operand stack
  uint32_t next_slot() const {
    if (vals_.empty()) return local_slots_;
    const Operand& top = vals_.back();
    return top.slot + (top.type == kUnknown ? 1 : slots_of(top.type));
  }
  uint32_t push(ValType t) {
    uint32_t s = next_slot();
    vals_.push_back({t, s, s});
    if (emitting()) max_slot_ = std::max(max_slot_, s + (t == kUnknown ? 1 : slots_of(t)));
    return s;
  }
  void push_virtual(ValType t, uint32_t src) {
    push(t);
    vals_.back().src = src;
  }
  bool pop(Operand& out) {
    const Ctrl& c = ctrls_.back();
    if (vals_.size() == c.height) {
      if (c.unreachable) {
        out = {kUnknown, next_slot(), next_slot()};
        return true;
      }
      return fail("type mismatch");
    }
    out = vals_.back();
    vals_.pop_back();
    return true;
  }
  bool pop(ValType expect, Operand& out) {
    if (!pop(out)) return false;
    if (out.type != expect && out.type != kUnknown && expect != kUnknown) return fail("type mismatch");
    return true;
  }
  bool pop(ValType expect) {
    Operand ignored;
    return pop(expect, ignored);
  }
  // Pops `types` (last one on top) into `out` (in stack order).
  bool pop_all(const std::vector<ValType>& types, std::vector<Operand>& out) {
    out.resize(types.size());
    for (size_t i = types.size(); i-- > 0;)
      if (!pop(types[i], out[i])) return false;
    return true;
  }
  void materialize(Operand& v) {
    if (!v.is_virtual()) return;
    if (emitting()) emit_copy(v.slot, v.src, v.type);
    v.src = v.slot;
  }
  void materialize_all() {
    for (Operand& v : vals_) materialize(v);
  }
  void materialize_local(uint32_t local_slot) {
    for (Operand& v : vals_)
      if (v.is_virtual() && v.src == local_slot) materialize(v);
  }
  // Re-push values popped for a branch/call, keeping their locations.
  void repush(const std::vector<Operand>& vs) {
    for (const Operand& v : vs) {
      push(v.type);
      if (v.is_virtual()) vals_.back().src = v.src;
    }
  }

  // ---- control
  void push_ctrl(BlockKind kind, std::vector<ValType> params, std::vector<ValType> results) {
    Ctrl c;
    c.kind = kind;
    c.params = std::move(params);
    c.results = std::move(results);
    c.height = static_cast<uint32_t>(vals_.size());
    c.base_slot = next_slot();
    c.unreachable = false;
    ctrls_.push_back(std::move(c));
    for (ValType t : ctrls_.back().params) push(t);
  }
  void set_unreachable() {
    Ctrl& c = ctrls_.back();
    vals_.resize(c.height);
    c.unreachable = true;
  }

  // Moves `vs` (the top values, already popped) to the label slots of `target`
  // and jumps there (a return for the function's own label).
  // The block's results, popped into scratch_, move to its label's slots.
  void emit_label_values(const Ctrl& c) {
    uint32_t dst = c.base_slot;
    for (const Operand& v : scratch_) {
      emit_copy(dst, v.src, v.type);
      dst += slots_of(v.type);
    }
  }
  // The end of one arm (then, try body, a handler): results to the label,
  // then a jump to the block's end, patched when the end is reached.
  void emit_exit_to_end(Ctrl& c) {
    emit_label_values(c);
    uint32_t op = emit_op(IOp::Jump);
    word(0);
    add_edge(op, op + 1);
    c.fixups.emplace_back(op, op + 1);
  }
  void emit_branch(uint32_t depth, std::vector<Operand>& vs) {
    Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
    if (&target == &ctrls_.front()) {
      emit_return(vs, true);
      return;
    }
    uint32_t dst = target.base_slot;
    for (Operand& v : vs) {
      if (v.type != kUnknown) emit_copy(dst, v.src, v.type);
      dst += v.type == kUnknown ? 1 : slots_of(v.type);
    }
    const uint32_t copy =
        target.kind == BlockKind::Loop && vs.empty() ? head_switch_write(target) : UINT32_MAX;
    const uint64_t known = copy == UINT32_MAX ? kNoIndex : written_constant(copy);
    uint32_t op = emit_op(IOp::Jump);
    word(0);
    add_edge(op, op + 1);
    if (target.kind == BlockKind::Loop) patch_to_loop(target, op, op + 1);
    else target.fixups.emplace_back(op, op + 1);
    if (known != kNoIndex) {
      threaded_.push_back({op, static_cast<uint32_t>(known), copy, target.head});
      ++heads_[target.head].threaded;
    }
  }
  void patch_to_loop(Ctrl& loop, uint32_t op, uint32_t w) {
    patch(op, w, loop.loop_start, loop.loop_count);
    if (loop.head != UINT32_MAX) ++heads_[loop.head].jumps;
  }
  // ---- jump threading through a loop's head switch. Go compiles every
  // jump between its basic blocks as `i32.const N; local.set 0; br $loop`,
  // and the loop starts with `br_table` on local 0 over the function's
  // resume points: two dispatches (jump back, switch) per Go jump, 9% of
  // the ops Go's strconv tests ran. When the op just before such a `br`
  // wrote a constant into the switch's local, the jump goes straight to
  // the switch's target for it (the local is still written: the switch
  // would read it again only on the next entry through the loop's head).
  // Not in counted code, where a jump's edge counts the instructions of
  // its source and target (the switch and its local.get would go uncounted).
  // Every cycle still has a backward jump for the sampler and --timeout to
  // stop at: a resolved jump keeps its back-edge form unless its target lies
  // ahead of it, and a cycle of forward jumps cannot exist.
  static constexpr uint64_t kNoIndex = UINT64_MAX;
  struct ThreadedJump {
    uint32_t op;     // the jump's op word
    uint32_t index;  // the value the head switch would switch on
    uint32_t write;  // the op that wrote it, just before the jump
    uint32_t head;   // the loop's entry in heads_
  };
  std::vector<ThreadedJump> threaded_;
  // Loops with a head switch: the switch's op word and the local's slot it
  // switches on, how many jumps go to the head, and how many of those were
  // threaded past it.
  struct Head {
    uint32_t sw, slot;
    bool outermost;
    uint32_t jumps = 0, threaded = 0;
  };
  std::vector<Head> heads_;
  std::vector<uint32_t> slot_reads_;  // local.gets of each local's slot
  // The op just emitted, when it wrote a constant into `loop`'s head-switch
  // local, else UINT32_MAX.
  uint32_t head_switch_write(const Ctrl& loop) const {
    if (counting_ || loop.head == UINT32_MAX) return UINT32_MAX;
    const uint32_t slot = heads_[loop.head].slot;
    // (a copy2 leaves last_op_ unset: no third copy merges into it)
    if (const uint32_t p = last_copy2_; p != UINT32_MAX && here() == p + 5 &&
                                        code_[p] == static_cast<uint32_t>(IOp::Copy2) &&
                                        code_[p + 3] == slot && (code_[p + 4] & kConstTag))
      return p;
    const uint32_t p = last_op_;
    if (p == UINT32_MAX || here() != p + 3 || code_[p + 1] != slot) return UINT32_MAX;
    const IOp op = static_cast<IOp>(code_[p]);
    return op == IOp::Const32 || (op == IOp::Copy && (code_[p + 2] & kConstTag)) ? p : UINT32_MAX;
  }
  uint64_t written_constant(uint32_t p) const {
    switch (static_cast<IOp>(code_[p])) {
      case IOp::Const32:
        return code_[p + 2];
      case IOp::Copy:
        return consts_[code_[p + 2] & ~kConstTag];
      default:
        return consts_[code_[p + 4] & ~kConstTag];  // Copy2's second
    }
  }
  // At the end, when every switch offset is known. When a loop's head
  // switch runs only once per call (the loop is in no other loop, every
  // jump to its head was threaded, and nothing else reads its local), the
  // local is dead after it: the write before each threaded jump goes too,
  // its words becoming the jump (Go's every jump is then one dispatch).
  void resolve_threaded_jumps() {
    std::vector<std::pair<uint32_t, uint32_t>> gone;  // word ranges that are no longer slot operands
    for (const ThreadedJump& j : threaded_) {
      const Head& h = heads_[j.head];
      uint32_t op = j.op;
      if (h.outermost && h.jumps == h.threaded && slot_reads_[h.slot] == 1) {
        // [const32 s v] / [copy s c] [jump] -> [jump]; [copy2 d c s c'] [jump] -> [copy d c] [jump]
        const bool copy2 = code_[j.write] == static_cast<uint32_t>(IOp::Copy2);
        op = copy2 ? j.write + 3 : j.write;
        if (copy2) code_[j.write] = static_cast<uint32_t>(IOp::Copy);
        gone.emplace_back(op, j.op);  // the write's slot operands from `op` on are the jump's words now
      }
      const uint32_t n = code_[h.sw + 2];
      const uint32_t target = h.sw + code_[h.sw + 3 + std::min<uint32_t>(j.index, n)];
      for (uint32_t at : {op, j.op}) {  // (the old jump, if the write became it, is never reached)
        code_[at + 1] = target - at;
        code_[at] = static_cast<uint32_t>(target <= at ? IOp::JumpBack : IOp::Jump);
      }
    }
    if (gone.empty()) return;
    // Both are in code order: jumps were recorded as emitted.
    std::erase_if(slot_words_, [&](uint32_t w) {
      auto it = std::upper_bound(gone.begin(), gone.end(), std::make_pair(w, UINT32_MAX));
      return it != gone.begin() && w < std::prev(it)->second;
    });
  }
  bool needs_moves(uint32_t depth, const std::vector<Operand>& vs) const {
    const Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
    if (&target == &ctrls_.front()) return true;
    uint32_t dst = target.base_slot;
    for (const Operand& v : vs) {
      if (v.type != kUnknown && v.src != dst) return true;
      dst += v.type == kUnknown ? 1 : slots_of(v.type);
    }
    return false;
  }
  // `early`: not the body's final `end` (return, br to the function's label).
  void emit_return(std::vector<Operand>& vs, bool early) {
    // Results must be contiguous: put each in its own stack slot first.
    uint32_t n = 0;
    for (Operand& v : vs) {
      if (v.type != kUnknown) materialize(v);
      n += v.type == kUnknown ? 1 : slots_of(v.type);
    }
    if (early) emit_count_edge(false);
    emit_op(IOp::Ret);
    slot_word(vs.empty() ? 0 : vs.front().slot);
    word(n);
  }

  bool read_block_type(std::vector<ValType>& params, std::vector<ValType>& results) {
    if (r_.remaining() == 0) return r_.fail("unexpected end");
    uint8_t b = *r_.pos();
    if (b == 0x40) {
      r_.skip(1);
      return true;
    }
    if (is_valtype_byte(b)) {
      r_.skip(1);
      results.push_back(static_cast<ValType>(b));
      return true;
    }
    int64_t idx;
    if (!r_.s33(idx)) return false;
    if (idx < 0 || static_cast<uint64_t>(idx) >= m_.types.size()) return fail("unknown type");
    params = m_.types[idx].params;
    results = m_.types[idx].results;
    return true;
  }
  bool read_memarg(const OpInfo& info, uint64_t& offset, uint32_t& mem) {
    return read_memarg(info.mem_bytes, offset, mem);
  }
  // multi-memory: bit 6 of the alignment says a memory index follows it.
  // memory64: the offset of a 64-bit memory's access is a u64.
  // threads: an atomic access's alignment must be exactly its natural one.
  bool read_memarg(uint32_t natural_bytes, uint64_t& offset, uint32_t& mem, bool exact = false) {
    uint32_t align;
    mem = 0;
    if (!r_.u32(align)) return false;
    if (multi_memory_ && (align & 0x40)) {
      align &= ~0x40u;
      if (!r_.u32(mem)) return false;
    }
    if (mem < m_.all_memories.size() && is64(mem)) {
      if (!r_.u64(offset)) return false;
    } else {
      uint32_t off32;
      if (!r_.u32(off32)) return false;
      offset = off32;
    }
    if (mem >= m_.all_memories.size()) return fail("unknown memory " + std::to_string(mem));
    if (align >= 32 || (1u << align) > natural_bytes)
      return fail("alignment must not be larger than natural");
    if (exact && (1u << align) != natural_bytes) return fail("alignment must be equal to natural");
    return true;
  }
  // memory64: addresses (and sizes) of a 64-bit memory are i64.
  bool is64(uint32_t mem) const { return m_.all_memories[mem].limits.is64; }
  ValType addr_type(uint32_t mem) const { return is64(mem) ? ValType::I64 : ValType::I32; }
  // The 32-bit address an access to memory `mem` reads, and the offset left
  // for it: a 64-bit memory's address plus offset is checked and narrowed by
  // Addr64 into the address's own stack slot (free once popped), and the
  // ordinary 32-bit access follows with offset 0.
  uint32_t address(uint32_t mem, const Operand& addr, uint64_t& offset) {
    if (!is64(mem)) return addr.src;
    if (emitting()) {
      emit_op(IOp::Addr64);
      slot_word(addr.slot);
      src_word(addr.src);
      word(static_cast<uint32_t>(offset));
      word(static_cast<uint32_t>(offset >> 32));
    }
    offset = 0;
    return addr.slot;
  }
  // An i64 operand (memory64 address or length) narrowed in place, trapping
  // as out of bounds when it is 2^32 or more: no memory is that large.
  uint32_t narrowed(const Operand& v) {
    if (v.type != ValType::I64) return v.src;
    if (emitting()) {
      emit_op(IOp::Narrow64);
      slot_word(v.slot);
      src_word(v.src);
    }
    return v.slot;
  }
  // The memory immediate of memory.size/grow/fill/init/copy: a zero byte in
  // wasm 2.0, a memory index with multi-memory.
  bool read_memidx(uint32_t& mem) {
    mem = 0;
    if (!multi_memory_) return read_zero_byte() && need_memory();
    if (!r_.u32(mem)) return false;
    if (mem >= m_.all_memories.size()) return fail("unknown memory " + std::to_string(mem));
    return true;
  }
  // An access to memory `mem` other than 0 is the memory-0 operation between
  // two UseMemory ops: the loop keeps one memory cached, and memory 0's code
  // pays nothing for multi-memory (docs/RATIONALE.md).
  void use_memory(uint32_t mem) {
    if (mem == 0 || !emitting()) return;
    emit_op(IOp::UseMemory);
    word(mem);
  }
  void restore_memory(uint32_t mem) {
    if (mem == 0 || !emitting()) return;
    emit_op(IOp::UseMemory);
    word(0);
  }
  // SIMD lane access: the size of the lane an instruction addresses.
  static uint32_t simd_lane_bytes(IOp op) {
    switch (op) {
      case IOp::I8x16ExtractLaneS:
      case IOp::I8x16ExtractLaneU:
      case IOp::I8x16ReplaceLane:
      case IOp::V128Load8Lane:
      case IOp::V128Store8Lane:
        return 1;
      case IOp::I16x8ExtractLaneS:
      case IOp::I16x8ExtractLaneU:
      case IOp::I16x8ReplaceLane:
      case IOp::V128Load16Lane:
      case IOp::V128Store16Lane:
        return 2;
      case IOp::I32x4ExtractLane:
      case IOp::I32x4ReplaceLane:
      case IOp::F32x4ExtractLane:
      case IOp::F32x4ReplaceLane:
      case IOp::V128Load32Lane:
      case IOp::V128Store32Lane:
        return 4;
      default:
        return 8;
    }
  }
  // A lane index immediate (one byte), below the lane count of the instruction.
  bool read_lane(const OpInfo& info, uint32_t& lane) {
    uint8_t b;
    if (!r_.u8(b)) return false;
    lane = b;
    if (lane >= 16 / simd_lane_bytes(info.op)) return fail("invalid lane index");
    return true;
  }
  bool read_local(uint32_t& index) {
    if (!r_.u32(index)) return false;
    if (index >= local_types_.size()) return fail("unknown local");
    return true;
  }
  bool need_memory() { return m_.all_memories.empty() ? fail("unknown memory 0") : true; }
  bool read_zero_byte() {
    uint8_t b;
    if (!r_.u8(b)) return false;
    if (b != 0) return malformed("zero byte expected");
    return true;
  }
  bool read_table(uint32_t& t) {
    if (!r_.u32(t)) return false;
    if (t >= m_.all_tables.size()) return fail("unknown table " + std::to_string(t));
    return true;
  }
  bool read_elem(uint32_t& e) {
    if (!r_.u32(e)) return false;
    if (e >= m_.elems.size()) return fail("unknown elem segment " + std::to_string(e));
    return true;
  }
  bool read_data(uint32_t& d) {
    if (!r_.u32(d)) return false;
    if (!m_.data_count) return malformed("data count section required");
    if (d >= *m_.data_count) return fail("unknown data segment " + std::to_string(d));
    return true;
  }
  bool read_ref_type(ValType& t) {
    t = ValType::FuncRef;
    uint8_t b;
    if (!r_.u8(b)) return false;
    if (b != 0x70 && b != 0x6F) return malformed("malformed reference type");
    t = static_cast<ValType>(b);
    return true;
  }

  // exception-handling
  bool read_tag(uint32_t& t) {
    if (!r_.u32(t)) return false;
    if (t >= m_.all_tag_types.size()) return fail("unknown tag " + std::to_string(t));
    return true;
  }
  const std::vector<ValType>& tag_params(uint32_t t) const { return m_.types[m_.all_tag_types[t]].params; }
  // The region of the innermost try whose body encloses ctrls_[index]
  // (ctrls_[index] itself included): where an exception raised there goes
  // after the regions inside it. -1: to the caller.
  int32_t enclosing_region(size_t index) const {
    for (size_t i = index + 1; i-- > 0;)
      if (ctrls_[i].kind == BlockKind::Try && ctrls_[i].region >= 0) return ctrls_[i].region;
    return -1;
  }
  bool op_catch(bool all);
  bool op_end_try_body() {
    Ctrl& c = ctrls_.back();
    if (c.kind == BlockKind::Try && c.region >= 0) regions_[c.region].end = here();
    return true;
  }

  bool instruction();
  bool simple(const OpInfo& info);
  bool special(const OpInfo& info);
  // `index` is the table for call_indirect, the callee for call; `tail` for
  // return_call / return_call_indirect.
  bool op_call(uint32_t type_index, bool indirect, uint32_t index, bool tail = false);

  const Module& m_;
  uint32_t func_index_;
  const Function& fn_;
  const FuncType& type_;
  Reader r_;
  size_t instr_offset_ = 0;
  bool failed_ = false;
  Error error_;

  std::vector<ValType> local_types_;
  std::vector<uint32_t> local_slot_;
  uint32_t local_slots_ = 0;
  uint32_t max_slot_ = 0;
  std::vector<Operand> vals_;
  std::vector<Ctrl> ctrls_;
  std::vector<uint32_t> code_;
  std::vector<std::pair<uint32_t, uint32_t>> source_map_;
  uint32_t last_dst_ = UINT32_MAX;
  uint32_t last_op_ = UINT32_MAX;     // op word of the last op emitted since the last label
  uint32_t prev_op_ = UINT32_MAX;     // the op emitted before it, with no label between (merge_add_pair)
  uint32_t last_copy2_ = UINT32_MAX;  // the last copy2 made since the last label (head_switch_write)
  std::vector<Operand> scratch_;
  std::vector<uint64_t> consts_;
  std::vector<uint32_t> slot_words_;  // code positions of slot operands, in order
  std::vector<TryRegion> regions_;
  uint32_t exn_count_ = 0;
  uint32_t loop_depth_ = 0;
  const bool counting_;
  const bool fuel_;           // segments charge Profiling::fuel (CountFuel)
  const uint32_t probe_min_;  // LoadOptions::probe_dispatch's, or 0
  const bool multi_memory_;
  uint32_t seg_pos_ = UINT32_MAX;  // count operand of the open segment's CountInstr
  // Counted instructions' byte offsets, segment by segment (CompiledFunc::seg_offsets).
  std::vector<uint32_t> seg_begin_;
  std::vector<uint32_t> seg_offsets_;
  struct CountMark {
    uint32_t pos;     // op word
    uint32_t seg;     // its segment's CountInstr operand, or UINT32_MAX
    uint32_t index;   // instructions of the segment up to and including this one
    uint32_t before;  // instructions of the segment that ran before the op starts (emit_op)
  };
  // A label was bound since the last op, with this many instructions
  // counted before it (emit_op's `before`).
  bool label_since_op_ = true;
  uint32_t label_count_ = 0;
  std::vector<CountMark> count_marks_;
  std::vector<uint32_t> call_slot_words_;  // the slot operand of each counted call, by slot
  // Code counted without fuel: the edges of jumps (add_edge), by counter
  // (counter 1 + k is edge k): the operand word that names it, and the
  // instructions counted before the jump (its source) and before its
  // target; kToEnd: all of them (the body's end).
  static constexpr uint32_t kUnpatched = UINT32_MAX, kToEnd = UINT32_MAX - 1;
  struct Edge {
    uint32_t word;
    uint32_t src;
    uint32_t tgt;
  };
  std::vector<Edge> edges_;
};

Status FunctionCompiler::compile(CompiledFunc& out) {
  uint32_t slot = 0;
  for (ValType t : type_.params) {
    local_types_.push_back(t);
    local_slot_.push_back(slot);
    slot += slots_of(t);
  }
  uint32_t param_slots = slot;
  for (ValType t : fn_.locals) {
    local_types_.push_back(t);
    local_slot_.push_back(slot);
    slot += slots_of(t);
  }
  local_slots_ = slot;
  max_slot_ = slot;
  slot_reads_.assign(local_slots_, 0);
  uint32_t result_slots = 0;
  for (ValType t : type_.results) result_slots += slots_of(t);
  max_slot_ = std::max(max_slot_, result_slots);  // results are written to fp[0..]

  instr_offset_ = fn_.body_offset;
  // Code counted without fuel starts with segment 0's CountInstr, also when
  // the body starts with a label or is empty (a segment of no instructions):
  // a call with CallLocalCounted then counts the entry without looking at
  // the callee's first op (vm/interp.cc, ENTER_CALLEE).
  if (counting_ && !fuel_) open_segment();
  ctrls_.push_back({});
  ctrls_.back().kind = BlockKind::Body;
  ctrls_.back().results = type_.results;
  ctrls_.back().base_slot = local_slots_;

  while (!ctrls_.empty()) {
    if (r_.at_end()) {
      instr_offset_ = r_.offset();
      return Status(error_.message.empty() ? (malformed("unexpected end of section or function"), error_)
                                           : error_);
    }
    if (!instruction()) {
      if (!failed_) check_reader();
      if (!failed_) malformed("unexpected end of section or function");
      return Status(error_);
    }
  }
  if (failed_) return Status(error_);  // an internal error in patch()
  resolve_threaded_jumps();
  if (!r_.at_end()) {
    instr_offset_ = r_.offset();
    malformed("END opcode expected");  // bytes after the final `end`
    return Status(error_);
  }
  // Frame: [params][locals][constants][value stack]. Constants were named by
  // tag and stack slots numbered from local_slots_; make room between them.
  // Exception slots follow the constants: [constants][exception slots].
  const uint32_t nconsts = static_cast<uint32_t>(consts_.size());
  const uint32_t nexn = exn_count_;
  auto renumber = [&](uint32_t w) {
    if (w & kConstTag) return local_slots_ + (w & ~kConstTag);
    if (w & kExnTag) return local_slots_ + nconsts + (w & ~kExnTag);
    return w >= local_slots_ ? w + nconsts + nexn : w;
  };
  if (nconsts || nexn) {
    for (uint32_t pos : slot_words_) code_[pos] = renumber(code_[pos]);
  }
  for (TryRegion& r : regions_) {
    r.dst_slot = renumber(r.dst_slot);
    r.exn_slot = renumber(r.exn_slot);
  }
  consts_.resize(nconsts + nexn, 0);  // copied in on entry: exception slots start empty
  out.try_regions = std::move(regions_);
  // A segment's operand words are [count, index]; an op outside any segment
  // (after a label, before the next counted instruction) has seg UINT32_MAX:
  // nothing to take back there.
  for (const CountMark& m : count_marks_) {
    CompiledFunc::CountMark mark{m.pos, m.seg == UINT32_MAX ? UINT32_MAX : code_[m.seg + 1], m.index,
                                 m.before};
    const auto& prev = out.count_marks;
    if (prev.empty() || prev.back().seg != mark.seg || prev.back().ran != mark.ran ||
        prev.back().before != mark.before)
      out.count_marks.push_back(mark);
  }
  out.charges_fuel = fuel_;
  // Counters: with fuel, the segments in order; without, the body, then the
  // edges: a jump back adds its target through itself, one forward skips
  // what lies between (negative), a return what follows, a landing what
  // follows its handler.
  const auto ninstr = static_cast<uint32_t>(seg_offsets_.size());
  for (size_t s = 0; s < seg_begin_.size(); ++s)
    out.counters.push_back({seg_begin_[s], s + 1 < seg_begin_.size() ? seg_begin_[s + 1] : ninstr, 1});
  for (size_t k = 0; k < edges_.size(); ++k) {
    Edge e = edges_[k];
    if (e.tgt == kUnpatched) e.tgt = e.src;  // a jump to a label never bound: never taken
    if (e.src == kToEnd) e.src = ninstr;
    if (e.tgt == kToEnd) e.tgt = ninstr;
    code_[e.word] = static_cast<uint32_t>(out.counters.size());  // 1 + k, as it was
    if (e.tgt <= e.src) out.counters.push_back({e.tgt, e.src, 1});
    else out.counters.push_back({e.src, e.tgt, -1});
  }
  // A counted call's entry follows the node block's counters.
  const auto nall = static_cast<uint32_t>(out.counters.size());
  for (uint32_t pos : call_slot_words_) code_[pos] = nall + 2 * code_[pos];
  out.call_slots = static_cast<uint32_t>(call_slot_words_.size());
  if (!out.counters.empty()) out.seg_offsets = std::move(seg_offsets_);
  out.const_base = local_slots_;
  out.frame_init.assign(local_slots_ - param_slots, 0);
  out.frame_init.insert(out.frame_init.end(), consts_.begin(), consts_.end());
  // Calls copy the image two words at a time, at least once (vm/interp.cc,
  // init_frame): an odd or empty one gets zeros up to an even size of at
  // least two, which land on the first value-stack slots (nothing is there
  // yet) and which the frame must cover.
  out.frame_init.resize(std::max<size_t>(2, (out.frame_init.size() + 1) & ~size_t{1}), 0);
  out.consts = std::move(consts_);
  out.code = std::move(code_);
  out.param_slots = param_slots;
  out.local_slots = local_slots_;
  out.frame_slots = std::max<uint32_t>(max_slot_ + nconsts + nexn, param_slots + out.frame_init.size());
  out.result_slots = result_slots;
  out.source_map = std::move(source_map_);
  return Status();
}

bool FunctionCompiler::simple(const OpInfo& info) {
  switch (info.kind) {
    case Kind::Unary: {
      Operand a;
      if (!pop(info.p1, a)) return false;
      if (info.op == IOp::I32WrapI64) {
        // An i32 in a slot is the slot's low 32 bits, whatever the high ones
        // hold (every reader of an i32 operand reads only those; values leave
        // for the host through slots_to_values, which clears the rest). So
        // wrapping emits nothing: the i32 is the i64's slot. Go computes
        // every address in i64 and wraps it before the access (11% of the
        // ops Go's strconv and compress/flate tests ran were this wrap).
        // A temporary's slot is the one the result would get; last_dst_
        // stays, so a local.set can still redirect the i64's producer.
        if (a.is_virtual()) push_virtual(ValType::I32, a.src);
        else push(ValType::I32);
        if (emitting() && !a.is_virtual()) narrow_extended_add(a);
        return true;
      }
      if (info.op == IOp::I32Eqz && emitting() && last_op_ != UINT32_MAX) {
        // [cmp t a b] [i32.eqz dst t] -> [negated cmp t a b]: `if (!(x < y))`
        // is Go's and clang's usual shape, and a lone compare fuses with the
        // branch that follows (emit_cond_jump). Neither instruction traps.
        const IOp neg = op_tables().negated[code_[last_op_]];
        if (neg != IOp::Count && last_op_is(static_cast<IOp>(code_[last_op_]), 4, a)) {
          code_[last_op_] = static_cast<uint32_t>(neg);
          push(ValType::I32);  // the compare's slot: last_dst_ still names it
          return true;
        }
      }
      uint32_t dst = push(info.result);
      if (emitting()) {
        emit_op(info.op);
        slot_word(dst);
        src_word(a.src);
        mark_dst(here() - 2);
      }
      return true;
    }
    case Kind::Binary: {
      Operand a, b;
      if (!pop(info.p2, b) || !pop(info.p1, a)) return false;
      uint32_t dst = push(info.result);
      if (emitting()) {
        if (IOp chain = chain_with_last(info.op, a, b); chain != IOp::Count) {
          // [First t x y] [Second dst t c] (or c t) -> [chain dst x y c]
          uint32_t p = last_op_;
          const Operand& other = last_op_is(static_cast<IOp>(code_[p]), 4, a) ? b : a;
          code_[p] = static_cast<uint32_t>(chain);
          code_[p + 1] = dst;
          src_word(other.src);
          retarget_fused(p);
          mark_dst(p + 1);  // last_op_ stays p: a load may take an i32.shl+add as its address
          return true;
        }
        IOp bin_load = op_tables().f64_mem[static_cast<size_t>(info.op)].first;
        if (bin_load != IOp::Count && last_op_is(IOp::F64Load, 4, b)) {
          // [f64.load t addr off] [X dst a t] -> [bin_load(X) dst a addr off].
          // Only the load can trap: its source offset and count mark stay.
          uint32_t p = last_op_;
          uint32_t addr = code_[p + 2], off = code_[p + 3];
          code_.resize(p + 2);
          slot_words_.pop_back();  // p + 2, re-added in order below
          code_[p] = static_cast<uint32_t>(bin_load);
          code_[p + 1] = dst;
          src_word(a.src);
          src_word(addr);
          word(off);
          mark_dst(p + 1);  // last_op_ stays p: an f64.store may follow (store_bin_load)
          return true;
        }
        if (IOp imm = op_tables().imm[static_cast<size_t>(info.op)]; imm != IOp::Count) {
          // [const32 t v] [X dst a t] -> [imm(X) dst a v]; [const64 t lo hi]
          // [X dst a t] -> [imm(X) dst a lo hi]. The constant cannot trap:
          // the op's source offset and count mark become X's.
          const IOp konst = info.p1 == ValType::I64 ? IOp::Const64 : IOp::Const32;
          const uint32_t len = konst == IOp::Const64 ? 4 : 3;
          if (last_op_is(konst, len, b) && !slot_words_.empty() && slot_words_.back() == last_op_ + 1) {
            const uint32_t p = last_op_;
            const uint32_t lo = code_[p + 2], hi = konst == IOp::Const64 ? code_[p + 3] : 0;
            code_.resize(p + 2);
            code_[p] = static_cast<uint32_t>(imm);
            code_[p + 1] = dst;
            src_word(a.src);
            word(lo);
            if (konst == IOp::Const64) word(hi);
            retarget_fused(p);
            mark_dst(p + 1);
            return true;
          }
        }
        emit_op(info.op);
        slot_word(dst);
        src_word(a.src);
        src_word(b.src);
        mark_dst(here() - 3);
      }
      return true;
    }
    case Kind::Load: {
      uint64_t offset;
      uint32_t mem;
      if (!read_memarg(info, offset, mem)) return false;
      Operand addr;
      if (!pop(addr_type(mem), addr)) return false;
      uint32_t dst = push(info.result);
      if (emitting() && mem == 0) {
        // The op just emitted computed the address: the load takes it over,
        // [i32.add t x y] [load dst t offset] -> [load_add dst x y offset],
        // [i32.shl+add t x k c] [load dst t offset] -> [load_shl_add dst x k c offset].
        // An i32 address that is an i64.add's slot was wrapped from it, and
        // the low half of a sum is the sum of the low halves:
        // [i64.add t x y] i32.wrap_i64 [load dst t offset] -> [load_add dst x y offset].
        IOp fused = IOp::Count;
        if (last_op_is(IOp::I32Add, 4, addr) || (!is64(mem) && last_op_is(IOp::I64Add, 4, addr)))
          fused = op_tables().load_add[static_cast<size_t>(info.op)];
        else if (last_op_is(IOp::I32ShlAdd, 5, addr))
          fused = op_tables().load_shl_add[static_cast<size_t>(info.op)];
        if (fused != IOp::Count) {
          uint32_t p = last_op_;
          code_[p] = static_cast<uint32_t>(fused);
          code_[p + 1] = dst;
          word(static_cast<uint32_t>(offset));
          retarget_fused(p);
          mark_dst(p + 1);
          last_op_ = UINT32_MAX;
          return true;
        }
      }
      use_memory(mem);
      uint32_t a = address(mem, addr, offset);
      if (emitting()) {
        emit_op(info.op);
        slot_word(dst);
        src_word(a);
        word(static_cast<uint32_t>(offset));
        mark_dst(here() - 3);
      }
      restore_memory(mem);
      return true;
    }
    case Kind::Store: {
      uint64_t offset;
      uint32_t mem;
      if (!read_memarg(info, offset, mem)) return false;
      Operand addr, v;
      if (!pop(info.p2, v) || !pop(addr_type(mem), addr)) return false;
      if (emitting() && mem == 0 && !is64(mem) && info.op == IOp::F64Store && last_op_ != UINT32_MAX &&
          op_tables().f64_mem[code_[last_op_]].second != IOp::Count &&
          last_op_is(static_cast<IOp>(code_[last_op_]), 4, v)) {
        // [X t a b] [f64.store addr t off] -> [store_bin(X) addr a b off]
        uint32_t p = last_op_;
        code_[p] = static_cast<uint32_t>(op_tables().f64_mem[code_[p]].second);
        code_[p + 1] = addr.src;
        word(static_cast<uint32_t>(offset));
        retarget_fused(p);
        last_op_ = UINT32_MAX;
        return true;
      }
      if (emitting() && mem == 0 && !is64(mem) && info.op == IOp::F64Store && last_op_ != UINT32_MAX &&
          op_tables().store_bin_load[code_[last_op_]] != IOp::Count &&
          last_op_is(static_cast<IOp>(code_[last_op_]), 5, v)) {
        // [bin_load(X) t a laddr loff] [f64.store saddr t soff] ->
        // [store_bin_load(X) saddr a laddr loff soff]. Two instructions can
        // trap here: the op's source offset and count mark stay the load's,
        // and word 5, where the loop reports a failing store, gets the store's.
        uint32_t p = last_op_;
        code_[p] = static_cast<uint32_t>(op_tables().store_bin_load[code_[p]]);
        code_[p + 1] = addr.src;
        word(static_cast<uint32_t>(offset));
        source_map_.emplace_back(p + 5, static_cast<uint32_t>(instr_offset_));
        if (counting_)
          count_marks_.push_back(
              {p + 5, seg_pos_, seg_pos_ == UINT32_MAX ? 0 : code_[seg_pos_], count_marks_.back().before});
        last_op_ = UINT32_MAX;
        return true;
      }
      use_memory(mem);
      uint32_t a = address(mem, addr, offset);
      if (emitting()) {
        emit_op(info.op);
        src_word(a);
        src_word(v.src);
        word(static_cast<uint32_t>(offset));
      }
      restore_memory(mem);
      return true;
    }
    // threads: [op dst addr offset], [op addr v offset],
    // [op dst addr v offset], [op dst addr expected replacement offset].
    case Kind::AtomicLoad:
    case Kind::AtomicStore:
    case Kind::AtomicRmw:
    case Kind::AtomicCmpxchg: {
      uint64_t offset;
      uint32_t mem;
      if (!read_memarg(info.mem_bytes, offset, mem, true)) return false;
      Operand addr, v, replacement;
      if (info.kind == Kind::AtomicCmpxchg && !pop(info.p2, replacement)) return false;
      if (info.kind != Kind::AtomicLoad && !pop(info.p2, v)) return false;
      if (!pop(addr_type(mem), addr)) return false;
      uint32_t dst = info.kind == Kind::AtomicStore ? 0 : push(info.result);
      use_memory(mem);
      uint32_t a = address(mem, addr, offset);
      if (emitting()) {
        emit_op(info.op);
        if (info.kind != Kind::AtomicStore) slot_word(dst);
        src_word(a);
        if (info.kind != Kind::AtomicLoad) src_word(v.src);
        if (info.kind == Kind::AtomicCmpxchg) src_word(replacement.src);
        word(static_cast<uint32_t>(offset));
      }
      restore_memory(mem);
      return true;
    }
    case Kind::Special:
      break;
  }
  return fail("internal error: not a simple instruction");
}

bool FunctionCompiler::op_call(uint32_t type_index, bool indirect, uint32_t index, bool tail) {
  const FuncType& ft = m_.types[type_index];
  // A tail call returns the callee's results as the caller's own.
  if (tail && ft.results != ctrls_.front().results) return fail("type mismatch");
  Operand elem;
  if (indirect && !pop(ValType::I32, elem)) return false;
  std::vector<Operand> args;
  if (!pop_all(ft.params, args)) return false;
  for (Operand& a : args) materialize(a);
  uint32_t base = args.empty() ? next_slot() : args.front().slot;
  uint32_t arg_slots = 0, result_slots = 0;
  for (ValType t : ft.params) arg_slots += slots_of(t);
  for (ValType t : ft.results) result_slots += slots_of(t);
  bool hooked = !indirect && index < m_.call_hooks.size() && m_.call_hooks[index] != 0;
  if (tail && emitting() && !hooked) {
    // [return_call func base nargs][ret base nres] or
    // [return_call_indirect table type elem base nargs][ret base nres]. The
    // callee's frame replaces this one; the `ret` after it serves callees
    // that cannot replace a frame (host functions, hooked allocators), which
    // the interpreter calls as usual with the `ret` as resume point.
    // Counted without fuel: the rest of the body is taken back first, so a
    // trap in the call takes nothing more back (no segment in its marks).
    emit_count_edge(false);
    const uint32_t seg_pos = seg_pos_;
    if (counting_ && !fuel_) seg_pos_ = UINT32_MAX;
    if (indirect) {
      emit_op(IOp::ReturnCallIndirect);
      word(index);
      word(type_index);
      src_word(elem.src);
      slot_word(base);
    } else {
      emit_op(IOp::ReturnCall);
      word(index);
      slot_word(base);
    }
    word(arg_slots);
    emit_op(IOp::Ret);
    slot_word(base);
    word(result_slots);
    seg_pos_ = seg_pos;
    max_slot_ = std::max(max_slot_, base + result_slots);
    set_unreachable();
    return true;
  }
  // A call_indirect of a grafting function has no call-site entry: its
  // callee's place in the call tree is the profiler's answer, not a cache.
  const bool graft = indirect && func_index_ < m_.graft_calls.size() && m_.graft_calls[func_index_];
  if (emitting()) {
    if (indirect) {
      emit_op(graft ? IOp::CallTableGraft : counting_ ? IOp::CallTableCounted : IOp::CallTable);
      word(index);
      word(type_index);
      src_word(elem.src);
      slot_word(base);
    } else {
      // Calls to hooked functions (memory profiling) get their own op, so the
      // plain CallFunc never tests for a hook.
      // A function of this module (not an import) is wasm code of this
      // instance, lowered like this one: CallLocalCounted skips the tests
      // for a host function and for another instance, and counts the
      // callee's first segment itself (see compile()).
      const bool local = index >= m_.num_imported_funcs;
      if (counting_ && !fuel_ && local && !hooked) emit_op(IOp::CallLocalCounted);
      else if (counting_) emit_op(hooked ? IOp::CallHookedCounted : IOp::CallFuncCounted);
      else emit_op(hooked ? IOp::CallHooked : IOp::CallFunc);
      word(index);
      slot_word(base);
    }
    // Counted calls carry their call site's slot (CompiledFunc::call_slots),
    // made the entry's word index once the segments are known (compile()).
    if (counting_ && !graft) {
      call_slot_words_.push_back(here());
      word(static_cast<uint32_t>(call_slot_words_.size() - 1));
    }
  }
  // Results are written from `base` on: make sure the frame covers them.
  if (emitting()) max_slot_ = std::max(max_slot_, base + result_slots);
  if (tail) {
    // A direct tail call to a hooked function: a hooked call, then a return.
    if (emitting()) {
      emit_count_edge(false);
      emit_op(IOp::Ret);
      slot_word(base);
      word(result_slots);
    }
    set_unreachable();
    return true;
  }
  for (ValType t : ft.results) push(t);
  return true;
}

// catch / catch_all: ends the try body (or the previous handler) like
// `else`, then starts a handler that receives the tag's values.
bool FunctionCompiler::op_catch(bool all) {
  Ctrl& c = ctrls_.back();
  if (c.kind != BlockKind::Try && c.kind != BlockKind::Catch)
    return fail(all ? "catch_all without try" : "catch without try");
  uint32_t t = TryRegion::kCatchAll;
  if (!all && !read_tag(t)) return false;
  op_end_try_body();
  if (!pop_all(c.results, scratch_)) return false;
  if (vals_.size() != c.height) return fail("type mismatch");
  if (emitting()) {
    emit_exit_to_end(c);
  }
  c.unreachable = false;
  c.kind = all ? BlockKind::CatchAll : BlockKind::Catch;
  if (!c.dead && c.region >= 0) {
    bind_label();
    regions_[c.region].handlers.push_back({t, here()});
    emit_count_edge(true);  // counted without fuel: the handler's landing
  }
  if (!all)
    for (ValType v : tag_params(t)) push(v);
  return true;
}

bool FunctionCompiler::instruction() {
  instr_offset_ = r_.offset();
  uint8_t opcode;
  if (!r_.u8(opcode)) return false;
  const OpTables& tables = op_tables();
  const OpInfo* info = &tables.single[opcode];
  if (opcode == 0xFC || opcode == 0xFD || opcode == 0xFE) {
    uint32_t sub;
    if (!r_.u32(sub)) return false;
    size_t limit = opcode == 0xFC ? tables.fc.size() : opcode == 0xFD ? tables.fd.size() : tables.fe.size();
    if (sub >= limit) return malformed("illegal opcode");
    info = opcode == 0xFC ? &tables.fc[sub] : opcode == 0xFD ? &tables.fd[sub] : &tables.fe[sub];
  }
  if (!info->valid) return malformed("illegal opcode");
  if (info->feature >= 0 && !m_.features.has(static_cast<Feature>(info->feature)))
    return malformed("illegal opcode");
  if (!counting_) return info->kind != Kind::Special ? simple(*info) : special(*info);

  // Instruction counting (LoadOptions::count_instructions): each straight-line
  // segment starts with a CountInstr whose operand is the number of
  // instructions in it. A segment ends wherever control may branch (branches,
  // labels); calls stay inside it, since they return. That is fuel's
  // lowering; without fuel the whole body is one segment and taken jumps
  // count their edges (add_edge, vm/counted_ops.def). When a trap or
  // proc_exit cuts a segment short, the
  // interpreter takes back what did not run using CompiledFunc::count_marks,
  // so counts stay exact. Each segment has one run counter per call-tree
  // node; its instructions' offsets (CompiledFunc::seg_offsets) turn runs
  // into per-instruction counts.
  const bool counted = info->op != IOp::Block && info->op != IOp::Loop && info->op != IOp::Else &&
                       info->op != IOp::End && info->op != IOp::Try && info->op != IOp::Catch &&
                       info->op != IOp::CatchAll && info->op != IOp::Delegate;
  if (counted && emitting()) {
    if (seg_pos_ == UINT32_MAX) open_segment();
    ++code_[seg_pos_];
    seg_offsets_.push_back(static_cast<uint32_t>(instr_offset_));
  }
  bool ok = info->kind != Kind::Special ? simple(*info) : special(*info);
  // With fuel, a branch ends its segment; without, the body is one.
  if (fuel_) {
    switch (info->op) {
      case IOp::BrIf:
      case IOp::Br:
      case IOp::BrTable:
      case IOp::Return:
      case IOp::Unreachable:
      case IOp::If:
      case IOp::ReturnCall:
      case IOp::ReturnCallIndirect:
      case IOp::Throw:
      case IOp::Rethrow:
        seg_pos_ = UINT32_MAX;
        break;
      default:
        break;
    }
  }
  return ok;
}

bool FunctionCompiler::special(const OpInfo& info_ref) {
  const OpInfo* info = &info_ref;
  switch (info->op) {
    case IOp::Unreachable:
      if (emitting()) emit_op(IOp::Unreachable);
      set_unreachable();
      return true;
    case IOp::Nop:
      return true;

    case IOp::Block:
    case IOp::Loop:
    case IOp::If:
    case IOp::Try: {
      std::vector<ValType> params, results;
      if (!read_block_type(params, results)) return false;
      Operand cond;
      if (info->op == IOp::If && !pop(ValType::I32, cond)) return false;
      std::vector<Operand> ins;
      if (!pop_all(params, ins)) return false;
      repush(ins);
      // Values carried across a block boundary must not stay virtual: a
      // branch or the other arm would see a different location.
      materialize_all();
      for (size_t i = 0; i < params.size(); ++i) vals_.pop_back();
      bool was_emitting = emitting();
      push_ctrl(block_kind(info->op), std::move(params), std::move(results));
      Ctrl& c = ctrls_.back();
      if (!was_emitting) {
        c.dead = true;
        return true;
      }
      if (info->op == IOp::Try) {
        // The body's code is the region; handlers are added at each catch.
        TryRegion r;
        r.start = here();
        r.end = here();
        r.next = enclosing_region(ctrls_.size() - 2);
        r.dst_slot = c.base_slot;
        c.exn_slot = kExnTag | exn_count_++;
        r.exn_slot = c.exn_slot;
        c.region = static_cast<int32_t>(regions_.size());
        regions_.push_back(std::move(r));
      } else if (info->op == IOp::Loop) {
        bind_label();
        c.loop_start = here();
        c.loop_count = counted_so_far();
        c.outermost = loop_depth_ == 0;
        ++loop_depth_;
      } else if (info->op == IOp::If) {
        auto [op, w] = emit_cond_jump(false, cond);
        add_edge(op, w);
        c.else_op = op;
        c.else_word = w;
      }
      return true;
    }

    case IOp::Else: {
      Ctrl& c = ctrls_.back();
      if (c.kind != BlockKind::If) return malformed("else without matching if");
      if (!pop_all(c.results, scratch_)) return false;
      if (vals_.size() != c.height) return fail("type mismatch");
      bool reachable = emitting();
      if (reachable) {
        emit_exit_to_end(c);
      }
      if (!c.dead) {
        patch(c.else_op, c.else_word, here());
        c.else_op = -1;
        bind_label();
      }
      c.unreachable = false;
      c.kind = BlockKind::Else;
      for (ValType t : c.params) push(t);
      return true;
    }

    case IOp::Catch:
      return op_catch(false);
    case IOp::CatchAll:
      return op_catch(true);

    case IOp::Throw: {
      uint32_t t;
      if (!read_tag(t)) return false;
      std::vector<Operand> args;
      if (!pop_all(tag_params(t), args)) return false;
      for (Operand& a : args) materialize(a);
      uint32_t base = args.empty() ? next_slot() : args.front().slot;
      if (emitting()) {  // [throw tag base]: the values are at fp[base..]
        emit_op(IOp::Throw);
        word(t);
        slot_word(base);
      }
      set_unreachable();
      return true;
    }
    case IOp::Rethrow: {
      uint32_t depth;
      if (!r_.u32(depth)) return false;
      if (depth >= ctrls_.size()) return fail("unknown label");
      const Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
      if (target.kind != BlockKind::Catch && target.kind != BlockKind::CatchAll)
        return fail("invalid rethrow label");
      if (emitting()) {  // [rethrow exn_slot]
        emit_op(IOp::Rethrow);
        slot_word(target.exn_slot);
      }
      set_unreachable();
      return true;
    }
    case IOp::Delegate: {
      // Ends a try without handlers: what its body throws goes to the try
      // (or the code around the block) that label `depth` names outside it.
      if (ctrls_.back().kind != BlockKind::Try) return fail("delegate without try");
      uint32_t depth;
      if (!r_.u32(depth)) return false;
      op_end_try_body();
      int32_t region = ctrls_.back().region;
      if (depth >= ctrls_.size() - 1) return fail("unknown label");
      if (region >= 0) regions_[region].next = enclosing_region(ctrls_.size() - 2 - depth);
      info = &op_tables().single[0x0B];  // then as `end`
      [[fallthrough]];
    }
    case IOp::End: {
      Ctrl& c = ctrls_.back();
      op_end_try_body();
      if (c.kind == BlockKind::If && c.params != c.results) return fail("type mismatch");
      if (!pop_all(c.results, scratch_)) return false;
      if (vals_.size() != c.height) return fail("type mismatch");
      if (ctrls_.size() == 1) {
        // The function's own end: an implicit return.
        if (emitting()) emit_return(scratch_, false);
        ctrls_.pop_back();
        return true;
      }
      if (emitting()) {
        emit_label_values(c);
      }
      uint32_t end = here();
      for (auto [op, w] : c.fixups) patch(op, w, end);
      if (c.else_op >= 0) patch(c.else_op, c.else_word, end);
      bind_label();
      std::vector<ValType> results = std::move(c.results);
      if (c.kind == BlockKind::Loop && !c.dead) --loop_depth_;
      ctrls_.pop_back();
      for (ValType t : results) push(t);
      return true;
    }

    case IOp::Br: {
      uint32_t depth;
      if (!r_.u32(depth)) return false;
      if (depth >= ctrls_.size()) return fail("unknown label");
      const std::vector<ValType> types = ctrls_[ctrls_.size() - 1 - depth].label_types();
      std::vector<Operand> vs;
      if (!pop_all(types, vs)) return false;
      if (emitting()) emit_branch(depth, vs);
      set_unreachable();
      return true;
    }

    case IOp::BrIf: {
      uint32_t depth;
      if (!r_.u32(depth)) return false;
      if (depth >= ctrls_.size()) return fail("unknown label");
      Operand cond;
      if (!pop(ValType::I32, cond)) return false;
      const std::vector<ValType> types = ctrls_[ctrls_.size() - 1 - depth].label_types();
      std::vector<Operand> vs;
      if (!pop_all(types, vs)) return false;
      if (emitting()) {
        Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
        if (!needs_moves(depth, vs)) {
          auto [op, w] = emit_cond_jump(true, cond);
          add_edge(op, w);
          if (target.kind == BlockKind::Loop) {
            patch_to_loop(target, op, w);
            merge_add_into_back_jump(op, target.loop_start);
          } else {
            target.fixups.emplace_back(op, w);
          }
        } else {
          auto [skip, w] = emit_cond_jump(false, cond);
          add_edge(skip, w);
          std::vector<Operand> moved = vs;
          emit_branch(depth, moved);
          patch(skip, w, here());
          bind_label();
        }
      }
      // The spec pushes the label's types back, not what was popped: after
      // `unreachable`, br_if's operands become typed again.
      for (size_t i = 0; i < vs.size(); ++i) vs[i].type = types[i];
      repush(vs);
      return true;
    }

    case IOp::BrTable: {
      uint32_t n;
      if (!r_.count(n)) return false;
      std::vector<uint32_t> depths(n + 1);
      for (uint32_t i = 0; i <= n; ++i) {
        if (!r_.u32(depths[i])) return false;
        if (depths[i] >= ctrls_.size()) return fail("unknown label");
      }
      Operand index;
      if (!pop(ValType::I32, index)) return false;
      size_t arity = ctrls_[ctrls_.size() - 1 - depths[n]].label_types().size();
      std::vector<Operand> vs;
      for (uint32_t i = 0; i <= n; ++i) {
        const std::vector<ValType>& types = ctrls_[ctrls_.size() - 1 - depths[i]].label_types();
        if (types.size() != arity) return fail("type mismatch");
        if (!pop_all(types, vs)) return false;
        repush(vs);
      }
      if (!pop_all(ctrls_[ctrls_.size() - 1 - depths[n]].label_types(), vs)) return false;
      if (emitting()) {
        if (probe_min_ && n + 1 >= probe_min_) emit_probe(index);
        uint32_t op = emit_op(IOp::Switch);
        src_word(index.src);
        word(n);
        if (!counting_ && arity == 0 && index.is_virtual() && index.src < local_slots_) {
          // The first op of the innermost loop (blocks in between emit
          // nothing): a head switch to thread jumps through.
          for (size_t i = ctrls_.size(); i-- > 1;) {
            Ctrl& c = ctrls_[i];
            if (c.kind != BlockKind::Loop && c.kind != BlockKind::Block) break;
            if (c.kind == BlockKind::Loop) {
              if (c.loop_start == op && c.params.empty()) {
                c.head = static_cast<uint32_t>(heads_.size());
                heads_.push_back({op, index.src, c.outermost});
              }
              break;
            }
          }
        }
        uint32_t table = here();
        for (uint32_t i = 0; i <= n; ++i) word(0);
        if (counting_ && !fuel_) {
          // SwitchCounted: an edge per target after the offsets (add_edge).
          code_[op] = static_cast<uint32_t>(IOp::SwitchCounted);
          for (uint32_t i = 0; i <= n; ++i) {
            edges_.push_back({here(), counted_so_far(), kUnpatched});
            word(static_cast<uint32_t>(edges_.size()));
          }
        }
        for (uint32_t i = 0; i <= n; ++i) {
          uint32_t depth = depths[i];
          Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
          if (!needs_moves(depth, vs)) {
            if (target.kind == BlockKind::Loop) patch_to_loop(target, op, table + i);
            else target.fixups.emplace_back(op, table + i);
          } else {
            // A stub after the table moves the values, then jumps.
            patch(op, table + i, here());
            std::vector<Operand> moved = vs;
            emit_branch(depth, moved);
          }
        }
      }
      set_unreachable();
      return true;
    }

    case IOp::Return: {
      std::vector<Operand> vs;
      if (!pop_all(ctrls_.front().results, vs)) return false;
      if (emitting()) emit_return(vs, true);
      set_unreachable();
      return true;
    }

    case IOp::Call: {
      uint32_t f;
      if (!r_.u32(f)) return false;
      if (f >= m_.func_type_indices.size()) return fail("unknown function " + std::to_string(f));
      return op_call(m_.func_type_indices[f], false, f);
    }
    case IOp::ReturnCall: {
      uint32_t f;
      if (!r_.u32(f)) return false;
      if (f >= m_.func_type_indices.size()) return fail("unknown function " + std::to_string(f));
      return op_call(m_.func_type_indices[f], false, f, true);
    }

    case IOp::CallIndirect:
    case IOp::ReturnCallIndirect: {
      uint32_t type_index, table;
      if (!r_.u32(type_index)) return false;
      if (!r_.u32(table)) return false;
      if (table >= m_.all_tables.size()) return fail("unknown table " + std::to_string(table));
      if (type_index >= m_.types.size()) return fail("unknown type");
      if (m_.all_tables[table].elem != ValType::FuncRef) return fail("type mismatch");
      return op_call(type_index, true, table, info->op == IOp::ReturnCallIndirect);
    }

    case IOp::Drop: {
      Operand v;
      return pop(v);
    }

    case IOp::Select:
    case IOp::SelectT: {
      ValType want = kUnknown;
      if (info->op == IOp::SelectT) {
        uint32_t n;
        if (!r_.u32(n)) return false;
        if (n != 1) return fail("invalid result arity");
        uint8_t b;
        if (!r_.u8(b)) return false;
        if (!is_valtype_byte(b)) return malformed("malformed value type");
        want = static_cast<ValType>(b);
      }
      Operand cond, b, a;
      if (!pop(ValType::I32, cond)) return false;
      if (!pop(want, b) || !pop(want, a)) return false;
      ValType t = want;
      if (info->op == IOp::Select) {
        if ((a.type != kUnknown && !is_num(a.type) && a.type != ValType::V128) ||
            (b.type != kUnknown && !is_num(b.type) && b.type != ValType::V128))
          return fail("type mismatch");
        if (a.type != kUnknown && b.type != kUnknown && a.type != b.type) return fail("type mismatch");
        t = a.type == kUnknown ? b.type : a.type;
      }
      uint32_t dst = push(t);
      if (emitting()) {
        emit_op(t == ValType::V128 ? IOp::SelectV : IOp::SelectI);
        slot_word(dst);
        src_word(a.src);
        src_word(b.src);
        src_word(cond.src);
        mark_dst(here() - 4);
      }
      return true;
    }

    case IOp::LocalGet: {
      uint32_t x;
      if (!read_local(x)) return false;
      ++slot_reads_[local_slot_[x]];
      push_virtual(local_types_[x], local_slot_[x]);
      return true;
    }
    case IOp::LocalSet:
    case IOp::LocalTee: {
      uint32_t x;
      if (!read_local(x)) return false;
      Operand v;
      if (!pop(local_types_[x], v)) return false;
      uint32_t ls = local_slot_[x];
      if (emitting()) {
        materialize_local(ls);
        if (!v.is_virtual() && last_dst_ != UINT32_MAX && code_[last_dst_] == v.slot) {
          code_[last_dst_] = ls;  // the producer writes straight into the local
          last_dst_ = UINT32_MAX;
          merge_add_pair();
        } else {
          emit_copy(ls, v.src, local_types_[x]);
        }
      }
      if (info->op == IOp::LocalTee) push_virtual(local_types_[x], ls);
      return true;
    }
    case IOp::GlobalGet: {
      uint32_t g;
      if (!r_.u32(g)) return false;
      if (g >= m_.all_globals.size()) return fail("unknown global " + std::to_string(g));
      ValType t = m_.all_globals[g].type;
      uint32_t dst = push(t);
      if (emitting()) {
        emit_op(t == ValType::V128 ? IOp::GlobalGetV : IOp::GlobalGet);
        slot_word(dst);
        word(g);
        mark_dst(here() - 2);
      }
      return true;
    }
    case IOp::GlobalSet: {
      uint32_t g;
      if (!r_.u32(g)) return false;
      if (g >= m_.all_globals.size()) return fail("unknown global " + std::to_string(g));
      if (!m_.all_globals[g].mut) return fail("global is immutable");
      Operand v;
      if (!pop(m_.all_globals[g].type, v)) return false;
      if (emitting()) {
        emit_op(m_.all_globals[g].type == ValType::V128 ? IOp::GlobalSetV : IOp::GlobalSet);
        word(g);
        src_word(v.src);
      }
      return true;
    }

    case IOp::TableGet: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand i;
      if (!pop(ValType::I32, i)) return false;
      uint32_t dst = push(m_.all_tables[t].elem);
      if (emitting()) {
        emit_op(IOp::TableGet);
        slot_word(dst);
        word(t);
        src_word(i.src);
      }
      return true;
    }
    case IOp::TableSet: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand v, i;
      if (!pop(m_.all_tables[t].elem, v) || !pop(ValType::I32, i)) return false;
      if (emitting()) {
        emit_op(IOp::TableSet);
        word(t);
        src_word(i.src);
        src_word(v.src);
      }
      return true;
    }
    case IOp::TableSize: {
      uint32_t t;
      if (!read_table(t)) return false;
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::TableSize);
        slot_word(dst);
        word(t);
      }
      return true;
    }
    case IOp::TableGrow: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand n, init;
      if (!pop(ValType::I32, n) || !pop(m_.all_tables[t].elem, init)) return false;
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::TableGrow);
        slot_word(dst);
        word(t);
        src_word(init.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::TableFill: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand n, v, i;
      if (!pop(ValType::I32, n) || !pop(m_.all_tables[t].elem, v) || !pop(ValType::I32, i)) return false;
      if (emitting()) {
        emit_op(IOp::TableFill);
        word(t);
        src_word(i.src);
        src_word(v.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::TableCopy: {
      uint32_t dt, st;
      if (!read_table(dt) || !read_table(st)) return false;
      if (m_.all_tables[dt].elem != m_.all_tables[st].elem) return fail("type mismatch");
      Operand n, s, d;
      if (!pop(ValType::I32, n) || !pop(ValType::I32, s) || !pop(ValType::I32, d)) return false;
      if (emitting()) {
        emit_op(IOp::TableCopy);
        word(dt);
        word(st);
        src_word(d.src);
        src_word(s.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::TableInit: {
      uint32_t e, t;
      if (!read_elem(e) || !read_table(t)) return false;
      if (m_.all_tables[t].elem != m_.elems[e].type) return fail("type mismatch");
      Operand n, s, d;
      if (!pop(ValType::I32, n) || !pop(ValType::I32, s) || !pop(ValType::I32, d)) return false;
      if (emitting()) {
        emit_op(IOp::TableInit);
        word(t);
        word(e);
        src_word(d.src);
        src_word(s.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::ElemDrop: {
      uint32_t e;
      if (!read_elem(e)) return false;
      if (emitting()) {
        emit_op(IOp::ElemDrop);
        word(e);
      }
      return true;
    }

    // threads: [atomic.fence]; [notify dst addr count offset];
    // [wait32/wait64 dst addr expected timeout offset].
    case IOp::AtomicFence:
      if (!read_zero_byte()) return false;
      if (emitting()) emit_op(IOp::AtomicFence);
      return true;
    case IOp::MemoryAtomicNotify:
    case IOp::MemoryAtomicWait32:
    case IOp::MemoryAtomicWait64: {
      uint64_t offset;
      uint32_t mem;
      if (!read_memarg(info->op == IOp::MemoryAtomicWait64 ? 8 : 4, offset, mem, true)) return false;
      Operand addr, value, timeout;
      if (info->op != IOp::MemoryAtomicNotify && !pop(ValType::I64, timeout)) return false;
      if (!pop(info->p2, value) || !pop(addr_type(mem), addr)) return false;
      uint32_t dst = push(ValType::I32);
      use_memory(mem);
      uint32_t a = address(mem, addr, offset);
      if (emitting()) {
        emit_op(info->op);
        slot_word(dst);
        src_word(a);
        src_word(value.src);
        if (info->op != IOp::MemoryAtomicNotify) src_word(timeout.src);
        word(static_cast<uint32_t>(offset));
      }
      restore_memory(mem);
      return true;
    }
    case IOp::MemorySize: {
      uint32_t mem;
      if (!read_memidx(mem)) return false;
      uint32_t dst = push(addr_type(mem));
      use_memory(mem);
      if (emitting()) {
        emit_op(IOp::MemorySize);
        slot_word(dst);
        mark_dst(here() - 1);
        if (is64(mem)) {  // the page count, zero-extended to i64
          emit_op(IOp::I64ExtendI32U);
          slot_word(dst);
          src_word(dst);
          mark_dst(here() - 2);
        }
      }
      restore_memory(mem);
      return true;
    }
    case IOp::MemoryGrow: {
      uint32_t mem;
      if (!read_memidx(mem)) return false;
      Operand delta;
      if (!pop(addr_type(mem), delta)) return false;
      uint32_t dst = push(addr_type(mem));
      use_memory(mem);
      if (emitting()) {
        emit_op(is64(mem) ? IOp::MemoryGrow64 : IOp::MemoryGrow);
        slot_word(dst);
        src_word(delta.src);
      }
      restore_memory(mem);
      return true;
    }
    case IOp::MemoryInit: {
      uint32_t d, mem;
      if (!read_data(d) || !read_memidx(mem)) return false;
      Operand n, s, dst;
      if (!pop(ValType::I32, n) || !pop(ValType::I32, s) || !pop(addr_type(mem), dst)) return false;
      use_memory(mem);
      uint32_t dsrc = narrowed(dst);
      if (emitting()) {
        emit_op(IOp::MemoryInit);
        word(d);
        src_word(dsrc);
        src_word(s.src);
        src_word(n.src);
      }
      restore_memory(mem);
      return true;
    }
    case IOp::DataDrop: {
      uint32_t d;
      if (!read_data(d)) return false;
      if (emitting()) {
        emit_op(IOp::DataDrop);
        word(d);
      }
      return true;
    }
    case IOp::MemoryCopy: {
      uint32_t dmem, smem;
      if (!read_memidx(dmem) || !read_memidx(smem)) return false;
      // memory64: the length is i64 only when both memories are 64-bit.
      ValType len_type = is64(dmem) && is64(smem) ? ValType::I64 : ValType::I32;
      Operand n, s, d;
      if (!pop(len_type, n) || !pop(addr_type(smem), s) || !pop(addr_type(dmem), d)) return false;
      uint32_t dsrc = narrowed(d), ssrc = narrowed(s), nsrc = narrowed(n);
      if (dmem != smem) {
        if (emitting()) {
          emit_op(IOp::MemoryCopyBetween);
          word(dmem);
          word(smem);
          src_word(dsrc);
          src_word(ssrc);
          src_word(nsrc);
        }
        return true;
      }
      use_memory(dmem);
      if (emitting()) {
        emit_op(IOp::MemoryCopy);
        src_word(dsrc);
        src_word(ssrc);
        src_word(nsrc);
      }
      restore_memory(dmem);
      return true;
    }
    case IOp::MemoryFill: {
      uint32_t mem;
      if (!read_memidx(mem)) return false;
      Operand n, v, d;
      if (!pop(addr_type(mem), n) || !pop(ValType::I32, v) || !pop(addr_type(mem), d)) return false;
      use_memory(mem);
      uint32_t dsrc = narrowed(d), nsrc = narrowed(n);
      if (emitting()) {
        emit_op(IOp::MemoryFill);
        src_word(dsrc);
        src_word(v.src);
        src_word(nsrc);
      }
      restore_memory(mem);
      return true;
    }

    case IOp::I32Const: {
      int32_t v;
      if (!r_.s32(v)) return false;
      if (emitting() && want_const_slot()) {
        push_virtual(ValType::I32, const_ref(static_cast<uint32_t>(v)));
        return true;
      }
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::Const32);
        slot_word(dst);
        word(static_cast<uint32_t>(v));
        mark_dst(here() - 2);
      }
      return true;
    }
    case IOp::I64Const:
    case IOp::F64Const: {
      uint64_t bits;
      if (info->op == IOp::I64Const) {
        int64_t v;
        if (!r_.s64(v)) return false;
        bits = static_cast<uint64_t>(v);
      } else if (!r_.f64(bits)) {
        return false;
      }
      if (emitting() && want_const_slot()) {
        push_virtual(info->op == IOp::I64Const ? ValType::I64 : ValType::F64, const_ref(bits));
        return true;
      }
      uint32_t dst = push(info->op == IOp::I64Const ? ValType::I64 : ValType::F64);
      if (emitting()) {
        emit_op(IOp::Const64);
        slot_word(dst);
        word(static_cast<uint32_t>(bits));
        word(static_cast<uint32_t>(bits >> 32));
        mark_dst(here() - 3);
      }
      return true;
    }
    case IOp::F32Const: {
      uint32_t bits;
      if (!r_.f32(bits)) return false;
      if (emitting() && want_const_slot()) {
        push_virtual(ValType::F32, const_ref(bits));
        return true;
      }
      uint32_t dst = push(ValType::F32);
      if (emitting()) {
        emit_op(IOp::Const32);
        slot_word(dst);
        word(bits);
        mark_dst(here() - 2);
      }
      return true;
    }

    case IOp::RefNull: {
      ValType t = ValType::FuncRef;
      if (!read_ref_type(t)) return false;
      uint32_t dst = push(t);
      if (emitting()) {
        emit_op(IOp::Const64);
        slot_word(dst);
        word(0);
        word(0);
        mark_dst(here() - 3);
      }
      return true;
    }
    case IOp::RefIsNull: {
      Operand v;
      if (!pop(v)) return false;
      if (v.type != kUnknown && !is_ref(v.type)) return fail("type mismatch");
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::RefIsNull);
        slot_word(dst);
        src_word(v.src);
        mark_dst(here() - 2);
      }
      return true;
    }
    case IOp::RefFunc: {
      uint32_t f;
      if (!r_.u32(f)) return false;
      if (f >= m_.func_type_indices.size()) return fail("unknown function " + std::to_string(f));
      if (f >= m_.declared_refs.size() || !m_.declared_refs[f]) return fail("undeclared function reference");
      uint32_t dst = push(ValType::FuncRef);
      if (emitting()) {
        emit_op(IOp::RefFunc);
        slot_word(dst);
        word(f);
      }
      return true;
    }

    // ---- SIMD (0xFD): the Special rows of vm/opcodes.def; their R/P1/P2
    // columns give the types. Lane indices are immediates, checked here
    // against the lane count ("invalid lane index"); the interpreter trusts them.
    case IOp::V128Const: {
      const uint8_t* b;
      if (!r_.bytes(16, b)) return false;
      uint64_t lo, hi;
      std::memcpy(&lo, b, 8);
      std::memcpy(&hi, b + 8, 8);
      if (emitting() && want_const_slots_v128()) {
        push_virtual(ValType::V128, const_ref_v128(lo, hi));
        return true;
      }
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [v128.const dst w0 w1 w2 w3]
        emit_op(IOp::V128Const);
        slot_word(dst);
        for (int i = 0; i < 4; ++i) {
          uint32_t w;
          std::memcpy(&w, b + 4 * i, 4);
          word(w);
        }
        mark_dst(here() - 5);
      }
      return true;
    }
    case IOp::I8x16Shuffle: {
      const uint8_t* lanes;
      if (!r_.bytes(16, lanes)) return false;
      for (int i = 0; i < 16; ++i)
        if (lanes[i] >= 32) return fail("invalid lane index");
      Operand a, b;
      if (!pop(ValType::V128, b) || !pop(ValType::V128, a)) return false;
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [i8x16.shuffle dst a b sel0..3]: 16 lane bytes in 4 words
        emit_op(info->op);
        slot_word(dst);
        src_word(a.src);
        src_word(b.src);
        for (int i = 0; i < 4; ++i) {
          uint32_t w;
          std::memcpy(&w, lanes + 4 * i, 4);
          word(w);
        }
        mark_dst(here() - 7);
      }
      return true;
    }
    case IOp::V128Bitselect: {
      Operand a, b, c;
      if (!pop(ValType::V128, c) || !pop(ValType::V128, b) || !pop(ValType::V128, a)) return false;
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [v128.bitselect dst a b mask]
        emit_op(info->op);
        slot_word(dst);
        src_word(a.src);
        src_word(b.src);
        src_word(c.src);
        mark_dst(here() - 4);
      }
      return true;
    }
    case IOp::I8x16ExtractLaneS:
    case IOp::I8x16ExtractLaneU:
    case IOp::I16x8ExtractLaneS:
    case IOp::I16x8ExtractLaneU:
    case IOp::I32x4ExtractLane:
    case IOp::I64x2ExtractLane:
    case IOp::F32x4ExtractLane:
    case IOp::F64x2ExtractLane: {
      uint32_t lane;
      if (!read_lane(*info, lane)) return false;
      Operand v;
      if (!pop(ValType::V128, v)) return false;
      uint32_t dst = push(info->result);
      if (emitting()) {  // [op dst v lane]
        emit_op(info->op);
        slot_word(dst);
        src_word(v.src);
        word(lane);
        mark_dst(here() - 3);
      }
      return true;
    }
    case IOp::I8x16ReplaceLane:
    case IOp::I16x8ReplaceLane:
    case IOp::I32x4ReplaceLane:
    case IOp::I64x2ReplaceLane:
    case IOp::F32x4ReplaceLane:
    case IOp::F64x2ReplaceLane: {
      uint32_t lane;
      if (!read_lane(*info, lane)) return false;
      Operand v, x;
      if (!pop(info->p2, x) || !pop(ValType::V128, v)) return false;
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [op dst v x lane]
        emit_op(info->op);
        slot_word(dst);
        src_word(v.src);
        src_word(x.src);
        word(lane);
        mark_dst(here() - 4);
      }
      return true;
    }
    case IOp::V128Load8Lane:
    case IOp::V128Load16Lane:
    case IOp::V128Load32Lane:
    case IOp::V128Load64Lane:
    case IOp::V128Store8Lane:
    case IOp::V128Store16Lane:
    case IOp::V128Store32Lane:
    case IOp::V128Store64Lane: {
      uint64_t offset;
      uint32_t lane, mem;
      if (!read_memarg(simd_lane_bytes(info->op), offset, mem) || !read_lane(*info, lane)) return false;
      Operand addr, v;
      if (!pop(ValType::V128, v) || !pop(addr_type(mem), addr)) return false;
      bool load = info->result == ValType::V128;
      uint32_t dst = load ? push(ValType::V128) : 0;
      use_memory(mem);
      uint32_t a = address(mem, addr, offset);
      if (emitting()) {  // [load_lane dst addr v offset lane] / [store_lane addr v offset lane]
        emit_op(info->op);
        if (load) slot_word(dst);
        src_word(a);
        src_word(v.src);
        word(static_cast<uint32_t>(offset));
        word(lane);
        if (load) mark_dst(here() - 5);
      }
      restore_memory(mem);
      return true;
    }

    default:
      break;
  }
  return malformed("illegal opcode");
}

}  // namespace

Status compile_functions(Module& module, const LoadOptions& options) {
  module.graft_calls.clear();
  if (options.graft_calls) {
    bool any = false;
    module.graft_calls.resize(module.func_type_indices.size());
    for (uint32_t f = 0; f < module.graft_calls.size(); ++f)
      any |= (module.graft_calls[f] = options.graft_calls(module, f));
    if (!any) module.graft_calls.clear();
  }
  module.call_hooks.clear();
  if (options.call_hook) {
    bool any = false;
    module.call_hooks.resize(module.func_type_indices.size());
    for (uint32_t f = 0; f < module.call_hooks.size(); ++f)
      any |= (module.call_hooks[f] = options.call_hook(module, f)) != 0;
    if (!any) module.call_hooks.clear();
  }
  module.code.clear();
  module.code.resize(module.functions.size());
  // Functions are validated and lowered independently (each reads the module
  // and writes its own CompiledFunc), so a big module's are spread over the
  // cores: lowering is most of loading a code-heavy module (issue 10's 200 ms
  // for 20 MB; bench/README.md). Small modules stay on this thread, where a
  // thread's start would cost more than their lowering. The error reported is
  // the lowest-numbered invalid function's, as in a sequential pass: workers
  // only skip functions after one known to fail.
  const size_t n = module.functions.size();
  uint64_t code_bytes = 0;
  for (const Function& f : module.functions) code_bytes += f.body_end - f.body_offset;
  constexpr uint64_t kBytesPerThread = 1 << 20;
  size_t threads = std::min<uint64_t>(
      {std::max(1u, std::thread::hardware_concurrency()), code_bytes / kBytesPerThread, n});
  std::vector<Status> status(n);
  std::atomic<size_t> next{0}, first_error{n};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      if (i > first_error.load(std::memory_order_relaxed)) break;
      FunctionCompiler fc(module, static_cast<uint32_t>(module.num_imported_funcs + i), options);
      status[i] = fc.compile(module.code[i]);
      if (!status[i]) {
        size_t e = first_error.load(std::memory_order_relaxed);
        while (i < e && !first_error.compare_exchange_weak(e, i, std::memory_order_relaxed)) {
        }
      }
    }
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }
  if (size_t e = first_error.load(); e < n) return status[e];
  return Status();
}

const char* iop_name(IOp op) {
  static const char* const names[] = {
#define WZVM_IOP_ENTRY(Name, text, Where) text,
#include "vm/iops.inc"
#undef WZVM_IOP_ENTRY
  };
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(IOp::Count));
  auto i = static_cast<size_t>(op);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

}  // namespace wzvm::vm
