#pragma once
// The clocks the profilers read. CLOCK_THREAD_CPUTIME_ID has 1 ns resolution
// here (a system call, ~210 ns: read it at samples and host-call boundaries,
// never per instruction: measured on Debian 12's kernel in a VM).

#include <time.h>

#include <cstdint>

namespace wzvm::profiler {

inline uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}
inline uint64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
inline uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline uint64_t unix_ns() { return clock_ns(CLOCK_REALTIME); }

}  // namespace wzvm::profiler
