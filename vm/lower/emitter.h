// The code being built for one function: its words (vm/code.h), what each op
// records beside them (the wasm instruction it came from, how many counted
// instructions have run there), the constant area, and the window of ops
// just emitted that the peephole (fusion.cc) may rewrite. Nothing here knows
// wasm: validation and the choice of ops are FunctionCompiler's, where
// counting segments open and close is Instrumentation's (instrument.h).

#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "vm/code.h"
#include "vm/module.h"  // ValType

namespace wzvm::vm::lower {

// Operand words with this bit set name the k-th constant of the function's
// constant area, whose frame slot is known only at the end.
constexpr uint32_t kConstTag = 0x80000000u;
constexpr size_t kMaxConsts = 64;
static_assert(kMaxConsts <= 64, "Emitter::v128_consts and compile()'s mask of used constants are one word");
// Operand words with this bit set name the k-th exception slot
// (exception-handling: where a catch keeps its exception for rethrow). They
// sit after the constants and are zeroed on entry with them.
constexpr uint32_t kExnTag = 0x40000000u;
constexpr size_t kConstsOutsideLoops = 4;

// A value on the compile-time stack.
struct Operand {
  ValType type;
  uint32_t slot;  // the frame slot of this stack position
  uint32_t src;   // where the value is now: `slot`, or a local's slot (virtual local.get)
  bool is_virtual() const { return src != slot; }
};

class Emitter {
 public:
  explicit Emitter(bool counting) : counting(counting) {}

  uint32_t here() const { return static_cast<uint32_t>(code.size()); }

  // Starts an op: records its source offset and, counting, its count mark.
  uint32_t emit_op(IOp op) {
    uint32_t pos = here();
    if (source_map.empty() || source_map.back().second != instr_offset)
      source_map.emplace_back(pos, instr_offset);
    code.push_back(static_cast<uint32_t>(op));
    last_dst = UINT32_MAX;
    fall_op = last_op != UINT32_MAX ? last_op : op_at_label_;
    op_at_label_ = UINT32_MAX;
    prev2_op = prev_op;
    prev_op = last_op;
    last_op = pos;
    eqz_of_last = UINT32_MAX;
    if (counting) {
      // What ran before this op: at a label, what was counted before it
      // (a jump there counted its edge); else what the op before it ran,
      // fusions included (counted instructions that emit nothing, such as
      // a constant the op takes as an operand, have not run yet).
      uint32_t before = label_since_op_                                             ? label_count_
                        : !count_marks.empty() && count_marks.back().seg == seg_pos ? count_marks.back().index
                                                                                    : 0;
      label_since_op_ = false;
      count_marks.push_back({pos, seg_pos, seg_pos == UINT32_MAX ? 0 : code[seg_pos], before});
    }
    return pos;
  }
  void word(uint32_t w) { code.push_back(w); }
  // A host pointer as two words (low first), read back with one unaligned
  // 8-byte load (vm/interp.cc, code_at).
  void pointer_words(const void* p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    static_assert(sizeof v == 2 * sizeof(uint32_t));
    word(static_cast<uint32_t>(v));
    word(static_cast<uint32_t>(v >> 32));
  }
  // An operand word naming a frame slot. The constant area sits between the
  // locals and the value stack, and its size is known only at the end, so
  // every slot word is recorded and renumbered then (FunctionCompiler::compile).
  void slot_word(uint32_t slot) {
    slot_words.push_back(here());
    code.push_back(slot);
  }
  void src_word(uint32_t src) { slot_word(src); }
  // The op just emitted writes its single result to the word at `pos`: a
  // following local.set may redirect it, a branch may fuse with it.
  void mark_dst(uint32_t pos) { last_dst = pos; }

  // A branch target: no op may be merged across it. `counted`: the
  // instructions counted before it (the next op's `before`).
  void bind_label(uint32_t counted) {
    if (last_op != UINT32_MAX) op_at_label_ = last_op;
    last_copies = UINT32_MAX;
    last_dst = UINT32_MAX;
    last_op = UINT32_MAX;
    prev_op = UINT32_MAX;
    prev2_op = UINT32_MAX;
    add2_at = UINT32_MAX;
    eqz_of_last = UINT32_MAX;
    label_since_op_ = true;
    label_count_ = counted;
  }

