#pragma once
// The profiling session: attaches a vm::Profiling to a Store's thread,
// runs the CPU sampler, and aggregates what the interpreter reports
// (vm::ProfileSink) until the profiles are written (profiler/pprof.h).
//
//   profiler::Profiler prof({.cpu = true, .instructions = true});
//   prof.add_module(module.get(), "app.wasm");   // Mapping file name
//   // load the module with LoadOptions::count_instructions = prof.options().instructions
//   prof.start(store, why);                      // on the thread that runs the guest
//   store.invoke(...);
//   prof.stop();
//   profiler::write_profile(profiler::build_cpu_profile(prof), "cpu.pb.gz", why);
//
// Everything here runs on the interpreter thread: the sink is called from the
// loop, and the aggregation tables are plain hash maps.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profiler/cpython.h"
#include "profiler/memory.h"
#include "profiler/sampler.h"
#include "vm/profiling.h"
#include "vm/runtime.h"
#include "vm/span_table.h"

namespace wzvm::profiler {

class Symbolizer;  // profiler/symbolize.h

struct Options {
  bool cpu = false;                 // CPU samples + host-call wall time
  bool instructions = false;        // exact instruction counts (modules loaded with count_instructions)
  unsigned cpu_hz = kDefaultCpuHz;  // sampling rate of the CPU timer (profiler/sampler.h)
  // Allocations through the hooked allocators (modules loaded with
  // LoadOptions::call_hook = allocator_hook(), profiler/memory.h).
  bool mem = false;
  uint64_t mem_sample_bytes = 0;  // 0: every allocation; else sample by bytes
  // A deterministic run (wasi::Config::deterministic): the memory profile
  // leaves out wall-clock times (its start and duration, memory.grow's
  // `elapsed`), so it is byte-identical where the allocations are; the CPU
  // profile, a measurement, says in a comment that it is not.
  bool deterministic = false;
  // CPython's instruction counts by Python line (python_counts.cc): how many
  // C frames each stack keeps below its innermost Python frame (or below
  // the root, before any). A C function deeper than that is shown under the
  // last frame kept, after one "[frames-elided]" frame, and every C function
  // below a Python frame is one leaf, not one per line: an exact call tree
  // of CPython's C code under every Python line was millions of samples
  // that pprof could not load (docs/RATIONALE.md). Counts per function and
  // per Python line stay exact. 0: every frame, and C leaves per line.
  uint32_t python_c_frames = kDefaultPythonCFrames;
  static constexpr uint32_t kDefaultPythonCFrames = 2;
};

// Aggregated CPU samples at one (call stack, instruction).
struct CpuSite {
  uint32_t node = 0;
  const vm::FuncInst* func = nullptr;
  int64_t offset = -1;     // module byte offset of the sampled instruction, -1 if unknown
  uint64_t count = 0;      // samples
  uint64_t cpu_ns = 0;     // guest CPU time they weigh
  uint64_t goroutine = 0;  // Go: the running goroutine's id (0: none, or not Go)
  uint32_t python = 0;     // CPython: the Python stack (Profiler::python_stack), 0: none
};

// What a sample reads of the guest's own state, at the moment it is taken:
// Go's running goroutine, CPython's Python frames (profiler/cpython.h), one
// group per evaluation-loop frame of the wasm stack, innermost first.
struct GuestState {
  uint64_t goroutine = 0;
  std::vector<std::vector<PyFrame>> python;
};

// Aggregated host calls at one call-tree node (the host function under its caller).
struct HostSite {
  uint32_t node = 0;
  uint32_t python = 0;   // CPython: the Python stack that made the calls (Profiler::python_stack), 0: none
  uint64_t count = 0;    // calls
  uint64_t wall_ns = 0;  // wall time inside them
};

class Profiler final : public vm::ProfileSink {
 public:
  explicit Profiler(Options options = {});
  ~Profiler() override;
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  const Options& options() const { return options_; }

  // Names the file a module came from (its pprof Mapping's file name).
  // Modules never named here are called after their name section, else
  // "module-N" in order of appearance.
  void add_module(const vm::Module* module, std::string path);
  const std::string* module_path(const vm::Module* module) const;
  // Source-level symbols of a module (DWARF, demangled names), read on first
  // use and kept for every profile written from this session.
  const Symbolizer& symbolizer(const vm::Module* module) const;

  // Attaches to `store`'s thread and starts the CPU timer (when cpu is on).
  // Call on the thread that will run the guest. False with `why` if the
  // sampler cannot start (nothing is attached then).
  bool start(vm::Store& store, std::string& why);
  // Stops the timer and detaches; idempotent. Safe after a trap or proc_exit:
  // the VM has unwound its frames by then.
  void stop();

