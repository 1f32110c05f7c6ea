#include "profiler/profiler.h"

#include <pthread.h>

#include <algorithm>
#include <tuple>

#include "profiler/clock.h"
#include "profiler/golang.h"
#include "profiler/symbolize.h"
#include "vm/interp.h"

namespace wzvm::profiler {

Profiler::Profiler(Options options) : options_(options) {
  profiling_.sink = this;
  profiling_.cpu = options.cpu;
  profiling_.count_instructions = options.instructions;
  profiling_.memory_grow = options.mem;
  // Made here, not in start(): its data spans start()s, and a replay (the
  // live endpoint) fills one without ever starting.
  if (options_.mem) {
    memory_ = std::make_unique<MemoryProfiler>(profiling_.tree, options_.mem_sample_bytes);
    // CPython: an allocation is charged to the Python stack too.
    memory_->set_python([this](uint32_t node) { return python_id(node, profiling_.tree.node(node).func); });
  }
}

Profiler::~Profiler() { stop(); }

void Profiler::add_module(const vm::Module* module, std::string path) {
  for (auto& [m, p] : module_paths_)
    if (m == module) {
      p = std::move(path);
      return;
    }
  module_paths_.emplace_back(module, std::move(path));
}

const std::string* Profiler::module_path(const vm::Module* module) const {
  for (const auto& [m, p] : module_paths_)
    if (m == module) return &p;
  return nullptr;
}

const Symbolizer& Profiler::symbolizer(const vm::Module* module) const {
  std::unique_ptr<Symbolizer>& s = symbolizers_[module];
  if (!s) s = std::make_unique<Symbolizer>(*module);
  return *s;
}

// Go (profiler/golang.h): the callee's callers are walked up the goroutine's
// stack when it resumes after a switch. When a resumed function returns, the
// loop resumes its caller next, whose node is the parent of the one just
// given: that case is recognised (the same goroutine, the SP and resume PC
// the returning frame left) and costs no walk, so unwinding a deep stack one
// return at a time is linear, not quadratic, in its depth.
bool Profiler::graft(vm::Profiling& p, const vm::FuncInst* callee, uint32_t& node) {
  const vm::Instance* inst = callee->instance;
  if (!inst || inst->globals.size() < 3 || inst->memories.empty()) return false;
  const vm::Module& m = *inst->module;
  const GoModule* go = symbolizer(&m).go();
  if (!go || callee->func_index < m.num_imported_funcs) return false;
  const vm::MemInst& mem = *inst->memories[0];
  const uint64_t sp = static_cast<uint32_t>(inst->globals[0]->value), g = inst->globals[2]->value;
  stack_g_ = g;
  const uint32_t k = callee->func_index - m.num_imported_funcs;
  uint64_t pc = 0;
  if (sp < 8 || sp > mem.current_size() || !go->resume_pc(mem.data, mem.current_size(), sp, k, pc))
    return false;
  if (next_resume_.node && next_resume_.sp == sp && next_resume_.pc == pc && next_resume_.g == g &&
      p.tree.node(next_resume_.node).func == callee) {
    node = next_resume_.node;
  } else {
    thread_local std::vector<std::pair<uint32_t, uint32_t>> chain;
    if (!go->walk(mem.data, mem.current_size(), sp, k, chain) || chain.empty()) return false;
    uint32_t n = vm::CallTree::kRoot, site = vm::CallTree::kNoSite;
    for (auto [func, at] : chain) {
      n = p.enter_at(n, inst->funcs[m.num_imported_funcs + func], site);
      site = at;
    }
    node = p.enter_at(n, callee, site);
  }
  // Where the callee's caller will resume when the callee returns.
  next_resume_ = {};
  uint64_t caller_sp, caller_pc;
  const uint32_t parent = p.tree.node(node).parent;
  if (parent != vm::CallTree::kRoot && go->caller(mem.data, mem.current_size(), sp, pc, caller_sp, caller_pc))
    next_resume_ = {parent, caller_sp, caller_pc, g};
  return true;
}

bool Profiler::start(vm::Store& store, std::string& why) {
  stop();
  vm::Thread* th = store.thread();
  vm::set_flag(profiling_.sample_pending, 0);
  profiling_.guest_cpu = 0;
  profiling_.tick_in_host = false;
  profiling_.cpu_mark = thread_cpu_ns();
  // This is the interpreter thread (the live endpoint and wasi-threads
  // start their Profilers on it too): the clock its sampler reads.
  // Atomic: the live endpoint's server thread may start ticks at any time.
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) clock = CLOCK_THREAD_CPUTIME_ID;
  __atomic_store_n(&profiling_.cpu_clock, clock, __ATOMIC_RELEASE);
  __atomic_store_n(&profiling_.tick_cpu, 0, __ATOMIC_RELAXED);
  start_unix_ns_ = unix_ns();
  start_mono_ns_ = monotonic_ns();
  duration_ns_ = 0;
  if (options_.cpu && !sampler_.start(profiling_, options_.cpu_hz, why)) return false;
  th->profiling = &profiling_;
  thread_ = th;
  return true;
}

