// Validation and lowering of one function body, in one streaming pass over
// its bytes (the spec's algorithm,
// https://webassembly.github.io/spec/core/appendix/algorithm.html), to the
// internal code of vm/code.h. The interpreter trusts what comes out of here.
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
//
// The class is one; its methods are spread over this folder by concern:
//   function_compiler.cc  the pass (compile, instruction, special), frame layout
//   values.cc             numeric rows, constants, locals, globals, select, drop
//   control.cc            blocks, branches, br_table, return; labels and patching
//   jump_threading.cc     jumps through a loop's head switch (Go)
//   calls.cc              call, call_indirect, return_call*
//   memory.cc             loads, stores, memory.*, data.drop; memarg, memory64
//   tables.cc             table.*, elem.drop, ref.*
//   simd_lanes.cc         v128.const, shuffle, bitselect, lane access
//   atomic_ops.cc         the threads proposal's accesses, fence, wait, notify
//   exceptions.cc         try, catch, throw, rethrow, delegate; try regions
// What it emits goes through Emitter (emitter.h); super-instructions are
// fusion.h's, instruction counting and fuel instrument.h's.

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vm/lower/emitter.h"
#include "vm/lower/fusion.h"
#include "vm/lower/instrument.h"
#include "vm/lower/op_table.h"
#include "vm/module.h"
#include "vm/reader.h"

namespace wzvm::vm::lower {

// What opened a control frame. Try is a `try` body; Catch and CatchAll its
// handlers (exception-handling); Else an `if` past its `else`.
enum class BlockKind : uint8_t { Body, Block, Loop, If, Else, Try, Catch, CatchAll };

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
  // else UINT32_MAX (jump_threading.cc).
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
  // Definite assignment (FunctionCompiler::da_read): the declared locals
  // written at the block's start, and at its end (on every path there).
  uint64_t da_entry = 0, da_end = ~uint64_t{0};
  const std::vector<ValType>& label_types() const { return kind == BlockKind::Loop ? params : results; }
};

// The control stack. A popped block stays constructed past the top, so the
// next block pushed there reuses its vectors' capacity: pushing and popping
// a Ctrl by value moved it in and out of a retired list, 190 host
// instructions a block (callgrind, validating Go's encoding/json test
// binary: 240 K blocks). The top block is kept by address: emitting() and
// every pop read it, and indexing cost them 5 host instructions each.
class CtrlStack {
 public:
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Ctrl& back() { return *top_; }
  const Ctrl& back() const { return *top_; }
  Ctrl& front() { return all_[0]; }
  const Ctrl& front() const { return all_[0]; }
  Ctrl& operator[](size_t i) { return all_[i]; }
  const Ctrl& operator[](size_t i) const { return all_[i]; }
  // A new top block: every field as a fresh Ctrl's, its vectors emptied.
  Ctrl& push() {
    if (n_ == all_.size()) all_.emplace_back();
    Ctrl& c = all_[n_++];
    top_ = &c;
    std::vector<ValType> params = std::move(c.params), results = std::move(c.results);
    std::vector<std::pair<uint32_t, uint32_t>> fixups = std::move(c.fixups);
    c = Ctrl{};
    params.clear();
    results.clear();
    fixups.clear();
    c.params = std::move(params);
    c.results = std::move(results);
    c.fixups = std::move(fixups);
    return c;
  }
  void pop() {
    --n_;
    top_ = n_ ? &all_[n_ - 1] : nullptr;
  }
  // Trades the blocks (and their vectors) with `spare`, emptying this stack.
  void trade(std::vector<Ctrl>& spare) {
    all_.swap(spare);
    n_ = 0;
    top_ = nullptr;
  }

 private:
  std::vector<Ctrl> all_;
  size_t n_ = 0;
  Ctrl* top_ = nullptr;
};

// A concern's lowering of a Special row: whether it succeeded, or nullopt
// when the instruction is another concern's (FunctionCompiler::special).
using Lowered = std::optional<bool>;

