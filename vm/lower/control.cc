// Control: blocks, branches, br_table and return. Every branch target is a
// fixed place in the frame (Ctrl::base_slot) where the label's values go;
// forward jumps are patched when their label is bound, backward ones become
// their back-edge form (patch), where the sampler and --timeout can stop a loop.

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

namespace {
// The kind a block instruction opens (block, loop, if, try).
BlockKind block_kind(IOp op) {
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
}  // namespace

Lowered FunctionCompiler::lower_control(const OpInfo& info) {
  switch (info.op) {
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
      std::vector<ValType>& params = block_params_;
      std::vector<ValType>& results = block_results_;
      params.clear();
      results.clear();
      if (!read_block_type(params, results)) return false;
      Operand cond;
      if (info.op == IOp::If && !pop(ValType::I32, cond)) return false;
      std::vector<Operand> ins;
      if (!pop_all(params, ins)) return false;
      repush(ins);
      // Values carried across a block boundary must not stay virtual: a
      // branch or the other arm would see a different location.
      materialize_all();
      for (size_t i = 0; i < params.size(); ++i) vals_.pop_back();
      bool was_emitting = emitting();
      push_ctrl(block_kind(info.op), params, results);
      Ctrl& c = ctrls_.back();
      if (!was_emitting) {
        c.dead = true;
        return true;
      }
      if (info.op == IOp::Try) {
        open_try_region(c);
      } else if (info.op == IOp::Loop) {
        bind_label();
        c.loop_start = here();
        c.loop_count = e_.counted_so_far();
        c.outermost = loop_depth_ == 0;
        ++loop_depth_;
      } else if (info.op == IOp::If) {
        auto [op, w] = emit_cond_jump(false, cond);
        add_edge(op, w);
        pair_last_step_jump(e_, op);
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
        c.da_end &= da_;
        emit_exit_to_end(c);
      }
      da_ = c.da_entry;  // the else arm starts where the if did
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

    case IOp::End:
      return op_end();

    case IOp::Br: {
      uint32_t depth;
      if (!r_.u32(depth)) return false;
      if (depth >= ctrls_.size()) return fail("unknown label");
      std::vector<Operand>& vs = branch_vals_;
      if (!pop_all(ctrls_[ctrls_.size() - 1 - depth].label_types(), vs)) return false;
      if (emitting()) {
        da_branch(depth);
        emit_branch(depth, vs);
      }
      set_unreachable();
      return true;
    }

    case IOp::BrIf:
      return op_br_if();
    case IOp::BrTable:
      return op_br_table();

    case IOp::Return: {
      std::vector<Operand>& vs = branch_vals_;
      if (!pop_all(ctrls_.front().results, vs)) return false;
      if (emitting()) emit_return(vs, true);
      set_unreachable();
      return true;
    }

    default:
      return std::nullopt;
  }
}

bool FunctionCompiler::op_br_if() {
  uint32_t depth;
  if (!r_.u32(depth)) return false;
  if (depth >= ctrls_.size()) return fail("unknown label");
  Operand cond;
  if (!pop(ValType::I32, cond)) return false;
  // Nothing below pushes or pops a block: `types` stays where it is.
  const std::vector<ValType>& types = ctrls_[ctrls_.size() - 1 - depth].label_types();
  std::vector<Operand>& vs = branch_vals_;
  if (!pop_all(types, vs)) return false;
  if (emitting()) {
    da_branch(depth);
    Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
    if (!needs_moves(depth, vs)) {
      auto [op, w] = emit_cond_jump(true, cond, target.kind == BlockKind::Loop);
      add_edge(op, w);
      if (target.kind == BlockKind::Loop) {
        patch_to_loop(target, op, w);
        merge_add_into_back_jump(e_, op, target.loop_start);
      } else {
        target.fixups.emplace_back(op, w);
      }
      pair_last_step_jump(e_, op);  // a step right before: one dispatch (vm/step_jumps.def)
    } else {
      auto [skip, w] = emit_cond_jump(false, cond);
      add_edge(skip, w);
      pair_last_step_jump(e_, skip);
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

bool FunctionCompiler::op_br_table() {
  uint32_t n;
  if (!r_.count(n)) return false;
  std::vector<uint32_t>& depths = depths_;
  depths.resize(n + 1);
  for (uint32_t i = 0; i <= n; ++i) {
    if (!r_.u32(depths[i])) return false;
    if (depths[i] >= ctrls_.size()) return fail("unknown label");
  }
  Operand index;
  if (!pop(ValType::I32, index)) return false;
  size_t arity = ctrls_[ctrls_.size() - 1 - depths[n]].label_types().size();
  std::vector<Operand>& vs = branch_vals_;
  for (uint32_t i = 0; i <= n; ++i) {
    const std::vector<ValType>& types = ctrls_[ctrls_.size() - 1 - depths[i]].label_types();
    if (types.size() != arity) return fail("type mismatch");
    if (!pop_all(types, vs)) return false;
    repush(vs);
  }
  if (!pop_all(ctrls_[ctrls_.size() - 1 - depths[n]].label_types(), vs)) return false;
  if (emitting()) {
    for (uint32_t i = 0; i <= n; ++i) da_branch(depths[i]);
    if (counts_.wants_probe(n)) {
      // the probe reads every i32 local
      for (uint32_t x = 0; x < local_types_.size(); ++x)
        if (local_types_[x] == ValType::I32) da_read(x);
      // The switch follows at once, nothing between: the probe's handler
      // goes on into it without a dispatch (vm/counted_ops.def).
      counts_.emit_probe(index, local_types_, local_slot_);
      pair_probe_chain(e_, e_.last_op);  // an i32.and+add of the index right before (CPython's)
    }
    // An index computed as x - k switches on x, its table k entries longer
    // in front, to the default (rebase_switch_index); counted code's too, each
    // entry with its edge, but not fuel's.
    Operand x = index;
    uint32_t k = counts_.fuel() ? UINT32_MAX : rebase_switch_index(e_, index, x);
    if (k == UINT32_MAX) k = 0;
    uint32_t op = emit_op(IOp::Switch);
    src_word(x.src);
    word(n + k);
    note_head_switch(op, index, static_cast<uint32_t>(arity));
    uint32_t table = here();
    for (uint32_t i = 0; i <= n + k; ++i) word(0);
    counts_.add_switch_edges(op, n + k);
    pair_switch_load(e_, op);   // a load of the index right before: one dispatch (vm/switch_pairs.def)
    pair_switch_chain(e_, op);  // or an i32.and+add of it (CPython's opcode - 1)
    for (uint32_t i = 0; i <= n + k; ++i) {
      uint32_t depth = i < k ? depths[n] : depths[i - k];
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

bool FunctionCompiler::op_end() {
  Ctrl& c = ctrls_.back();
  end_try_body();
  if (c.kind == BlockKind::If && c.params != c.results) return fail("type mismatch");
  if (!pop_all(c.results, scratch_)) return false;
  if (vals_.size() != c.height) return fail("type mismatch");
  if (ctrls_.size() == 1) {
    // The function's own end: an implicit return.
    if (emitting()) emit_return(scratch_, false);
    pop_ctrl();
    return true;
  }
  if (emitting()) {
    emit_label_values(c);
  }
  // After the block: what its fall-through and its branches all wrote (an
  // `if` without `else` may skip its arm). A loop's end is its fall-through.
  if (emitting()) c.da_end &= da_;
  if (c.kind == BlockKind::If) c.da_end &= c.da_entry;
  da_ = c.da_end;
  uint32_t end = here();
  for (auto [op, w] : c.fixups) patch(op, w, end);
  if (c.else_op >= 0) patch(c.else_op, c.else_word, end);
  bind_label();
  block_results_.swap(c.results);
  if (c.kind == BlockKind::Loop && !c.dead) --loop_depth_;
  pop_ctrl();
  for (ValType t : block_results_) push(t);
  return true;
}

void FunctionCompiler::push_ctrl(BlockKind kind, const std::vector<ValType>& params,
                                 const std::vector<ValType>& results) {
  const uint32_t height = static_cast<uint32_t>(vals_.size()), base_slot = next_slot();
  Ctrl& c = ctrls_.push();
  c.kind = kind;
  c.params.assign(params.begin(), params.end());
  c.results.assign(results.begin(), results.end());
  c.height = height;
  c.base_slot = base_slot;
  c.da_entry = da_;  // nothing has reached its end yet: da_end all ones
  for (ValType t : c.params) push(t);
}

void FunctionCompiler::pop_ctrl() { ctrls_.pop(); }

void FunctionCompiler::set_unreachable() {
  Ctrl& c = ctrls_.back();
  vals_.resize(c.height);
  c.unreachable = true;
}

bool FunctionCompiler::read_block_type(std::vector<ValType>& params, std::vector<ValType>& results) {
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

// A branch target: no instruction may be merged across it; with fuel, an
// instruction-count segment ends here (without, the body is one).
void FunctionCompiler::bind_label() {
  counts_.at_label();
  e_.bind_label(e_.counted_so_far());
}

// Every jump offset is set here, so here a jump that goes backward (or
// to itself: `(loop (br 0))`) becomes its back-edge form (why these
// remain: vm/internal_ops.def).
// `target_count`: counted without fuel, the instructions counted before
// the target; kHere: as many as now (a label bound here, or code to come).
void FunctionCompiler::patch(uint32_t op_pos, uint32_t word_pos, uint32_t target, uint32_t target_count) {
  std::vector<uint32_t>& code = e_.code;
  code[word_pos] = static_cast<uint32_t>(static_cast<int32_t>(target) - static_cast<int32_t>(op_pos));
  counts_.patched(op_pos, word_pos, target_count);
  if (target > op_pos) return;
  IOp back = op_tables().back_edge[code[op_pos]];
  if (back == IOp::Count) {
    // Not reachable: only br, br_if and br_table jump to a loop, and they
    // lower to ops that have a back-edge form. Refusing the module beats
    // a loop that no sampler or --timeout could stop.
    fail(std::string("internal error: backward ") + iop_name(static_cast<IOp>(code[op_pos])));
    return;
  }
  code[op_pos] = static_cast<uint32_t>(back);
}

// A jump taken when `cond` is non-zero (or zero), with the offset left to
// patch; returns (op word, offset word). When `cond` was computed by the
// instruction just emitted, that instruction becomes a fused
// compare-and-branch in place (fuse_cond_jump).
std::pair<uint32_t, uint32_t> FunctionCompiler::emit_cond_jump(bool if_true, const Operand& cond,
                                                               bool to_loop) {
  std::pair<uint32_t, uint32_t> fused;
  if (fuse_cond_jump(e_, if_true, cond, loop_depth_ > 0, to_loop, fused)) return fused;
  uint32_t op = emit_op(if_true ? IOp::JumpIf : IOp::JumpUnless);
  src_word(cond.src);
  word(0);
  return {op, op + 2};
}

// The block's results, popped into scratch_, move to its label's slots.
void FunctionCompiler::emit_label_values(const Ctrl& c) {
  uint32_t dst = c.base_slot;
  for (const Operand& v : scratch_) {
    emit_copy(dst, v.src, v.type);
    dst += slot_count(v.type);
  }
}

// The end of one arm (then, try body, a handler): results to the label,
// then a jump to the block's end, patched when the end is reached.
void FunctionCompiler::emit_exit_to_end(Ctrl& c) {
  emit_label_values(c);
  note_op_before_jump();
  uint32_t op = emit_op(IOp::Jump);
  word(0);
  add_edge(op, op + 1);
  c.fixups.emplace_back(op, op + 1);
}

// Moves `vs` (the top values, already popped) to the label slots of the
// target `depth` out and jumps there (a return for the function's own label).
void FunctionCompiler::emit_branch(uint32_t depth, std::vector<Operand>& vs) {
  Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
  if (&target == &ctrls_.front()) {
    emit_return(vs, true);
    return;
  }
  uint32_t dst = target.base_slot;
  for (Operand& v : vs) {
    if (v.type != kUnknown) emit_copy(dst, v.src, v.type);
    dst += v.type == kUnknown ? 1 : slot_count(v.type);
  }
  const uint32_t copy = target.kind == BlockKind::Loop && vs.empty() ? head_switch_write(target) : UINT32_MAX;
  const uint64_t known = copy == UINT32_MAX ? kNoIndex : written_constant(copy);
  if (target.kind == BlockKind::Loop && vs.empty() && rotate_back_edge(target, copy, known)) return;
  note_op_before_jump();
  uint32_t op = emit_op(IOp::Jump);
  word(0);
  add_edge(op, op + 1);
  if (target.kind == BlockKind::Loop) patch_to_loop(target, op, op + 1);
  else target.fixups.emplace_back(op, op + 1);
  if (known != kNoIndex) thread_jump(op, copy, known, target);
}

// An i32.add (Lua's `pc++`), or an i32.load+shr_u+and+add's decode (its
// shared tail), as the last op, whole, nothing after it: it falls through
// into the jump about to be emitted. Paired at the end, if the jump is then
// still a plain or counted one right after it (pair_lua_tail: a threaded
// jump is resolved, and never pairs).
void FunctionCompiler::note_op_before_jump() {
  const std::vector<uint32_t>& code = e_.code;
  const uint32_t p = e_.last_op;
  if (p == UINT32_MAX) return;
  if (code[p] == static_cast<uint32_t>(IOp::I32Add) && here() == p + 4) {
    jump_pair_ops_.push_back(p);
    // a copy2 right before it (the handler's last moves): copy2+i32.add+jump
    if (const uint32_t c = e_.last_copies;
        c != UINT32_MAX && c + 5 == p && code[c] == static_cast<uint32_t>(IOp::Copy2))
      jump_pair_ops_.push_back(c);
  } else if (const uint32_t l = e_.prev_op; code[p] == static_cast<uint32_t>(IOp::I32ShrUAndAdd) &&
                                            here() == p + 6 && l != UINT32_MAX && l + 4 == p &&
                                            code[l] == static_cast<uint32_t>(IOp::I32LoadShrUAndAdd))
    jump_pair_ops_.push_back(l);
}

void FunctionCompiler::patch_to_loop(Ctrl& loop, uint32_t op, uint32_t w) {
  patch(op, w, loop.loop_start, loop.loop_count);
  if (loop.head != UINT32_MAX) ++heads_[loop.head].jumps;
}

// Loop rotation at the back edge. Go tests a loop's exit at its head, so
// each iteration's jump back (threaded past the head switch) lands on a
// fused compare-and-branch: two dispatches where one would do (Go's
// strconv tests: `jump.back -> jump_unless(I64GeS)` 3.5% of dispatches).
// A `br` back to a loop that lands on such a test (the loop's first op, or
// the bound target of a threaded jump) becomes the test itself as a
// backward conditional jump to the side that stays in the loop, then a jump
// to the other side. With the test at `at` falling through to `next`:
//   its target T bound (behind us, in the loop):
//     [J.back a b -> T] [jump.back -> next]          (Go: T is the body;
//                                                     next, the exit's jump, is
//                                                     skipped once it is resolved)
//   T not bound yet (ahead of the back edge, the loop's exit):
//     [J'.back a b -> next] [jump -> T]              (J' the inverted test)
// A continuing iteration runs one op. The copy reads the slots the test
// would read next and cannot trap, so results, traps and backtraces are
// those of the jump it replaces (the copy carries the `br`'s offset, as the
// jump did). Every cycle through it still takes a backward jump: both its
// ops go back, or the forward one leaves for code after it. The inverse of
// a fused test whose op has no negation (floats, i32.and) has no back form:
// such a test is left alone. Not in counted code or with fuel (an edge
// counts from its source to its target; fuel's segments start at labels,
// and `next` is none).
bool FunctionCompiler::rotate_back_edge(Ctrl& loop, uint32_t write, uint64_t known) {
  if (counts_.counting()) return false;
  const std::vector<uint32_t>& code = e_.code;
  uint32_t at = loop.loop_start;
  if (loop.head != UINT32_MAX) {
    if (known == kNoIndex) return false;  // to the switch, not a test
    const Head& h = heads_[loop.head];
    const uint32_t n = code[h.sw + 2];
    const uint32_t entry = code[h.sw + 3 + static_cast<uint32_t>(std::min<uint64_t>(known, n))];
    if (entry == 0) return false;  // not bound yet: ahead (or the switch itself)
    at = h.sw + entry;
  }
  if (at >= here()) return false;
  const IOp test = static_cast<IOp>(code[at]);
  const std::pair<IOp, bool> fused = op_tables().fused_test[static_cast<size_t>(test)];
  const IOp x = fused.first;  // (not a structured binding: the lambda below captures it)
  const bool plain = test == IOp::JumpIf || test == IOp::JumpUnless;
  if (x == IOp::Count && !plain) return false;
  const uint32_t len = plain ? 3 : 4, next = at + len;
  if (next >= here()) return false;
  // The back form of a conditional jump taken when the test's condition
  // (x, or the slot non-zero) is `when`.
  auto back = [&](bool when) {
    if (plain) return when ? IOp::JumpIfBack : IOp::JumpUnlessBack;
    const IOp y = when ? x : op_tables().negated[static_cast<size_t>(x)];
    if (y == IOp::Count) return IOp::Count;
    return op_tables().back_edge[static_cast<size_t>(op_tables().fused[static_cast<size_t>(y)].first)];
  };
  const bool jumps_when = plain ? test == IOp::JumpIf : fused.second;
  const uint32_t off = code[next - 1];
  const bool ahead = off == 0;  // forward forms only: 0 is a jump not yet patched
  if (!ahead && static_cast<int32_t>(off) < 0) return false;
  Ctrl* exit = nullptr;
  if (ahead) {
    for (size_t i = ctrls_.size(); i-- > 0 && !exit;)
      for (const auto& f : ctrls_[i].fixups)
        if (f.first == at) exit = &ctrls_[i];
    if (!exit) return false;  // an `if`'s jump to its else arm: left alone
  }
  const IOp cond = back(ahead ? !jumps_when : jumps_when);
  if (cond == IOp::Count) return false;
  // The op before a threaded jump's write, which the test pairs with if
  // the write goes (resolve_threaded_jumps).
  const uint32_t step = known != kNoIndex && e_.last_op == write ? e_.fall_op : UINT32_MAX;
  const uint32_t p = emit_op(cond);
  for (uint32_t i = 1; i + 1 < len; ++i) src_word(e_.code[at + i]);
  word(static_cast<uint32_t>(static_cast<int32_t>(ahead ? next : at + off) - static_cast<int32_t>(p)));
  pair_last_step_jump(e_, p);  // `i++` right before (no write between): one dispatch
  const uint32_t q = emit_op(ahead ? IOp::Jump : IOp::JumpBack);
  word(ahead ? 0 : static_cast<uint32_t>(static_cast<int32_t>(next) - static_cast<int32_t>(q)));
  if (ahead) exit->fixups.emplace_back(q, q + 1);
  if (known != kNoIndex) {
    ++heads_[loop.head].jumps;
    thread_jump(p, write, known, loop, len + 2);
    threaded_.back().step = step;
  }
  return true;
}

bool FunctionCompiler::needs_moves(uint32_t depth, const std::vector<Operand>& vs) const {
  const Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
  if (&target == &ctrls_.front()) return true;
  uint32_t dst = target.base_slot;
  for (const Operand& v : vs) {
    if (v.type != kUnknown && v.src != dst) return true;
    dst += v.type == kUnknown ? 1 : slot_count(v.type);
  }
  return false;
}

// `early`: not the body's final `end` (return, br to the function's label).
void FunctionCompiler::emit_return(std::vector<Operand>& vs, bool early) {
  // Results must be contiguous: put each in its own stack slot first. One
  // result is contiguous wherever it is: `ret` reads a local or a
  // constant's slot in place (a copy before `ret` was 0.8-1.5% of the ops
  // Lua and SQLite ran).
  uint32_t n = 0, src = vs.empty() ? 0 : vs.front().slot;
  if (vs.size() == 1 && vs.front().type != kUnknown) {
    n = slot_count(vs.front().type);
    src = vs.front().src;
  } else {
    for (Operand& v : vs) {
      if (v.type != kUnknown) materialize(v);
      n += v.type == kUnknown ? 1 : slot_count(v.type);
    }
  }
  if (early) counts_.emit_count_edge(false);
  emit_ret(src, n);
}

}  // namespace wzvm::vm::lower
