#include "vm/profiling.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <utility>

#include "vm/code.h"
#include "vm/runtime.h"

namespace wzvm::vm {

namespace {
// A node's function's segments, when its code was lowered with counting.
uint32_t segments_of(const CallTree& tree, uint32_t node) {
  const FuncInst* f = tree.node(node).func;
  return f && f->code ? f->code->num_segments() : 0;
}

// Module byte offset of the call whose return point in `caller` is `ret`
// (the call op's last word is just before it; see vm/interp.cc resume_ip).
uint32_t call_site(const FuncInst* caller, const uint32_t* ret) {
  if (!ret || !caller || !caller->code) return CallTree::kNoSite;
  const CompiledFunc& code = *caller->code;
  const auto pos = static_cast<uint32_t>(ret - 1 - code.code.data());
  auto it = std::upper_bound(code.source_map.begin(), code.source_map.end(), std::make_pair(pos, UINT32_MAX));
  return it == code.source_map.begin() ? CallTree::kNoSite : std::prev(it)->second;
}
}  // namespace

uint64_t CallTree::func_bit(const FuncInst* func) {
  return uint64_t{1} << (func ? func->func_index % 64 : 0);
}

bool CallTree::on_path(uint32_t node, const FuncInst* func) const {
  if (!(nodes_[node].path_funcs & func_bit(func))) return false;
  for (uint32_t n = node; n != kRoot; n = nodes_[n].parent)
    if (nodes_[n].func == func) return true;
  return false;
}

uint32_t CallTree::child(uint32_t parent, const FuncInst* func, uint32_t site) {
  const auto f = reinterpret_cast<uintptr_t>(func);
  const uint32_t key[] = {parent, site, static_cast<uint32_t>(f), static_cast<uint32_t>(uint64_t{f} >> 32)};
  if (const uint32_t* id = index_.find(key, 4)) return *id;
  const auto id = static_cast<uint32_t>(nodes_.size());
  index_.insert(key, 4, id);
  Node n;
  n.parent = parent;
  n.func = func;
  n.depth = nodes_[parent].depth + 1;
  n.site = site;
  n.path_funcs = nodes_[parent].path_funcs | func_bit(func);
  nodes_.push_back(n);
  return id;
}

void Profiling::Unmap::operator()(uint64_t* p) const { munmap(p, bytes); }

uint64_t* Profiling::alloc_counters(size_t n) {
  if (n > chunk_left_) {
    size_t size = std::max(n, kChunk);
    const size_t bytes = size * sizeof(uint64_t);
    void* chunk = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED) throw std::bad_alloc();
    chunks_.emplace_back(static_cast<uint64_t*>(chunk), Unmap{bytes});
    chunk_next_ = chunks_.back().get();
    chunk_left_ = size;
  }
  uint64_t* p = chunk_next_;
  chunk_next_ += n;
  chunk_left_ -= n;
  return p;
}

uint32_t Profiling::enter_context(uint32_t parent, const FuncInst* f, uint32_t key, bool counts) {
  const size_t before = tree.size();
  uint32_t id = tree.child(parent, f, CallTree::kContextBit | key);
  if (tree.size() != before && counts) give_block(id);
  return id;
}

uint32_t Profiling::enter_at(uint32_t parent, const FuncInst* f, uint32_t site) {
  const size_t before = tree.size();
  uint32_t id = tree.call(parent, f, site);
  if (tree.size() != before) give_block(id);
  return id;
}

void Profiling::give_block(uint32_t id) {
  if (count_instructions) {
    // A new node: its function's segments and call sites get their block,
    // after the node's id (block_node); every wasm function has one, also
    // code lowered without counting (a header alone): frames find their
    // node there. Host functions have no frames, so no block.
    const FuncInst* g = tree.node(id).func;
    // A counted module's stub is lowered before its first entry (vm/interp.cc,
    // on_trap), but a node may come first: Go's grafted callers, read
    // from a goroutine's stack, include runtime.goexit, whose frame Go made
    // without calling it. Sized by its code, lowered now (it never fails on
    // a validated body; if it did, the entry that needs it traps).
    if (g && g->code && g->code->frame_slots == CompiledFunc::kUnlowered)
      (void)lower_on_first_call(*g->instance->module, g->func_index);
    if (g && g->code) {
      uint64_t* block = alloc_counters(1 + g->code->num_segments() + 2 * size_t{g->code->call_slots});
      block[0] = id;
      tree.node(id).counters = block + 1;
    }
  }
}