  // threads (wasi-threads): the profiler of spawned thread `tid`, with
  // this one's options except the memory profile (allocations are matched
  // with their frees in one place: the main thread's). Each thread has its
  // own call tree, counters and CPU timer, so nothing is shared while the
  // threads run; the writers put every thread's samples in one profile,
  // labelled `thread` = tid (0: the main thread) once a run has spawned any.
  // Call from any thread; start() the result on the spawned thread. Read
  // threads() only after they have ended.
  Profiler* add_thread(int32_t tid);
  struct ThreadProfile {
    int32_t tid;
    std::unique_ptr<Profiler> profiler;
  };
  const std::vector<ThreadProfile>& threads() const { return threads_; }

  // What was measured.
  vm::Profiling& profiling() { return profiling_; }
  const vm::CallTree& tree() const { return profiling_.tree; }
  // Executed instructions per node and instruction, sorted by node, then
  // offset (vm::Profiling::instruction_counts), or the counts given to
  // set_instruction_counts (a live window's replay, tests).
  std::vector<vm::Profiling::InstructionCount> instruction_counts() const;
  // The same, one node at a time, as runs of instructions with one count
  // (vm::Profiling::for_each_node_runs); a replay's counts are runs of one.
  void for_each_node_runs(const std::function<void(uint32_t node, const uint32_t* offsets,
                                                   const std::vector<vm::Profiling::CountRun>&)>& each) const;
  // Its nodes, with runs only where `want_runs` asks for them
  // (vm::Profiling::for_each_node); a replay's nodes all have theirs.
  void for_each_node(const std::function<bool(uint32_t node)>& want_runs,
                     const std::function<void(uint32_t node, const uint32_t* offsets,
                                              const std::vector<vm::Profiling::CountRun>&)>& each) const;
  // Its nodes with their totals (vm::Profiling::for_each_node_total).
  void for_each_node_total(const std::function<void(uint32_t node, uint64_t total)>& each) const;
  // Executed instructions per node id (0 beyond the counted range).
  std::vector<uint64_t> instruction_totals() const;
  void set_instruction_counts(std::vector<vm::Profiling::InstructionCount> counts) {
    replay_counts_ = std::move(counts);
    has_replay_counts_ = true;
  }
  // Sorted by (node, offset): a stable order for writers and tests.
  std::vector<CpuSite> cpu_sites() const;
  std::vector<HostSite> host_sites() const;  // sorted by node
  // The memory profile's data; null unless options().mem.
  const MemoryProfiler* memory() const { return memory_.get(); }
  MemoryProfiler* memory() { return memory_.get(); }
  uint64_t start_unix_ns() const { return start_unix_ns_; }
  uint64_t start_mono_ns() const { return start_mono_ns_; }
  uint64_t duration_ns() const { return duration_ns_; }

  // vm::ProfileSink: guest_state() now, then add_cpu_sample().
  void on_cpu_sample(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns) override;
  // The guest's state for a sample in `func` at call-tree node `node`, read
  // from its memory now (on the interpreter thread, while it is stopped).
  GuestState guest_state(uint32_t node, const vm::FuncInst* func) const;
  void add_cpu_sample(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns,
                      const GuestState& state);
  void add_cpu_site(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns,
                    uint64_t goroutine, uint32_t python);
  // Python stacks (CpuSite::python, MemSite::python), 1-based: indices of
  // python_frame(), each group (one evaluation-loop frame's Python frames,
  // innermost first) ended by kPythonGroupEnd. Frames and stacks are
  // interned by content, so a stack is a few words: CPython makes a
  // million allocations a second, each with its stack.
  static constexpr uint32_t kPythonGroupEnd = UINT32_MAX;
  const std::vector<uint32_t>& python_stack(uint32_t id) const { return python_stacks_[id - 1]; }
  const PyFrame& python_frame(uint32_t index) const { return python_frame_list_[index]; }
  // Stack `id` as GuestState has it (a copy, for snapshots);
  // intern_python gives such a stack its id (replays).
  std::vector<std::vector<PyFrame>> python_groups(uint32_t id) const;
  uint32_t intern_python(const std::vector<std::vector<PyFrame>>& groups);
  // The id of the Python stack at `node` now (0: none), for allocations:
  // cached by the frames' words (CPythonModule::walk_words), so names and
  // lines are read once per distinct stack, not once per allocation.
  uint32_t python_id(uint32_t node, const vm::FuncInst* func);
  // Go: the goroutine's callers, walked up its stack in linear memory (profiler/golang.h).
  bool graft(vm::Profiling& p, const vm::FuncInst* callee, uint32_t& node) override;
  void on_host_call(uint32_t node, uint64_t wall_ns) override;
  void on_hooked_call(uint8_t hook, uint32_t node, const uint64_t* args, vm::MemInst* memory,
                      const vm::FuncInst* func) override;
  void on_hooked_return(uint8_t hook, uint32_t node, const uint64_t* results, vm::MemInst* memory,
                        const vm::FuncInst* func) override;
  void on_memory_grow(uint32_t node, const vm::FuncInst* func, int64_t offset, vm::MemInst* memory,
                      uint64_t old_bytes) override;
  // CPython, counting instructions: at every bytecode its evaluation loop
  // dispatches (LoadOptions::probe_dispatch, CPythonModule::dispatch_probe),
  // the node for the Python function and line it runs, a context node under
  // its caller's (profiler/python_counts.cc).
  uint32_t probe(vm::Profiling& p, uint32_t node, const vm::FuncInst* func, const void* frame, uint32_t index,
                 const uint64_t* fp, const uint32_t* slots, uint32_t n) override;
  // The Python frame (function and line) a context node of probe() stands
  // for; null for any other node. `whole`: the node is the frame as a
  // whole (whose line nodes count), not one of its lines.
  const PyFrame* context_frame(uint32_t node, bool* whole = nullptr) const;
  bool has_contexts() const { return !python_counts_.frames.empty(); }

