// The peephole: super-instructions made by rewriting the ops just emitted
// (Emitter's window) when the current instruction can merge with them.
// Lowering asks at each point where a merge may apply; every function here
// either rewrites the code and returns true (the current instruction is then
// lowered) or changes nothing and returns false.
//
// Only across no label (a branch could enter between the two) and only when
// the first op's result was a stack temporary that the second consumes (read
// once, dead after), so dropping its write is safe. A merged op keeps traps
// and instruction counts exact: where it can trap it reports the trapping
// instruction's offset, and its count mark says what had run (Emitter's
// retarget_fused, mark_inner_instruction, absorb_last_op).
// The families are vm/code.h's fused ops, vm/chains.def, vm/mem_pairs.def and
// vm/internal_ops.def.

#pragma once

#include <cstdint>
#include <utility>

#include "vm/lower/emitter.h"
#include "vm/lower/op_table.h"

namespace wzvm::vm::lower {

// Binary `info` with operands a, b and result slot dst: a chain with the op
// just emitted (vm/chains.def), an f64 binary taking its loaded operand
// (BinLoad_X), or an integer binary taking a constant (Imm_X).
bool fuse_binary(Emitter& e, const OpInfo& info, uint32_t dst, const Operand& a, const Operand& b);
// `i32.eqz` of the compare just emitted: the compare negated (true: done,
// its result is the eqz's).
bool negate_last_compare(Emitter& e, const Operand& a);
// An eqz of the eqz just emitted of the eqz before it: eqz(eqz(eqz(x))) is
// eqz(x), the first (true: done, its result is the third's).
bool cancel_double_eqz(Emitter& e, const Operand& a, uint32_t local_slots);
// `i32.wrap_i64` of an i64.add of a zero-extended i32: an i32.add.
// `local_slots`: slots below are locals (not temporaries).
void narrow_extended_add(Emitter& e, const Operand& a, uint32_t local_slots);
// A load from memory 0 whose address the op just emitted computed (LoadAdd_X,
// LoadShlAdd_X); `mem64`: memory 0 is 64-bit.
bool fuse_load(Emitter& e, IOp load, uint32_t dst, const Operand& addr, uint64_t offset, bool mem64);
// A store of `v` to 32-bit memory 0 whose address the op just emitted
// computed (StoreAdd_X).
bool fuse_store_add(Emitter& e, IOp store, const Operand& addr, const Operand& v, uint64_t offset);
// The load_add or store_add just made paired with the same one right before
// it (LoadAddPair_I64Load, StoreAddPair_I64Store).
void pair_add_access(Emitter& e);
// The i64.load32_u just emitted paired with the i64.mul+add right before it
// that computed its address (I64MulAddLoad32U).
void pair_index_load(Emitter& e);
// A load (`dst` set) or store (value `v`) of 32-bit memory 0 whose address
// is the const32 just emitted: the access itself, its address a zero from
// the constant area and the constant added to its offset. `in_loop`: the
// zero may be added to the constant area cheaply.
bool fuse_const_address(Emitter& e, IOp access, uint32_t dst, const Operand& addr, const Operand* v,
                        uint64_t offset, bool in_loop);
// An f64.store to 32-bit memory 0 of the f64 binary just emitted
// (StoreBin_X, StoreBinLoad_X).
bool fuse_f64_store(Emitter& e, IOp store, const Operand& addr, const Operand& v, uint64_t offset);
// An i32.store to 32-bit memory 0 of the sum of a constant and what the
// i32.load before it read at the same address and offset: one op
// (rmw_add, rmw_add.tee). `local_slots`: slots below are locals.
// `tee_at`: where an rmw_add.tee was made (pair_copy_jumps may pair it
// with a jump), else UINT32_MAX.
bool fuse_rmw_add(Emitter& e, IOp store, const Operand& addr, const Operand& v, uint64_t offset,
                  uint32_t local_slots, uint32_t& tee_at);
// How many copies the op `op` makes: 1 to 4 for copy, copy2, copy3,
// copy4, else 0.
inline uint32_t copy_run_length(uint32_t op) {
  switch (static_cast<IOp>(op)) {
    case IOp::Copy:
      return 1;
    case IOp::Copy2:
      return 2;
    case IOp::Copy3:
      return 3;
    case IOp::Copy4:
      return 4;
    default:
      return 0;
  }
}
// The op that makes `n` copies (1 to 4).
inline IOp copy_run_op(uint32_t n) {
  constexpr IOp kRuns[] = {IOp::Copy, IOp::Copy2, IOp::Copy3, IOp::Copy4};
  return kRuns[n - 1];
}
// A one-slot copy after a copy or a run of up to three: the run one longer
// (copy2, copy3, copy4).
bool merge_copy(Emitter& e, uint32_t dst, uint32_t src);
// A conditional jump on `cond`, taken when non-zero (`if_true`) or zero,
// fused with the compare or eqz that computed it; `out` is (op word, offset
// word). `in_loop`: a constant may go to the constant area cheaply.
// `to_loop`: the jump goes back to a loop's start, so it must have a back form.
bool fuse_cond_jump(Emitter& e, bool if_true, const Operand& cond, bool in_loop, bool to_loop,
                    std::pair<uint32_t, uint32_t>& out);
// A load or store of memory 0 just emitted right after another (no label
// between): the first's op word becomes the pair's (vm/mem_pairs.def), both
// ops staying whole.
void pair_mem_access(Emitter& e);
// A call_func just emitted right after a copy or a run of copies (no label
// between): the copy's op word becomes copy+call_func (copy2+call_func, ...),
// both ops staying whole.
void pair_copy_call(Emitter& e);
// At the end of a body, every jump final: each copy of `copies` (the op
// words where a copy was emitted) that is still a copy, right before a
// jump, jump_if or jump_unless (or a back form), becomes the pair
// copy+jump, copy+jump_if or copy+jump_unless, both ops staying whole;
// and each rmw_add.tee of `copies` before a jump_if or jump_unless,
// rmw_add.tee+jump_if or +jump_unless.
void pair_copy_jumps(Emitter& e, const std::vector<uint32_t>& copies);
// The switch just emitted at `q` (its table done) right after a load of the
// value it switches on (no label between): the load's op word becomes the
// pair's (vm/switch_pairs.def), both ops staying whole.
void pair_switch_load(Emitter& e, uint32_t q);
// The same for an i32.and+add chain (vm/chains.def) that computed the
// switch's index: i32.and+add+switch (vm/internal_ops.def).
void pair_switch_chain(Emitter& e, uint32_t q);
// At the end of a body, every op final: each i32.load16_u of `loads` (the op
// words where one was emitted) right before an i32.or and an i32.shr_u
// becomes i32.load16_u+or+shr_u, or +jump with a jump after them, the ops
// staying whole (CPython's opcode and oparg decode); before an i32.shr_u,
// an i32.load8_u and an i32.or, i32.load16_u+shr_u+load8_u+or (+jump).
void pair_decode(Emitter& e, const std::vector<uint32_t>& loads);
// At the end of a body: each copy3 of `copies` right before an
// i32.and+add+switch becomes copy3+i32.and+add+switch, a copy4 before that
// copy4+copy3+i32.and+add+switch, the ops whole; their counted forms alike
// before an i32.and+add+probe.counted.
void pair_copy_switch(Emitter& e, const std::vector<uint32_t>& copies);
// The probe.counted `q` just emitted on the result of an i32.and+add right
// before it: i32.and+add+probe.counted (vm/counted_ops.def).
void pair_probe_chain(Emitter& e, uint32_t q);

// An i32.add or i32.sub just before the global.set just emitted: the pair
// runs in one dispatch (Go's stack pointer moves). Returns the pair's op
// word, UINT32_MAX when there is none.
uint32_t pair_global_set(Emitter& e);
// [global.get] before [i32.sub+global.set]: one dispatch for the three
// (a C prologue's stack pointer move), once every op is final.
void pair_stack_prologues(Emitter& e, const std::vector<uint32_t>& copies);
// Once every op is final, in plain code: a global.get of `copies` right
// before a switch becomes global.get+switch, an i32.add+global.set pair
// of `copies` before another and a ret1 i32.add+global.set2+ret1, the ops
// whole (Go's function entry and return).
void pair_go_frames(Emitter& e, const std::vector<uint32_t>& copies);
// Last: those stack pointer moves whose global.set stores the op's own
// result become their .own ops (the value in a register throughout).
void own_global_moves(Emitter& e, const std::vector<uint32_t>& copies);

// A br_table on `index` that the i32.add just emitted computed as x - k for a
// constant k <= kMaxSwitchRebase: the add is dropped and `x` is the switch's
// index, whose table then needs k more entries in front going to the
// default. Returns k, or UINT32_MAX changing nothing. Uncounted code only.
constexpr uint32_t kMaxSwitchRebase = 64;
uint32_t rebase_switch_index(Emitter& e, const Operand& index, Operand& x);
// A step (i64.add, i64.sub) at `p` right before the compare-and-branch at
// `q`, no label between: the step's op word becomes the pair's
// (vm/step_jumps.def), both ops staying whole. pair_last_step_jump: `q` the
// op just emitted, `p` the one before it.
void pair_step_jump(Emitter& e, uint32_t p, uint32_t q);
void pair_last_step_jump(Emitter& e, uint32_t q);
// At the end of a body, every jump final: each i32.add of `ops` right
// before a jump (or jump.back) becomes i32.add+jump, and each
// i32.load+shr_u+and+add whose decode is right before one
// i32.load+shr_u+and+add+jump, and a copy2 of `ops` right before an
// i32.add+jump copy2+i32.add+jump, all ops staying whole (Lua's shared tail).
void pair_lua_tail(Emitter& e, const std::vector<uint32_t>& ops);

// After a local.set redirected the op just emitted: two i32.adds in a row
// become i32.add2.
void merge_add_pair(Emitter& e);
// The back jump just emitted at `q` (patched to `target`) after an i32.add:
// i32.add+jump_if.back(I32Ne).
void merge_add_into_back_jump(Emitter& e, uint32_t q, uint32_t target);

}  // namespace wzvm::vm::lower
