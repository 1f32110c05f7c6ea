// poll_oneoff: clock and fd subscriptions
// (https://github.com/WebAssembly/WASI/blob/main/legacy/preview1/docs.md#poll_oneoff).
// One ppoll(2) over the fd subscriptions, with the earliest clock deadline as
// its timeout (nanosecond precision, unlike poll's milliseconds); a sleep on
// CLOCK_MONOTONIC when there are only clocks (wasi-libc's sleep/nanosleep).
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

struct Event {
  uint64_t userdata = 0;
  Errno error = Errno::success;
  uint8_t type = 0;
  uint64_t nbytes = 0;
  uint16_t flags = 0;
};

// Bytes ready to read: FIONREAD for pipes, sockets and ttys; for a regular
// file, what lies past the current offset.
uint64_t readable_bytes(int fd) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    off_t pos = lseek(fd, 0, SEEK_CUR);
    return pos >= 0 && st.st_size > pos ? uint64_t(st.st_size - pos) : 0;
  }
  int n = 0;
  return ioctl(fd, FIONREAD, &n) == 0 && n > 0 ? uint64_t(n) : 0;
}

}  // namespace

Errno Wasi::poll_oneoff(Call& c) {
  uint32_t in = c.u32(0), out = c.u32(1), n = c.u32(2), nevents_ptr = c.u32(3);
  if (n == 0) return Errno::einval;
  if (!c.mem.check(in, uint64_t(n) * layout::subscription_size) ||
      !c.mem.check(out, uint64_t(n) * layout::event_size) || !c.mem.check(nevents_ptr, 4))
    return Errno::efault;

  std::vector<Event> ready;            // events known before waiting (bad fds, bad clocks)
  std::vector<struct pollfd> pfds;
  std::vector<Event> fd_events;        // parallel to pfds
  struct ClockSub {
    uint64_t userdata;
    int64_t deadline;  // CLOCK_MONOTONIC ns
  };
  std::vector<ClockSub> clocks;
  const int64_t start = now_ns(CLOCK_MONOTONIC);

  for (uint32_t i = 0; i < n; ++i) {
    uint64_t s = in + uint64_t(i) * layout::subscription_size;
    uint64_t userdata = 0;
    uint8_t tag = 0;
    c.mem.load(s, userdata);
    c.mem.load(s + 8, tag);
    if (tag == eventtype::clock) {
      uint32_t id = 0;
      uint64_t timeout = 0;
      uint16_t flags = 0;
      c.mem.load(s + 16, id);
      c.mem.load(s + 24, timeout);
      c.mem.load(s + 40, flags);
      clockid_t cid;
      switch (id) {
        case clockid::realtime: cid = CLOCK_REALTIME; break;
        case clockid::monotonic: cid = CLOCK_MONOTONIC; break;
        case clockid::process_cputime: cid = CLOCK_PROCESS_CPUTIME_ID; break;
        case clockid::thread_cputime: cid = CLOCK_THREAD_CPUTIME_ID; break;
        default: ready.push_back({userdata, Errno::einval, eventtype::clock, 0, 0}); continue;
      }
      // Every clock becomes a monotonic deadline. For the CPU-time clocks that
      // is an approximation: while the guest waits here it uses no CPU.
      uint64_t remaining = timeout;
      if (flags & 1) {  // subscription_clock_abstime
        int64_t now = now_ns(cid);
        remaining = int64_t(timeout) > now ? uint64_t(int64_t(timeout) - now) : 0;
      }
      clocks.push_back({userdata, sat_add(start, remaining)});
    } else if (tag == eventtype::fd_read || tag == eventtype::fd_write) {
      uint32_t fd = 0;
      c.mem.load(s + 16, fd);
      Fd* f;
      Errno e = get(fd, rights::poll_fd_readwrite, f);
      if (e != Errno::success) {
        ready.push_back({userdata, e, tag, 0, 0});
        continue;
      }
      pfds.push_back({f->host, static_cast<short>(tag == eventtype::fd_read ? POLLIN : POLLOUT), 0});
      fd_events.push_back({userdata, Errno::success, tag, 0, 0});
    } else {
      return Errno::einval;
    }
  }

  int64_t deadline = INT64_MAX;
  for (const ClockSub& cs : clocks) deadline = std::min(deadline, cs.deadline);

  std::vector<Event> events = ready;
  for (;;) {
    int64_t now = now_ns(CLOCK_MONOTONIC);
    timespec ts{0, 0};
    bool wait_forever = ready.empty() && clocks.empty();
    if (ready.empty() && !clocks.empty()) {
      int64_t left = std::max<int64_t>(0, deadline - now);
      ts = timespec{static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
    }
    int r;
    if (pfds.empty()) {
      if (!ready.empty() || clocks.empty()) break;  // nothing to wait for
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
    for (size_t i = 0; i < pfds.size(); ++i) {
      short re = pfds[i].revents;
      if (!re) continue;
      Event ev = fd_events[i];
      if (re & POLLNVAL) {
        ev.error = Errno::ebadf;
      } else {
        if (re & POLLHUP) ev.flags |= 1;  // fd_readwrite_hangup
        if (ev.type == eventtype::fd_read) ev.nbytes = readable_bytes(pfds[i].fd);
        if ((re & POLLERR) && !(re & (POLLIN | POLLOUT))) ev.error = Errno::eio;
      }
      events.push_back(ev);
    }
    break;
  }
  // Clocks that have expired by now fire too (all of them when nothing else did).
  int64_t now = now_ns(CLOCK_MONOTONIC);
  for (const ClockSub& cs : clocks)
    if (cs.deadline <= now) events.push_back({cs.userdata, Errno::success, eventtype::clock, 0, 0});

  for (size_t i = 0; i < events.size(); ++i) {
    uint8_t rec[layout::event_size] = {};
    const Event& ev = events[i];
    uint16_t err = static_cast<uint16_t>(ev.error);
    std::memcpy(rec, &ev.userdata, 8);
    std::memcpy(rec + 8, &err, 2);
    rec[10] = ev.type;
    std::memcpy(rec + 16, &ev.nbytes, 8);
    std::memcpy(rec + 24, &ev.flags, 2);
    std::memcpy(c.mem.raw(out + uint64_t(i) * layout::event_size), rec, sizeof rec);
  }
  c.mem.store<uint32_t>(nevents_ptr, static_cast<uint32_t>(events.size()));
  return Errno::success;
}

}  // namespace wzvm::wasi
