#pragma once
// The internal code that vm/lower/ produces and vm/interp.cc runs.
//
// A function's code is a flat array of 32-bit words. Each operation is an op
// word (an IOp) followed by its operands. Operands name frame slots directly
// (register-style three-address code): the value stack of a wasm function is
// laid out at fixed frame slots after its locals, so lowering resolves every
// stack position to a slot and `local.get` costs nothing. Branch targets are
// word offsets relative to the op word; stack heights are resolved, so a
// branch is a jump plus, when needed, an explicit copy of the carried values.
// See docs/RATIONALE.md ("The internal code").

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wzvm::vm {

// Row filters for expansions of vm/opcodes.def: WZVM_IF_KIND_##K(...) keeps
// its argument only for the named kind, WZVM_IF_RESULT_##R(...) only for the
// named result type.
#define WZVM_IF_KIND_Special(...)
#define WZVM_IF_KIND_Unary(...)
#define WZVM_IF_KIND_Binary(...) __VA_ARGS__
#define WZVM_IF_KIND_Load(...)
#define WZVM_IF_KIND_Store(...)
#define WZVM_IF_KIND_AtomicLoad(...)
#define WZVM_IF_KIND_AtomicStore(...)
#define WZVM_IF_KIND_AtomicRmw(...)
#define WZVM_IF_KIND_AtomicCmpxchg(...)
#define WZVM_IF_RESULT_I32(...) __VA_ARGS__
#define WZVM_IF_RESULT_I64(...)
#define WZVM_IF_RESULT_F32(...)
#define WZVM_IF_RESULT_F64(...)
#define WZVM_IF_RESULT_V128(...)
#define WZVM_IF_RESULT____(...)
// Fused compare-and-branch: every binary instruction with an i32 result
// (comparisons, and/or/sub, ...) followed by br_if or if becomes one
// operation `JumpIf_X a b offset` / `JumpUnless_X a b offset`. Loops and
// conditionals in compiled C are mostly this pair, so it saves a dispatch
// and a slot write per branch. `JumpIfBack_X` is JumpIf_X as a loop's
// back-edge (a `br_if` to a loop; see Jump/JumpBack in internal_ops.def).
// `JumpIfExit_X a b offset edge`, `JumpUnlessExit_X a b offset edge` and
// `JumpIfBackExit_X a b offset edge` are JumpIf_X, JumpUnless_X and
// JumpIfBack_X in code counted without fuel: a taken branch counts its edge
// (CompiledFunc::counters; vm/counted_ops.def).
#define WZVM_FUSED_ROW_(X, Name, K, R, P1, Extra) WZVM_IF_KIND_##K(WZVM_IF_RESULT_##R(X(Name, R, P1, Extra)))
// Fused address arithmetic: `i32.add` whose result only serves as the
// address of the next load (a temporary, not a local) becomes part of that
// load, `LoadAdd_X dst a b offset` reading at a + b (wrapping, as i32.add)
// + offset. Compiled C computes most addresses this way (`p + 8`, `base +
// i`); this takes one dispatch and one slot round trip off each such access.
// Every scalar load row gets one (v128 loads are rare in these sequences).
// Likewise `LoadShlAdd_X dst x k c offset`, reading at (x << k) + c + offset:
// the chained `i32.shl+add` (vm/chains.def) of array indexing, `base + (i <<
// k)`, feeding a load (bench/suite interp at its quick size: 1.9 M of 47 M ops;
// its other 5 M shl+add/load pairs load from an address kept in a local).
#define WZVM_IF_LOAD_Special(...)
#define WZVM_IF_LOAD_Unary(...)
#define WZVM_IF_LOAD_Binary(...)
#define WZVM_IF_LOAD_Load(...) __VA_ARGS__
#define WZVM_IF_LOAD_Store(...)
#define WZVM_IF_LOAD_AtomicLoad(...)
#define WZVM_IF_LOAD_AtomicStore(...)
#define WZVM_IF_LOAD_AtomicRmw(...)
#define WZVM_IF_LOAD_AtomicCmpxchg(...)
#define WZVM_IF_SCALAR_I32(...) __VA_ARGS__
#define WZVM_IF_SCALAR_I64(...) __VA_ARGS__
#define WZVM_IF_SCALAR_F32(...) __VA_ARGS__
#define WZVM_IF_SCALAR_F64(...) __VA_ARGS__
#define WZVM_IF_SCALAR_V128(...)
#define WZVM_IF_SCALAR____(...)
#define WZVM_LOADADD_ROW_(X, Name, K, R, Extra) WZVM_IF_LOAD_##K(WZVM_IF_SCALAR_##R(X(Name, R, Extra)))
// The same for stores: an `i32.add` whose result only serves as the address
// of the store after it becomes `StoreAdd_X v a b offset`, storing v at a + b
// (wrapping) + offset. Go addresses its stack so, `zext(SP) + c` wrapped
// before every spill and argument (`i32.add -> i64.store` 1.9-4.8% of the
// dispatches of Go's sort, json and regexp tests). Every scalar store row
// (the value's type is P2, the row's second operand).
#define WZVM_IF_STORE_Special(...)
#define WZVM_IF_STORE_Unary(...)
#define WZVM_IF_STORE_Binary(...)
#define WZVM_IF_STORE_Load(...)
#define WZVM_IF_STORE_Store(...) __VA_ARGS__
#define WZVM_IF_STORE_AtomicLoad(...)
#define WZVM_IF_STORE_AtomicStore(...)
#define WZVM_IF_STORE_AtomicRmw(...)
#define WZVM_IF_STORE_AtomicCmpxchg(...)
#define WZVM_STOREADD_ROW_(X, Name, K, P2, Extra) WZVM_IF_STORE_##K(WZVM_IF_SCALAR_##P2(X(Name, P2, Extra)))
// Floating-point arithmetic on values in memory: an f64 binary instruction
// whose second operand is the temporary result of the f64.load just before
// it becomes `BinLoad_X dst a addr offset`, and one whose temporary result
// goes straight to the f64.store after it becomes `StoreBin_X addr a b
// offset`. Numeric C (matrices, structs of doubles) is mostly these pairs.
// Both at once, `x[i] += a * y[j]`-style accumulation, is
// `StoreBinLoad_X saddr a laddr loffset soffset`: f64 at saddr + soffset =
// a X f64 at laddr + loffset. A binary whose f64.load took its address from an
// i32.add (`LoadAdd_F64Load`: `b[j + 1]`, `p[-6]`) becomes `BinLoadAdd_X dst a
// p q offset`: fp[dst] = a X f64 at (p + q wrapped) + offset.
#define WZVM_IF_F64_I32(...)
#define WZVM_IF_F64_I64(...)
#define WZVM_IF_F64_F32(...)
#define WZVM_IF_F64_F64(...) __VA_ARGS__
#define WZVM_IF_F64_V128(...)
#define WZVM_IF_F64____(...)
#define WZVM_F64BIN_ROW_(X, Name, K, R, Extra) WZVM_IF_KIND_##K(WZVM_IF_F64_##R(X(Name, Extra)))
// Integer arithmetic with a constant second operand: an i32 or i64 binary
// instruction whose second operand is a constant lowered as its own op (a
// function's constant area holds 64: CPython's eval loop and Go's big
// functions have more) becomes `Imm_X dst a imm`, the constant in the code
// (one word for i32, two for i64, low first). Compilers put a commutative
// op's constant second, so no variant per position.
#define WZVM_IF_INT_I32(...) __VA_ARGS__
#define WZVM_IF_INT_I64(...) __VA_ARGS__
#define WZVM_IF_INT_F32(...)
#define WZVM_IF_INT_F64(...)
#define WZVM_IF_INT_V128(...)
#define WZVM_IF_INT____(...)
#define WZVM_IMM_ROW_(X, Name, K, R, P1) WZVM_IF_KIND_##K(WZVM_IF_INT_##P1(X(Name, R, P1)))

// Every op, in the order of vm/iops.inc (the one list).
enum class IOp : uint32_t {
#define WZVM_IOP_ENTRY(Name, text, Where) Name,
#include "vm/iops.inc"
#undef WZVM_IOP_ENTRY
  Count
};

const char* iop_name(IOp op);

// [call_func func base code_lo code_hi]: the callee's CompiledFunc after the
// function index and the arguments' slot (vm/lower/calls.cc).
inline constexpr uint32_t kCallFuncWords = 5;

// The words of the load that a switch pair (vm/switch_pairs.def) begins
// with, its op word included, for the row's First: [Load dst a offset],
// [LoadShlAdd_Load dst x k c offset] or [LoadAndShlAdd_I32Load dst x m k c
// offset]. The switch's op word follows.
constexpr uint32_t switch_pair_load_words(IOp first) {
#define WZVM_SWITCH_PAIR(Name, First, Load, text) \
  if (first == IOp::First)                        \
    return IOp::First == IOp::Load ? 4 : IOp::First == IOp::LoadAndShlAdd_I32Load ? 7 : 6;
#include "vm/switch_pairs.def"
#undef WZVM_SWITCH_PAIR
  return 0;
}

// exception-handling: a `try` body, the code words [start, end) of its
// instructions (handlers excluded), with its catch clauses in order.
struct TryRegion {
  struct Handler {
    uint32_t tag;     // module tag index; kCatchAll for catch_all
    uint32_t target;  // word offset of the handler's code
  };
  static constexpr uint32_t kCatchAll = UINT32_MAX;
  uint32_t start = 0, end = 0;
  int32_t next = -1;      // region that sees exceptions none of these catch; -1: the caller
  uint32_t dst_slot = 0;  // where a catch's tag values go (the try's label slots)
  uint32_t exn_slot = 0;  // holds the caught exception, for rethrow
  std::vector<Handler> handlers;
};

struct CompiledFunc {
  // The frame image (frame_init, below) when it has at most kInlineImage
  // words, right-aligned so that it ends where `code` begins: a call finds it
  // at a fixed offset from the CompiledFunc it holds, without loading
  // frame_init's buffer first (vm/interp.cc, init_frame). A longer image is
  // copied from frame_init.
  static constexpr std::size_t kInlineImage = 16;
  uint64_t image_inline[kInlineImage] = {};
  std::vector<uint32_t> code;
  uint32_t param_slots = 0;  // slots of the parameters (fp[0..param_slots))
  // Slots of the params and declared locals. The declared locals are not
  // all at fp[param_slots..local_slots): those some read may find unwritten
  // come first, then the constants, then the others (compile()).
  uint32_t local_slots = 0;
  uint32_t frame_slots = 0;  // local_slots + the deepest value stack + constants
  // frame_slots of a counted module's stub (LoadOptions::lazy): more than
  // any stack holds, so its first call fails the frame check, and the trap
  // path lowers the body and runs the call again (vm/interp.cc, on_trap).
  static constexpr uint32_t kUnlowered = 1u << 30;
  uint32_t result_slots = 0;
  // Constants copied to fp[const_base..] on entry (see vm/lower/emitter.h),
  // those some operand names; the exception slots' zeros after them.
  uint32_t const_base = 0;
  std::vector<uint64_t> consts;
  // What a call copies to fp[param_slots..]: zeros for the declared locals
  // some read may find unwritten (fp[param_slots..const_base)), then
  // `consts`, then zeros up to a multiple of four, at least four (calls copy
  // it four words at a time). Locals every path writes before reading them
  // come after it, not zeroed.
  std::vector<uint64_t> frame_init;
  // param_slots + frame_init.size(): where the image ends in the frame, so
  // that a call finds it with one load (vm/interp.cc, init_frame).
  uint32_t frame_init_end = 0;
  // -8 * frame_init.size(): the copy's first byte offset from the image's
  // end, one load where the vector's begin and end took two and a subtract.
  int32_t frame_init_neg_bytes = 0;
  // Sets the two above and image_inline from frame_init, once it is final and follows
  // `param_slots` parameter slots: the one place they are derived.
  void place_frame_image(uint32_t param_slots) {
    frame_init_end = param_slots + static_cast<uint32_t>(frame_init.size());
    frame_init_neg_bytes = -static_cast<int32_t>(frame_init.size() * sizeof(uint64_t));
    if (frame_init.size() <= kInlineImage)
      std::copy(frame_init.begin(), frame_init.end(), std::end(image_inline) - frame_init.size());
  }
  // Word offset -> byte offset in the module of the wasm instruction that
  // produced it, as sorted pairs; used by backtraces and profiles.
  std::vector<std::pair<uint32_t, uint32_t>> source_map;
  // Instruction-counting builds only (LoadOptions::count_instructions).
  // seg_offsets: the module byte offsets of the counted wasm instructions,
  // in the order of the function's body. Counter s of a call-tree node's
  // block (vm/profiling.h) counts runs of counters[s]: the instructions
  // seg_offsets[lo .. hi), each run adding `sign` to each; a profile sums
  // them into exact per-instruction (so per-line) counts. With fuel,
  // counters are the straight-line segments, in order (CountFuel's operand);
  // without, counter 0 is the whole body and the others are the edges of
  // jumps (vm/counted_ops.def), some negative. A threaded jump's counter
  // also counts its loop-head switch's edge, a second range (lo2, hi2,
  // sign2; sign2 0: none): one increment where two lay apart in the block,
  // each a likely L1 miss in Go's code (docs/RATIONALE.md).
  struct CountRange {
    uint32_t lo, hi;
    int32_t sign;
    uint32_t lo2 = 0, hi2 = 0;
    int32_t sign2 = 0;
  };
  std::vector<CountRange> counters;
  bool charges_fuel = false;  // segments start with CountFuel (LoadOptions::fuel)
  std::vector<uint32_t> seg_offsets;
  uint32_t num_segments() const { return static_cast<uint32_t>(counters.size()); }
  uint32_t segment_size(uint32_t s) const { return counters[s].hi - counters[s].lo; }
  // What one run of counter s adds over the body: its ranges, signed.
  int64_t counter_weight(uint32_t s) const {
    const CountRange& c = counters[s];
    return int64_t{c.hi - c.lo} * c.sign + int64_t{c.hi2 - c.lo2} * c.sign2;
  }
  // Calls in counted code (CallFuncCounted, CallHookedCounted,
  // CallTableCounted): each has a slot, its entry in the caller's call-tree
  // node block after the segment counters (vm/profiling.h), so that finding
  // the callee's node is one compare. The op's operand is the entry's word
  // index in the block: num_segments() + 2 * slot.
  uint32_t call_slots = 0;
  // Word offset -> how many instructions of its segment (counter), counted
  // on entry to the segment, have run once the instruction there has
  // (sorted by word; seg UINT32_MAX: nothing to take back there). When a
  // trap or proc_exit ends a segment early the rest are taken back; without
  // fuel the segment is counter 0 and `ran` the instruction's place in the
  // body, whatever jumps led there (each counted its edge).
  struct CountMark {
    uint32_t pos;
    uint32_t seg;
    uint32_t ran;
    // What had run when the op's instruction started: an interrupt taken
    // before the op keeps this many (the op may be reached by a jump, so
    // the mark before it in the code says nothing).
    uint32_t before;
  };
  std::vector<CountMark> count_marks;
  // exception-handling: try regions, outer ones before the regions they enclose.
  std::vector<TryRegion> try_regions;
};

}  // namespace wzvm::vm
