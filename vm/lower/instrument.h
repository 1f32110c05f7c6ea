// Instruction counting and fuel (LoadOptions::count_instructions, fuel,
// probe_dispatch): which ops lowering adds so that counts stay exact, and the
// counters a CompiledFunc carries. Works on the Emitter's code; lowering
// tells it where instructions start, where control leaves or lands, and
// where calls are.
//
// Each straight-line segment starts with a CountInstr whose operand is the
// number of instructions in it. With fuel (CountFuel, which also charges
// Profiling::fuel) a segment ends wherever control may branch (branches,
// labels); calls stay inside it, since they return. Without fuel the whole
// body is one segment and taken jumps count their edges (add_edge,
// vm/counted_ops.def). When a trap or proc_exit cuts a segment short, the
// interpreter takes back what did not run using CompiledFunc::count_marks,
// so counts stay exact. Each segment has one run counter per call-tree node;
// its instructions' offsets (CompiledFunc::seg_offsets) turn runs into
// per-instruction counts.

#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "vm/code.h"
#include "vm/lower/emitter.h"
#include "vm/lower/op_table.h"

namespace wzvm::vm::lower {

class Instrumentation {
 public:
  // Counting or not is the Emitter's (its ops carry count marks then).
  Instrumentation(Emitter& e, bool fuel, uint32_t probe_min) : e_(e), fuel_(fuel), probe_min_(probe_min) {
    swap_buffers();
  }
  ~Instrumentation();
  Instrumentation(const Instrumentation&) = delete;
  Instrumentation& operator=(const Instrumentation&) = delete;

  bool counting() const { return e_.counting; }
  bool fuel() const { return fuel_; }
  // Counted without fuel: jumps count their edges (the body is one segment).
  bool edges() const { return e_.counting && !fuel_; }

  // Before lowering: code counted without fuel starts with segment 0's
  // CountInstr, also when the body starts with a label or is empty (a
  // segment of no instructions): a call with CallLocalCounted then counts
  // the entry without looking at the callee's first op (vm/interp.cc).
  void begin_body() {
    if (edges()) open_segment();
  }
  // Instruction `info` starts (before it is lowered), and ends.
  void begin_instruction(const OpInfo& info, bool emitting);
  void end_instruction(const OpInfo& info);
  // A label is bound here: with fuel, the segment ends.
  void at_label() {
    if (fuel_) e_.seg_pos = UINT32_MAX;
  }

  // The jump just lowered at `op`, its offset word at `w`, becomes its
  // counted form, which counts its edge when taken; the edge's target is set
  // when the offset is (patched), its counter index once all are known (finish).
  // Returns false (an internal error) for a jump with no counted form.
  bool add_edge(uint32_t op, uint32_t w);
  // A br_table just lowered at `op` (n + 1 targets, offsets written): its
  // counted form, an edge per target after the offsets.
  void add_switch_edges(uint32_t op, uint32_t n);
  // The edge counted by counter `edge` (a jump's operand word) also stands
  // for the one counted by `other`: a threaded jump counts its own edge and
  // its loop-head switch's (vm/lower/jump_threading.cc) with one increment.
  void count_also(uint32_t edge, uint32_t other) { edges_[edge - 1].also = other; }
  // The jump at `op_pos`, offset word `word_pos`, was patched to a target
  // with `target_count` instructions counted before it (kHere: as many as now).
  static constexpr uint32_t kHere = UINT32_MAX;
  void patched(uint32_t op_pos, uint32_t word_pos, uint32_t target_count);
  // A return or tail call here leaves the rest of the body unrun, or a catch
  // handler starts here, entered from anywhere (`landing`): a CountEdge counts it.
  void emit_count_edge(bool landing);
  // An interpreter's dispatch (probe_dispatch): before a br_table of `n + 1`
  // targets on `index`, ProbeCounted with the function's i32 locals.
  bool wants_probe(uint32_t n) const { return probe_min_ && n + 1 >= probe_min_; }
  bool probes() const { return probe_min_ != 0; }
  void emit_probe(const Operand& index, const std::vector<ValType>& local_types,
                  const std::vector<uint32_t>& local_slot);
  // A counted call's call-site slot operand (CompiledFunc::call_slots).
  void call_site_word();
  // A tail call leaves the segment: a trap in it takes nothing more back.
  uint32_t suspend_segment() {
    const uint32_t s = e_.seg_pos;
    if (edges()) e_.seg_pos = UINT32_MAX;
    return s;
  }
  void resume_segment(uint32_t s) { e_.seg_pos = s; }

  // A known body's translation counts its blocks itself (vm/counted_ops.def,
  // libc.X.counted): each range [first, last] of module byte offsets becomes
  // a counter adding one to the counted instructions there, and the op's
  // word at `base_word` the first such counter's index (finish).
  void native_blocks(uint32_t base_word, std::vector<std::pair<uint32_t, uint32_t>> ranges) {
    native_base_word_ = base_word;
    native_ranges_ = std::move(ranges);
  }

  // At the end: counters, count marks, call slots and fuel into `out`
  // (before the code moves there).
  void finish(CompiledFunc& out);

 private:
  void open_segment();
  // Trades the vectors below with this thread's spares, as
  // FunctionCompiler::swap_buffers does its own.
  void swap_buffers();
  void rest_of_body_edge(bool landing);

  Emitter& e_;
  const bool fuel_;           // segments charge Profiling::fuel (CountFuel)
  const uint32_t probe_min_;  // LoadOptions::probe_dispatch's, or 0
  // Counted instructions' byte offsets, segment by segment (CompiledFunc::seg_offsets).
  std::vector<uint32_t> seg_begin_;
  std::vector<uint32_t> seg_offsets_;
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
    uint32_t also = 0;  // count_also's other counter, or 0
  };
  std::vector<Edge> edges_;
  uint32_t native_base_word_ = 0;
  std::vector<std::pair<uint32_t, uint32_t>> native_ranges_;
};

}  // namespace wzvm::vm::lower
