// Instruction counts by Python function and line (Profiler::probe).
//
// Lowered for counting, CPython's evaluation loop runs a ProbeCounted op
// before the br_table that dispatches each bytecode (vm/counted_ops.def).
// Here the probe finds the Python frame and line that bytecode belongs to
// and returns the call-tree node that stands for it: a context node of the
// loop's function (vm::Profiling::enter_context), keyed by the function and
// line, under the node of the Python frame that called it (or under the
// loop's own node for the frame the loop was entered with). From then on
// the loop's frame counts in that node's block, and the C functions it
// calls hang below it: a Python line's cost is what the loop ran for it
// plus everything it called, and a C function that calls back into Python
// (a json encoder's `default=`, `sorted`'s key) shows Python -> C ->
// Python, as the CPU profile does. The counts stay exact: the VM moves the
// rest of the body from one block to the other at each switch.
//
// Which bytecode is about to run is the loop's `next_instr`, a wasm local
// (clang keeps it in one, and its DWARF location is optimised out): the
// first probes learn which local it is (the one that always points into
// the running code object's bytecode, and whose opcode there goes with one
// br_table index every time), and until then counting stays at the C
// level. Every later probe checks that it still points there; one that
// does not stays in the node it is in. The running frame is learnt the
// same way: the local that always holds what CPythonModule::running finds
// (the loop's `frame`), after which a probe reads it there.

#include <algorithm>
#include <cstring>

#include "profiler/profiler.h"
#include "profiler/symbolize.h"

