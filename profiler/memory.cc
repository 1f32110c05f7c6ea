#include "profiler/memory.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>
#include <tuple>

#include "profiler/demangle.h"
#include "profiler/profiler.h"
#include "vm/runtime.h"

namespace wzvm::profiler {
namespace {

struct Row {
  const char* name;
  AllocKind kind;
  int params;
};
constexpr Row kRows[] = {
#define WZVM_ALLOCATOR(name, kind, params) {name, AllocKind::kind, params},
#include "profiler/allocators.def"
#undef WZVM_ALLOCATOR
};

// Name -> row, for the names as written in allocators.def and as demangled:
// wasm-ld 14 puts "operator new(unsigned long)" in the name section, not
// "_Znwm", and libiberty spells them the same way.
const std::unordered_map<std::string, const Row*>& known() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, const Row*>;
    for (const Row& r : kRows) {
      t->emplace(r.name, &r);
      std::string d = demangle(r.name);
      if (d != r.name) t->emplace(std::move(d), &r);
    }
    return t;
  }();
  return *table;
}

// Parameters a kind reads (the size or pointer it needs is within them).
int min_params(AllocKind k) {
  switch (k) {
    case AllocKind::Malloc:
    case AllocKind::Free:
    case AllocKind::GcAlloc:
    case AllocKind::GoMallocgc:
      return 1;
    case AllocKind::AlignedAlloc:
    case AllocKind::Calloc:
    case AllocKind::Realloc:
      return 2;
    case AllocKind::PosixMemalign:
      return 3;
    case AllocKind::RustRealloc:
      return 4;
    case AllocKind::None:
      break;
  }
  return 0;
}

}  // namespace

bool parse_alloc_fn(const std::string& spec, CustomAllocator& out, std::string& why) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    why = "expected NAME=malloc|calloc|realloc|free, got '" + spec + "'";
    return false;
  }
  std::string_view kind(spec.data() + eq + 1, spec.size() - eq - 1);
  if (kind == "malloc") out.kind = AllocKind::Malloc;
  else if (kind == "calloc") out.kind = AllocKind::Calloc;
  else if (kind == "realloc") out.kind = AllocKind::Realloc;
  else if (kind == "free") out.kind = AllocKind::Free;
  else {
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "'" + std::string(...).
    why = "kind '";
    why.append(kind).append("' is not one of malloc, calloc, realloc, free (in '").append(spec).append("')");
    return false;
  }
  out.name = spec.substr(0, eq);
  return true;
}

AllocKind allocator_kind(const std::string& name, const std::vector<CustomAllocator>& extra, int* params) {
  // The user's names first: they may redefine a standard one.
  for (const CustomAllocator& c : extra)
    if (c.name == name) {
      if (params) *params = 0;
      return c.kind;
    }
  const auto& table = known();
  auto it = table.find(name);
  // Newer rustc mangles the shims (v0: "__rustc::__rust_alloc").
  if (it == table.end() && name.starts_with("_R")) {
    std::string d = demangle(name);
    if (d.starts_with("__rustc::")) it = table.find(d.substr(9));
  }
  if (it == table.end()) return AllocKind::None;
  if (params) *params = it->second->params;
  return it->second->kind;
}

std::function<uint8_t(const vm::Module&, uint32_t)> allocator_hook(std::vector<CustomAllocator> extra) {
  return [extra = std::move(extra)](const vm::Module& m, uint32_t f) -> uint8_t {
    // Only named functions can be allocators; function_name() would make up
    // "wasm-function[N]" for the others.
    auto named = m.names.functions.find(f);
    std::string name = named != m.names.functions.end() ? named->second : m.function_name(f);
    int params = 0;
    AllocKind kind = allocator_kind(name, extra, &params);
    if (kind == AllocKind::None) return 0;
    // The signature must fit, or the arguments would be misread: all
    // parameters one integer width (size_t and pointers alike), and a
    // pointer result of that width (posix_memalign: an int).
    const vm::FuncType& t = m.func_type(f);
    const size_t n = t.params.size();
    if (params ? n != static_cast<size_t>(params) : n < static_cast<size_t>(min_params(kind))) return 0;
    const vm::ValType width = t.params[0];
    if (width != vm::ValType::I32 && width != vm::ValType::I64) return 0;
    for (vm::ValType p : t.params)
      if (p != width) return 0;
    if (kind == AllocKind::PosixMemalign) {
      if (t.results.size() != 1 || t.results[0] != vm::ValType::I32) return 0;
    } else if (kind != AllocKind::Free) {
      if (t.results.size() != 1 || t.results[0] != width) return 0;
    }
    return static_cast<uint8_t>(static_cast<uint8_t>(kind) | (width == vm::ValType::I64 ? kWide : 0));
  };
}

