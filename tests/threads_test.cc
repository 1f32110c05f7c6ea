// threads: memory.atomic.wait32/wait64/notify block and wake real OS
// threads (vm/atomics.cc). The spec suite only checks waits that return at
// once; these block a guest and wake it from a host thread or from other
// guest threads, each with its own vm::Thread (vm::ThreadScope), and check
// timeouts against the clock.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vm/atomics.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/runtime.h"

namespace wzvm {
namespace {

using vm::Value;
using Clock = std::chrono::steady_clock;

std::vector<uint8_t> read_bytes(const std::string& name) {
  std::ifstream in(std::string(WZVM_TESTDATA_DIR) + "/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Guest {
  vm::Store store;
  vm::Instance* inst = nullptr;
  explicit Guest(const std::string& file) {
    vm::reset_waits();  // a test before may have ended with interrupt_waits()
    auto m = vm::load_module(read_bytes(file));
    EXPECT_TRUE(m) << m.error().to_string();
    if (!m) return;
    auto i = store.instantiate(m.value(), {});
    EXPECT_TRUE(i) << i.error().to_string();
    if (i) inst = i.value();
  }
  // Calls `name` on the calling OS thread (its own vm::Thread unless main).
  vm::Trap call(const std::string& name, std::vector<Value> args, std::vector<Value>& results) {
    return store.invoke(inst->exported_func(name), args, results);
  }
  uint32_t call_i32(const std::string& name, std::vector<Value> args) {
    std::vector<Value> results;
    vm::Trap t = call(name, std::move(args), results);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return results.empty() ? UINT32_MAX : results[0].i32;
  }
  vm::MemInst& memory() { return *inst->exported_memory("memory"); }
};

Value i32(uint32_t v) { return Value::from_i32(v); }
Value i64(uint64_t v) { return Value::from_i64(v); }

// Until `n` threads are parked in a wait (bounded: a bug must fail, not hang).
bool wait_parked(uint32_t n) {
  for (auto end = Clock::now() + std::chrono::seconds(10); Clock::now() < end;) {
    if (vm::waiters_parked() >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(AtomicWait, HostThreadWakesAWaitingGuest) {
  Guest g("proposals_threads.wasm");
  ASSERT_NE(g.inst, nullptr);
  std::atomic<uint32_t> woken{UINT32_MAX};
  std::thread host([&] {
    if (!wait_parked(1)) return;
    woken = vm::atomic_notify(g.memory(), 0, 1);
  });
  // Blocks forever (timeout -1) unless the host thread's notify wakes it.
  uint32_t r = g.call_i32("wait32", {i32(0), i32(0), i64(UINT64_MAX)});
  host.join();
  EXPECT_EQ(r, 0u);  // "ok": woken by a notify
  EXPECT_EQ(woken.load(), 1u);
  EXPECT_EQ(vm::waiters_parked(), 0u);
}

TEST(AtomicWait, TimesOutAfterTheTimeout) {
  Guest g("proposals_threads.wasm");
  ASSERT_NE(g.inst, nullptr);
  for (const char* f : {"wait32", "wait64"}) {
    auto t0 = Clock::now();
    Value expected = std::string(f) == "wait32" ? i32(0) : i64(0);
    uint32_t r = g.call_i32(f, {i32(8), expected, i64(100'000'000)});  // 100 ms
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    EXPECT_EQ(r, 2u) << f;  // "timed-out"
    EXPECT_GE(ms, 100) << f;
    EXPECT_LT(ms, 5000) << f;
  }
  // Timeout 0 returns at once.
  EXPECT_EQ(g.call_i32("wait32", {i32(0), i32(0), i64(0)}), 2u);
}

TEST(AtomicWait, NotEqualReturnsAtOnce) {
  Guest g("proposals_threads.wasm");
  ASSERT_NE(g.inst, nullptr);
  g.call_i32("add", {i32(0), i32(5)});
  // A wait for a value that is not there would block forever if it blocked.
  EXPECT_EQ(g.call_i32("wait32", {i32(0), i32(0), i64(UINT64_MAX)}), 1u);
  EXPECT_EQ(g.call_i32("wait64", {i32(0), i64(0), i64(UINT64_MAX)}), 1u);
  EXPECT_EQ(g.call_i32("notify", {i32(0), i32(1)}), 0u);  // nobody waits
}

// Three guest threads wait on one address; a guest notify for 2 wakes two
// and says so, the next one the last.
TEST(AtomicWait, GuestNotifyCountsTheWaitersItWakes) {
  Guest g("proposals_threads.wasm");
  ASSERT_NE(g.inst, nullptr);
  std::vector<std::thread> waiters;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      vm::Thread th(g.store.limits());
      vm::ThreadScope scope(g.store, th);
      std::vector<Value> results;
      vm::Trap t = g.call("wait32", {i32(16), i32(0), i64(UINT64_MAX)}, results);
      if (!t && results.size() == 1 && results[0].i32 == 0) ok++;
    });
  }
  ASSERT_TRUE(wait_parked(3));
  EXPECT_EQ(g.call_i32("notify", {i32(16), i32(2)}), 2u);
  // A notify of another address wakes nobody.
  EXPECT_EQ(g.call_i32("notify", {i32(20), i32(5)}), 0u);
  ASSERT_TRUE(wait_parked(1));
  EXPECT_EQ(g.call_i32("notify", {i32(16), i32(5)}), 1u);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(ok.load(), 3);
}

// Guest threads racing on one counter with atomic adds lose nothing.
TEST(AtomicWait, AtomicAddsFromSeveralThreadsAreExact) {
  Guest g("proposals_threads.wasm");
  ASSERT_NE(g.inst, nullptr);
  constexpr int kThreads = 4, kAdds = 20000;
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&] {
      vm::Thread th(g.store.limits());
      vm::ThreadScope scope(g.store, th);
      for (int k = 0; k < kAdds; ++k) g.call_i32("add", {i32(32), i32(1)});
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(g.call_i32("add", {i32(32), i32(0)}), static_cast<uint32_t>(kThreads * kAdds));
}

TEST(AtomicWait, InterruptWakesEveryWaiter) {
  Guest g("proposals_threads.wasm");
  ASSERT_NE(g.inst, nullptr);
  std::thread t([&] {
    vm::Thread th(g.store.limits());
    vm::ThreadScope scope(g.store, th);
    std::vector<Value> results;
    g.call("wait32", {i32(0), i32(0), i64(UINT64_MAX)}, results);
  });
  ASSERT_TRUE(wait_parked(1));
  vm::interrupt_waits();  // what ending a wasi-threads process does
  t.join();
  // Until reset, waits return "timed-out" at once.
  EXPECT_EQ(g.call_i32("wait32", {i32(0), i32(0), i64(UINT64_MAX)}), 2u);
  vm::reset_waits();
}

TEST(AtomicWait, StoreLimitCapsTheTimeout) {
  vm::reset_waits();
  vm::StoreLimits limits;
  limits.max_wait_ns = 20'000'000;  // 20 ms
  vm::Store store(limits);
  auto m = vm::load_module(read_bytes("proposals_threads.wasm"));
  ASSERT_TRUE(m);
  auto inst = store.instantiate(m.value(), {});
  ASSERT_TRUE(inst);
  std::vector<Value> results;
  auto t0 = Clock::now();
  // Forever, as the guest asks, is 20 ms under the limit.
  const Value args[] = {i32(0), i32(0), i64(UINT64_MAX)};
  vm::Trap t = store.invoke((*inst)->exported_func("wait32"), args, results);
  ASSERT_FALSE(t) << t.message;
  EXPECT_EQ(results[0].i32, 2u);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(20));
}

TEST(AtomicWait, UnsharedMemory) {
  Guest g("proposals_threads_unshared.wasm");
  ASSERT_NE(g.inst, nullptr);
  std::vector<Value> results;
  vm::Trap t = g.call("wait32", {}, results);
  EXPECT_EQ(t.code, vm::TrapCode::ExpectedSharedMemory);
  EXPECT_EQ(t.message, "expected shared memory");
  EXPECT_EQ(g.call_i32("notify", {}), 0u);
  t = g.call("misaligned", {}, results);
  EXPECT_EQ(t.code, vm::TrapCode::UnalignedAtomic);
  EXPECT_EQ(t.message, "unaligned atomic");
}

TEST(SharedMemory, NeedsAMaximumAndTheThreadsFeature) {
  // (module (memory 1 shared)): flag 2 without a maximum.
  std::vector<uint8_t> no_max = {0, 'a', 's', 'm', 1, 0, 0, 0, 5, 3, 1, 2, 1};
  auto m = vm::load_module(no_max);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind, vm::Error::Kind::Invalid);
  EXPECT_NE(m.error().message.find("shared memory must have maximum"), std::string::npos)
      << m.error().to_string();
  // (module (memory 1 2 shared)) loads with threads, not without.
  std::vector<uint8_t> with_max = {0, 'a', 's', 'm', 1, 0, 0, 0, 5, 4, 1, 3, 1, 2};
  EXPECT_TRUE(vm::load_module(with_max));
  vm::LoadOptions lo;
  lo.features.set(vm::Feature::Threads, false);
  EXPECT_FALSE(vm::load_module(with_max, lo));
}

}  // namespace
}  // namespace wzvm