class FunctionCompiler {
 public:
  FunctionCompiler(const Module& m, uint32_t func_index, const LoadOptions& options);
  ~FunctionCompiler();
  FunctionCompiler(const FunctionCompiler&) = delete;
  FunctionCompiler& operator=(const FunctionCompiler&) = delete;

  Status compile(CompiledFunc& out);
  // Validates the body without lowering it (LoadOptions::lazy): the whole
  // body is treated as dead code, which is validated and emits nothing.
  // `stub` gets the frame of a body not lowered yet: its one op
  // (IOp::LowerFunction) lowers it on the first call.
  Status validate(CompiledFunc& stub);

  // For tests: how many concerns' lower_* claim Special row `info` (each
  // asked on a fresh compiler of function `func_index` of `m`, positioned
  // at its body): one, or the row has no lowering or two.
  static int concerns_claiming(const Module& m, uint32_t func_index, const OpInfo& info);

 private:
  void begin();
  void begin_known_body();
  void begin_known_body_counted(KnownBody kind, IOp op);
  void end_known_body_counted();
  // ---- the pass (function_compiler.cc)
  Status read_body();  // every instruction, to the body's final `end`
  // Inline in read_body(), its one caller, as special() is in it: one frame
  // for the loop over a body's instructions.
  __attribute__((always_inline)) inline bool instruction();
  bool simple(const OpInfo& info);  // rows lowered by their kind alone
  // Rows with code of their own: asks each concern. Inline in instruction():
  // its own call cost 20 host instructions a Special row (callgrind,
  // validating json.wasm: 2.8 M of its 4.2 M instructions).
  __attribute__((always_inline)) inline bool special(const OpInfo& info);

  // ---- errors
  bool fail(std::string msg, Error::Kind kind = Error::Kind::Invalid) {
    if (!failed_) {
      failed_ = true;
      error_.kind = kind;
      error_.message = std::move(msg);
      error_.section = "code";
      error_.function = func_index_;
      error_.offset = static_cast<int64_t>(e_.instr_offset);
    }
    return false;
  }
  bool malformed(std::string msg) { return fail(std::move(msg), Error::Kind::Malformed); }
  // A fixed message, out of line: a std::string built in a hot function
  // (read_local, read_memarg, ...) kept it from being inlined and gave it
  // a frame it needs only to fail (callgrind: read_local was 32 host
  // instructions a call, for a bounds check).
  __attribute__((noinline, cold)) bool fail(const char* msg, Error::Kind kind = Error::Kind::Invalid) {
    return fail(std::string(msg), kind);
  }
  __attribute__((noinline, cold)) bool malformed(const char* msg) {
    return fail(std::string(msg), Error::Kind::Malformed);
  }
  // "unknown <what> <index>", out of line as above.
  __attribute__((noinline, cold)) bool fail_unknown(const char* what, uint64_t index) {
    return fail(std::string("unknown ") + what + " " + std::to_string(index));
  }
  bool check_reader() {
    if (r_.ok()) return true;
    e_.instr_offset = static_cast<uint32_t>(r_.error_offset());
    return malformed(r_.error() == "unexpected end" ? "unexpected end of section or function" : r_.error());
  }

  // ---- emission (Emitter's, while the code is reachable)
  bool emitting() const { return !ctrls_.back().unreachable && !ctrls_.back().dead; }
  uint32_t here() const { return e_.here(); }
  uint32_t emit_op(IOp op) { return e_.emit_op(op); }
  void word(uint32_t w) { e_.word(w); }
  void slot_word(uint32_t slot) { e_.slot_word(slot); }
  void src_word(uint32_t src) { e_.src_word(src); }
  void mark_dst(uint32_t pos) { e_.mark_dst(pos); }
  // [ret src n]: ret0 and ret1 for no result and one, whose handlers do not
  // read n (vm/internal_ops.def).
  void emit_ret(uint32_t src, uint32_t n) {
    emit_op(n == 0 ? IOp::Ret0 : n == 1 ? IOp::Ret1 : IOp::Ret);
    slot_word(src);
    word(n);
  }
  bool want_const_slot() const { return e_.want_const_slot(loop_depth_ > 0); }
  void emit_copy(uint32_t dst, uint32_t src, ValType t);
  // Counted without fuel: the jump just lowered becomes its counted form.
  void add_edge(uint32_t op, uint32_t w) {
    if (!counts_.add_edge(op, w))
      fail(std::string("internal error: no counted form of ") + iop_name(static_cast<IOp>(e_.code[op])));
  }