void Profiler::stop() {
  if (!thread_) return;
  sampler_.stop();
  thread_->profiling = nullptr;
  thread_ = nullptr;
  duration_ns_ = monotonic_ns() - start_mono_ns_;
  // The interpreter already reported the guest CPU since its last sample
  // when the outermost call returned (a final sample at the stack it left).
  vm::set_flag(profiling_.sample_pending, 0);
}

Profiler* Profiler::add_thread(int32_t tid) {
  Options o = options_;
  o.mem = false;
  std::lock_guard lock(threads_mu_);
  threads_.push_back({tid, std::make_unique<Profiler>(o)});
  return threads_.back().profiler.get();
}

uint64_t Profiler::goroutine_of(const vm::FuncInst* func) const {
  const vm::Instance* inst = func ? func->instance : nullptr;
  if (!inst || inst->globals.size() < 3 || inst->memories.empty()) return 0;
  const GoModule* go = symbolizer(inst->module.get()).go();
  uint64_t id = 0;
  const vm::MemInst& mem = *inst->memories[0];
  // Go's globals: 0 SP, 1 CTXT, 2 g (the running goroutine's g struct).
  // On the scheduler's g0 (id 0) the sample gets no goroutine. A switch
  // (gogo) sets g before the old goroutine's wasm frames unwind back to the
  // scheduler loop; samples in that window show the old goroutine's stack,
  // so they carry the goroutine the stack was resumed for, not the next one.
  if (!go || !go->goroutine_id(mem.data, mem.current_size(), inst->globals[2]->value, id)) return 0;
  if (stack_g_ && stack_g_ != inst->globals[2]->value &&
      !go->goroutine_id(mem.data, mem.current_size(), stack_g_, id))
    return 0;
  return id;
}

uint32_t Profiler::evals_at(uint32_t node, const vm::FuncInst* func, const CPythonModule*& py) const {
  const vm::Instance* inst = func ? func->instance : nullptr;
  if (!inst || inst->memories.empty()) return 0;
  // One lookup per module change: allocation hooks of C programs come here too.
  if (inst->module.get() != last_module_) {
    last_module_ = inst->module.get();
    last_python_ = symbolizer(last_module_).python();
  }
  py = last_python_;
  if (!py || py->eval_function() >= inst->funcs.size()) return 0;
  const vm::FuncInst* eval = inst->funcs[py->eval_function()];
  // The evaluation loop's frames on the wasm stack (the node's own function
  // is the sampled frame's). Each has pushed its _PyCFrame once it has
  // started; the innermost may not have yet, or has already popped it, so
  // it may have no group: that one stays a C frame (pprof.cc).
  // A node's callers never change: counted once per node.
  if (node < evals_of_node_.size() && evals_of_node_[node]) return evals_of_node_[node] - 1;
  uint32_t evals = 0;
  for (uint32_t n = node; n != vm::CallTree::kRoot; n = tree().node(n).parent)
    evals += tree().node(n).func == eval;
  if (node >= evals_of_node_.size()) evals_of_node_.resize(std::max<size_t>(tree().size(), node + 1), 0);
  evals_of_node_[node] = evals + 1;
  return evals;
}