MemoryProfiler::MemoryProfiler(const vm::CallTree& tree, uint64_t sample_bytes)
    : tree_(tree), sample_bytes_(sample_bytes) {
  if (sample_bytes_) until_sample_ = next_distance();
}

double MemoryProfiler::next_distance() {
  // Exponential with mean sample_bytes_, from a uniform in (0, 1]; written
  // out rather than std::exponential_distribution so that the sequence is
  // the same with every standard library.
  double u = static_cast<double>((rng_() >> 11) + 1) * 0x1p-53;
  return -std::log(u) * static_cast<double>(sample_bytes_);
}

double MemoryProfiler::sample_weight(uint64_t size) {
  if (sample_bytes_ == 0) return 1;
  // Bytes are sampled as a Poisson process of rate 1/sample_bytes: an
  // allocation is sampled when a sample point falls in it, which happens
  // with probability 1 - exp(-size/rate); its weight is the inverse, so
  // sums are unbiased (Go's scaleHeapSample, jemalloc's prof). By the
  // process's lack of memory the next point is a fresh exponential distance
  // from this allocation's end.
  until_sample_ -= static_cast<double>(size);
  if (until_sample_ > 0) return 0;
  until_sample_ = next_distance();
  return 1 / -std::expm1(-static_cast<double>(size) / static_cast<double>(sample_bytes_));
}

void MemoryProfiler::on_call(uint8_t hook, uint32_t node, const uint64_t* args, vm::MemInst* memory,
                             const vm::FuncInst* func) {
  (void)memory, (void)func;
  // Go's allocator is read on its return alone (AllocKind::GoMallocgc): its
  // calls are suspended and resumed across goroutine switches, so there is
  // no call in progress to keep.
  if (static_cast<AllocKind>(hook & ~kWide) == AllocKind::GoMallocgc) return;
  const uint32_t depth = tree_.node(node).depth;
  // Calls in progress are ancestors of this one, so shallower; deeper or
  // equal ones were unwound by a trap and never returned.
  while (!pending_.empty() && pending_.back().depth >= depth) pending_.pop_back();
  // Inside another allocator (operator new -> malloc): the outer call counts.
  if (!pending_.empty()) return;
  const bool wide = hook & kWide;
  auto arg = [&](int i) { return wide ? args[i] : args[i] & 0xFFFFFFFFu; };  // i32 is a slot's low half
  // Filled in place: a Pending built on the stack and copied in made GCC
  // store bytes and reload words (a store-forwarding stall per call).
  Pending& p = pending_.emplace_back();
  p.node = node;
  p.depth = depth;
  p.hook = hook;
  p.ptr = 0;
  p.size = 0;
  p.size_ok = true;
  switch (static_cast<AllocKind>(hook & ~kWide)) {
    case AllocKind::Malloc:
    case AllocKind::GcAlloc:
      p.size = arg(0);
      break;
    case AllocKind::AlignedAlloc:
      p.size = arg(1);
      break;
    case AllocKind::Calloc:
      // A product beyond the address space cannot be allocated: calloc
      // must fail, and a non-NULL result is not believed.
      p.size_ok = !__builtin_mul_overflow(arg(0), arg(1), &p.size) && (wide || p.size <= 0xFFFFFFFFu);
      break;
    case AllocKind::Realloc:
      p.ptr = arg(0), p.size = arg(1);
      break;
    case AllocKind::RustRealloc:
      p.ptr = arg(0), p.size = arg(3);
      break;
    case AllocKind::Free:
      p.ptr = arg(0);
      break;
    case AllocKind::PosixMemalign:
      p.ptr = arg(0), p.size = arg(2);
      break;
    case AllocKind::None:
    case AllocKind::GoMallocgc:
      pending_.pop_back();
      break;
  }
}

