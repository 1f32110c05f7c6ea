// Jump threading through a loop's head switch. Go compiles every jump
// between its basic blocks as `i32.const N; local.set 0; br $loop`, and the
// loop starts with `br_table` on local 0 over the function's resume points:
// two dispatches (jump back, switch) per Go jump, 9% of the ops Go's strconv
// tests ran. When the op just before such a `br` wrote a constant into the
// switch's local, the jump goes straight to the switch's target for it (the
// local is still written: the switch would read it again only on the next
// entry through the loop's head).
// In code counted without fuel, a jump's edge counts the instructions from
// the loop's head through the jump, and the switch's edge those it skips to
// its target: a threaded jump counts both (jump.threaded_counted, whose two
// counters are those two edges'), so no counter needs two ranges. Not with
// fuel, which charges the switch's segment when it runs.
// Every cycle still has a backward jump for the sampler and --timeout to
// stop at: a resolved jump keeps its back-edge form unless its target lies
// ahead of it, and a cycle of forward jumps cannot exist.

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

// The br_table just emitted at `op` on `index`: when it is the first op of
// the innermost loop (blocks in between emit nothing), switches on a local
// and carries no values, a head switch to thread jumps through.
void FunctionCompiler::note_head_switch(uint32_t op, const Operand& index, uint32_t arity) {
  if (!threads_jumps() || arity != 0 || !index.is_virtual() || index.src >= local_slots_) return;
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

// The op just emitted, when it wrote a constant into `loop`'s head-switch
// local, else UINT32_MAX.
uint32_t FunctionCompiler::head_switch_write(const Ctrl& loop) const {
  if (!threads_jumps() || loop.head == UINT32_MAX) return UINT32_MAX;
  const std::vector<uint32_t>& code = e_.code;
  const uint32_t slot = heads_[loop.head].slot;
  // (a run of copies leaves last_op unset: its last copy is the write)
  if (const uint32_t p = e_.last_copies; p != UINT32_MAX) {
    const uint32_t n = copy_run_length(code[p]);
    if (n >= 2 && here() == p + 1 + 2 * n && code[p + 2 * n - 1] == slot && (code[p + 2 * n] & kConstTag))
      return p;
  }
  const uint32_t p = e_.last_op;
  if (p == UINT32_MAX || here() != p + 3 || code[p + 1] != slot) return UINT32_MAX;
  const IOp op = static_cast<IOp>(code[p]);
  return op == IOp::Const32 || (op == IOp::Copy && (code[p + 2] & kConstTag)) ? p : UINT32_MAX;
}

uint64_t FunctionCompiler::written_constant(uint32_t p) const {
  const std::vector<uint32_t>& code = e_.code;
  switch (static_cast<IOp>(code[p])) {
    case IOp::Const32:
      return code[p + 2];
    case IOp::Copy:
      return e_.consts[code[p + 2] & ~kConstTag];
    default:  // a run's last copy
      return e_.consts[code[p + 2 * copy_run_length(code[p])] & ~kConstTag];
  }
}

// The jump at `op` to `loop`'s head follows `write` (head_switch_write),
// which put `known` in the switch's local: resolved at the end.
// `rotated`: the jump is a loop's exit test and a jump, `rotated` words
// with their targets set (rotate_back_edge, control.cc; plain code only).
// Counted, the jump's words are [op offset edge] and a fourth follows: the
// counter of the switch's edge for `known` (add_switch_edges wrote each
// edge's final counter index; Instrumentation::finish keeps them).
void FunctionCompiler::thread_jump(uint32_t op, uint32_t write, uint64_t known, const Ctrl& loop,
                                   uint32_t rotated) {
  threaded_.push_back({op, static_cast<uint32_t>(known), write, loop.head, rotated});
  Head& h = heads_[loop.head];
  ++h.threaded;
  if (counts_.edges()) {
    const uint32_t n = e_.code[h.sw + 2];
    word(e_.code[h.sw + 4 + n + std::min<uint32_t>(static_cast<uint32_t>(known), n)]);
  }
}

// At the end, when every switch offset is known. When a loop's head
// switch runs only once per call (the loop is in no other loop, every
// jump to its head was threaded, and nothing else reads its local), the
// local is dead after it: the write before each threaded jump goes too,
// its words becoming the jump (Go's every jump is then one dispatch).
void FunctionCompiler::resolve_threaded_jumps() {
  std::vector<uint32_t>& code = e_.code;
  std::vector<std::pair<uint32_t, uint32_t>> gone;     // word ranges that are no longer slot operands
  std::vector<uint32_t> moved;                         // slot operands of rotated jumps, where they went
  std::vector<std::pair<uint32_t, uint32_t>> rotated;  // rotated jumps: where they are, their words
  const bool counted = counts_.edges();
  for (const ThreadedJump& j : threaded_) {
    const Head& h = heads_[j.head];
    uint32_t op = j.op;
    // (a probe.counted reads every i32 local: there the write stays)
    if (h.outermost && h.jumps == h.threaded && slot_reads_[h.slot] == 1 && !(counted && counts_.probes())) {
      // [const32 s v] / [copy s c] [jump] -> [jump]; [copy2 d c s c'] [jump] -> [copy d c] [jump],
      // and a longer run loses its last copy alike
      const uint32_t n = copy_run_length(code[j.write]);
      op = n >= 2 ? j.write + 2 * n - 1 : j.write;
      if (n >= 2) code[j.write] = static_cast<uint32_t>(copy_run_op(n - 1));
      // the write's slot operands from `op` on are the jump's words now
      gone.emplace_back(op, j.op + j.rotated);
    }
    if (j.rotated) {
      // [test a b offset] [jump offset], targets set: moved up to `op`, each
      // offset (its op's last word) longer by the distance moved.
      rotated.emplace_back(op, j.rotated);
      if (op == j.op) continue;
      const uint32_t d = j.op - op, second = op + j.rotated - 2;
      for (uint32_t i = 0; i < j.rotated; ++i) code[op + i] = code[j.op + i];
      code[second - 1] += d;
      code[second + 1] += d;
      for (uint32_t w = op + 1; w + 1 < second; ++w) moved.push_back(w);
      // The write stood between the loop's step and its test: now adjacent,
      // they pair (Go's `i++`, then the rotated test).
      pair_step_jump(e_, j.step, op);
      continue;
    }
    const uint32_t n = code[h.sw + 2];
    const uint32_t target = h.sw + code[h.sw + 3 + std::min<uint32_t>(j.index, n)];
    if (counted) {
      // [op offset edge switch_edge], read before the write's words become it
      // (the old jump, a word of it now the new one's last, is never reached)
      const uint32_t edge = code[j.op + 2], switch_edge = code[j.op + 3];
      code[op] =
          static_cast<uint32_t>(target <= op ? IOp::JumpBackThreadedCounted : IOp::JumpThreadedCounted);
      code[op + 1] = target - op;
      code[op + 2] = edge;
      code[op + 3] = switch_edge;
      counts_.count_also(edge, switch_edge);  // the jump's one increment counts both
      continue;
    }
    for (uint32_t at : {op, j.op}) {  // (the old jump, if the write became it, is never reached)
      code[at + 1] = target - at;
      code[at] = static_cast<uint32_t>(target <= at ? IOp::JumpBack : IOp::Jump);
    }
  }
  // A rotated test's other side jumps back to the op after the head's
  // test: when that is the exit's jump (its write gone), it goes where that
  // jump goes, straight (leaving Go's loops ran `jump_if.back -> jump.back ->
  // jump`, 0.5% of strconv's dispatches). Every jump is resolved by now. A
  // jump backward or to itself keeps the back-edge form, so every cycle
  // still has one.
  for (auto [at, words] : rotated) {
    const uint32_t second = at + words - 2;
    if (code[second] != static_cast<uint32_t>(IOp::JumpBack)) continue;  // (clang's: out already)
    const uint32_t t = second + code[second + 1];
    if (code[t] != static_cast<uint32_t>(IOp::Jump) && code[t] != static_cast<uint32_t>(IOp::JumpBack))
      continue;
    const uint32_t target = t + code[t + 1];
    code[second] = static_cast<uint32_t>(target <= second ? IOp::JumpBack : IOp::Jump);
    code[second + 1] = target - second;
  }
  if (gone.empty()) return;
  // Both are in code order: jumps were recorded as emitted.
  std::erase_if(e_.slot_words, [&](uint32_t w) {
    auto it = std::upper_bound(gone.begin(), gone.end(), std::make_pair(w, UINT32_MAX));
    return it != gone.begin() && w < std::prev(it)->second;
  });
  e_.slot_words.insert(e_.slot_words.end(), moved.begin(), moved.end());
}

}  // namespace wzvm::vm::lower