std::vector<std::vector<PyFrame>> Profiler::python_of(uint32_t node, const vm::FuncInst* func) const {
  std::vector<std::vector<PyFrame>> groups;
  const CPythonModule* py = nullptr;
  const uint32_t evals = evals_at(node, func, py);
  if (!evals) return groups;
  const vm::MemInst& mem = *func->instance->memories[0];
  if (!py->walk(mem.data, mem.current_size(), groups) || groups.size() > evals || groups.size() + 1 < evals)
    groups.clear();
  return groups;
}

uint32_t Profiler::python_id(uint32_t node, const vm::FuncInst* func) {
  const CPythonModule* py = nullptr;
  const uint32_t evals = evals_at(node, func, py);
  if (!evals) return 0;
  const vm::MemInst& mem = *func->instance->memories[0];
  thread_local std::vector<uint32_t> words;
  if (!py->walk_words(mem.data, mem.current_size(), words)) return 0;
  const size_t groups = std::count(words.begin(), words.end(), CPythonModule::kGroupEnd);
  if (groups == 0 || groups > evals || groups + 1 < evals) return 0;
  // Allocations come in runs from one Python line: comparing with the last
  // stack's words is cheaper than hashing them.
  if (words == last_words_) return last_id_;
  last_words_ = words;
  if (const uint32_t* id = python_words_.find(words.data(), words.size())) return last_id_ = *id;
  thread_local std::vector<uint32_t> frames;
  frames.clear();
  bool ok = true;
  for (size_t i = 0; ok && i < words.size();) {
    if (words[i] == CPythonModule::kGroupEnd) {
      frames.push_back(kPythonGroupEnd);
      ++i;
      continue;
    }
    const uint32_t* frame = &words[i];
    ok = i + CPythonModule::kFrameWords <= words.size();
    if (!ok) break;
    if (const uint32_t* index = python_frames_.find(frame, CPythonModule::kFrameWords)) {
      frames.push_back(*index);
    } else {
      PyFrame f;
      ok = py->frame(mem.data, mem.current_size(), frame, f);
      if (!ok) break;
      frames.push_back(intern_frame(std::move(f)));
      python_frames_.insert(frame, CPythonModule::kFrameWords, frames.back());
    }
    i += CPythonModule::kFrameWords;
  }
  const uint32_t id = ok ? intern_stack(frames) : 0;
  python_words_.insert(words.data(), words.size(), id);
  return last_id_ = id;
}

// Frames by content (what a profile shows of them): the same function and
// line reached through different words is one frame.
uint32_t Profiler::intern_frame(PyFrame f) {
  std::string key;
  key.append(f.function).append(1, '\0').append(f.qualname).append(1, '\0').append(f.file).append(1, '\0') +=
      std::to_string(f.start_line) + ':' + std::to_string(f.line);
  auto [it, inserted] = python_frame_ids_.try_emplace(std::move(key), 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(python_frame_list_.size());
    python_frame_list_.push_back(std::move(f));
  }
  return it->second;
}

// Stacks by their frames: a loop's samples share a few stacks.
uint32_t Profiler::intern_stack(const std::vector<uint32_t>& frames) {
  if (const uint32_t* id = python_ids_.find(frames.data(), frames.size())) return *id;
  python_stacks_.push_back(frames);
  const auto id = static_cast<uint32_t>(python_stacks_.size());
  python_ids_.insert(frames.data(), frames.size(), id);
  return id;
}