  // ---- operand stack
  uint32_t next_slot() const {
    if (vals_.empty()) return local_slots_;
    const Operand& top = vals_.back();
    return top.slot + (top.type == kUnknown ? 1 : slot_count(top.type));
  }
  uint32_t push(ValType t) {
    uint32_t s = next_slot();
    // The stack grows out of line, so that push_back's own growth is
    // provably dead here and leaves every caller's code (callgrind,
    // validating json.wasm: -1%).
    if (vals_.size() == vals_.capacity()) grow_vals();
    if (vals_.size() >= vals_.capacity()) __builtin_unreachable();
    vals_.push_back({t, s, s});
    if (emitting()) max_slot_ = std::max(max_slot_, s + (t == kUnknown ? 1 : slot_count(t)));
    return s;
  }
  __attribute__((noinline)) void grow_vals() { vals_.reserve(std::max<size_t>(64, 2 * vals_.capacity())); }
  void push_virtual(ValType t, uint32_t src) {
    push(t);
    vals_.back().src = src;
  }
  bool pop(Operand& out) {
    // As pointers: size() divides by the 12 bytes of an Operand.
    if (vals_.data() + ctrls_.back().height == vals_.data() + vals_.size()) return pop_at_block_base(out);
    out = vals_.back();
    vals_.pop_back();
    return true;
  }
  // A pop below the block's base: an unknown value in unreachable code, else
  // invalid. Out of line, as type_mismatch below.
  __attribute__((noinline)) bool pop_at_block_base(Operand& out) {
    if (ctrls_.back().unreachable) {
      out = {kUnknown, next_slot(), next_slot()};
      return true;
    }
    return fail("type mismatch");
  }
  bool pop(ValType expect, Operand& out) {
    if (!pop(out)) return false;
    if (out.type != expect && out.type != kUnknown && expect != kUnknown) return type_mismatch();
    return true;
  }
  // Out of line: the pops above are on every instruction's path, and the
  // message's string inline kept GCC from inlining them (validation, json's
  // 4.2 M instructions: callgrind).
  __attribute__((noinline, cold)) bool type_mismatch() { return fail("type mismatch"); }
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

  // ---- immediates
  bool read_local(uint32_t& index) {
    if (!r_.u32(index)) return false;
    if (index >= local_types_.size()) return fail("unknown local");
    return true;
  }
  bool read_zero_byte() {
    uint8_t b;
    if (!r_.u8(b)) return false;
    if (b != 0) return malformed("zero byte expected");
    return true;
  }

  // ---- values.cc
  Lowered lower_values(const OpInfo& info);
  bool numeric(const OpInfo& info);  // the Unary and Binary rows
  bool op_const(const OpInfo& info);
  bool op_local_get();

  // ---- definite assignment: which declared locals every path to here
  // has written, so that a call need not zero the others (compile() lays
  // them out of the frame image). Bit k of a set: declared local k (local
  // index num_params_ + k), for the first 64 (the others are all zeroed):
  // da_ here, each block's Ctrl::da_entry and da_end. Code validated as
  // unreachable never runs: its reads may only zero a local more, and its
  // branches and fall-through do not reach an end set.
  // local.get of local x here: zeroed on entry unless written. (A
  // parameter's k wraps around, past da_tracked_.)
  void da_read(uint32_t x) {
    const uint32_t k = x - num_params_;
    if (k < da_tracked_ && !(da_ >> k & 1)) needs_zero_ |= uint64_t{1} << k;
  }
  void da_write(uint32_t x) {
    const uint32_t k = x - num_params_;
    if (k < da_tracked_) da_ |= uint64_t{1} << k;
  }
  // A branch to the label `depth` out: its end set keeps what is written
  // here. A loop's label is its start, reached from its entry (which every
  // state in it includes): nothing to do.
  void da_branch(uint32_t depth) {
    Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
    if (target.kind != BlockKind::Loop) target.da_end &= da_;
  }