namespace wzvm::profiler {

namespace {
// Probes to learn `next_instr` from; the opcodes of the first few bytecodes
// of a run already tell the candidates apart.
constexpr uint32_t kLearnProbes = 64;
// Probes to learn the local holding the running frame from: more, as a
// copy of it (a callee's argument) may match it for a while; each costs
// the walk from the thread state that learning it saves.
constexpr uint32_t kFrameProbes = 4096;
// Python frames of one evaluation deeper than this are memory that loops.
constexpr size_t kMaxFrames = 1 << 16;
}  // namespace

uint32_t Profiler::probe(vm::Profiling& p, uint32_t node, const vm::FuncInst* func, const void* frame,
                         uint32_t index, const uint64_t* fp, const uint32_t* slots, uint32_t n) {
  PythonCounts& s = python_counts_;
  if (s.eval != func) {
    if (s.eval) return node;  // one evaluation loop per profiler (a CPython instance)
    s.eval = func;
    if (func->instance && !func->instance->memories.empty())
      s.py = symbolizer(func->instance->module.get()).python();
    s.candidates = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    s.frame_candidates = s.candidates;
    s.opcode_index.assign(std::min<uint32_t>(n, 64), {});
    for (auto& m : s.opcode_index) m.fill(-1);
  }
  if (!s.py) return node;
  const vm::MemInst& memory = *func->instance->memories[0];
  const uint8_t* mem = memory.data;
  const uint64_t size = memory.current_size();
  auto local = [&](uint32_t k) { return static_cast<uint32_t>(fp[slots[k]]); };

  // The running frame: once learnt, the loop's own local (one load for its
  // code object instead of four down from the runtime's thread state).
  uint32_t f = 0, code = 0;
  if (s.frame_local >= 0) {
    f = local(static_cast<uint32_t>(s.frame_local));
    if (!f || !s.py->code_of(mem, size, f, code)) return node;
  } else {
    if (!s.py->running(mem, size, f, code)) return node;
    if (s.frame_candidates) {  // still learning it
      for (uint32_t k = 0; k < std::min<uint32_t>(n, 64); ++k)
        if (local(k) != f) s.frame_candidates &= ~(uint64_t{1} << k);
      if (s.frame_candidates && ++s.frame_probes == kFrameProbes)
        s.frame_local = __builtin_ctzll(s.frame_candidates);
    }
  }
  // A code object's lines, read once per code object.
  // A direct-mapped cache of the map's elements (which never move) goes
  // first: the map's lookup was a sixth of the probe's time.
  auto lines_of = [&](uint32_t c) -> const CPythonModule::CodeLines* {
    auto& [cached_at, cached] = s.recent_code[(c >> 4) % s.recent_code.size()];
    if (cached && cached_at == c && s.py->same_code(mem, size, c, *cached)) return cached;
    auto it = s.code.find(c);
    if (it == s.code.end() || !s.py->same_code(mem, size, c, it->second)) {
      CPythonModule::CodeLines lines;
      if (!s.py->code_lines(mem, size, c, lines)) return nullptr;
      it = s.code.insert_or_assign(c, std::move(lines)).first;  // elements never move
    }
    cached_at = c;
    cached = &it->second;
    return cached;
  };
  auto in_code = [](const CPythonModule::CodeLines& c, uint32_t v) {
    return v >= c.start && v - c.start < 2 * uint64_t{c.lines.size()} && !((v - c.start) & 1);
  };

  if (s.next_instr < 0) {
    const CPythonModule::CodeLines* cl = lines_of(code);
    if (!cl) return node;
    for (uint32_t k = 0; k < s.opcode_index.size(); ++k) {
      if (!(s.candidates >> k & 1)) continue;
      const uint32_t v = local(k);
      const bool inside = in_code(*cl, v);
      int32_t& seen = s.opcode_index[k][inside ? mem[v] : 0];
      if (!inside || (seen >= 0 && seen != static_cast<int32_t>(index))) s.candidates &= ~(uint64_t{1} << k);
      else seen = static_cast<int32_t>(index);
    }
    if (!s.candidates) {
      s.py = nullptr;  // no local checks out: this loop is not shaped as expected
      return node;
    }
    if (++s.learnt < kLearnProbes) return node;
    s.next_instr = __builtin_ctzll(s.candidates);
    s.opcode_index.clear();
  }
  const uint32_t next = local(static_cast<uint32_t>(s.next_instr));

  // This wasm frame's evaluation: frames deeper than it have returned.
  while (!s.evals.empty() && std::less<const void*>()(frame, s.evals.back().key)) s.evals.pop_back();
  const bool context = vm::CallTree::is_context(p.tree.node(node).site);
  if (s.evals.empty() || s.evals.back().key != frame) {
    uint32_t own = node;
    while (vm::CallTree::is_context(p.tree.node(own).site)) own = p.tree.node(own).parent;
    s.evals.push_back({frame, own, {}, {}});
  } else if (!context) {
    s.evals.back() = {frame, node, {}, {}};  // a new call of the loop in the same place
  }
  PythonCounts::Eval& e = s.evals.back();
  // The answer `top.node` holds while nothing but `next` moves within the
  // line (vm::Profiling::ProbeStay): the VM asks again only when it leaves
  // the line, the frame or its code change, or another probe ran. Through
  // the frame's local only: the thread state's walk has no such test.
  auto stay = [&](const PythonCounts::Entry& top) {
    if (s.frame_local < 0) return top.node;
    p.probe_stay = {frame,
                    nullptr,
                    static_cast<uint32_t>(s.frame_local),
                    f,
                    s.py->code_field(),
                    code,
                    static_cast<uint32_t>(s.next_instr),
                    top.lo,
                    top.hi - top.lo};
    return top.node;
  };
  // Still on the same line of the same frame: most bytecodes.
  if (!e.stack.empty()) {
    const PythonCounts::Entry& top = e.stack.back();
    if (top.frame == f && top.code == code && next >= top.lo && next < top.hi) return stay(top);
  }
  const CPythonModule::CodeLines* cl = lines_of(code);
  if (!cl || !in_code(*cl, next)) return node;

  // The context node of a frame of code `c` at `line` (0: the frame as a
  // whole), under `parent`.
  auto context_node = [&](uint32_t parent, const CPythonModule::CodeLines& c, uint32_t line) {
    const PythonCounts::NodeKey nk{parent, {c.linetable, c.qualname, c.filename, line}};
    const size_t h = PythonCounts::NodeKeyHash()(nk);
    PythonCounts::CachedNode& cached = s.recent_nodes[(h ^ h >> 32) % s.recent_nodes.size()];
    if (cached.node && cached.key == nk) return cached.node;
    const PythonCounts::Key& key = nk.key;
    // One lookup for a node seen before (a call's frame, a line).
    auto [known, fresh] = s.nodes.try_emplace(nk, 0);
    if (!fresh) return (cached = {nk, known->second}).node;
    auto [it, inserted] = s.keys.try_emplace(key, static_cast<uint32_t>(s.frames.size()));
    if (inserted) {
      PyFrame pf;
      if (!s.py->describe_code(mem, size, c, line ? line : c.first_line, pf))
        pf = {"[python]", "[python]", "", 0, line};
      s.frames.push_back(std::move(pf));
      s.whole.push_back(line == 0);
    }
    // A frame as a whole counts nothing (its lines do): no counter block.
    known->second = p.enter_context(parent, func, it->second, line != 0);
    return (cached = {nk, known->second}).node;
  };
  auto line_at = [&](const CPythonModule::CodeLines& c, uint32_t addr) {
    return addr >= c.start && (addr - c.start) / 2 < c.lines.size() ? c.lines[(addr - c.start) / 2]
                                                                    : c.first_line;
  };
  // Pushes a frame of code `c` (at `line`, or 0 for the top frame, whose
  // line is set below): its whole-frame node under the line of its caller
  // that called it, or, when its code is already running in this
  // evaluation (recursion), under its caller's whole-frame node. Otherwise
  // every path down a recursion (insert() into a binary tree, from either
  // of two lines) would be nodes of its own: with this rule, one per depth,
  // as vm::CallTree keys recursive calls.
  auto push = [&](uint32_t frame_addr, uint32_t code_addr, const CPythonModule::CodeLines& c, uint32_t line) {
    uint32_t& running = e.running[code_addr];  // elements never move
    uint32_t parent = e.eval_node;
    if (!e.stack.empty()) parent = running > 0 ? e.stack.back().whole : e.stack.back().node;
    const uint32_t whole = context_node(parent, c, 0);
    e.stack.push_back(
        {frame_addr, code_addr, whole, line ? context_node(whole, c, line) : whole, 0, 0, {}, 0});
    ++running;
  };
  auto pop_to = [&](size_t n) {
    while (e.stack.size() > n) {
      // Kept at 0, not erased: a call's push and return's pop would
      // allocate and free an element each.
      --e.running[e.stack.back().code];
      e.stack.pop_back();
    }
  };

  // Where `f` is in this evaluation's frames: the top (a new line), called
  // by the top (a call: pushed), below it (the frames above returned or
  // unwound), or none of these (the frames between it and the known ones,
  // or all of them, are read).
  size_t at = e.stack.size();
  const bool on_top = at > 0 && e.stack[at - 1].frame == f && e.stack[at - 1].code == code;
  CPythonModule::FrameLinks fl;
  if (!on_top && !s.py->links(mem, size, f, fl)) return node;
  if (!on_top && at > 0 && !fl.entry && fl.previous == e.stack[at - 1].frame) {
    push(f, code, *cl, 0);
  } else if (!on_top) {
    while (at > 0 && !(e.stack[at - 1].frame == f && e.stack[at - 1].code == code)) --at;
    if (at > 0) {
      pop_to(at);
    } else {
      thread_local std::vector<uint32_t> chain;
      chain.clear();
      size_t base = 0;
      for (uint32_t g = f;;) {
        CPythonModule::FrameLinks links;
        if (chain.size() == kMaxFrames || !s.py->links(mem, size, g, links)) return node;
        chain.push_back(g);
        if (links.entry || !links.previous) break;
        const uint32_t caller = links.previous;
        size_t i = e.stack.size();
        while (i > 0 && e.stack[i - 1].frame != caller) --i;
        if (i > 0) {
          base = i;
          break;
        }
        g = caller;
      }
      pop_to(base);
      // The callers between, outermost first, at the line of their call.
      for (size_t i = chain.size(); i-- > 1;) {
        CPythonModule::FrameLinks links;
        if (!s.py->links(mem, size, chain[i], links)) return node;
        const CPythonModule::CodeLines* c = lines_of(links.code);
        if (!c) return node;
        push(chain[i], links.code, *c, line_at(*c, links.prev_instr));
      }
      push(f, code, *cl, 0);
    }
  }
  // The top frame at the line of `next`, and the run of instructions on it.
  PythonCounts::Entry& top = e.stack.back();
  const size_t u = (next - cl->start) / 2;
  const uint32_t line = cl->lines[u];
  top.lo = cl->start + 2 * cl->run_lo[u];
  top.hi = cl->start + 2 * cl->run_hi[u];
  // A frame goes back and forth between a few lines (a loop's): their
  // nodes are kept with it.
  for (const auto& [l, n] : top.recent)
    if (l == line && n) {
      top.node = n;
      return stay(top);
    }
  top.node = context_node(top.whole, *cl, line);
  top.recent[top.next_recent++ % top.recent.size()] = {line, top.node};
  return stay(top);
}

const PyFrame* Profiler::context_frame(uint32_t node, bool* whole) const {
  const uint32_t site = tree().node(node).site;
  if (!vm::CallTree::is_context(site)) return nullptr;
  const uint32_t key = site & ~vm::CallTree::kContextBit;
  if (key >= python_counts_.frames.size()) return nullptr;
  if (whole) *whole = python_counts_.whole[key];
  return &python_counts_.frames[key];
}

}  // namespace wzvm::profiler