uint32_t Profiler::intern_python(const std::vector<std::vector<PyFrame>>& groups) {
  std::vector<uint32_t> frames;
  for (const auto& group : groups) {
    for (const PyFrame& f : group) frames.push_back(intern_frame(f));
    frames.push_back(kPythonGroupEnd);
  }
  return intern_stack(frames);
}

std::vector<std::vector<PyFrame>> Profiler::python_groups(uint32_t id) const {
  std::vector<std::vector<PyFrame>> groups(1);
  for (uint32_t f : python_stack(id)) {
    if (f == kPythonGroupEnd) groups.emplace_back();
    else groups.back().push_back(python_frame(f));
  }
  groups.pop_back();  // the empty one after the last end
  return groups;
}

GuestState Profiler::guest_state(uint32_t node, const vm::FuncInst* func) const {
  GuestState st;
  st.goroutine = goroutine_of(func);
  if (!st.goroutine) st.python = python_of(node, func);
  return st;
}

// The same site as add_cpu_sample(guest_state()) gives, but the Python stack
// is found by its frames' words, cached (python_id), as allocations find
// theirs: reading every frame's names at each sample cost most of one.
void Profiler::on_cpu_sample(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns) {
  const uint64_t goroutine = goroutine_of(func);
  add_cpu_site(node, func, offset, cpu_ns, goroutine, goroutine ? 0 : python_id(node, func));
}

void Profiler::add_cpu_sample(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns,
                              const GuestState& state) {
  add_cpu_site(node, func, offset, cpu_ns, state.goroutine,
               state.python.empty() ? 0 : intern_python(state.python));
}

void Profiler::add_cpu_site(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns,
                            uint64_t goroutine, uint32_t python) {
  CpuSite& s = cpu_[CpuKey{node, offset, goroutine, python}];
  s.node = node;
  s.func = func;
  s.offset = offset;
  s.goroutine = goroutine;
  s.python = python;
  s.count++;
  s.cpu_ns += cpu_ns;
}

void Profiler::on_host_call(uint32_t node, uint64_t wall_ns) {
  // CPython: the Python frames that made the call (a WASI call runs no
  // Python, so they are those of its start). Only while attached: a
  // replay (the live endpoint) has no guest to read.
  uint32_t python = 0;
  if (thread_) {
    const uint32_t caller = tree().node(node).parent;
    if (caller != vm::CallTree::kRoot) python = python_id(node, tree().node(caller).func);
  }
  HostSite& h = host_[uint64_t{node} << 32 | python];
  h.node = node;
  h.python = python;
  h.count++;
  h.wall_ns += wall_ns;
}

void Profiler::on_hooked_call(uint8_t hook, uint32_t node, const uint64_t* args, vm::MemInst* memory,
                              const vm::FuncInst* func) {
  if (memory_) memory_->on_call(hook, node, args, memory, func);
}

void Profiler::on_hooked_return(uint8_t hook, uint32_t node, const uint64_t* results, vm::MemInst* memory,
                                const vm::FuncInst* func) {
  if (!memory_) return;
  if (static_cast<AllocKind>(hook & ~kWide) == AllocKind::GoMallocgc) {
    const vm::Instance* inst = func ? func->instance : nullptr;
    const GoModule* go = inst ? symbolizer(inst->module.get()).go() : nullptr;
    if (!go || !memory || inst->globals.empty()) return;
    uint64_t ptr, bytes;
    if (go->allocation(memory->data, memory->current_size(), static_cast<uint32_t>(inst->globals[0]->value),
                       static_cast<uint32_t>(results[0]), ptr, bytes))
      memory_->gc_allocated(node, memory, ptr, bytes);
    return;
  }
  memory_->on_return(hook, node, results, memory, func);
}