  // ---- control.cc
  Lowered lower_control(const OpInfo& info);
  bool op_end();  // `end` (and `delegate` after its own part)
  bool op_br_if();
  bool op_br_table();
  void push_ctrl(BlockKind kind, const std::vector<ValType>& params, const std::vector<ValType>& results);
  void pop_ctrl();
  void set_unreachable();
  bool read_block_type(std::vector<ValType>& params, std::vector<ValType>& results);
  void bind_label();
  void patch(uint32_t op_pos, uint32_t word_pos, uint32_t target,
             uint32_t target_count = Instrumentation::kHere);
  // `to_loop`: the jump goes back to a loop's start (it needs a back form).
  std::pair<uint32_t, uint32_t> emit_cond_jump(bool if_true, const Operand& cond, bool to_loop = false);
  void emit_label_values(const Ctrl& c);
  void emit_exit_to_end(Ctrl& c);
  void emit_branch(uint32_t depth, std::vector<Operand>& vs);
  void patch_to_loop(Ctrl& loop, uint32_t op, uint32_t w);
  // Before an unconditional jump is emitted: the op just emitted may pair
  // with it at the end (pair_lua_tail), noted in jump_pair_ops_.
  void note_op_before_jump();
  bool rotate_back_edge(Ctrl& loop, uint32_t write, uint64_t known);
  bool needs_moves(uint32_t depth, const std::vector<Operand>& vs) const;
  void emit_return(std::vector<Operand>& vs, bool early);

  // ---- jump_threading.cc
  void note_head_switch(uint32_t op, const Operand& index, uint32_t arity);
  uint32_t head_switch_write(const Ctrl& loop) const;
  uint64_t written_constant(uint32_t p) const;
  void thread_jump(uint32_t op, uint32_t copy, uint64_t known, const Ctrl& loop, uint32_t rotated = 0);
  void resolve_threaded_jumps();
  // Plain code and code counted without fuel (whose jumps count their edges).
  bool threads_jumps() const { return !counts_.counting() || counts_.edges(); }

  // ---- calls.cc
  Lowered lower_calls(const OpInfo& info);
  // `index` is the table for call_indirect, the callee for call; `tail` for
  // return_call / return_call_indirect.
  bool op_call(uint32_t type_index, bool indirect, uint32_t index, bool tail = false);

  // ---- memory.cc
  Lowered lower_memory(const OpInfo& info);
  bool load(const OpInfo& info);
  bool store(const OpInfo& info);
  bool read_memarg(uint32_t natural_bytes, uint64_t& offset, uint32_t& mem, bool exact = false);
  bool read_memidx(uint32_t& mem);
  bool read_data(uint32_t& d);
  bool need_memory() { return m_.all_memories.empty() ? fail("unknown memory 0") : true; }
  // memory64: addresses (and sizes) of a 64-bit memory are i64.
  bool is64(uint32_t mem) const { return m_.all_memories[mem].limits.is64; }
  ValType addr_type(uint32_t mem) const { return is64(mem) ? ValType::I64 : ValType::I32; }
  uint32_t address(uint32_t mem, const Operand& addr, uint64_t& offset);
  uint32_t narrowed(const Operand& v);
  void use_memory(uint32_t mem);
  void restore_memory(uint32_t mem);

  // ---- tables.cc
  Lowered lower_tables(const OpInfo& info);
  Lowered lower_refs(const OpInfo& info);
  bool read_table(uint32_t& t);
  bool read_elem(uint32_t& e);
  bool read_ref_type(ValType& t);

