// poll_oneoff: clock and fd subscriptions
// (https://github.com/WebAssembly/WASI/blob/main/legacy/preview1/docs.md#poll_oneoff).
// One ppoll(2) over the fd subscriptions, with the earliest clock deadline as
// its timeout (nanosecond precision, unlike poll's milliseconds); a sleep on
// CLOCK_MONOTONIC when there are only clocks (wasi-libc's sleep/nanosleep).
// In deterministic mode (wasi/deterministic.h) the clocks are virtual and
// nothing is raced against time (poll_virtual).
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wasi/wasi.h"

namespace wzvm::wasi {

namespace {

int64_t now_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t sat_add(int64_t a, uint64_t b) {
  return b > uint64_t(INT64_MAX - a) ? INT64_MAX : a + static_cast<int64_t>(b);
}

// Bytes ready to read: FIONREAD for pipes, sockets and ttys (unless
// `files_only`: how much a pipe holds depends on timing); for a regular file,
// what lies past the current offset.
uint64_t readable_bytes(int fd, bool files_only) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    off_t pos = lseek(fd, 0, SEEK_CUR);
    return pos >= 0 && st.st_size > pos ? uint64_t(st.st_size - pos) : 0;
  }
  if (files_only) return 0;
  int n = 0;
  return ioctl(fd, FIONREAD, &n) == 0 && n > 0 ? uint64_t(n) : 0;
}

}  // namespace

// One subscription as the guest wrote it (layout::subscription_size).
struct PollSub {
  uint64_t userdata = 0;
  uint8_t tag = 0;
  uint32_t clock = 0;  // clock: its id, timeout, subscription_clock_abstime
  uint64_t timeout = 0;
  bool abstime = false;
  uint32_t fd = 0;  // fd_read / fd_write
};

struct PollEvent {
  uint64_t userdata = 0;
  Errno error = Errno::success;
  uint8_t type = 0;
  uint64_t nbytes = 0;
  uint16_t flags = 0;
};

namespace {

void write_events(const Call& c, uint32_t out, uint32_t nevents_ptr, const std::vector<PollEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    uint8_t rec[layout::event_size] = {};
    const PollEvent& ev = events[i];
    uint16_t err = static_cast<uint16_t>(ev.error);
    std::memcpy(rec, &ev.userdata, 8);
    std::memcpy(rec + 8, &err, 2);
    rec[10] = ev.type;
    std::memcpy(rec + 16, &ev.nbytes, 8);
    std::memcpy(rec + 24, &ev.flags, 2);
    std::memcpy(c.mem.raw(out + uint64_t(i) * layout::event_size), rec, sizeof rec);
  }
  c.mem.store<uint32_t>(nevents_ptr, static_cast<uint32_t>(events.size()));
}

// An fd subscription's event once ppoll reported `re` for it.
PollEvent fd_event(const PollSub& s, short re, int host, bool deterministic) {
  PollEvent ev{s.userdata, Errno::success, s.tag, 0, 0};
  if (re & POLLNVAL) {
    ev.error = Errno::ebadf;
  } else {
    if (re & POLLHUP) ev.flags |= 1;  // fd_readwrite_hangup
    if (ev.type == eventtype::fd_read) ev.nbytes = readable_bytes(host, deterministic);
    if ((re & POLLERR) && !(re & (POLLIN | POLLOUT))) ev.error = Errno::eio;
  }
  return ev;
}

}  // namespace

Errno Wasi::poll_oneoff(Call& c) {
  uint32_t in = c.u32(0), out = c.u32(1), n = c.u32(2), nevents_ptr = c.u32(3);
  if (n == 0) return Errno::einval;
  if (!c.mem.check(in, uint64_t(n) * layout::subscription_size) ||
      !c.mem.check(out, uint64_t(n) * layout::event_size) || !c.mem.check(nevents_ptr, 4))
    return Errno::efault;
  std::vector<PollSub> subs(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t at = in + uint64_t(i) * layout::subscription_size;
    PollSub& s = subs[i];
    c.mem.load(at, s.userdata);
    c.mem.load(at + 8, s.tag);
    if (s.tag == eventtype::clock) {
      uint16_t flags = 0;
      c.mem.load(at + 16, s.clock);
      c.mem.load(at + 24, s.timeout);
      c.mem.load(at + 40, flags);
      s.abstime = flags & 1;  // subscription_clock_abstime
    } else if (s.tag == eventtype::fd_read || s.tag == eventtype::fd_write) {
      c.mem.load(at + 16, s.fd);
    } else {
      return Errno::einval;
    }
  }

  std::vector<PollEvent> events;  // known before waiting (bad fds, bad clocks), then what fired
  std::vector<struct pollfd> pfds;
  std::vector<const PollSub*> fd_subs;  // parallel to pfds
  std::vector<const PollSub*> clock_subs;
  for (const PollSub& s : subs) {
    if (s.tag == eventtype::clock) {
      uint64_t unused;
      bool known = det_ ? det_->now(s.clock, 0, unused) : s.clock <= clockid::thread_cputime;
      if (!known) events.push_back({s.userdata, Errno::einval, eventtype::clock, 0, 0});
      else clock_subs.push_back(&s);
      continue;
    }
    Fd* f;
    Errno e = get(s.fd, rights::poll_fd_readwrite, f);
    if (e != Errno::success) {
      events.push_back({s.userdata, e, s.tag, 0, 0});
      continue;
    }
    pfds.push_back({f->host, static_cast<short>(s.tag == eventtype::fd_read ? POLLIN : POLLOUT), 0});
    fd_subs.push_back(&s);
  }
  Errno e = det_ ? poll_virtual(c, events, pfds, fd_subs, clock_subs)
                 : poll_host(events, pfds, fd_subs, clock_subs);
  if (e != Errno::success || !c.trap.empty()) return e;
  write_events(c, out, nevents_ptr, events);
  return Errno::success;
}