void Profiler::on_memory_grow(uint32_t node, const vm::FuncInst* func, int64_t offset, vm::MemInst* memory,
                              uint64_t old_bytes) {
  if (!memory_) return;
  GrowEvent e{node, offset, memory, old_bytes, memory->size, monotonic_ns() - start_mono_ns_};
  e.python = python_id(node, func);  // CPython: which Python line made the heap grow
  memory_->on_grow(e);
}

std::vector<CpuSite> Profiler::cpu_sites() const {
  std::vector<CpuSite> out;
  out.reserve(cpu_.size());
  for (const auto& [k, s] : cpu_) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const CpuSite& a, const CpuSite& b) {
    return std::tie(a.node, a.offset, a.goroutine, a.python) <
           std::tie(b.node, b.offset, b.goroutine, b.python);
  });
  return out;
}

std::vector<HostSite> Profiler::host_sites() const {
  std::vector<HostSite> out;
  out.reserve(host_.size());
  for (const auto& [n, h] : host_) out.push_back(h);
  std::sort(out.begin(), out.end(), [](const HostSite& a, const HostSite& b) {
    return std::tie(a.node, a.python) < std::tie(b.node, b.python);
  });
  return out;
}

std::string function_name(const vm::FuncInst* func) {
  if (!func) return "(unknown)";
  if (func->is_host()) {
    if (func->host_module.empty() && func->host_field.empty()) return "(host function)";
    return func->host_module + "." + func->host_field;
  }
  if (func->instance && func->instance->module)
    return func->instance->module->function_name(func->func_index);
  return "wasm-function[" + std::to_string(func->func_index) + "]";
}

std::vector<vm::Profiling::InstructionCount> Profiler::instruction_counts() const {
  return has_replay_counts_ ? replay_counts_ : profiling_.instruction_counts();
}

void Profiler::for_each_node_runs(
    const std::function<void(uint32_t node, const uint32_t* offsets,
                             const std::vector<vm::Profiling::CountRun>&)>& each) const {
  if (!has_replay_counts_) return profiling_.for_each_node_runs(each);
  std::vector<uint32_t> offsets;
  std::vector<vm::Profiling::CountRun> runs;
  for (size_t i = 0; i < replay_counts_.size();) {
    offsets.clear();
    runs.clear();
    const uint32_t n = replay_counts_[i].node;
    for (; i < replay_counts_.size() && replay_counts_[i].node == n; ++i) {
      const auto k = static_cast<uint32_t>(offsets.size());
      offsets.push_back(replay_counts_[i].offset);
      runs.push_back({k, k + 1, replay_counts_[i].count});
    }
    each(n, offsets.data(), runs);
  }
}

void Profiler::for_each_node(
    const std::function<bool(uint32_t node)>& want_runs,
    const std::function<void(uint32_t node, const uint32_t* offsets,
                             const std::vector<vm::Profiling::CountRun>&)>& each) const {
  if (!has_replay_counts_) return profiling_.for_each_node(want_runs, each);
  const std::vector<vm::Profiling::CountRun> none;
  for_each_node_runs(
      [&](uint32_t node, const uint32_t* offsets, const std::vector<vm::Profiling::CountRun>& runs) {
        each(node, offsets, want_runs(node) ? runs : none);
      });
}

void Profiler::for_each_node_total(const std::function<void(uint32_t node, uint64_t total)>& each) const {
  if (!has_replay_counts_) return profiling_.for_each_node_total(each);
  for_each_node_runs([&](uint32_t node, const uint32_t*, const std::vector<vm::Profiling::CountRun>& runs) {
    each(node, vm::Profiling::total_of(runs));
  });
}

std::vector<uint64_t> Profiler::instruction_totals() const {
  if (!has_replay_counts_) return profiling_.instruction_totals();
  std::vector<uint64_t> totals(profiling_.tree.size(), 0);
  for (const auto& c : replay_counts_)
    if (c.node < totals.size()) totals[c.node] += c.count;
  return totals;
}

}  // namespace wzvm::profiler