 private:
  // probe()'s state (profiler/python_counts.cc).
  struct PythonCounts {
    const vm::FuncInst* eval = nullptr;  // the evaluation loop probed, once seen
    const CPythonModule* py = nullptr;   // null: not walkable, every probe stays
    // Which of the loop's i32 locals holds the instruction about to be
    // dispatched (`next_instr`), learnt from the first probes: the one
    // that always points into the running code object's bytecode, and
    // whose opcode there always goes with the same br_table index.
    int next_instr = -1;      // index into the probe's locals; -1: learning
    uint32_t learnt = 0;      // probes learnt from
    uint64_t candidates = 0;  // bit k: local k may be it
    // Which local holds the running frame (the loop's `frame`), learnt from
    // the same probes: the one always equal to CPythonModule::running's
    // frame. -1: none found (or still learning), every probe reads it
    // through the thread state.
    int frame_local = -1;
    uint64_t frame_candidates = 0;                       // bit k: local k may be it
    uint32_t frame_probes = 0;                           // probes it was learnt from
    std::vector<std::array<int32_t, 256>> opcode_index;  // per local: opcode -> index seen (-1: none)
    // Code objects by address (their lines, checked with same_code).
    std::unordered_map<uint32_t, CPythonModule::CodeLines> code;
    std::array<std::pair<uint32_t, const CPythonModule::CodeLines*>, 64>
        recent_code{};  // probe's cache of `code`
    // Context keys: (co_linetable, co_qualname, co_filename, line) -> key,
    // and each key's frame.
    struct Key {
      uint32_t linetable, qualname, filename, line;
      bool operator==(const Key&) const = default;
    };
    struct KeyHash {
      size_t operator()(const Key& k) const {
        return ((uint64_t{k.linetable} << 32 | k.qualname) * 0x9E3779B97F4A7C15ull) ^
               ((uint64_t{k.filename} << 32 | k.line) * 0xC2B2AE3D27D4EB4Full);
      }
    };
    std::unordered_map<Key, uint32_t, KeyHash> keys;
    // (parent node, key) -> context node, as the call tree has it.
    struct NodeKey {
      uint32_t parent;
      Key key;
      bool operator==(const NodeKey&) const = default;
    };
    struct NodeKeyHash {
      size_t operator()(const NodeKey& k) const {
        return KeyHash()(k.key) ^ (size_t{k.parent} * 0xD6E8FEB86659FD93ull);
      }
    };
    std::unordered_map<NodeKey, uint32_t, NodeKeyHash> nodes;
    // A direct-mapped cache of `nodes` (node 0, the root, for none): every
    // Python call looks up its frame's node and then one per line it runs,
    // almost always nodes seen before, and the map's lookups missed the
    // cache (objects.py: 12.6 M lookups of 32 K nodes, a quarter of the
    // probe's time).
    struct CachedNode {
      NodeKey key;
      uint32_t node;
    };
    std::array<CachedNode, 4096> recent_nodes{};
    std::vector<PyFrame> frames;
    std::vector<bool> whole;  // per key: a frame as a whole (line 0), not a line of it
    // Per evaluation-loop wasm frame on the stack (outermost first): the
    // Python frames it runs, outermost first, each with the context node it
    // counts in (a node of its current line, under the node of the frame
    // as a whole) and the instructions [lo, hi) of that line.
    struct Entry {
      uint32_t frame, code, whole, node, lo, hi;
      std::array<std::pair<uint32_t, uint32_t>, 4> recent;  // its last lines' nodes (line, node)
      uint32_t next_recent;
    };
    struct Eval {
      const void* key;     // the wasm frame
      uint32_t eval_node;  // its own (C) node
      std::vector<Entry> stack;
      std::unordered_map<uint32_t, uint32_t> running;  // code object -> its frames in `stack`
    };
    std::vector<Eval> evals;
  };
  PythonCounts python_counts_;
  struct CpuKey {
    uint32_t node;
    int64_t offset;
    uint64_t goroutine;
    uint32_t python;
    bool operator==(const CpuKey&) const = default;
  };
  struct CpuKeyHash {
    size_t operator()(const CpuKey& k) const {
      return (static_cast<size_t>(k.node) * 0x9E3779B97F4A7C15ull) ^ static_cast<size_t>(k.offset) ^
             (k.goroutine << 32) ^ (static_cast<size_t>(k.python) << 20);
    }
  };
  // Go: the frame the next grafted call resumes when the last one returns.
  struct NextResume {
    uint32_t node = 0;  // 0: none expected
    uint64_t sp = 0, pc = 0, g = 0;
  };
  NextResume next_resume_;
  // Go: the g that was running when the scheduler loop last resumed a
  // function (the last graft): the goroutine whose frames the wasm stack
  // holds until it unwinds back to that loop. 0 before the first.
  uint64_t stack_g_ = 0;
  // The goroutine whose stack a sample in `func` shows, for a Go module (else 0).
  uint64_t goroutine_of(const vm::FuncInst* func) const;
  // CPython: the Python frames of the evaluation-loop frames on the stack
  // at `node` (empty when they cannot be matched up: the C stack stays).
  std::vector<std::vector<PyFrame>> python_of(uint32_t node, const vm::FuncInst* func) const;
  // The evaluation-loop frames on the stack at `node`, if `func`'s module
  // is CPython (then `py` and `eval` are set).
  uint32_t evals_at(uint32_t node, const vm::FuncInst* func, const CPythonModule*& py) const;
  uint32_t intern_frame(PyFrame f);
  uint32_t intern_stack(const std::vector<uint32_t>& frames);
  std::vector<PyFrame> python_frame_list_;
  std::unordered_map<std::string, uint32_t> python_frame_ids_;  // a frame's content -> its index
  std::vector<std::vector<uint32_t>> python_stacks_;
  // walk_words -> id (0: did not check out).
  vm::SpanTable python_words_;
  std::vector<uint32_t> last_words_;  // python_id's last stack, and its id
  uint32_t last_id_ = 0;
  vm::SpanTable python_ids_;                     // a stack's frame indices -> its id
  mutable std::vector<uint32_t> evals_of_node_;  // evals_at's per node, + 1 (0: not yet)
  // A frame's words (CPythonModule::kFrameWords) -> the index of what they
  // describe: the stacks python_id meets differ in a frame or two, not in all of them.
  vm::SpanTable python_frames_;
  mutable const vm::Module* last_module_ = nullptr;  // evals_at's: the module looked up last
  mutable const CPythonModule* last_python_ = nullptr;

