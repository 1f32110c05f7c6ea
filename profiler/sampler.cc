#include "profiler/sampler.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace wzvm::profiler {
namespace {

// SIGPROF: the signal profilers conventionally own. Each timer carries the
// address of its Profiling in si_value, so several threads can be sampled at
// once with one process-wide handler.
constexpr int kSignal = SIGPROF;

void on_tick(int, siginfo_t* info, void*) {
  // Only our timers' signals carry a Profiling: a SIGPROF from elsewhere
  // (setitimer, kill) has SI_KERNEL/SI_USER and is ignored.
  if (info->si_code != SI_TIMER) return;
  if (auto* p = static_cast<vm::Profiling*>(info->si_value.sival_ptr)) p->raise();
}

bool install_handler(std::string& why) {
  static std::once_flag once;
  static int error = 0;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_tick;
    // SA_RESTART: host functions blocked in read(2) and the like resume
    // instead of failing with EINTR 1000 times a second.
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kSignal, &sa, nullptr) != 0) error = errno;
  });
  if (error) why = std::string("cannot install the SIGPROF handler: ") + std::strerror(error);
  return error == 0;
}

}  // namespace

bool CpuSampler::start(vm::Profiling& profiling, unsigned hz, std::string& why, pid_t tid) {
  stop();
  if (hz == 0 || hz > 1000000) {
    why = "sampling rate must be between 1 and 1000000 Hz, got " + std::to_string(hz);
    return false;
  }
  if (!install_handler(why)) return false;
  struct sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  // SIGEV_THREAD_ID: the signal goes to the interpreter thread itself, not to
  // any thread of the process.
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev._sigev_un._tid = tid ? tid : static_cast<pid_t>(syscall(SYS_gettid));
  sev.sigev_signo = kSignal;
  sev.sigev_value.sival_ptr = &profiling;
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer_) != 0) {
    why = std::string("cannot create the sampling timer: ") + std::strerror(errno);
    return false;
  }
  const long period_ns = static_cast<long>(1000000000ull / hz);
  struct itimerspec its;
  its.it_interval.tv_sec = period_ns / 1000000000;
  its.it_interval.tv_nsec = period_ns % 1000000000;
  its.it_value = its.it_interval;
  if (timer_settime(timer_, 0, &its, nullptr) != 0) {
    why = std::string("cannot start the sampling timer: ") + std::strerror(errno);
    timer_delete(timer_);
    return false;
  }
  running_ = true;
  return true;
}

void CpuSampler::stop() {
  if (!running_) return;
  timer_delete(timer_);
  running_ = false;
}

}  // namespace wzvm::profiler