void MemoryProfiler::on_return(uint8_t hook, uint32_t node, const uint64_t* results, vm::MemInst* memory,
                               const vm::FuncInst* func) {
  (void)func;
  // Go's allocator is read by the Profiler, which has the module's Go tables
  // (profiler/golang.h), and reported through gc_allocated.
  if (static_cast<AllocKind>(hook & ~kWide) == AllocKind::GoMallocgc) return;
  const uint32_t depth = tree_.node(node).depth;
  while (!pending_.empty() && pending_.back().depth > depth) pending_.pop_back();
  // Not the call we recorded: one nested in it (ignored on entry too).
  if (pending_.empty() || pending_.back().node != node || pending_.back().depth != depth) return;
  // Fields read one by one: a struct copy of what on_call just stored byte
  // by byte would stall on store forwarding.
  struct {
    uint64_t ptr, size;
    bool size_ok;
  } const p{pending_.back().ptr, pending_.back().size, pending_.back().size_ok};
  pending_.pop_back();
  const bool wide = hook & kWide;
  switch (static_cast<AllocKind>(hook & ~kWide)) {
    case AllocKind::Malloc:
    case AllocKind::AlignedAlloc:
    case AllocKind::Calloc:
    case AllocKind::GcAlloc: {
      uint64_t r = wide ? results[0] : results[0] & 0xFFFFFFFFu;
      if (r && p.size_ok)
        allocated(node, memory, r, p.size, static_cast<AllocKind>(hook & ~kWide) == AllocKind::GcAlloc);
      break;
    }
    case AllocKind::Realloc:
    case AllocKind::RustRealloc: {
      uint64_t r = wide ? results[0] : results[0] & 0xFFFFFFFFu;
      if (p.ptr == 0) {  // realloc(NULL, n) is malloc(n)
        if (r) allocated(node, memory, r, p.size, false);
      } else if (r == 0) {
        // Failure leaves the block alone; realloc(p, 0) returning NULL
        // freed it (dlmalloc, glibc; C17 7.22.3.5 leaves it to the libc).
        if (p.size == 0) freed(memory, p.ptr);
      } else {
        // Moved, grown or shrunk in place: the old block ends here and a
        // new one, charged to this stack, begins (also at the same address).
        freed(memory, p.ptr);
        allocated(node, memory, r, p.size, false);
      }
      break;
    }
    case AllocKind::Free:
      if (p.ptr) freed(memory, p.ptr);
      break;
    case AllocKind::PosixMemalign: {
      if ((results[0] & 0xFFFFFFFFu) != 0 || !memory) break;  // failed: *out untouched
      // The pointer comes back through memory: read *out, bounds-checked
      // against the memory's current size (a bad guest pointer is ignored).
      const uint64_t width = wide ? 8 : 4;
      if (p.ptr > memory->size || memory->size - p.ptr < width) break;
      uint64_t r = 0;
      std::memcpy(&r, memory->data + p.ptr, width);  // little-endian, like wasm
      if (r) allocated(node, memory, r, p.size, false);
      break;
    }
    case AllocKind::None:
    case AllocKind::GoMallocgc:
      break;
  }
}

void MemoryProfiler::gc_allocated(uint32_t node, const vm::MemInst* memory, uint64_t ptr, uint64_t size) {
  allocated(node, memory, ptr, size, true);
}

void MemoryProfiler::allocated(uint32_t node, const vm::MemInst* memory, uint64_t ptr, uint64_t size,
                               bool gc) {
  const double w = sample_weight(size);
  if (w == 0) return;
  const uint32_t site = site_index(node, python_ ? python_(node) : 0);
  const double bytes = w * static_cast<double>(size);
  sites_[site].alloc_objects += w;
  sites_[site].alloc_bytes += bytes;
  total_objects_ += w;
  total_bytes_ += bytes;
  if (gc) {  // a collector frees it, unseen: in-use figures would only grow
    saw_gc_ = true;
    return;
  }
  Live* l = live_.slot(memory, ptr);
  // Handed out again without a free we saw (freed by a function we do not
  // know): the earlier block is gone.
  if (l->used) retire(*l);
  const bool fresh = !l->used;
  *l = Live{ptr, memory, size, w, site, true};
  if (fresh) live_.added();
  sites_[site].inuse_objects += w;
  sites_[site].inuse_bytes += bytes;
  inuse_objects_ += w;
  inuse_bytes_ += bytes;
  peak_inuse_bytes_ = std::max(peak_inuse_bytes_, inuse_bytes_);
}

void MemoryProfiler::freed(const vm::MemInst* memory, uint64_t ptr) {
  Live* l = live_.find(memory, ptr);
  if (!l) return;  // never seen (or not sampled): nothing to undo
  retire(*l);
  live_.erase(l);
}

void MemoryProfiler::retire(const Live& l) {
  const double bytes = l.weight * static_cast<double>(l.size);
  sites_[l.site].inuse_objects -= l.weight;
  sites_[l.site].inuse_bytes -= bytes;
  inuse_objects_ -= l.weight;
  inuse_bytes_ -= bytes;
}