  Options options_;
  vm::Profiling profiling_;
  CpuSampler sampler_;
  vm::Thread* thread_ = nullptr;  // attached to, while running
  // A node's function is fixed (CallTree::Node::func), so (node, offset) is a site.
  std::unordered_map<CpuKey, CpuSite, CpuKeyHash> cpu_;
  std::unordered_map<uint64_t, HostSite> host_;  // node << 32 | python
  std::unique_ptr<MemoryProfiler> memory_;
  std::vector<vm::Profiling::InstructionCount> replay_counts_;
  bool has_replay_counts_ = false;
  std::vector<std::pair<const vm::Module*, std::string>> module_paths_;
  // Built when a writer first asks, not at load: running without writing a
  // profile never reads DWARF.
  mutable std::unordered_map<const vm::Module*, std::unique_ptr<Symbolizer>> symbolizers_;
  std::mutex threads_mu_;
  std::vector<ThreadProfile> threads_;
  uint64_t start_unix_ns_ = 0;
  uint64_t start_mono_ns_ = 0;
  uint64_t duration_ns_ = 0;
};

// A function's display name: the module's best name (name section, export,
// wasm-function[N]) for wasm functions, "MODULE.FIELD" of the import for host
// functions (e.g. "wasi_snapshot_preview1.fd_read").
std::string function_name(const vm::FuncInst* func);

}  // namespace wzvm::profiler
