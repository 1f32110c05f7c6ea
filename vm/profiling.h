#pragma once
// The VM's hook points for profilers (DESIGN.md, "Hook points"). vm/ knows
// nothing of profile formats: it maintains the current call stack as a node
// of an interned call tree, counts instructions per node, takes a sample the
// timer asked for before the next instruction, times host calls at their one
// boundary, and reports
// through ProfileSink. profiler/ attaches a Profiling to a Thread, owns the
// timer that raises `sample_pending`, and turns what it receives into
// profiles.
//
// Sampling, host-call timing and allocation hooks run in the interpreter's
// plain loop, which pays nothing for them per instruction: with no Profiling
// attached it tests `prof` per host call and per hooked call only, and a
// sample request reaches it by patching its dispatch table. Instruction
// counting runs a second instantiation of the loop that keeps each frame's
// counters (vm/interp.cc).

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <vector>

#include "vm/span_table.h"

namespace wzvm::vm {

struct FuncInst;
struct MemInst;
struct Frame;

// Every distinct call stack seen while profiling, interned: a sample or an
// instruction count is attributed to a node id, not to a copied stack. Node 0
// is the root (no function). A child is keyed by its function (a FuncInst, so
// functions of different modules and host functions are distinct) and the
// call site in its parent's function, so that a caller's frame in a profile
// is at the call instruction (docs/RATIONALE.md, "Profiler"). Recursive
// calls are the exception: a call to a function already on the node's path
// is keyed by function only (site kNoSite), because with call sites a
// recursion like fib's, with two call sites, would make one node per call;
// by function, it makes one per depth, as a plain function-keyed tree does.
class CallTree {
 public:
  // Node::site of a call with no single call site: entered from outside wasm
  // (the embedder, a host function calling back), or a recursive call.
  static constexpr uint32_t kNoSite = UINT32_MAX;
  // Node::site of a context node (Profiling::enter_context): a node of the
  // same function as its parent or an ancestor, keyed by what the sink
  // makes of the guest's state (CPython: a Python function and line), not
  // by a call; the low bits are the sink's key. Module offsets stay below.
  static constexpr uint32_t kContextBit = 0x80000000u;
  static bool is_context(uint32_t site) { return site != kNoSite && (site & kContextBit); }
  struct Node {
    uint32_t parent = 0;
    const FuncInst* func = nullptr;
    uint32_t depth = 0;
    // Module byte offset of the call instruction in the parent's function,
    // or kNoSite.
    uint32_t site = kNoSite;
    // Bit (func_index % 64) of every function on the path from the root:
    // most calls are not recursive, and a clear bit says so without walking
    // the path.
    uint64_t path_funcs = 0;
    // The two children found last, by function and return point (the code
    // word after the call in this node's function; null: no call site):
    // loops and recursion call the same function from the same place again
    // and again, and a loop that allocates alternates two (malloc and free).
    const FuncInst* cached_func[2] = {};
    const uint32_t* cached_ret[2] = {};
    uint32_t cached_child[2] = {};
    // Instruction counting: this node's block in Profiling's chunks (which
    // never move): its function's segment run counters
    // (CompiledFunc::num_segments), then a two-word entry per call site of
    // counted code (CompiledFunc::call_slots: callee, child's counters),
    // which makes a counted call's lookup one compare. The word before the
    // block holds the node's id (Profiling::block_node), so a frame of the
    // counting loop keeps only its counters: a call stores one word less.
    // Also the cached children's counters, for the calls that find them here.
    uint64_t* counters = nullptr;
    uint64_t* cached_counters[2] = {};
  };
  static constexpr uint32_t kRoot = 0;

  CallTree() { nodes_.push_back({}); }

