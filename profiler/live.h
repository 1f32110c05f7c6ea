#pragma once
// Profiles of a guest that is still running, for the live pprof endpoint
// (--pprof-addr) and the progress line.
//
// Threads. Everything the VM measures arrives on the interpreter thread, and
// the call tree and instruction counters are only ever touched there. The
// server's threads never read them: they open a "window" (a flag under this
// object's mutex), and the interpreter thread, in the sink callbacks, copies
// what falls in the window (each sample with the stack of its node, host
// calls, instruction-count deltas) into the window under the mutex. The
// server then builds the pprof profile from that copy alone. The memory
// profile is copied whole (a snapshot) the same way; and while the guest is
// inside a host function (on_host_enter .. on_host_call, outside on_reentry)
// the interpreter touches no table before it takes the mutex again, so a
// server thread holding the mutex may copy it then: a guest blocked in I/O
// still gets its heap profile served.
//
// Cost when nobody asks: LiveProfiler sits between the VM and the Profiler as
// the sink and forwards every callback after one relaxed atomic load (with
// --pprof-addr, host calls also take the mutex on entry and exit). CPU
// accounting stays on (Profiling::cpu) so that a window's samples have exact
// weights from their first tick; with no timer running that is two
// thread-CPU clock reads per host call, plus the profiling loop the guest
// needs from the start to be sampled later at all. The sampling timer only
// runs while a window is open (or --profile=cpu asked for it anyway). See
// docs/RATIONALE.md, "Viewers".

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/profile.pb.h"
#include "profiler/profiler.h"
#include "profiler/sampler.h"
#include "vm/profiling.h"

namespace wzvm::profiler {

// A frame of a stack copied out of the live call tree: its function and the
// call site it was entered from (vm::CallTree::Node::site).
struct LiveFrame {
  const vm::FuncInst* func;
  uint32_t site;
};

class LiveProfiler final : public vm::ProfileSink {
 public:
  // `profiler` must not have started yet. Installs itself as the sink.
  explicit LiveProfiler(Profiler& profiler);
  ~LiveProfiler() override;
  LiveProfiler(const LiveProfiler&) = delete;
  LiveProfiler& operator=(const LiveProfiler&) = delete;

  // Keep guest CPU accounting on from the start, so that windows can take
  // CPU samples (the live endpoint).
  void enable_windows();

  // CPU samples taken so far (by the Profiler's own sampler or for a
  // window); any thread.
  uint64_t samples() const { return samples_.load(std::memory_order_relaxed); }

  enum class Status { Ok, Busy, Unavailable, Finished };
  // Any thread except the interpreter's: a profile of the next `seconds`, or
  // of less if the guest finishes first. Busy when a window of that kind is
  // already open (one at a time), Unavailable when the kind cannot be taken
  // (instruction counting off), Finished when the guest is done.
  Status cpu_profile(double seconds, perftools::profiles::Profile& out, std::string& why);
  Status instructions_profile(double seconds, perftools::profiles::Profile& out, std::string& why);
  // The memory profile so far (Go's /debug/pprof/heap, or /allocs with
  // `allocs`: alloc_space as the default sample type). Taken by the
  // interpreter thread at its next tick or host call, or by this thread
  // while the guest is inside a host call (blocked in I/O, say): never
  // while the interpreter can touch the tables. Concurrent requests share
  // one snapshot. Unavailable without the memory profiler (--profile=mem).
  Status memory_profile(bool allocs, perftools::profiles::Profile& out, std::string& why);

  // The interpreter thread, after the guest returned: closes open windows
  // with what they hold, and refuses new ones.
  void finish();

  // vm::ProfileSink: record into open windows, forward to the Profiler.
  void on_cpu_sample(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns) override;
  bool graft(vm::Profiling& p, const vm::FuncInst* callee, uint32_t& node) override;
  // CPython's instruction counts by Python line: the Profiler's (live
  // windows, which count by wasm frames, are not probed: cli/main.cc).
  uint32_t probe(vm::Profiling& p, uint32_t node, const vm::FuncInst* func, const void* frame, uint32_t index,
                 const uint64_t* fp, const uint32_t* slots, uint32_t n) override {
    return profiler_.probe(p, node, func, frame, index, fp, slots, n);
  }
  void on_host_call(uint32_t node, uint64_t wall_ns) override;
  void on_hooked_call(uint8_t hook, uint32_t node, const uint64_t* args, vm::MemInst* memory,
                      const vm::FuncInst* func) override;
  void on_hooked_return(uint8_t hook, uint32_t node, const uint64_t* results, vm::MemInst* memory,
                        const vm::FuncInst* func) override;
  void on_memory_grow(uint32_t node, const vm::FuncInst* func, int64_t offset, vm::MemInst* memory,
                      uint64_t old_bytes) override;
  void on_host_enter(uint32_t node) override;
  void on_reentry(bool entering) override;

