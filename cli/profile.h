#pragma once
// The `wzvm` command's profiling flags and the session that applies them to
// one run: --profile=cpu|instructions|mem (comma list, repeatable),
// --profile-out, --profile-format, --profile-summary, --pprof-addr,
// --cpu-hz, --profile-text, --profile-c-frames, --mem-sample-bytes, --alloc-fn. Kept out of main.cc so the
// command's flow stays readable and the profiler wiring is in one place.

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "profiler/profiler.h"
#include "profiler/sampler.h"
#include "vm/module.h"
#include "vm/profiling.h"
#include "vm/runtime.h"
#include "wasi/threads.h"

namespace wzvm::profiler {
class Profiler;
class LiveProfiler;
class PprofServer;
}  // namespace wzvm::profiler

namespace wzvm::cli {

struct ProfileFlags {
  std::vector<std::string> kinds;  // --profile values, as given
  std::string out;                 // --profile-out: a file (one profile) or a directory (several)
  unsigned cpu_hz = profiler::kDefaultCpuHz;
  bool text = false;                                                    // --profile-text
  uint32_t python_c_frames = profiler::Options::kDefaultPythonCFrames;  // --profile-c-frames
  uint64_t mem_sample_bytes = 0;       // --mem-sample-bytes (0: every allocation)
  std::vector<std::string> alloc_fns;  // --alloc-fn NAME=KIND
  std::vector<std::string> formats;    // --profile-format: pprof, folded, speedscope, html (all profiles)
  bool summary = false;                // --profile-summary
  std::string pprof_addr;              // --pprof-addr HOST:PORT
  bool deterministic = false;          // --deterministic: no wall-clock times in the memory profile
  // Set when a profile could not be written, so main() can exit non-zero
  // even though the guest succeeded.
  bool* write_failed = nullptr;

  void add_to(CLI::App& app);
  bool cpu() const;
  bool instructions() const;  // the pprof file
  bool mem() const;
  // LoadOptions::call_hook: the allocators to hook when mem() is on, else empty.
  std::function<uint8_t(const vm::Module&, uint32_t)> call_hook() const;
  bool count_instructions() const { return instructions() || text; }
  bool any() const { return cpu() || count_instructions() || mem() || !pprof_addr.empty(); }
};

// Attaches the profiler to `store` on construction (before instantiation, so
// a start function is profiled too) and, on destruction, stops it, writes
// the profiles and says where on stderr. Being a scope guard, it writes on
// every way out of the run: normal return, trap, proc_exit, failed call.
// Declare it after the Store it profiles, so it goes first.
class ProfileSession {
 public:
  ProfileSession(const ProfileFlags& flags, vm::Store& store, const vm::Module& module,
                 const std::string& path);
  ~ProfileSession();
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;
  // False when the output location is unusable or the sampler cannot start;
  // error() says why. Nothing runs profiled then.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // The VM state the profiler attached to the store's thread, or null when
  // nothing is profiled: limits that reuse it (--fuel, --timeout) share it.
  vm::Profiling* profiling();
  // wasi-threads: hooks that give each spawned thread a profiler of its own
  // (Profiler::add_thread, started on that thread: its own CPU timer and
  // call tree), written with the main thread's; none when nothing is profiled.
  wasi::Threads::Hooks thread_hooks();
  // The guest never ran (an unknown import, a missing export, a bad
  // argument): the session stops without writing, so a profile an earlier
  // run left at the same path is not replaced by an empty one.
  void discard() { discarded_ = true; }

 private:
  void finish();
  void start_progress();
  void stop_progress();
  const ProfileFlags& flags_;
  vm::Store& store_;
  const vm::Module* module_ = nullptr;
  std::string module_path_;
  std::unique_ptr<profiler::Profiler> profiler_;
  // Declared after the profiler: destroyed (detached, stopped) before it.
  std::unique_ptr<profiler::LiveProfiler> live_;
  std::unique_ptr<profiler::PprofServer> server_;
  struct Output {
    std::string kind;    // "cpu", "instructions"
    std::string format;  // "pprof", "folded", "speedscope", "html"
    std::string path;
  };
  std::vector<Output> outputs_;  // in the order written
  std::string error_;
  bool discarded_ = false;
  // The progress line (stderr is a terminal): a thread woken to stop.
  std::thread progress_;
  std::mutex progress_mu_;
  std::condition_variable progress_cv_;
  bool progress_stop_ = false;
};

}  // namespace wzvm::cli
