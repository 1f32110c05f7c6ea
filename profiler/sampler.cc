#include "profiler/sampler.h"

#include <time.h>

#include <chrono>
#include <system_error>

namespace wzvm::profiler {

bool CpuSampler::start(vm::Profiling& profiling, unsigned hz, std::string& why) {
  stop();
  if (hz == 0 || hz > 1000000) {
    why = "sampling rate must be between 1 and 1000000 Hz, got " + std::to_string(hz);
    return false;
  }
  stopping_ = false;
  try {
    thread_ = std::thread(&CpuSampler::tick, this, std::ref(profiling),
                          std::chrono::nanoseconds(1000000000ull / hz));
  } catch (const std::system_error& e) {
    why = std::string("cannot start the sampling thread: ") + e.what();
    return false;
  }
  return true;
}

void CpuSampler::tick(vm::Profiling& profiling, std::chrono::nanoseconds period) {
  using clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  // Absolute deadlines, so the rate does not drift by the wake-up latency.
  auto next = clock::now() + period;
  while (!cv_.wait_until(lock, next, [this] { return stopping_; })) {
    // A request not yet taken (the guest is in a long host call, or the
    // loop has not reached a safe point) needs no second patch of the table.
    if (!vm::flag_set(profiling.sample_pending)) {
      // The interpreter thread's CPU time now, which the sample it takes
      // will be weighed with (Profiling::tick_cpu): read here, on this
      // thread, so that sampling makes no system call on that one.
      // (CLOCK_THREAD_CPUTIME_ID would be this thread's: no reading then,
      // and the sample reads the clock itself.)
      timespec ts;
      const clockid_t cpu_clock = __atomic_load_n(&profiling.cpu_clock, __ATOMIC_ACQUIRE);
      if (cpu_clock != CLOCK_THREAD_CPUTIME_ID && clock_gettime(cpu_clock, &ts) == 0)
        __atomic_store_n(&profiling.tick_cpu,
                         static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec),
                         __ATOMIC_RELEASE);
      profiling.raise();
    }
    next += period;
    // Behind by more than a period (the thread was not scheduled): skip the
    // missed ticks rather than raise them back to back.
    const auto now = clock::now();
    if (next < now) next = now + period;
  }
}

void CpuSampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace wzvm::profiler