  // ---- the constant area (copied into the frame on entry, so hot loops
  // read constants without an instruction of their own). Few per function,
  // and mostly in loops, since every call pays for the copy.
  bool want_const_slot(bool in_loop) const {
    return consts.size() < kMaxConsts && (in_loop || consts.size() < kConstsOutsideLoops);
  }
  // `value` has a slot in the constant area already: naming it costs nothing more.
  bool has_const(uint64_t value) const {
    return std::find(consts.begin(), consts.end(), value) != consts.end();
  }
  uint32_t const_ref(uint64_t value) {
    for (size_t i = 0; i < consts.size(); ++i)
      if (consts[i] == value) return kConstTag | static_cast<uint32_t>(i);
    consts.push_back(value);
    return kConstTag | static_cast<uint32_t>(consts.size() - 1);
  }
  // A v128 constant takes two adjacent entries of the constant area (its two
  // slots); an operand names the first.
  bool want_const_slots_v128(bool in_loop) const {
    return consts.size() + 2 <= kMaxConsts && (in_loop || consts.size() + 2 <= kConstsOutsideLoops);
  }
  uint32_t const_ref_v128(uint64_t lo, uint64_t hi) {
    size_t i = 0;
    while (i + 1 < consts.size() && (consts[i] != lo || consts[i + 1] != hi)) ++i;
    if (i + 1 >= consts.size()) {
      i = consts.size();
      consts.push_back(lo);
      consts.push_back(hi);
    }
    v128_consts |= uint64_t{1} << i;  // i < 64 (kMaxConsts)
    return kConstTag | static_cast<uint32_t>(i);
  }

  // ---- counting (LoadOptions::count_instructions): the open segment's
  // count word, and what it has counted so far.
  uint32_t counted_so_far() const { return seg_pos == UINT32_MAX ? 0 : code[seg_pos]; }

  // ---- rewriting what was just emitted (the peephole's primitives).
  // The op emitted last, `op` of `len` words with its single result at
  // last_op + 1 unchanged since (no redirect by local.set, nothing emitted
  // after it, no label), that result being the temporary `consumed`.
  bool last_op_is(IOp op, uint32_t len, const Operand& consumed) const {
    return last_op != UINT32_MAX && here() == last_op + len && last_dst == last_op + 1 &&
           static_cast<IOp>(code[last_op]) == op && !consumed.is_virtual() &&
           code[last_op + 1] == consumed.slot;
  }
  // The op at `p` now also does the current instruction: what a trap there
  // reports (source offset) and how many of its segment's instructions have
  // run once it has (instruction counting) become the current instruction's.
  // Ops fused here trap only for the reason of the later instruction (the
  // earlier one is an i32.add or a copy, which never trap).
  void retarget_fused(uint32_t p) {
    if (!source_map.empty() && source_map.back().first == p) source_map.back().second = instr_offset;
    else source_map.emplace_back(p, instr_offset);
    if (counting && !count_marks.empty() && count_marks.back().pos == p && seg_pos != UINT32_MAX &&
        count_marks.back().seg == seg_pos)
      count_marks.back().index = code[seg_pos];
  }
  // A second instruction that can trap inside the op just emitted, from word
  // `pos` on (a fused store after a load): a trap there reports the current
  // instruction, and counts as the op's.
  void mark_inner_instruction(uint32_t pos) {
    source_map.emplace_back(pos, instr_offset);
    if (counting)
      count_marks.push_back(
          {pos, seg_pos, seg_pos == UINT32_MAX ? 0 : code[seg_pos], count_marks.back().before});
  }
  // The op at `q`, the last one emitted, with `nslots` slot operands right
  // after its op word, becomes part of the op just before it: its op word
  // goes, its operands follow that op's. No instruction boundary is left at
  // q, so q's source offset and count mark go too (a sample or a count at
  // the merged op is before its first instruction): only for a `q` that
  // cannot trap. False, changing nothing, when q's operands are not where expected.
  bool absorb_last_op(uint32_t q, size_t nslots) {
    const size_t n = slot_words.size();
    if (n < nslots) return false;
    for (size_t i = 0; i < nslots; ++i)
      if (slot_words[n - nslots + i] != q + 1 + i) return false;
    code.erase(code.begin() + q);
    for (size_t i = n - nslots; i < n; ++i) --slot_words[i];
    if (!source_map.empty() && source_map.back().first == q) source_map.pop_back();
    if (counting && !count_marks.empty() && count_marks.back().pos == q) count_marks.pop_back();
    last_op = prev_op = prev2_op = last_dst = UINT32_MAX;
    return true;
  }
  // The op at `p` lost its destination word (p + 1): its other operands
  // moved one word down.
  void drop_dst_word(uint32_t p) {
    auto it = std::find(slot_words.end() - std::min<size_t>(slot_words.size(), 4), slot_words.end(), p + 1);
    if (it != slot_words.end()) slot_words.erase(it);
    for (size_t i = slot_words.size(); i-- > 0 && slot_words[i] > p;) --slot_words[i];
  }