// Real time: one ppoll over the fds with the earliest clock deadline as its
// timeout, or a sleep when there are only clocks. Every clock becomes a
// CLOCK_MONOTONIC deadline; for the CPU-time clocks that is an approximation
// (while the guest waits here it uses no CPU).
Errno Wasi::poll_host(std::vector<PollEvent>& events, std::vector<struct pollfd>& pfds,
                      const std::vector<const PollSub*>& fd_subs,
                      const std::vector<const PollSub*>& clock_subs) {
  const int64_t start = now_ns(CLOCK_MONOTONIC);
  static constexpr clockid_t kHost[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID,
                                        CLOCK_THREAD_CPUTIME_ID};
  std::vector<int64_t> deadlines;
  int64_t deadline = INT64_MAX;
  for (const PollSub* s : clock_subs) {
    uint64_t remaining = s->timeout;
    if (s->abstime) {
      int64_t now = now_ns(kHost[s->clock]);
      remaining = int64_t(s->timeout) > now ? uint64_t(int64_t(s->timeout) - now) : 0;
    }
    deadlines.push_back(sat_add(start, remaining));
    deadline = std::min(deadline, deadlines.back());
  }
  const bool ready = !events.empty();
  for (;;) {
    int64_t now = now_ns(CLOCK_MONOTONIC);
    timespec ts{0, 0};
    bool wait_forever = !ready && clock_subs.empty();
    if (!ready && !clock_subs.empty()) {
      int64_t left = std::max<int64_t>(0, deadline - now);
      ts = timespec{static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
    }
    int r;
    if (pfds.empty()) {
      if (ready || clock_subs.empty()) break;  // nothing to wait for
      timespec abs{static_cast<time_t>(deadline / 1000000000), static_cast<long>(deadline % 1000000000)};
      r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, nullptr);
      if (r == EINTR) continue;
      if (r != 0) return from_host_errno(r);
      break;
    }
    r = ppoll(pfds.data(), pfds.size(), wait_forever ? nullptr : &ts, nullptr);
    if (r < 0) {
      if (errno == EINTR) continue;
      return from_host_errno(errno);
    }
    for (size_t i = 0; i < pfds.size(); ++i)
      if (pfds[i].revents) events.push_back(fd_event(*fd_subs[i], pfds[i].revents, pfds[i].fd, false));
    break;
  }
  // Clocks that have expired by now fire too (all of them when nothing else did).
  int64_t now = now_ns(CLOCK_MONOTONIC);
  for (size_t i = 0; i < clock_subs.size(); ++i)
    if (deadlines[i] <= now)
      events.push_back({clock_subs[i]->userdata, Errno::success, eventtype::clock, 0, 0});
  return Errno::success;
}

// Deterministic mode: what fires may not depend on how fast anything is.
// The fds are waited for until every one of them is ready (no timeout), and
// then all of them fire; a clock fires only when nothing else did, by
// advancing the virtual clock to the earliest deadline instead of sleeping.
// So a guest polling a file or a finished pipe sees the same events on every
// run; one polling a terminal waits for it as a blocking read would.
Errno Wasi::poll_virtual(Call& c, std::vector<PollEvent>& events, std::vector<struct pollfd>& pfds,
                         const std::vector<const PollSub*>& fd_subs,
                         const std::vector<const PollSub*>& clock_subs) {
  if (!pfds.empty()) {
    std::vector<short> seen(pfds.size(), 0);
    std::vector<size_t> waiting(pfds.size());
    for (size_t i = 0; i < waiting.size(); ++i) waiting[i] = i;
    while (!waiting.empty()) {
      std::vector<struct pollfd> wait;
      for (size_t i : waiting) wait.push_back(pfds[i]);
      int r = ppoll(wait.data(), wait.size(), nullptr, nullptr);
      if (r < 0) {
        if (errno == EINTR) continue;
        return from_host_errno(errno);
      }
      std::vector<size_t> still;
      for (size_t k = 0; k < waiting.size(); ++k) {
        if (wait[k].revents) seen[waiting[k]] = wait[k].revents;
        else still.push_back(waiting[k]);
      }
      waiting.swap(still);
    }
    for (size_t i = 0; i < pfds.size(); ++i)
      events.push_back(fd_event(*fd_subs[i], seen[i], pfds[i].fd, true));
  }
  if (!events.empty() || clock_subs.empty()) return Errno::success;
  uint64_t ran;
  if (!executed(c, ran)) return Errno::success;
  // Each deadline on the monotonic clock: a relative timeout from now, an
  // absolute one converted from its clock's reading.
  std::vector<uint64_t> deadlines;
  uint64_t mono = 0, earliest = UINT64_MAX;
  det_->now(clockid::monotonic, ran, mono);
  for (const PollSub* s : clock_subs) {
    uint64_t d = mono + s->timeout;
    if (d < mono) d = UINT64_MAX;
    if (s->abstime) {
      uint64_t now = 0;
      det_->now(s->clock, ran, now);
      d = s->timeout > now ? mono + (s->timeout - now) : mono;
    }
    deadlines.push_back(d);
    earliest = std::min(earliest, d);
  }
  det_->sleep_until(earliest, ran);
  for (size_t i = 0; i < clock_subs.size(); ++i)
    if (deadlines[i] <= earliest)
      events.push_back({clock_subs[i]->userdata, Errno::success, eventtype::clock, 0, 0});
  return Errno::success;
}

}  // namespace wzvm::wasi
