// memory.atomic.wait/notify: a parking lot. Waiters are kept in buckets by
// (memory, address) hash; each bucket has one mutex, and each waiter its own
// condition variable, so a notify wakes exactly the waiters it counts, in
// the order they parked (the proposal's queue per address), and the threads
// waiting on other addresses of the bucket sleep on.
#include "vm/atomics.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>

#include "vm/runtime.h"

namespace wzvm::vm {
namespace {

struct Waiter {
  const MemInst* mem;
  uint64_t ea;
  std::condition_variable cv;
  bool woken = false;
};

struct Bucket {
  std::mutex mu;
  std::list<Waiter*> queue;  // parking order
};

constexpr size_t kBuckets = 64;
Bucket g_buckets[kBuckets];
std::atomic<bool> g_interrupted{false};
std::atomic<uint32_t> g_parked{0};

Bucket& bucket_of(const MemInst* mem, uint64_t ea) {
  size_t h = std::hash<const void*>()(mem) ^ (ea * 0x9E3779B97F4A7C15ull >> 7);
  return g_buckets[h % kBuckets];
}

template <class T>
uint32_t wait(MemInst& mem, uint64_t ea, T expected, int64_t timeout_ns) {
  Bucket& b = bucket_of(&mem, ea);
  std::unique_lock lock(b.mu);
  if (__atomic_load_n(reinterpret_cast<T*>(mem.data + ea), __ATOMIC_SEQ_CST) != expected) return 1;
  if (g_interrupted.load()) return 2;
  Waiter w{&mem, ea, {}, false};
  auto it = b.queue.insert(b.queue.end(), &w);
  g_parked.fetch_add(1);
  auto woken = [&] { return w.woken || g_interrupted.load(); };
  if (timeout_ns < 0) {
    w.cv.wait(lock, woken);
  } else {
    // steady_clock: a wall-clock change must not shorten or stretch a timeout.
    w.cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns), woken);
  }
  g_parked.fetch_sub(1);
  // A notify removes the waiters it wakes; a timeout or interrupt leaves it.
  if (!w.woken) b.queue.erase(it);
  return w.woken ? 0 : 2;
}

}  // namespace

uint32_t atomic_wait32(MemInst& mem, uint64_t ea, uint32_t expected, int64_t timeout_ns) {
  return wait<uint32_t>(mem, ea, expected, timeout_ns);
}

uint32_t atomic_wait64(MemInst& mem, uint64_t ea, uint64_t expected, int64_t timeout_ns) {
  return wait<uint64_t>(mem, ea, expected, timeout_ns);
}

uint32_t atomic_notify(MemInst& mem, uint64_t ea, uint32_t count) {
  if (!mem.type.limits.shared || count == 0) return 0;
  Bucket& b = bucket_of(&mem, ea);
  std::lock_guard lock(b.mu);
  uint32_t n = 0;
  for (auto it = b.queue.begin(); it != b.queue.end() && n < count;) {
    Waiter* w = *it;
    if (w->mem != &mem || w->ea != ea) {
      ++it;
      continue;
    }
    it = b.queue.erase(it);
    w->woken = true;
    // Under the bucket's lock: the waiter cannot leave (and destroy its
    // condition variable) before this returns.
    w->cv.notify_one();
    ++n;
  }
  return n;
}

void interrupt_waits() {
  g_interrupted.store(true);
  for (Bucket& b : g_buckets) {
    std::lock_guard lock(b.mu);
    for (Waiter* w : b.queue) w->cv.notify_one();
  }
}

void reset_waits() { g_interrupted.store(false); }

uint32_t waiters_parked() { return g_parked.load(); }

}  // namespace wzvm::vm
