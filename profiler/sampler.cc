#include "profiler/sampler.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <system_error>

namespace wzvm::profiler {

namespace {

constexpr uint64_t kNsPerSecond = 1000000000u;

uint64_t to_ns(const timespec& t) {
  return static_cast<uint64_t>(t.tv_sec) * kNsPerSecond + static_cast<uint64_t>(t.tv_nsec);
}
timespec from_ns(uint64_t ns) {
  timespec t;
  t.tv_sec = static_cast<time_t>(ns / kNsPerSecond);
  t.tv_nsec = static_cast<long>(ns % kNsPerSecond);
  return t;
}
uint64_t monotonic_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);  // vDSO: no system call
  return to_ns(t);
}

}  // namespace

bool CpuSampler::start(vm::Profiling& profiling, unsigned hz, std::string& why) {
  stop();
  if (hz == 0 || hz > 1000000) {
    why = "sampling rate must be between 1 and 1000000 Hz, got " + std::to_string(hz);
    return false;
  }
  __atomic_store_n(&stopping_, 0u, __ATOMIC_RELAXED);
  try {
    thread_ = std::thread(&CpuSampler::tick, this, std::ref(profiling), kNsPerSecond / hz);
  } catch (const std::system_error& e) {
    why = std::string("cannot start the sampling thread: ") + e.what();
    return false;
  }
  return true;
}

bool CpuSampler::sleep_until(const timespec& deadline) {
  while (!__atomic_load_n(&stopping_, __ATOMIC_ACQUIRE)) {
    // FUTEX_WAIT_BITSET's timeout is absolute, on CLOCK_MONOTONIC. It
    // returns at once (EAGAIN) if stop() already changed the word, and
    // early on stop()'s wake; EINTR and spurious wake-ups go round again.
    long r = syscall(SYS_futex, &stopping_, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0u, &deadline, nullptr,
                     FUTEX_BITSET_MATCH_ANY);
    if (r == -1 && errno == ETIMEDOUT) return true;
    // A futex this process may not use (a seccomp filter, ENOSYS): sleep
    // without it rather than spin; stop() then waits out the tick.
    if (r == -1 && errno != EINTR && errno != EAGAIN) {
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr);
      return !__atomic_load_n(&stopping_, __ATOMIC_ACQUIRE);
    }
  }
  return false;
}

void CpuSampler::tick(vm::Profiling& profiling, uint64_t period_ns) {
  // Absolute deadlines, so the rate does not drift by the wake-up latency.
  uint64_t next = monotonic_ns() + period_ns;
  while (sleep_until(from_ns(next))) {
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
        __atomic_store_n(&profiling.tick_cpu, to_ns(ts), __ATOMIC_RELEASE);
      profiling.raise();
    }
    next += period_ns;
    // Behind by more than a period (the thread was not scheduled): skip the
    // missed ticks rather than raise them back to back.
    const uint64_t now = monotonic_ns();
    if (next < now) next = now + period_ns;
  }
}

void CpuSampler::stop() {
  if (!thread_.joinable()) return;
  __atomic_store_n(&stopping_, 1u, __ATOMIC_RELEASE);
  syscall(SYS_futex, &stopping_, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, nullptr, nullptr, 0);
  thread_.join();
}

}  // namespace wzvm::profiler
