#pragma once
// The CPU sampler's clock: a thread of its own that raises
// Profiling::sample_pending `hz` times a second for the interpreter thread
// (Profiling::raise(): the flag and the loop's dispatch table, plain stores).
// The interpreter takes the sample at its next safe point and weighs it with
// its thread CPU clock as this thread read it just before raising
// (Profiling::tick_cpu, vm/profiling.h).
//
// A thread, not a timer signal to the interpreter thread: on the VMs measured
// here every signal delivered to a busy thread cost it 25-55 us of its own
// CPU time (interrupt, signal frame, sigreturn under the hypervisor), so 1000
// signals a second made a run 3-6% slower, while the same ticks from a
// sleeping thread, which wakes on the other core and only stores to memory,
// cost the interpreter nothing measurable (docs/RATIONALE.md, "Profiling
// overhead"). It also keeps host functions blocked in read(2) and the like
// from being interrupted at all.
//
// The clock is CLOCK_MONOTONIC: CPU-time timers advance on the
// kernel tick (~250 Hz on these machines, whatever rate is asked), while
// sample weights come from the thread CPU clock anyway, so a wall-clock tick
// gives the asked rate without making weights less exact. Ticks that arrive
// while the guest sits in a host call just leave the flag raised; that time
// is never charged to the guest.

#include <time.h>

#include <cstdint>
#include <string>
#include <thread>

#include "vm/profiling.h"

namespace wzvm::profiler {

// The rate when none is asked (--cpu-hz, Options::cpu_hz): Go's runtime/pprof
// rate, which pprof users read profiles at. Each tick wakes this thread, which
// costs 15-60 us of CPU on the other core on the VMs measured here, more the
// longer it slept (its caches and TLB go cold), whatever it does once awake:
// at 1000 Hz that alone was 2.3% of a CPython run's CPU time, at 100 Hz
// 0.6-0.75% (docs/RATIONALE.md, "The default rate is 100 Hz").
inline constexpr unsigned kDefaultCpuHz = 100;

class CpuSampler {
 public:
  CpuSampler() = default;
  ~CpuSampler() { stop(); }
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  // Starts ticking at `hz` (1..1000000) for `profiling`, which the
  // interpreter thread polls. Any thread may start and stop it (the live
  // pprof endpoint starts ticks from its own). False with `why` when the
  // rate is out of range or no thread can be started.
  bool start(vm::Profiling& profiling, unsigned hz, std::string& why);
  // Stops ticking and joins the thread: no tick is raised after it returns.
  void stop();
  bool running() const { return thread_.joinable(); }

 private:
  void tick(vm::Profiling& profiling, uint64_t period_ns);
  // Sleeps until `deadline` (CLOCK_MONOTONIC); false when stop() came first.
  bool sleep_until(const timespec& deadline);

  std::thread thread_;
  // Set by stop(), which then wakes the sleeping thread: a futex word, so a
  // tick is one system call to sleep and one to read the clock (a condition
  // variable took a third, its mutex's wake, and touched more memory on a
  // wake-up, whose cost is all in what it touches: docs/RATIONALE.md).
  uint32_t stopping_ = 0;
};

}  // namespace wzvm::profiler