  // The code, and what it records. Fusion and instrumentation rewrite words
  // in place; every other change goes through the methods above.
  std::vector<uint32_t> code;
  std::vector<std::pair<uint32_t, uint32_t>> source_map;  // CompiledFunc::source_map
  std::vector<uint32_t> slot_words;                       // code positions of slot operands, in order
  std::vector<uint64_t> consts;                           // the constant area (kConstTag | k)
  // Bit k: an operand may name constant k as a v128's first slot (k + 1 its
  // second): the two stay adjacent when unused constants are dropped.
  uint64_t v128_consts = 0;
  uint32_t instr_offset = 0;  // the module byte offset of the current instruction

  // The window: ops emitted since the last label.
  uint32_t last_dst = UINT32_MAX;  // the result word of the op just emitted (mark_dst)
  uint32_t last_op = UINT32_MAX;   // op word of the last op emitted since the last label
  uint32_t prev_op = UINT32_MAX;   // the op emitted before it, with no label between (merge_add_pair)
  // The op emitted before prev_op, with no label between, when emitting
  // prev_op set it (pair_switch_load: a chain falling into a load and its switch).
  uint32_t prev2_op = UINT32_MAX;
  // The i32.add2 merge_add_pair made last, no label since: a back jump right
  // after it may take it (merge_add2_into_back_jump).
  uint32_t add2_at = UINT32_MAX;
  // The i32.eqz just emitted (last_op), when its operand is the temporary
  // result of prev_op, read by it alone (fuse_cond_jump), and prev_op and
  // fall_op as they were before the eqz, for when it goes.
  uint32_t eqz_of_last = UINT32_MAX;
  uint32_t prev_op_before_eqz = UINT32_MAX;
  uint32_t fall_op_before_eqz = UINT32_MAX;
  // The last run of copies (copy2, copy3, copy4) made since the last label:
  // a further copy may join it (merge_copy), a call pair with it, jump
  // threading drop its last copy.
  uint32_t last_copies = UINT32_MAX;
  // The op emitted before last_op, labels between or not, when the window
  // still had it whole as its last op at the first of those labels (no
  // fusion can change it after a label). An op that falls through runs
  // into last_op: a dispatch pair that keeps both ops whole may join them
  // (pair_last_step_jump), a jump to the label still finding last_op there.
  uint32_t fall_op = UINT32_MAX;
  // The last pair pair_mem_access made: the first access's op word and the
  // op it was. A fusion that takes the pair's second access over
  // (fuse_rmw_add) makes the first one whole again.
  uint32_t mem_pair_at = UINT32_MAX;
  uint32_t mem_pair_first = 0;

  // Counting: each op's count mark, relative to the open segment.
  const bool counting;
  uint32_t seg_pos = UINT32_MAX;  // count operand of the open segment's CountInstr, or none
  struct CountMark {
    uint32_t pos;     // op word
    uint32_t seg;     // its segment's CountInstr operand, or UINT32_MAX
    uint32_t index;   // instructions of the segment up to and including this one
    uint32_t before;  // instructions of the segment that ran before the op starts (emit_op)
  };
  std::vector<CountMark> count_marks;

 private:
  // A label was bound since the last op, with this many instructions
  // counted before it (emit_op's `before`).
  bool label_since_op_ = true;
  uint32_t label_count_ = 0;
  // last_op when the first label since it was bound (fall_op).
  uint32_t op_at_label_ = UINT32_MAX;
};

}  // namespace wzvm::vm::lower