uint32_t Profiling::enter_slow(uint32_t parent, const FuncInst* f, const uint32_t* ret) {
  const uint64_t h = (uint64_t{parent} * 0x9E3779B97F4A7C15ull) ^ (reinterpret_cast<uintptr_t>(ret) >> 2) ^
                     (reinterpret_cast<uintptr_t>(f) * 0xFF51AFD7ED558CCDull);
  Recent& r = recent_[(h ^ h >> 32) & (kRecent - 1)];
  uint32_t id;
  if (r.parent == parent && r.f == f && r.ret == ret) {
    id = r.child;
  } else {
    id = enter_at(parent, f, call_site(tree.node(parent).func, ret));
    r = Recent{f, ret, parent, id};
  }
  CallTree::Node& n = tree.node(parent);
  // The older entry goes: the newer one is the likelier to be called again.
  n.cached_func[1] = n.cached_func[0];
  n.cached_ret[1] = n.cached_ret[0];
  n.cached_child[1] = n.cached_child[0];
  n.cached_counters[1] = n.cached_counters[0];
  n.cached_func[0] = f;
  n.cached_ret[0] = ret;
  n.cached_child[0] = id;
  n.cached_counters[0] = tree.node(id).counters;
  return id;
}

uint64_t* Profiling::enter_call_site(uint32_t parent, const FuncInst* f, const uint32_t* ret, uint64_t* kid) {
  uint64_t* counters = enter_counted(parent, f, ret);
  kid[0] = reinterpret_cast<uintptr_t>(f);
  kid[1] = reinterpret_cast<uintptr_t>(counters);
  return counters;
}

Profiling::Snapshot Profiling::snapshot() const {
  Snapshot s;
  for (uint32_t n = 1; n < tree.size(); ++n)
    if (const uint64_t* c = tree.node(n).counters) s.runs.insert(s.runs.end(), c, c + segments_of(tree, n));
  s.partial = partial.size();
  return s;
}

std::vector<Profiling::InstructionCount> Profiling::instruction_counts(const Snapshot* since) const {
  std::vector<InstructionCount> out;
  for_each_node_counts(
      [&](const std::vector<InstructionCount>& node) { out.insert(out.end(), node.begin(), node.end()); },
      since);
  return out;
}

void Profiling::for_each_node_counts(const std::function<void(const std::vector<InstructionCount>&)>& each,
                                     const Snapshot* since) const {
  std::vector<InstructionCount> out;
  for_each_node_runs(
      [&](uint32_t node, const uint32_t* offsets, const std::vector<CountRun>& runs) {
        out.clear();
        for (const CountRun& r : runs)
          for (uint32_t i = r.from; i < r.to; ++i) out.push_back({node, offsets[i], r.count});
        each(out);
      },
      since);
}

void Profiling::for_each_node_runs(
    const std::function<void(uint32_t node, const uint32_t* offsets, const std::vector<CountRun>&)>& each,
    const Snapshot* since) const {
  node_runs(nullptr, each, since);
}

void Profiling::for_each_node(const std::function<bool(uint32_t node)>& want_runs,
                              const std::function<void(uint32_t node, const uint32_t* offsets,
                                                       const std::vector<CountRun>&)>& each) const {
  node_runs(&want_runs, each, nullptr);
}

void Profiling::for_each_node_total(const std::function<void(uint32_t node, uint64_t total)>& each) const {
  node_runs(nullptr, {}, nullptr, &each);
}