MemoryProfiler::Live* MemoryProfiler::LiveTable::find(const vm::MemInst* memory, uint64_t ptr) {
  Live* l = slot(memory, ptr);
  return l->used ? l : nullptr;
}

MemoryProfiler::Live* MemoryProfiler::LiveTable::slot(const vm::MemInst* memory, uint64_t ptr) {
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(ptr);; i = (i + 1) & mask) {
    Live& l = slots_[i];
    if (!l.used || (l.ptr == ptr && l.memory == memory)) return &l;
  }
}

void MemoryProfiler::LiveTable::erase(Live* l) {
  // Backward-shift deletion: later entries of the probe run move up into
  // the hole when their home slot allows, so lookups never need tombstones.
  const size_t mask = slots_.size() - 1;
  size_t hole = static_cast<size_t>(l - slots_.data());
  for (size_t i = (hole + 1) & mask; slots_[i].used; i = (i + 1) & mask) {
    const size_t h = home(slots_[i].ptr);
    // Movable unless its home lies cyclically in (hole, i].
    if (((i - h) & mask) >= ((i - hole) & mask)) {
      slots_[hole] = slots_[i];
      hole = i;
    }
  }
  slots_[hole].used = false;
  --count_;
}

void MemoryProfiler::LiveTable::added() {
  if (++count_ * 2 <= slots_.size()) return;
  std::vector<Live> old(slots_.size() * 2);
  old.swap(slots_);
  for (const Live& l : old)
    if (l.used) *slot(l.memory, l.ptr) = l;
}

uint32_t MemoryProfiler::site_index(uint32_t node, uint32_t python) {
  if (python) {
    const uint32_t key[] = {node, python};
    if (const uint32_t* index = site_of_python_.find(key, 2)) return *index;
    sites_.push_back(MemSite{node, python});
    site_of_python_.insert(key, 2, static_cast<uint32_t>(sites_.size() - 1));
    return static_cast<uint32_t>(sites_.size() - 1);
  }
  if (node >= site_of_node_.size()) site_of_node_.resize(std::max<size_t>(tree_.size(), node + 1), 0);
  uint32_t* index = &site_of_node_[node];
  if (*index == 0) {
    sites_.push_back(MemSite{node, python});
    *index = static_cast<uint32_t>(sites_.size());
  }
  return *index - 1;
}

void MemoryProfiler::add_site(const MemSite& s) {
  MemSite& m = sites_[site_index(s.node, s.python)];
  m.alloc_objects += s.alloc_objects;
  m.alloc_bytes += s.alloc_bytes;
  m.inuse_objects += s.inuse_objects;
  m.inuse_bytes += s.inuse_bytes;
  total_objects_ += s.alloc_objects;
  total_bytes_ += s.alloc_bytes;
  inuse_objects_ += s.inuse_objects;
  inuse_bytes_ += s.inuse_bytes;
  peak_inuse_bytes_ = std::max(peak_inuse_bytes_, inuse_bytes_);
}

std::vector<MemSite> MemoryProfiler::sites() const {
  std::vector<MemSite> out = sites_;
  std::sort(out.begin(), out.end(), [](const MemSite& a, const MemSite& b) {
    return std::tie(a.node, a.python) < std::tie(b.node, b.python);
  });
  return out;
}

namespace {

// The stack a memory site charges: its allocator's caller (pprof.cc's leaf).
uint32_t charged_node(const vm::CallTree& tree, uint32_t allocator_node) {
  uint32_t leaf = tree.node(allocator_node).parent;
  return leaf == vm::CallTree::kRoot ? allocator_node : leaf;
}

// "f <- g <- h <- ...": a stack from its leaf, at most four frames.
std::string stack_text(const vm::CallTree& tree, uint32_t n) {
  std::string stack;
  for (int depth = 0; n != vm::CallTree::kRoot; n = tree.node(n).parent, ++depth) {
    if (depth == 4) {
      stack += " <- ...";
      break;
    }
    stack += (depth ? " <- " : "") + demangle(function_name(tree.node(n).func));
  }
  return stack;
}

std::string bytes_text(double b) {
  char buf[64];
  if (b < 10 * 1024) std::snprintf(buf, sizeof buf, "%.0f bytes", b);
  else if (b < 10 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024 * 1024));
  return buf;
}

}  // namespace