  // The node for calling `func` at `site` from `parent`, added if new; the
  // site is dropped (kNoSite) when the call is recursive (see above).
  uint32_t call(uint32_t parent, const FuncInst* func, uint32_t site) {
    return child(parent, func, site != kNoSite && on_path(parent, func) ? kNoSite : site);
  }
  // The node keyed exactly (parent, func, site), added if new: for copying
  // a node of another tree (whose site already followed the rule of call()).
  uint32_t child(uint32_t parent, const FuncInst* func, uint32_t site);
  const Node& node(uint32_t id) const { return nodes_[id]; }
  Node& node(uint32_t id) { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }

 private:
  static uint64_t func_bit(const FuncInst* func);
  bool on_path(uint32_t node, const FuncInst* func) const;
  std::vector<Node> nodes_;
  SpanTable index_;  // {parent, site, func's two halves} -> node
};

struct Profiling;

// Receives what the interpreter measures. Called on the interpreter's thread.
class ProfileSink {
 public:
  virtual ~ProfileSink() = default;
  // A function of LoadOptions::graft_calls calls `callee` (call_table.graft):
  // the node of `callee` in `p`'s call tree under its real callers, which the
  // sink reads from outside the wasm stack (Go: the goroutine's stack in
  // linear memory) and enters with Profiling::enter_at, from the root. False:
  // the callers are not known; the callee hangs from the calling frame, as
  // any callee does.
  virtual bool graft(Profiling& p, const FuncInst* callee, uint32_t& node) {
    (void)p, (void)callee, (void)node;
    return false;
  }
  // A ProbeCounted op (LoadOptions::probe_dispatch) ran in `frame` (an
  // identity while the frame lives; frames deeper in the stack have higher
  // addresses) of `func`, counting in `node`: the node to count the rest of
  // the frame's run in, one that Profiling::enter_context made for `func`
  // (so its block has the same layout), or `node`. `index` is the
  // br_table's index; the function's i32 locals are the low words of
  // fp[slots[0..n)].
  virtual uint32_t probe(Profiling& p, uint32_t node, const FuncInst* func, const void* frame, uint32_t index,
                         const uint64_t* fp, const uint32_t* slots, uint32_t n) {
    (void)p, (void)func, (void)frame, (void)index, (void)fp, (void)slots, (void)n;
    return node;
  }
  // A CPU sample taken at a safe point: `node` is the current call stack,
  // `func`/`offset` the function and module byte offset of the instruction
  // about to run, `cpu_ns` the guest's own CPU time since the previous sample
  // (host-call time excluded).
  virtual void on_cpu_sample(uint32_t node, const FuncInst* func, int64_t offset, uint64_t cpu_ns) = 0;
  // A host call returned (or trapped/exited): `node` is the host function's
  // node under its caller, `wall_ns` the wall time spent inside it.
  virtual void on_host_call(uint32_t node, uint64_t wall_ns) = 0;
  // Memory profiling: a function with a call hook (LoadOptions::call_hook)
  // was entered, with its parameters as slots, and later returned, with its
  // results as slots. `node` is the hooked function's own node. A frame
  // unwound by a trap or proc_exit never returns. `memory` is the memory 0
  // of the hooked function's instance (for results returned through memory),
  // `func` the hooked function (its instance's globals: Go passes arguments
  // on a stack whose pointer is a global).
  virtual void on_hooked_call(uint8_t hook, uint32_t node, const uint64_t* args, MemInst* memory,
                              const FuncInst* func) {
    (void)hook, (void)node, (void)args, (void)memory, (void)func;
  }
  virtual void on_hooked_return(uint8_t hook, uint32_t node, const uint64_t* results, MemInst* memory,
                                const FuncInst* func) {
    (void)hook, (void)node, (void)results, (void)memory, (void)func;
  }
  // Memory profiling (Profiling::memory_grow): a memory.grow made `memory`
  // larger than its `old_bytes`. `node` is the stack of the function that
  // ran it, `func`/`offset` that function and the instruction's module byte
  // offset. Failed grows and grows by 0 pages are not reported.
  virtual void on_memory_grow(uint32_t node, const FuncInst* func, int64_t offset, MemInst* memory,
                              uint64_t old_bytes) {
    (void)node, (void)func, (void)offset, (void)memory, (void)old_bytes;
  }
  // A host function is about to run (`node` as in on_host_call, which ends
  // it). Until it returns, the interpreter thread touches neither the call
  // tree nor the sink, except through wasm the host function calls back
  // into, which on_reentry brackets (`entering` true at its start, false at
  // its end). The live profiler reads the tables from another thread in
  // that time (profiler/live.h).
  virtual void on_host_enter(uint32_t node) { (void)node; }
  virtual void on_reentry(bool entering) { (void)entering; }
};

// The sampling and interrupt flags below are raised by other threads (the
// CPU sampler's, and to stop the guest --timeout's and wasi-threads'), and
// stay safe to raise from a signal handler: every access goes through these,
// atomic (a plain move on x86-64, so the loop pays nothing) and ordered so
// that a reader who sees sample_pending raised also sees the
// interrupt_requested raised before it.
inline void set_flag(volatile std::sig_atomic_t& f, std::sig_atomic_t v) {
  __atomic_store_n(&f, v, __ATOMIC_RELEASE);
}
inline bool flag_set(const volatile std::sig_atomic_t& f) {
  return __atomic_load_n(&f, __ATOMIC_ACQUIRE) != 0;
}
// The same for the interpreter's safe point (SAFE_POINT: every dispatch of
// the switch-dispatch build, a profiling loop's entry and poll handler), one
// instruction shorter on x86-64: GCC loads an atomic (or volatile) int into a
// register before testing it, never `cmpl $0, mem`.
// The compare is a load: acquire on x86-64, as every load is.
inline bool poll_flag(const volatile std::sig_atomic_t& f) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool set;
  asm volatile("cmpl $0, %1" : "=@ccne"(set) : "m"(f));
  return set;
#else
  return flag_set(f);
#endif
}