void Profiling::node_runs(
    const std::function<bool(uint32_t node)>* want_runs,
    const std::function<void(uint32_t node, const uint32_t* offsets, const std::vector<CountRun>&)>& each,
    const Snapshot* since, const std::function<void(uint32_t node, uint64_t total)>* each_total) const {
  // Partial segments, grouped by node (rare: one per frame a trap or
  // proc_exit unwound).
  std::vector<Partial> parts(
      partial.begin() + static_cast<std::ptrdiff_t>(since ? std::min(since->partial, partial.size()) : 0),
      partial.end());
  std::stable_sort(parts.begin(), parts.end(),
                   [](const Partial& a, const Partial& b) { return a.node < b.node; });
  std::vector<CountRun> out;
  // Per instruction of the node's function (seg_offsets order): the sum of
  // its counters' runs, swept over the ends of their ranges in order. Only
  // the stretches that ran are visited, not the whole body per node (a
  // difference array did that): Go's functions are large and its deep
  // recursions make a node per depth.
  std::vector<std::pair<uint32_t, int64_t>> ends;  // (index in seg_offsets, change)
  auto part = parts.begin();
  size_t flat = 0;  // this node's first counter in since->runs (nodes in the same order)
  for (uint32_t n = 1; n < tree.size(); ++n) {
    const uint64_t* runs = tree.node(n).counters;
    if (!runs) continue;
    const CompiledFunc* code = tree.node(n).func->code;
    const uint32_t segs = code->num_segments();
    if (each_total || (want_runs && !since && !(*want_runs)(n))) {
      // Whether it ran at all (for_each_node): its total, as sweeping
      // its ranges would sum it, partial segments included.
      int64_t total = 0;
      for (uint32_t s = 0; s < segs; ++s)
        if (runs[s]) total += static_cast<int64_t>(runs[s]) * code->counter_weight(s);
      flat += segs;
      while (part != parts.end() && part->node < n) ++part;
      for (; part != parts.end() && part->node == n; ++part)
        if (part->seg < segs) total += std::min(part->ran, code->segment_size(part->seg));
      if (total > 0 && each_total) {
        (*each_total)(n, static_cast<uint64_t>(total));
      } else if (total > 0) {
        out.clear();
        each(n, code->seg_offsets.data(), out);
      }
      continue;
    }
    ends.clear();
    for (uint32_t s = 0; s < segs; ++s) {
      int64_t r = static_cast<int64_t>(runs[s]);
      if (since && flat + s < since->runs.size()) r -= static_cast<int64_t>(since->runs[flat + s]);
      if (r == 0) continue;
      const CompiledFunc::CountRange& c = code->counters[s];
      if (c.sign2) {  // a threaded jump's second range (CountRange)
        ends.emplace_back(c.lo2, r * c.sign2);
        ends.emplace_back(c.hi2, -r * c.sign2);
      }
      r *= c.sign;  // an edge that skips instructions takes them back
      ends.emplace_back(c.lo, r);
      ends.emplace_back(c.hi, -r);
    }
    flat += segs;
    while (part != parts.end() && part->node < n) ++part;
    for (; part != parts.end() && part->node == n; ++part) {
      if (part->seg >= segs) continue;
      const CompiledFunc::CountRange& c = code->counters[part->seg];
      ends.emplace_back(c.lo, 1);
      ends.emplace_back(c.lo + std::min(part->ran, c.hi - c.lo), -1);
    }
    if (ends.empty()) continue;
    std::sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    // seg_offsets is in body order, so by offset: each instruction once.
    out.clear();
    int64_t c = 0;
    for (size_t e = 0; e < ends.size();) {
      const uint32_t from = ends[e].first;
      for (; e < ends.size() && ends[e].first == from; ++e) c += ends[e].second;
      const size_t to = e < ends.size() ? ends[e].first : code->seg_offsets.size();
      if (c > 0 && to > from) {
        // Two stretches that meet with the same count are one run.
        if (!out.empty() && out.back().to == from && out.back().count == static_cast<uint64_t>(c))
          out.back().to = static_cast<uint32_t>(to);
        else out.push_back({from, static_cast<uint32_t>(to), static_cast<uint64_t>(c)});
      }
    }
    if (!out.empty()) each(n, code->seg_offsets.data(), out);
  }
}

std::vector<uint64_t> Profiling::instruction_totals() const {
  std::vector<uint64_t> totals(tree.size(), 0);
  for (uint32_t n = 1; n < tree.size(); ++n) {
    const uint64_t* runs = tree.node(n).counters;
    if (!runs) continue;
    const CompiledFunc* code = tree.node(n).func->code;
    for (uint32_t s = 0; s < code->num_segments(); ++s)
      totals[n] += runs[s] * static_cast<uint64_t>(code->counter_weight(s));  // mod 2^64
  }
  for (const Partial& p : partial)
    if (p.node < totals.size()) totals[p.node] += p.ran;
  return totals;
}

}  // namespace wzvm::vm
