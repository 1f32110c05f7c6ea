// Fuel and interrupts: limits that reuse the profiling hooks (vm/profiling.h).

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <tuple>

#include "vm/interp.h"

namespace wzvm::vm {
namespace {

// (module
//   (func $leaf (param i32) (result i32)
//     local.get 0  i32.const 1  i32.add)                      ;; 3 instructions
//   (func (export "run") (param $n i32) (result i32)
//     (local $i i32) (local $acc i32)
//     block
//       loop
//         local.get $i  local.get $n  i32.ge_s  br_if 1      ;; 4
//         local.get $acc  call $leaf  local.set $acc         ;; 3
//         local.get $i  i32.const 1  i32.add  local.set $i   ;; 4
//         br 0                                               ;; 1
//       end
//     end
//     local.get $acc))                                       ;; 1
// run(n) executes 12n + 5 instructions of its own and 3n in $leaf.
const std::vector<uint8_t> kLoop = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f,
    0x03, 0x03, 0x02, 0x00, 0x00, 0x07, 0x07, 0x01, 0x03, 0x72, 0x75, 0x6e, 0x00, 0x01, 0x0a, 0x2c,
    0x02, 0x07, 0x00, 0x20, 0x00, 0x41, 0x01, 0x6a, 0x0b, 0x22, 0x01, 0x02, 0x7f, 0x02, 0x40, 0x03,
    0x40, 0x20, 0x01, 0x20, 0x00, 0x4e, 0x0d, 0x01, 0x20, 0x02, 0x10, 0x00, 0x21, 0x02, 0x20, 0x01,
    0x41, 0x01, 0x6a, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b, 0x20, 0x02, 0x0b};

struct LoopRun {
  Trap trap;
  uint64_t counted = 0;
  uint64_t fuel_left = 0;
};

LoopRun run_loop(int32_t n, bool fuel_limited, uint64_t fuel,
                 std::chrono::milliseconds interrupt_after = {}) {
  LoadOptions options;
  options.count_instructions = true;
  options.fuel = fuel_limited;
  auto module = load_module(kLoop, options);
  EXPECT_TRUE(module.ok());
  Store store;
  auto inst = store.instantiate(*module, {});
  EXPECT_TRUE(inst.ok());
  Profiling p;
  p.count_instructions = true;
  p.fuel = fuel;
  store.thread()->profiling = &p;
  std::thread interrupter;
  if (interrupt_after.count() > 0)
    interrupter = std::thread([&p, interrupt_after] {
      std::this_thread::sleep_for(interrupt_after);
      set_flag(p.interrupt_requested, 1);
      p.raise();
    });
  Value arg = Value::from_i32(static_cast<uint32_t>(n));
  std::vector<Value> results;
  LoopRun r;
  r.trap = store.invoke((*inst)->exported_func("run"), {&arg, 1}, results);
  if (interrupter.joinable()) interrupter.join();
  for (uint64_t c : p.instruction_totals()) r.counted += c;
  r.fuel_left = p.fuel;
  return r;
}

TEST(Fuel, ExactBudgetRunsToCompletion) {
  LoopRun r = run_loop(10, true, 155);  // 12*10+5 + 3*10
  EXPECT_FALSE(r.trap) << r.trap.message;
  EXPECT_EQ(r.counted, 155u);
  EXPECT_EQ(r.fuel_left, 0u);
}

TEST(Fuel, OneShortTrapsBeforeTheLastInstruction) {
  LoopRun r = run_loop(10, true, 154);
  EXPECT_EQ(r.trap.code, TrapCode::OutOfFuel);
  EXPECT_EQ(r.trap.message, "all fuel consumed");
  EXPECT_EQ(r.counted, 154u);  // everything but the final local.get
}

TEST(Fuel, NeverRunsPastTheBudget) {
  for (uint64_t budget : {0u, 1u, 7u, 50u, 100u, 149u}) {
    LoopRun r = run_loop(10, true, budget);
    EXPECT_EQ(r.trap.code, TrapCode::OutOfFuel) << budget;
    EXPECT_LE(r.counted, budget);
    EXPECT_EQ(r.counted + r.fuel_left, budget);  // what ran is exactly what was charged
  }
}

TEST(Interrupt, StopsAnEndlessLoopAtASafePoint) {
  auto t0 = std::chrono::steady_clock::now();
  LoopRun r = run_loop(2000000000, false, 0, std::chrono::milliseconds(100));
  EXPECT_EQ(r.trap.code, TrapCode::Interrupted);
  EXPECT_FALSE(r.trap.backtrace.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// (module
//   (import "env" "stop" (func $stop))
//   (func (export "run") (result i32)
//     i32.const 7  call $stop  i32.const 1  i32.add))
// $stop asks for an interrupt, as a timeout's watchdog would.
const std::vector<uint8_t> kStopInCall = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x60, 0x00, 0x00, 0x60,
    0x00, 0x01, 0x7f, 0x02, 0x0c, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x04, 0x73, 0x74, 0x6f, 0x70,
    0x00, 0x00, 0x03, 0x02, 0x01, 0x01, 0x07, 0x07, 0x01, 0x03, 0x72, 0x75, 0x6e, 0x00, 0x01,
    0x0a, 0x0b, 0x01, 0x09, 0x00, 0x41, 0x07, 0x10, 0x00, 0x41, 0x01, 0x6a, 0x0b};

// The profiling loops take a request before the very next instruction,
// not at the next loop or call, and count exactly what ran before it: here
// the two instructions up to the call, never the add after it (the
// segment was charged whole on entry; the interrupt takes the rest back).
TEST(Interrupt, StopsBeforeTheNextInstructionWithExactCounts) {
  for (bool counting : {false, true}) {
    LoadOptions options;
    options.count_instructions = counting;
    auto module = load_module(kStopInCall, options);
    ASSERT_TRUE(module.ok());
    Store store;
    Profiling p;
    p.count_instructions = counting;
    FuncInst* stop = store.add_host_func("env", "stop", FuncType{{}, {}},
                                         [&p](HostContext&, std::span<const Value>, std::span<Value>) {
                                           set_flag(p.interrupt_requested, 1);
                                           p.raise();
                                           return Trap{};
                                         });
    Extern e;
    e.func = stop;
    auto inst = store.instantiate(*module, {e});
    ASSERT_TRUE(inst.ok());
    store.thread()->profiling = &p;
    std::vector<Value> results;
    Trap t = store.invoke((*inst)->exported_func("run"), {}, results);
    EXPECT_EQ(t.code, TrapCode::Interrupted) << counting;
    ASSERT_FALSE(t.backtrace.empty());
    EXPECT_EQ(t.backtrace[0].name, "run");
    if (!counting) continue;
    uint64_t counted = 0;
    for (uint64_t c : p.instruction_totals()) counted += c;
    EXPECT_EQ(counted, 2u);
  }
}

// Code lowered for counting without fuel has ops only the counting loop
// runs (vm/counted_ops.def): a store holding it refuses a thread that does
// not count, with an error that says so, instead of running it wrong.
TEST(Counting, CountedCodeRunsOnlyWhileCounting) {
  LoadOptions options;
  options.count_instructions = true;
  auto module = load_module(kLoop, options);
  ASSERT_TRUE(module.ok());
  Store store;
  auto inst = store.instantiate(*module, {});
  ASSERT_TRUE(inst.ok());
  Value arg = Value::from_i32(10);
  std::vector<Value> results;
  Trap t = store.invoke((*inst)->exported_func("run"), {&arg, 1}, results);
  EXPECT_EQ(t.code, TrapCode::HostError);
  EXPECT_EQ(
      t.message,
      "code lowered for instruction counting (LoadOptions::count_instructions) runs only on a thread that "
      "counts (Profiling::count_instructions)");
  Profiling p;
  p.count_instructions = true;
  store.thread()->profiling = &p;
  t = store.invoke((*inst)->exported_func("run"), {&arg, 1}, results);
  ASSERT_FALSE(t) << t.message;
  EXPECT_EQ(results.at(0).i32, 10u);
  uint64_t counted = 0;
  for (uint64_t c : p.instruction_totals()) counted += c;
  EXPECT_EQ(counted, 155u);  // 12 * 10 + 5 + 3 * 10
}

// testdata/prof_counts.wasm loaded to count its instructions (with fuel or
// without), in a store of 300 frames whose thread counts into `p`.
struct CountedProfCounts {
  Store store{[] {
    StoreLimits limits;
    limits.max_call_depth = 300;
    return limits;
  }()};
  Instance* inst = nullptr;
  Profiling p;
  // False if the module does not load or instantiate.
  bool load(bool fuel, uint64_t budget) {
    std::ifstream in(std::string(WZVM_TESTDATA_DIR) + "/prof_counts.wasm", std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LoadOptions options;
    options.count_instructions = true;
    options.fuel = fuel;
    auto module = load_module(bytes, options);
    if (bytes.empty() || !module.ok()) return false;
    auto i = store.instantiate(*module, {});
    if (!i.ok()) return false;
    inst = *i;
    p.count_instructions = true;
    p.fuel = budget;
    store.thread()->profiling = &p;
    return true;
  }
};

// Counts stay exact when the call stack runs out: the failing call has run,
// the callee it could not enter has not. Fuel's lowering (CountFuel, charged
// before a segment runs) must agree with counting's (CountInstr).
TEST(Counting, ExactWhenTheCallStackRunsOut) {
  for (bool fuel : {false, true}) {
    SCOPED_TRACE(fuel ? "fuel" : "counting");
    constexpr uint64_t kBudget = uint64_t{1} << 40;
    CountedProfCounts run;
    ASSERT_TRUE(run.load(fuel, kBudget));
    Store& store = run.store;
    Profiling& p = run.p;
    std::vector<Value> results;
    // dive(100) = 100 in 9 * 100 + 4 instructions (testdata/prof_counts.wat).
    Value arg = Value::from_i32(100);
    Trap t = store.invoke(run.inst->exported_func("dive"), {&arg, 1}, results);
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(results.at(0).i32, 100u);
    // Then 7 per frame entered before the stack ran out.
    arg = Value::from_i32(100000);
    t = store.invoke(run.inst->exported_func("dive"), {&arg, 1}, results);
    ASSERT_EQ(t.code, TrapCode::StackExhausted);
    const uint64_t frames = t.backtrace.size();
    EXPECT_GT(frames, 250u);
    EXPECT_LE(frames, 300u);
    uint64_t counted = 0;
    for (uint64_t c : p.instruction_totals()) counted += c;
    EXPECT_EQ(counted, 904 + 7 * frames);
    if (fuel) {
      EXPECT_EQ(kBudget - p.fuel, counted);  // charged is what ran
    }
  }
}

// Profiling::for_each_node gives for_each_node_runs' nodes, in its order,
// whether it sweeps a node's runs or only sums its counters (the writer's
// first pass does that for every function's nodes but the first): here
// with a trap's partial segments and a recursion's node per depth, counted
// both ways.
TEST(Counting, NodesWithoutRunsAreThoseWithRuns) {
  for (bool fuel : {false, true}) {
    SCOPED_TRACE(fuel ? "fuel" : "counting");
    CountedProfCounts run;
    ASSERT_TRUE(run.load(fuel, uint64_t{1} << 40));
    Store& store = run.store;
    Profiling& p = run.p;
    std::vector<Value> results;
    Value arg = Value::from_i32(100);
    ASSERT_FALSE(store.invoke(run.inst->exported_func("dive"), {&arg, 1}, results));
    arg = Value::from_i32(100000);
    ASSERT_EQ(store.invoke(run.inst->exported_func("dive"), {&arg, 1}, results).code,
              TrapCode::StackExhausted);
    ASSERT_FALSE(p.partial.empty());
    using Runs = std::vector<std::tuple<uint32_t, uint32_t, uint64_t>>;
    std::vector<std::pair<uint32_t, Runs>> swept;
    p.for_each_node_runs([&](uint32_t n, const uint32_t*, const std::vector<Profiling::CountRun>& runs) {
      Runs r;
      for (const auto& run : runs) r.emplace_back(run.from, run.to, run.count);
      swept.emplace_back(n, std::move(r));
    });
    ASSERT_GT(swept.size(), 250u);
    for (uint32_t every : {1u, 2u, 1000000u}) {  // which nodes get their runs
      std::vector<std::pair<uint32_t, Runs>> got;
      p.for_each_node([&](uint32_t n) { return n % every == 0; },
                      [&](uint32_t n, const uint32_t*, const std::vector<Profiling::CountRun>& runs) {
                        Runs r;
                        for (const auto& run : runs) r.emplace_back(run.from, run.to, run.count);
                        got.emplace_back(n, std::move(r));
                      });
      ASSERT_EQ(got.size(), swept.size()) << every;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].first, swept[i].first) << every;
        if (got[i].first % every == 0) EXPECT_EQ(got[i].second, swept[i].second) << every;
        else EXPECT_TRUE(got[i].second.empty()) << every;
      }
    }
  }
}

}  // namespace
}  // namespace wzvm::vm
