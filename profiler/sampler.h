#pragma once
// The CPU sampler's clock: a POSIX timer that raises Profiling::sample_pending
// `hz` times a second on one thread (the interpreter's). The signal handler
// only sets that flag; the interpreter takes the sample at its next safe point
// and weighs it with the thread CPU clock (vm/profiling.h).
//
// The timer runs on CLOCK_MONOTONIC, not CLOCK_THREAD_CPUTIME_ID: thread-CPU
// timers advance on the kernel tick (~250 Hz on these machines, whatever rate
// is asked), while sample weights come from the thread CPU clock anyway, so a
// wall-clock timer gives the asked rate without making weights less exact.
// Ticks that arrive while the guest sits in a host call just leave the flag
// raised; that time is never charged to the guest.

#include <sys/types.h>
#include <time.h>

#include <string>

#include "vm/profiling.h"

namespace wzvm::profiler {

class CpuSampler {
 public:
  CpuSampler() = default;
  ~CpuSampler() { stop(); }
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  // Starts ticking at `hz` (1..1000000) for thread `tid` (0: the calling
  // thread), which must be the one that runs the interpreter; the live pprof
  // endpoint starts ticks from its own thread for the interpreter's. False
  // with `why` when the system refuses (no timers, bad rate).
  bool start(vm::Profiling& profiling, unsigned hz, std::string& why, pid_t tid = 0);
  // Stops the timer; a tick already queued is discarded by the kernel with
  // the timer. Call it on the thread that started it.
  void stop();
  bool running() const { return running_; }

 private:
  timer_t timer_{};
  bool running_ = false;
};

}  // namespace wzvm::profiler