std::vector<FunctionMemory> memory_by_function(const Profiler& profiler) {
  const MemoryProfiler* mem = profiler.memory();
  if (!mem) return {};
  std::map<std::string, FunctionMemory> by_name;
  for (const MemSite& s : mem->sites()) {
    std::string name = function_name(profiler.tree().node(charged_node(profiler.tree(), s.node)).func);
    FunctionMemory& f = by_name[name];
    f.function = name;
    f.alloc_objects += s.alloc_objects;
    f.alloc_bytes += s.alloc_bytes;
    f.inuse_objects += s.inuse_objects;
    f.inuse_bytes += s.inuse_bytes;
  }
  for (const GrowEvent& g : mem->grows()) {
    std::string name = function_name(profiler.tree().node(g.node).func);
    FunctionMemory& f = by_name[name];
    f.function = name;
    f.grows += 1;
    f.grow_bytes += g.new_bytes - g.old_bytes;
  }
  std::vector<FunctionMemory> out;
  for (auto& [n, f] : by_name) out.push_back(std::move(f));
  return out;
}

std::string memory_summary(const Profiler& profiler, size_t top) {
  const MemoryProfiler* mem = profiler.memory();
  if (!mem) return "";
  const vm::CallTree& tree = profiler.tree();
  std::string out;
  char line[256];
  const char* est = mem->sample_bytes() ? "about " : "";
  std::snprintf(line, sizeof line, "wzvm: memory: %s%.0f allocations, %s%s in total; peak in use %s%s\n", est,
                mem->total_objects(), est, bytes_text(mem->total_bytes()).c_str(), est,
                bytes_text(mem->peak_inuse_bytes()).c_str());
  out += line;
  if (mem->inuse_objects() < 0.5) {
    out += "wzvm: memory: nothing still in use at exit\n";
  } else {
    std::snprintf(line, sizeof line, "wzvm: memory: still in use at exit: %s%.0f objects, %s%s\n", est,
                  mem->inuse_objects(), est, bytes_text(mem->inuse_bytes()).c_str());
    out += line;
    // The largest stacks still holding memory, as a leak checker lists them.
    std::vector<MemSite> sites = mem->sites();
    std::stable_sort(sites.begin(), sites.end(),
                     [](const MemSite& a, const MemSite& b) { return a.inuse_bytes > b.inuse_bytes; });
    for (size_t i = 0; i < sites.size() && i < top && sites[i].inuse_objects >= 0.5; ++i) {
      std::string stack = stack_text(tree, charged_node(tree, sites[i].node));
      std::snprintf(line, sizeof line, "wzvm:   %s in %.0f object%s from ",
                    bytes_text(sites[i].inuse_bytes).c_str(), sites[i].inuse_objects,
                    std::llround(sites[i].inuse_objects) == 1 ? "" : "s");
      out += line + stack + " (" + demangle(function_name(tree.node(sites[i].node).func)) + ")\n";
    }
  }
  // memory.grow, per memory in the order they first grew: how the wasm
  // memory's size went, and the stack that grew it most.
  std::vector<const vm::MemInst*> memories;
  for (const GrowEvent& g : mem->grows())
    if (std::find(memories.begin(), memories.end(), g.memory) == memories.end()) memories.push_back(g.memory);
  for (const vm::MemInst* m : memories) {
    uint64_t first = 0, last = 0, count = 0;
    std::map<uint32_t, uint64_t> by_node;
    for (const GrowEvent& g : mem->grows()) {
      if (g.memory != m) continue;
      if (count++ == 0) first = g.old_bytes;
      last = g.new_bytes;
      by_node[g.node] += g.new_bytes - g.old_bytes;
    }
    uint32_t most = 0;
    uint64_t most_bytes = 0;
    for (const auto& [n, b] : by_node)
      if (b > most_bytes) most = n, most_bytes = b;
    std::snprintf(line, sizeof line, "wzvm: memory: memory.grow %" PRIu64 " time%s: %s -> %s; most (%s) by ",
                  count, count == 1 ? "" : "s", bytes_text(static_cast<double>(first)).c_str(),
                  bytes_text(static_cast<double>(last)).c_str(),
                  bytes_text(static_cast<double>(most_bytes)).c_str());
    out += line + stack_text(tree, most) + "\n";
  }
  if (mem->saw_gc_allocations())
    out +=
        "wzvm: memory: a garbage-collected runtime's allocations count in alloc_* only (its frees are not "
        "seen)\n";
  if (mem->sample_bytes()) {
    std::snprintf(line, sizeof line,
                  "wzvm: memory: sampled about every %" PRIu64 " bytes allocated; figures are estimates\n",
                  mem->sample_bytes());
    out += line;
  }
  return out;
}

}  // namespace wzvm::profiler
