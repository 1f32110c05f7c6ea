// Instruction counting and fuel: see instrument.h.

#include "vm/lower/instrument.h"

#include <algorithm>

namespace wzvm::vm::lower {

// A thread's spare vectors, traded with this body's as
// FunctionCompiler::swap_buffers does (each trade empties what it gets).
void Instrumentation::swap_buffers() {
  struct Spares {
    std::vector<uint32_t> seg_begin, seg_offsets, call_slot_words;
    std::vector<Edge> edges;
  };
  static thread_local Spares spares;
  seg_begin_.swap(spares.seg_begin);
  seg_offsets_.swap(spares.seg_offsets);
  call_slot_words_.swap(spares.call_slot_words);
  edges_.swap(spares.edges);
  seg_begin_.clear();
  seg_offsets_.clear();
  call_slot_words_.clear();
  edges_.clear();
}

Instrumentation::~Instrumentation() { swap_buffers(); }

// Starts an instruction-count segment here, of no instructions yet.
void Instrumentation::open_segment() {
  e_.emit_op(fuel_ ? IOp::CountFuel : IOp::CountInstr);
  e_.seg_pos = e_.here();
  e_.word(0);
  e_.word(static_cast<uint32_t>(seg_begin_.size()));  // the segment's index
  seg_begin_.push_back(static_cast<uint32_t>(seg_offsets_.size()));
}

void Instrumentation::begin_instruction(const OpInfo& info, bool emitting) {
  // Block structure is not an instruction that runs.
  const bool counted = info.op != IOp::Block && info.op != IOp::Loop && info.op != IOp::Else &&
                       info.op != IOp::End && info.op != IOp::Try && info.op != IOp::Catch &&
                       info.op != IOp::CatchAll && info.op != IOp::Delegate;
  if (!counted || !emitting) return;
  if (e_.seg_pos == UINT32_MAX) open_segment();
  ++e_.code[e_.seg_pos];
  seg_offsets_.push_back(e_.instr_offset);
}

void Instrumentation::end_instruction(const OpInfo& info) {
  if (!fuel_) return;  // without fuel, the body is one segment
  switch (info.op) {   // with fuel, a branch ends its segment
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
      e_.seg_pos = UINT32_MAX;
      break;
    default:
      break;
  }
}

bool Instrumentation::add_edge(uint32_t op, uint32_t w) {
  if (!edges()) return true;
  const IOp c = op_tables().counted[e_.code[op]];
  if (c == IOp::Count || e_.here() != w + 1) return false;
  e_.code[op] = static_cast<uint32_t>(c);
  edges_.push_back({e_.here(), e_.counted_so_far(), kUnpatched});
  e_.word(static_cast<uint32_t>(edges_.size()));  // counter 1 + k is edge k (finish)
  return true;
}

void Instrumentation::add_switch_edges(uint32_t op, uint32_t n) {
  if (!edges()) return;
  e_.code[op] = static_cast<uint32_t>(IOp::SwitchCounted);
  for (uint32_t i = 0; i <= n; ++i) {
    edges_.push_back({e_.here(), e_.counted_so_far(), kUnpatched});
    e_.word(static_cast<uint32_t>(edges_.size()));
  }
}

void Instrumentation::patched(uint32_t op_pos, uint32_t word_pos, uint32_t target_count) {
  if (!edges()) return;
  // Every jump is in its counted form (add_edge): its edge word, after the
  // offset or after switch's offsets, holds 1 + the edge's index.
  const bool table = e_.code[op_pos] == static_cast<uint32_t>(IOp::SwitchCounted);
  Edge& edge = edges_[e_.code[word_pos + (table ? e_.code[op_pos + 2] + 1 : 1)] - 1];
  edge.tgt = target_count == kHere ? e_.counted_so_far() : target_count;
}

void Instrumentation::emit_count_edge(bool landing) {
  if (!edges()) return;
  e_.emit_op(IOp::CountEdge);
  rest_of_body_edge(landing);
}

// The operand word of an edge from here to the body's end (the rest left
// unrun), or, landing, from anywhere to here (the rest run from here on).
void Instrumentation::rest_of_body_edge(bool landing) {
  const uint32_t now = e_.counted_so_far();
  edges_.push_back({e_.here(), landing ? kToEnd : now, landing ? now : kToEnd});
  e_.word(static_cast<uint32_t>(edges_.size()));
}

// ProbeCounted, with the table's index and the function's i32 locals, and
// its two edges at this point of the body: the rest of it, left (taken
// back) and landed in (vm/counted_ops.def).
void Instrumentation::emit_probe(const Operand& index, const std::vector<ValType>& local_types,
                                 const std::vector<uint32_t>& local_slot) {
  e_.emit_op(IOp::ProbeCounted);
  e_.src_word(index.src);
  rest_of_body_edge(false);
  rest_of_body_edge(true);
  uint32_t n = 0;
  for (ValType t : local_types) n += t == ValType::I32;
  e_.word(n);
  for (size_t i = 0; i < local_types.size(); ++i)
    if (local_types[i] == ValType::I32) e_.slot_word(local_slot[i]);
  e_.last_dst = UINT32_MAX;
}

// Counted calls carry their call site's slot, made the entry's word index
// once the segments are known (finish).
void Instrumentation::call_site_word() {
  call_slot_words_.push_back(e_.here());
  e_.word(static_cast<uint32_t>(call_slot_words_.size() - 1));
}

void Instrumentation::finish(CompiledFunc& out) {
  // A segment's operand words are [count, index]; an op outside any segment
  // (after a label, before the next counted instruction) has seg UINT32_MAX:
  // nothing to take back there.
  // Made in a reused buffer and copied out at their size (FunctionCompiler::swap_buffers).
  static thread_local std::vector<CompiledFunc::CountMark> marks;
  marks.clear();
  for (const Emitter::CountMark& m : e_.count_marks) {
    CompiledFunc::CountMark mark{m.pos, m.seg == UINT32_MAX ? UINT32_MAX : e_.code[m.seg + 1], m.index,
                                 m.before};
    if (marks.empty() || marks.back().seg != mark.seg || marks.back().ran != mark.ran ||
        marks.back().before != mark.before)
      marks.push_back(mark);
  }
  out.count_marks.assign(marks.begin(), marks.end());
  out.charges_fuel = fuel_;
  // Counters: with fuel, the segments in order; without, the body, then the
  // edges: a jump back adds its target through itself, one forward skips
  // what lies between (negative), a return what follows, a landing what
  // follows its handler.
  const auto ninstr = static_cast<uint32_t>(seg_offsets_.size());
  out.counters.reserve(out.counters.size() + seg_begin_.size() + edges_.size());
  for (size_t s = 0; s < seg_begin_.size(); ++s)
    out.counters.push_back({seg_begin_[s], s + 1 < seg_begin_.size() ? seg_begin_[s + 1] : ninstr, 1});
  const size_t first_edge = out.counters.size();  // edge k is counter first_edge + k
  for (size_t k = 0; k < edges_.size(); ++k) {
    Edge edge = edges_[k];
    if (edge.tgt == kUnpatched) edge.tgt = edge.src;  // a jump to a label never bound: never taken
    if (edge.src == kToEnd) edge.src = ninstr;
    if (edge.tgt == kToEnd) edge.tgt = ninstr;
    e_.code[edge.word] = static_cast<uint32_t>(out.counters.size());  // 1 + k, as it was
    if (edge.tgt <= edge.src) out.counters.push_back({edge.tgt, edge.src, 1});
    else out.counters.push_back({edge.src, edge.tgt, -1});
  }
  for (size_t k = 0; k < edges_.size(); ++k) {
    if (!edges_[k].also) continue;
    CompiledFunc::CountRange& c = out.counters[first_edge + k];
    const CompiledFunc::CountRange& o = out.counters[first_edge + edges_[k].also - 1];
    c.lo2 = o.lo;
    c.hi2 = o.hi;
    c.sign2 = o.sign;
  }
  // A translated body's blocks, each the counted instructions in its range.
  if (!native_ranges_.empty()) {
    e_.code[native_base_word_] = static_cast<uint32_t>(out.counters.size());
    for (const auto& [first, last] : native_ranges_) {
      const auto lo =
          std::lower_bound(seg_offsets_.begin(), seg_offsets_.end(), first) - seg_offsets_.begin();
      const auto hi = std::upper_bound(seg_offsets_.begin(), seg_offsets_.end(), last) - seg_offsets_.begin();
      out.counters.push_back({static_cast<uint32_t>(lo), static_cast<uint32_t>(hi), 1});
    }
  }
  // A counted call's entry follows the node block's counters.
  const auto nall = static_cast<uint32_t>(out.counters.size());
  for (uint32_t pos : call_slot_words_) e_.code[pos] = nall + 2 * e_.code[pos];
  out.call_slots = static_cast<uint32_t>(call_slot_words_.size());
  if (!out.counters.empty()) out.seg_offsets.assign(seg_offsets_.begin(), seg_offsets_.end());
}

}  // namespace wzvm::vm::lower