  // ---- simd_lanes.cc
  Lowered lower_simd(const OpInfo& info);
  bool read_lane(const OpInfo& info, uint32_t& lane);

  // ---- atomic_ops.cc
  Lowered lower_atomics(const OpInfo& info);
  bool atomic_access(const OpInfo& info);  // the AtomicLoad/Store/Rmw/Cmpxchg rows

  // ---- exceptions.cc
  Lowered lower_exceptions(const OpInfo& info);
  bool read_tag(uint32_t& t);
  const std::vector<ValType>& tag_params(uint32_t t) const { return m_.types[m_.all_tag_types[t]].params; }
  int32_t enclosing_region(size_t index) const;
  void open_try_region(Ctrl& c);
  bool op_catch(bool all);
  void end_try_body();

  const Module& m_;
  // op_tables(), once: its guard and call were on every instruction's path.
  const OpTables& tables_ = op_tables();
  uint32_t func_index_;
  const Function& fn_;
  const FuncType& type_;
  Reader r_;
  bool failed_ = false;
  Error error_;
  const bool multi_memory_;

  Emitter e_;
  Instrumentation counts_;
  // Counted code of a translated known body (begin_known_body): every
  // instruction's module byte offset, by index, for the translation's blocks.
  bool native_blocks_ = false;
  uint32_t native_base_word_ = 0;  // the op's `base` word
  std::vector<uint32_t> instr_offsets_;

  std::vector<ValType> local_types_;
  std::vector<uint32_t> local_slot_;
  uint32_t param_slots_ = 0, local_slots_ = 0, result_slots_ = 0;
  uint32_t max_slot_ = 0;
  std::vector<Operand> vals_;
  CtrlStack ctrls_;
  // A block's type as read (read_block_type), before push_ctrl copies it.
  std::vector<ValType> block_params_, block_results_;
  std::vector<Operand> scratch_;
  // The values a branch, return or call pops (branch_vals_), and
  // br_table's depths: kept, as the buffers above, so that these
  // instructions allocate nothing (each allocated a vector or two).
  std::vector<Operand> branch_vals_;
  std::vector<uint32_t> depths_;
  uint32_t loop_depth_ = 0;
  std::vector<TryRegion> regions_;
  uint32_t exn_count_ = 0;

  // Jump threading (jump_threading.cc).
  static constexpr uint64_t kNoIndex = UINT64_MAX;
  struct ThreadedJump {
    uint32_t op;     // the jump's op word
    uint32_t index;  // the value the head switch would switch on
    uint32_t write;  // the op that wrote it, just before the jump
    uint32_t head;   // the loop's entry in heads_
    // Rotated (rotate_back_edge): the words of its test and jump, their
    // targets set; else 0.
    uint32_t rotated;
    // Rotated: the op right before the write (Emitter::fall_op), which
    // pairs with the test if the write goes (pair_step_jump); else UINT32_MAX.
    uint32_t step = UINT32_MAX;
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
  // Definite assignment (da_read): the declared locals tracked (at most
  // 64), those written here, and those some read may find unwritten.
  uint32_t num_params_ = 0, da_tracked_ = 0;
  uint64_t da_ = 0, needs_zero_ = 0;
  std::vector<uint32_t> local_map_;      // compile(): a declared local's slot -> its frame slot
  std::vector<uint32_t> copy_ops_;       // where a copy, global.get, rmw_add.tee, i32.load, i32.load8_u or
                                         // i32.add/sub+global.set was emitted, in order (pair_copy_jumps,
                                         // pair_go_frames)
  std::vector<uint32_t> decode_ops_;     // where an i32.load16_u of memory 0 was emitted (pair_decode)
  std::vector<uint32_t> jump_pair_ops_;  // ops right before an unconditional jump (pair_lua_tail)

  // Trades the buffers above (those every body grows) with this thread's
  // spares: see the constructor.
  void swap_buffers();
};

}  // namespace wzvm::vm::lower