// Profiling state attached to a Thread (Thread::profiling).
struct Profiling {
  CallTree tree;
  // Instruction counting (code lowered with LoadOptions::count_instructions):
  // how often each counter of its function's code (CompiledFunc::counters:
  // a body or a segment counted on entry, or a jump's edge) ran in each
  // node, at the node's Node::counters, in order. A segment cut short
  // by a trap or proc_exit is taken back from its counter and recorded in
  // `partial` with how many of its instructions ran. instruction_counts()
  // turns these into exact counts per node and instruction. Frames and the
  // tree hold pointers to the counters, so they live in chunks that never
  // move (a counted segment then costs one increment through the frame).
  struct Partial {
    uint32_t node;
    uint32_t seg;
    uint32_t ran;
  };
  std::vector<Partial> partial;
  ProfileSink* sink = nullptr;  // may be null (counting only)
  // What the sink's last probe (ProfileSink::probe) promised: while a
  // ProbeCounted op runs in `frame`, counting in `counters`, with probe
  // local `frame_k` equal to `frame_value`, the i32 of linear memory 0 at
  // frame_value + `field` equal to `field_value` and probe local `next_k`
  // in [lo, lo + span), the probe would answer the node the frame counts
  // in: the op skips the call (most of CPython's bytecodes stay on their
  // line). The VM clears it (frame null) before each call and fills in
  // `counters` after one; the sink sets the rest when it answers so.
  struct ProbeStay {
    const void* frame = nullptr;
    const uint64_t* counters = nullptr;
    uint32_t frame_k = 0, frame_value = 0, field = 0, field_value = 0;
    uint32_t next_k = 0, lo = 0, span = 0;
  };
  ProbeStay probe_stay;
  bool cpu = false;  // take CPU samples and keep guest CPU time
  // Count instructions (code lowered with LoadOptions::count_instructions):
  // the interpreter then keeps every frame's call-tree node up to date on
  // each call; without it nodes are found only when a sample, host call or
  // allocation needs one.
  bool count_instructions = false;
  // The node whose block `counters` is (CallTree::Node::counters): while
  // counting, every node of a wasm function has one, and a frame's node is
  // that of its counters (the counting loop stores no Frame::node).
  static uint32_t block_node(const uint64_t* counters) { return static_cast<uint32_t>(counters[-1]); }
  // Report successful memory.grow to the sink (memory profiling). Tested
  // only in memory.grow's handler of the profiling loops.
  bool memory_grow = false;
  // Set by the CPU sampler's thread (through raise()), which does nothing
  // else to this thread; the loop takes the sample before the next
  // instruction.
  volatile std::sig_atomic_t sample_pending = 0;
  // How the profiling loops notice it without testing it anywhere: with
  // computed-goto dispatch they jump through a table of their own here, and
  // raise() points every entry at the loop's poll handler, which puts the
  // table back and takes the sample. One table per profiling loop (a label
  // of one cannot be jumped to from the other); `poll` is null until the
  // loop has filled `entries`. The switch-dispatch build tests the flag at
  // each dispatch instead. vm/interp.cc, docs/RATIONALE.md.
  struct DispatchTable {
    const void* poll = nullptr;
    uint32_t size = 0;
    const void** entries = nullptr;  // in `storage` (vm/interp.cc, publish_dispatch), set before `poll`
    std::unique_ptr<const void*[]> storage;
  };
  DispatchTable dispatch[2];  // the plain loop's, the counting loop's
  // Asks the interpreter to stop before its next instruction (a sample;
  // with interrupt_requested raised first, an interrupt). From any thread
  // or a signal handler: atomic stores only. A table being filled
  // meanwhile is not yet published (`poll` null); its loop tests the flag
  // once it is.
  void raise() {
    __atomic_store_n(&sample_pending, 1, __ATOMIC_SEQ_CST);
    // The flag before any patched entry, on every architecture: a poll that
    // restores the table must then see the flag (x86-64 orders stores anyway).
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (DispatchTable& t : dispatch) {
      const void* poll = __atomic_load_n(&t.poll, __ATOMIC_SEQ_CST);
      if (!poll) continue;
      for (uint32_t i = 0; i < t.size; ++i) __atomic_store_n(&t.entries[i], poll, __ATOMIC_RELAXED);
    }
  }
  // Limits that reuse these hooks. Fuel: code lowered with LoadOptions::fuel
  // may run at most `fuel` more instructions (set it before running such
  // code: 0 stops it at once); a straight-line segment that does not fit
  // traps with OutOfFuel before it starts, so the count at the trap is exact
  // and never above the budget. Interrupt: raising `interrupt_requested` and
  // then calling raise() (from a timer or another thread) traps with
  // Interrupted at the next safe point.
  uint64_t fuel = 0;
  // set_fuel() sets the budget and remembers it, so fuel_used() is the
  // instructions charged since: exact at a host call, which wasi's
  // deterministic mode reads as its clock (wasi/deterministic.h).
  void set_fuel(uint64_t budget) {
    fuel = fuel_start = budget;
    fuel_set = true;
  }
  uint64_t fuel_used() const { return fuel_start - fuel; }
  uint64_t fuel_start = 0;
  bool fuel_set = false;
  volatile std::sig_atomic_t interrupt_requested = 0;