 private:
  using Stack = std::vector<LiveFrame>;  // root first
  struct CpuSample {
    uint32_t node;
    const vm::FuncInst* func;
    int64_t offset;
    uint64_t cpu_ns;
    GuestState state;  // read when the sample was taken, not at the replay
  };
  struct HostCalls {
    uint64_t count = 0, wall_ns = 0;
  };
  struct CpuWindow {
    bool open = false;
    bool started = false;  // the first tick marks the start (its weight is from before)
    uint64_t start_unix_ns = 0, start_mono_ns = 0;
    std::vector<CpuSample> samples;
    std::unordered_map<uint32_t, HostCalls> host;
    std::unordered_map<uint32_t, Stack> stacks;  // node -> its stack, copied on the interpreter thread
  };
  enum class InstrState { Idle, WantStart, Running, WantEnd, Done };
  struct InstrWindow {
    InstrState state = InstrState::Idle;
    vm::Profiling::Snapshot baseline;  // counters when the window opened
    struct Count {
      Stack stack;
      uint32_t offset;  // module byte offset of the instruction
      uint64_t count;
    };
    std::vector<Count> counts;  // deltas when it closed
  };

  // The memory profiler's figures, each site and grow with its stack: what a
  // memory request replays.
  struct MemSnapshot {
    std::vector<MemSite> sites;  // nodes of the live call tree, down to the allocator
    std::vector<GrowEvent> grows;
    std::unordered_map<uint32_t, Stack> stacks;                              // node -> its stack
    std::unordered_map<uint32_t, std::vector<std::vector<PyFrame>>> python;  // MemSite::python -> its stack
    uint64_t start_unix_ns = 0, duration_ns = 0;
  };

  // Interpreter thread (or a server thread while the guest is paused), under mu_.
  Stack stack_of(uint32_t node) const;
  void take_memory_locked();
  void poll_instructions_locked();
  void close_instructions_locked();

  // Server threads: the timer that makes the interpreter call us while a
  // window is open, when --profile=cpu has not started one anyway.
  void ticks(bool on);
  // A Profiler holding only a window's data, to reuse the pprof builders.
  std::unique_ptr<Profiler> replay_profiler(bool instructions) const;

  Profiler& profiler_;
  std::atomic<uint64_t> samples_{0};
  // Fast-path flags: read on every callback, relaxed. The data is under mu_.
  std::atomic<bool> cpu_open_{false};
  std::atomic<bool> instr_busy_{false};
  std::atomic<bool> mem_wanted_{false};
  // enable_windows() was called: host calls then mark the pauses (set
  // before the guest runs; read on the interpreter thread only).
  bool windows_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  CpuWindow cpu_;
  InstrWindow instr_;
  // The interpreter thread is inside a host function (and not in wasm it
  // called back): it touches no profiler table until it takes mu_ again.
  bool paused_ = false;
  // Memory requests: numbered, and served by a snapshot that covers them.
  uint64_t mem_requests_ = 0, mem_served_ = 0;
  std::shared_ptr<const MemSnapshot> mem_snapshot_;

  std::mutex ticks_mu_;
  int tick_users_ = 0;
  CpuSampler ticker_;
};

// The HTTP side of --pprof-addr (cpp-httplib): Go's net/http/pprof paths.
//   /debug/pprof/                         index page
//   /debug/pprof/profile?seconds=N        CPU profile of the next N s (default 30)
//   /debug/pprof/instructions?seconds=N   instruction counts of the next N s
//   /debug/pprof/heap, /debug/pprof/allocs   memory profile so far (needs --profile=mem)
// Any of them with debug=1 gives `wzvm report` text instead of protobuf.
class PprofServer {
 public:
  explicit PprofServer(LiveProfiler& live);
  ~PprofServer();
  PprofServer(const PprofServer&) = delete;
  PprofServer& operator=(const PprofServer&) = delete;

  // Binds `addr` ("HOST:PORT", ":PORT" = 127.0.0.1, "[::1]:PORT"; port 0
  // picks a free one) and serves on a thread of its own. False with `why`.
  bool start(const std::string& addr, std::string& why);
  // The address actually bound, as "http://HOST:PORT".
  const std::string& url() const { return url_; }
  // Stops listening and waits for requests in progress. Call LiveProfiler::
  // finish() first, so that those return at once.
  void stop();

 private:
  struct Impl;
  LiveProfiler& live_;
  std::unique_ptr<Impl> impl_;
  std::string url_;
};

}  // namespace wzvm::profiler