  // Guest CPU accounting (thread CPU clock, ns): time since `cpu_mark` is
  // guest time unless a host call is running.
  uint64_t cpu_mark = 0;
  // The interpreter thread's CPU clock (set by whoever attaches on that
  // thread), and its reading by the sampler thread right before it raised
  // the request being served (0: none; written before the flag, taken back
  // with an atomic exchange). A sample weighs itself with that reading
  // instead of reading the clock itself: on the VMs measured here every
  // system call flushes the TLB (page-table isolation without PCID), which
  // made each sample cost the interpreter tens of microseconds of page walks
  // afterwards (docs/RATIONALE.md, "Profiling overhead").
  clockid_t cpu_clock = CLOCK_THREAD_CPUTIME_ID;
  uint64_t tick_cpu = 0;
  uint64_t guest_cpu = 0;  // accumulated since the last sample
  // A tick found raised when a host call returned came while the host
  // function ran: that time is the host call's (its own sample), so the
  // safe point that takes it reports no CPU sample and leaves guest_cpu for
  // the next tick. Otherwise every long host call made a sample of a few
  // microseconds, and samples/count overstated the guest's share.
  bool tick_in_host = false;

  // The counter block of the call-tree node for calling wasm function `f`
  // from `parent`, where `ret` is the return point of the call in the
  // parent's function (the code word after the call op; null when there is
  // no call site: the parent is the root or a host function). The node is
  // block_node() of it. The counting loop's hook on calls.
  uint64_t* enter_counted(uint32_t parent, const FuncInst* f, const uint32_t* ret) {
    CallTree::Node& n = tree.node(parent);
    if (n.cached_func[0] == f && n.cached_ret[0] == ret) return n.cached_counters[0];
    if (n.cached_func[1] == f && n.cached_ret[1] == ret) return n.cached_counters[1];
    return tree.node(enter_slow(parent, f, ret)).counters;
  }
  // The node for `f` called at module offset `site` of the parent's
  // function (CallTree::call's rule for recursion), with its counter block
  // when counting; not cached in the parent (grafted calls: their parent
  // depends on more than the call site).
  uint32_t enter_at(uint32_t parent, const FuncInst* f, uint32_t site);
  // The context node `key` (< kContextBit) of `f` under `parent`
  // (CallTree::kContextBit), with its counter block when counting and
  // `counts` (a node that groups others counts nothing).
  uint32_t enter_context(uint32_t parent, const FuncInst* f, uint32_t key, bool counts = true);
  uint32_t enter(uint32_t parent, const FuncInst* f, const uint32_t* ret = nullptr) {
    CallTree::Node& n = tree.node(parent);
    if (n.cached_func[0] == f && n.cached_ret[0] == ret) return n.cached_child[0];
    if (n.cached_func[1] == f && n.cached_ret[1] == ret) return n.cached_child[1];
    return enter_slow(parent, f, ret);
  }
  // A counted call op's miss in its call-site entry `kid` (two words in
  // the caller's node block, see CallTree::Node::counters): looks the child
  // up as enter_counted does and keeps it in the entry.
  uint64_t* enter_call_site(uint32_t parent, const FuncInst* f, const uint32_t* ret, uint64_t* kid);

  // What counting measured. A snapshot marks a point to count from (the
  // live endpoint's windows); counts are never below zero (a segment charged
  // before the snapshot and cut short after it).
  struct Snapshot {
    std::vector<uint64_t> runs;  // every node's counters, node by node
    size_t partial = 0;
  };
  Snapshot snapshot() const;
  struct InstructionCount {
    uint32_t node;
    uint32_t offset;  // module byte offset of the instruction
    uint64_t count;
    bool operator==(const InstructionCount&) const = default;
  };
  // Every executed instruction with a non-zero count, sorted by node, then offset.
  std::vector<InstructionCount> instruction_counts(const Snapshot* since = nullptr) const;
  // The same, one node at a time: `each` is called with every node's counts
  // (non-empty, sorted by offset), in node order. A deep recursion's counts
  // are hundreds of megabytes as one vector (a node per depth, each with its
  // function's instructions).
  void for_each_node_counts(const std::function<void(const std::vector<InstructionCount>&)>& each,
                            const Snapshot* since = nullptr) const;
  // The same before it is spread over instructions: a node's instructions
  // are its function's `offsets` (module offsets in body order,
  // CompiledFunc::seg_offsets), and each run says that [from, to) of them
  // ran `count` times. Runs are ascending, do not overlap and have non-zero
  // counts. Readers that group instructions (Go's PCs) take a run at once:
  // a Go test binary's instruction profile has ten times more instructions
  // than runs.
  struct CountRun {
    uint32_t from, to;
    uint64_t count;
  };
  // What `runs` sum to: every instruction's count.
  static uint64_t total_of(const std::vector<CountRun>& runs) {
    uint64_t total = 0;
    for (const CountRun& r : runs) total += r.count * (r.to - r.from);
    return total;
  }
  void for_each_node_runs(
      const std::function<void(uint32_t node, const uint32_t* offsets, const std::vector<CountRun>&)>& each,
      const Snapshot* since = nullptr) const;
  // The nodes for_each_node_runs gives, in its order, with their runs only
  // where `want_runs(node)` asks for them (the others get an empty vector).
  // For those the node's total decides, one pass over its counters instead
  // of sorting their ranges' ends and sweeping them: without a snapshot no
  // instruction's count is below zero, so the total is above zero exactly
  // when some instruction ran. The instruction profile's writer asks for
  // runs in its first pass only for the first node of each function.
  void for_each_node(const std::function<bool(uint32_t node)>& want_runs,
                     const std::function<void(uint32_t node, const uint32_t* offsets,
                                              const std::vector<CountRun>&)>& each) const;
  // The nodes for_each_node_runs gives, in its order, with their totals
  // (the sum of their runs, from for_each_node's one pass): for readers
  // that show a node as one sample (CPython's Python lines, C functions by
  // their start line).
  void for_each_node_total(const std::function<void(uint32_t node, uint64_t total)>& each) const;
  // Executed instructions per node (indexed by node id).
  std::vector<uint64_t> instruction_totals() const;

 private:
  // for_each_node_runs, for_each_node when `want_runs` is given and
  // for_each_node_total when `each_total` is.
  void node_runs(
      const std::function<bool(uint32_t node)>* want_runs,
      const std::function<void(uint32_t node, const uint32_t* offsets, const std::vector<CountRun>&)>& each,
      const Snapshot* since,
      const std::function<void(uint32_t node, uint64_t total)>* each_total = nullptr) const;
  uint32_t enter_slow(uint32_t parent, const FuncInst* f, const uint32_t* ret);
  // enter_slow's children found lately, by (parent, f, ret), direct-mapped.
  // A node caches two; CPython's evaluation loop calls hundreds of
  // functions from thousands of sites, so its node missed on most
  // allocations, each miss a binary search of the caller's source map and a
  // child lookup (2% of a memory-profiled objects.py). A (parent, f, ret)
  // always leads to the same child, and nodes are never removed.
  struct Recent {
    const FuncInst* f = nullptr;
    const uint32_t* ret = nullptr;
    uint32_t parent = UINT32_MAX;  // none yet
    uint32_t child = 0;
  };
  static constexpr size_t kRecent = 4096;  // 96 KiB: stays in L2
  std::unique_ptr<Recent[]> recent_ = std::make_unique<Recent[]>(kRecent);
  void give_block(uint32_t id);  // a new node's counter block, when counting
  uint64_t* alloc_counters(size_t n);
  // Counters per chunk (a larger function gets its own). Chunks are mapped
  // anonymous memory, zero without being written, so a page of counters
  // costs memory only once something counts in it: CPython's Python line
  // nodes each get a block of its whole evaluation loop and touch a few of
  // its pages (`--profile-text` of bench/python/calls.py: 463 -> 377 MB
  // peak). They came from calloc, which gave fresh mmap memory only while
  // glibc's mmap threshold stayed below a chunk: once a bigger block was
  // freed the threshold rose, and calloc cleared every chunk it then took
  // from the heap (json's instruction profile: 178 M instructions of memset,
  // every page touched).
  static constexpr size_t kChunk = 1 << 16;
  struct Unmap {
    size_t bytes = 0;
    void operator()(uint64_t* p) const;
  };
  std::vector<std::unique_ptr<uint64_t[], Unmap>> chunks_;
  size_t chunk_left_ = 0;
  uint64_t* chunk_next_ = nullptr;
};

}  // namespace wzvm::vm
