// Proposals beyond wasm 2.0 (vm/features.def): tail calls, extended constant
// expressions, multi-memory, exception handling (legacy), memory64. The spec folders of each run as ctest
// entries (spec-tail-call, ...); these tests add what the spec suite does not check: feature switches, deep
// tail recursion against the frame limit, host callees, and the call tree the profilers see.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "profiler/instruction_profile.h"
#include "profiler/profiler.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/runtime.h"

namespace wzvm {
namespace {

using vm::Value;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string features_path() { return std::string(WZVM_TESTDATA_DIR) + "/proposals_features.wasm"; }

// The module's one import: env.host_inc(x) = x + 1.
vm::Result<std::vector<vm::Extern>> link(vm::Store& store, const vm::Module&) {
  vm::Extern e;
  e.kind = vm::ExternKind::Func;
  e.func = store.add_host_func("env", "host_inc", vm::FuncType{{vm::ValType::I32}, {vm::ValType::I32}},
                               [](vm::HostContext&, std::span<const Value> args, std::span<Value> results) {
                                 results[0] = Value::from_i32(args[0].i32 + 1);
                                 return vm::Trap{};
                               });
  return std::vector<vm::Extern>{e};
}

struct Instance {
  std::unique_ptr<vm::Store> store;
  vm::Instance* inst = nullptr;

  explicit Instance(const vm::LoadOptions& lo = {}, vm::StoreLimits limits = {}) {
    store = std::make_unique<vm::Store>(limits);
    auto m = vm::load_module(read_bytes(features_path()), lo);
    EXPECT_TRUE(m) << m.error().to_string();
    if (!m) return;
    auto imports = link(*store, *m.value());
    auto i = store->instantiate(m.value(), *imports);
    EXPECT_TRUE(i) << i.error().to_string();
    if (i) inst = i.value();
  }
  vm::Trap call(const std::string& name, std::vector<Value> args, std::vector<Value>& results) {
    return store->invoke(inst->exported_func(name), args, results);
  }
  Value call1(const std::string& name, std::vector<Value> args = {}) {
    std::vector<Value> results;
    vm::Trap t = call(name, std::move(args), results);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return results.empty() ? Value{} : results[0];
  }
};

TEST(Features, TableNamesAndDefaults) {
  const vm::FeatureInfo* tc = vm::find_feature("tail-call");
  ASSERT_NE(tc, nullptr);
  EXPECT_TRUE(tc->implemented);
  // wabt's name of exception handling is an alias of ours.
  EXPECT_EQ(vm::find_feature("exceptions"), vm::find_feature("exception-handling"));
  EXPECT_EQ(vm::find_feature("gc"), nullptr);
  vm::Features def;
  EXPECT_TRUE(def.has(vm::Feature::TailCall));
  EXPECT_TRUE(def.has(vm::Feature::ExtendedConst));
  EXPECT_TRUE(def.has(vm::Feature::MultiMemory));
  EXPECT_TRUE(def.has(vm::Feature::ExceptionHandling));
  EXPECT_TRUE(def.has(vm::Feature::Memory64));
  EXPECT_TRUE(def.has(vm::Feature::Threads));
  EXPECT_TRUE(vm::Features::all().has(vm::Feature::Threads));
  EXPECT_FALSE(vm::Features::wasm2().has(vm::Feature::Threads));
  EXPECT_EQ(vm::Features::wasm2().bits, 0u);
}

// Each proposal, switched off alone, makes the module invalid or malformed
// with the wasm 2.0 message.
TEST(Features, EachProposalCanBeSwitchedOff) {
  struct Case {
    vm::Feature off;
    vm::Error::Kind kind;
    const char* message;
  };
  for (const Case& c :
       {Case{vm::Feature::TailCall, vm::Error::Kind::Malformed, "illegal opcode"},
        Case{vm::Feature::ExtendedConst, vm::Error::Kind::Invalid, "constant expression required"},
        Case{vm::Feature::MultiMemory, vm::Error::Kind::Invalid, "multiple memories"}}) {
    vm::LoadOptions lo;
    lo.features.set(c.off, false);
    auto m = vm::load_module(read_bytes(features_path()), lo);
    ASSERT_FALSE(m) << c.message;
    EXPECT_EQ(m.error().kind, c.kind) << m.error().to_string();
    EXPECT_EQ(m.error().message.rfind(c.message, 0), 0u) << m.error().to_string();
  }
  vm::LoadOptions all;
  all.features = vm::Features::all();
  EXPECT_TRUE(vm::load_module(read_bytes(features_path()), all));
}

TEST(TailCall, RecursionDeeperThanTheFrameLimit) {
  vm::StoreLimits limits;
  limits.max_call_depth = 100;
  Instance in({}, limits);
  ASSERT_NE(in.inst, nullptr);
  // 100000 rounds with room for 100 frames: each round replaces the frame.
  EXPECT_EQ(in.call1("count_down", {Value::from_i32(100000)}).i32, 8u);
  EXPECT_EQ(in.call1("even", {Value::from_i32(100001)}).i32, 0u);
  EXPECT_EQ(in.call1("even", {Value::from_i32(100000)}).i32, 1u);
}

TEST(TailCall, HostCalleeReturnsItsResults) {
  Instance in;
  ASSERT_NE(in.inst, nullptr);
  EXPECT_EQ(in.call1("to_host", {Value::from_i32(41)}).i32, 42u);
}

TEST(TailCall, EndlessTailRecursionCanBeInterruptedNotExhausted) {
  // `spin` never returns and never grows the stack: under an instruction
  // budget it runs out of fuel rather than out of frames.
  profiler::Profiler prof({.instructions = true});
  Instance in({.count_instructions = true, .fuel = true});
  ASSERT_NE(in.inst, nullptr);
  std::string why;
  ASSERT_TRUE(prof.start(*in.store, why)) << why;
  prof.profiling().fuel = 100000;
  std::vector<Value> results;
  vm::Trap t = in.call("spin", {Value::from_i32(0)}, results);
  EXPECT_EQ(t.code, vm::TrapCode::OutOfFuel) << t.message;
  prof.stop();
}

// Module byte offset of entry's `call $count_down`: its body is
// `local.get 0` (2 bytes), then the call.
uint32_t entry_call_site(const Instance& in) {
  const vm::FuncInst* entry = in.inst->exported_func("entry");
  const vm::Module& m = *in.inst->module;
  return m.functions[entry->func_index - m.num_imported_funcs].body_offset + 2;
}

// A tail call replaces the frame in the profile too: count_down and leaf
// both appear directly under entry, never under one another.
TEST(TailCall, ProfileShowsTheCalleeInPlaceOfTheCaller) {
  auto p = profiler::InstructionProfile::run_and_count_file(features_path(), "entry", {Value::from_i32(1000)},
                                                            link);
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_FALSE(p->trap()) << p->trap().message;
  EXPECT_EQ(p->results().at(0).i32, 8u);
  EXPECT_EQ(p->counts(),
            (std::map<std::string, uint64_t>{{"count_down", 7 * 1000 + 5}, {"entry", 2}, {"leaf", 3}}));

  // The call tree: root -> entry -> {count_down, leaf}, one node each.
  profiler::Profiler prof({.instructions = true});
  Instance in({.count_instructions = true});
  ASSERT_NE(in.inst, nullptr);
  std::string why;
  ASSERT_TRUE(prof.start(*in.store, why)) << why;
  EXPECT_EQ(in.call1("entry", {Value::from_i32(1000)}).i32, 8u);
  prof.stop();
  const vm::CallTree& tree = prof.tree();
  ASSERT_EQ(tree.size(), 4u);  // the root, entry, count_down, leaf
  // Both at entry's call of count_down, where entry's frame waits: the
  // return_calls that replaced the frame are in no stack.
  const uint32_t call_at = entry_call_site(in);
  for (uint32_t n = 2; n < tree.size(); ++n) {
    EXPECT_EQ(tree.node(n).depth, 2u) << n;
    EXPECT_EQ(tree.node(tree.node(n).parent).depth, 1u) << n;
    EXPECT_EQ(tree.node(n).site, call_at) << n;
  }
}

// With the sampling loop (CPU profiling), the stack is read from the frames:
// a sample taken in a tail-called function shows it under the caller's caller.
TEST(TailCall, CpuProfilingKeepsResults) {
  profiler::Profiler prof({.cpu = true, .cpu_hz = 10000});
  Instance in;
  ASSERT_NE(in.inst, nullptr);
  std::string why;
  ASSERT_TRUE(prof.start(*in.store, why)) << why;
  EXPECT_EQ(in.call1("entry", {Value::from_i32(3000000)}).i32, 8u);
  prof.stop();
  EXPECT_FALSE(prof.cpu_sites().empty());
  for (const auto& s : prof.cpu_sites()) {
    uint32_t depth = prof.tree().node(s.node).depth;
    EXPECT_LE(depth, 2u) << "a tail call left its caller's frame in a sample";
    // As when counting: under entry's call of count_down.
    if (depth == 2) {
      EXPECT_EQ(prof.tree().node(s.node).site, entry_call_site(in));
    }
  }
}

std::string eh_path() { return std::string(WZVM_TESTDATA_DIR) + "/proposals_eh.wasm"; }

struct EhInstance {
  std::unique_ptr<vm::Store> store = std::make_unique<vm::Store>();
  vm::Instance* inst = nullptr;
  explicit EhInstance(const vm::LoadOptions& lo = {}) {
    auto m = vm::load_module(read_bytes(eh_path()), lo);
    EXPECT_TRUE(m) << m.error().to_string();
    if (!m) return;
    auto i = store->instantiate(m.value(), {});
    EXPECT_TRUE(i) << i.error().to_string();
    if (i) inst = i.value();
  }
  vm::Trap call(const std::string& name, std::vector<Value> args, std::vector<Value>& results) {
    return store->invoke(inst->exported_func(name), args, results);
  }
};

TEST(Exceptions, OffMeansTheTagSectionIsUnknown) {
  vm::LoadOptions lo;
  lo.features.set(vm::Feature::ExceptionHandling, false);
  auto m = vm::load_module(read_bytes(eh_path()), lo);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind, vm::Error::Kind::Malformed);
  EXPECT_EQ(m.error().message, "malformed section id") << m.error().to_string();
}

TEST(Exceptions, CaughtAcrossFramesDelegatedRethrownUncaught) {
  EhInstance in;
  ASSERT_NE(in.inst, nullptr);
  std::vector<Value> r;
  ASSERT_FALSE(in.call("f", {Value::from_i32(7)}, r));
  EXPECT_EQ(r.at(0).i32, 107u);  // thrown two frames down, caught with its value
  ASSERT_FALSE(in.call("catch_all", {}, r));
  EXPECT_EQ(r.at(0).i32, 2u);
  ASSERT_FALSE(in.call("delegated", {}, r));
  EXPECT_EQ(r.at(0).i32, 1003u);
  vm::Trap t = in.call("rethrown", {}, r);
  ASSERT_FALSE(t) << t.message;
  EXPECT_EQ(r.at(0).i32, 4u);
  t = in.call("uncaught", {}, r);
  EXPECT_EQ(t.code, vm::TrapCode::UncaughtException);
  EXPECT_EQ(t.message, "uncaught exception");
  ASSERT_FALSE(in.call("throw_loop", {Value::from_i32(1000)}, r));
  EXPECT_EQ(r.at(0).i32, 1000u * 1001 / 2 + 100 * 1000);
  // Exceptions are kept only while the outermost call runs.
  EXPECT_TRUE(in.store->thread()->exceptions.empty());
}

// Unwinding keeps instruction counts exact: what came after the throw (in h)
// and after the calls it unwound (in g, and in f's try body) never ran.
TEST(Exceptions, UnwindingKeepsCountsExact) {
  auto p = profiler::InstructionProfile::run_and_count_file(eh_path(), "f", {Value::from_i32(7)});
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_FALSE(p->trap()) << p->trap().message;
  EXPECT_EQ(p->results().at(0).i32, 107u);
  EXPECT_EQ(p->counts(), (std::map<std::string, uint64_t>{{"f", 4}, {"g", 2}, {"h", 2}}));

  // The stack after the catch is f's again: the counting loop's next call
  // from f hangs under f, not under h (per-frame nodes survive unwinding).
  profiler::Profiler prof({.instructions = true});
  EhInstance in({.count_instructions = true});
  ASSERT_NE(in.inst, nullptr);
  std::string why;
  ASSERT_TRUE(prof.start(*in.store, why)) << why;
  std::vector<Value> r;
  ASSERT_FALSE(in.call("throw_loop", {Value::from_i32(50)}, r));
  prof.stop();
  // root, throw_loop, f, g, h: one node each, however many throws.
  EXPECT_EQ(prof.tree().size(), 5u);
  uint64_t total = 0;
  for (uint64_t n : prof.instruction_totals()) total += n;
  // Per iteration: 13 in throw_loop's loop, 4 + 2 + 2 in f, g, h; the exit
  // (local.get, i32.eqz, br_if, local.get): 4.
  EXPECT_EQ(total, 50u * (13 + 8) + 4);
}

TEST(Exceptions, CpuProfilingSamplesStayOnTheStack) {
  profiler::Profiler prof({.cpu = true, .cpu_hz = 10000});
  EhInstance in;
  ASSERT_NE(in.inst, nullptr);
  std::string why;
  ASSERT_TRUE(prof.start(*in.store, why)) << why;
  std::vector<Value> r;
  ASSERT_FALSE(in.call("throw_loop", {Value::from_i32(200000)}, r));
  prof.stop();
  EXPECT_FALSE(prof.cpu_sites().empty());
  for (const auto& s : prof.cpu_sites()) EXPECT_LE(prof.tree().node(s.node).depth, 4u);
}

TEST(Memory64, AddressesLengthsAndSizesAreI64) {
  std::string path = std::string(WZVM_TESTDATA_DIR) + "/proposals_memory64.wasm";
  vm::LoadOptions off;
  off.features.set(vm::Feature::Memory64, false);
  auto refused = vm::load_module(read_bytes(path), off);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "integer too large") << refused.error().to_string();  // limits flag 4

  vm::Store store;
  auto m = vm::load_module(read_bytes(path));
  ASSERT_TRUE(m) << m.error().to_string();
  auto inst = store.instantiate(m.value(), {});
  ASSERT_TRUE(inst) << inst.error().to_string();
  auto call = [&](const char* name, std::vector<Value> args, std::vector<Value>& r) {
    return store.invoke((*inst)->exported_func(name), args, r);
  };
  std::vector<Value> r;
  ASSERT_FALSE(call("store_load", {Value::from_i64(65536 - 8), Value::from_i32(0xabcd)}, r));
  EXPECT_EQ(r.at(0).i32, 0xabcdu);
  EXPECT_EQ(call("store_load", {Value::from_i64(65536 - 7), Value::from_i32(1)}, r).code,
            vm::TrapCode::MemoryOutOfBounds);
  // Addresses of 2^32 and more, and address + offset wrapping, are out of bounds.
  EXPECT_EQ(call("store_load", {Value::from_i64(uint64_t{1} << 32), Value::from_i32(1)}, r).code,
            vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(call("load_huge_offset", {Value::from_i64(0xffff'ffff'0000'0018)}, r).code,
            vm::TrapCode::MemoryOutOfBounds);
  ASSERT_FALSE(call("size", {}, r));
  EXPECT_EQ(r.at(0).type, vm::ValType::I64);
  EXPECT_EQ(r.at(0).i64, 1u);
  ASSERT_FALSE(call("grow", {Value::from_i64(2)}, r));
  EXPECT_EQ(r.at(0).i64, 1u);
  ASSERT_FALSE(call("grow", {Value::from_i64(uint64_t{1} << 40)}, r));
  EXPECT_EQ(r.at(0).i64, ~uint64_t{0});  // -1: cannot grow
  ASSERT_FALSE(call("size", {}, r));
  EXPECT_EQ(r.at(0).i64, 3u);
  ASSERT_FALSE(call("fill_copy", {}, r));
  EXPECT_EQ(r.at(0).i32, 0x07070707u + 0x04030201u);
  EXPECT_EQ(call("fill_len", {Value::from_i64(uint64_t{1} << 33)}, r).code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_FALSE(call("fill_len", {Value::from_i64(3 * 65536)}, r));
}

TEST(ExtendedConst, GlobalInitialiserIsEvaluated) {
  Instance in;
  ASSERT_NE(in.inst, nullptr);
  EXPECT_EQ(in.call1("ext_const").i64, 142u);
}

TEST(MultiMemory, AccessesGoToTheirOwnMemory) {
  Instance in;
  ASSERT_NE(in.inst, nullptr);
  EXPECT_EQ(in.call1("two_memories", {Value::from_i32(5)}).i32, 12u);
  // memory 1 grew from 1 to 3 pages, memory 0 stayed at 1.
  EXPECT_EQ(in.call1("sizes").i32, 31u);
  EXPECT_EQ(in.call1("copy_between").i32, 0x11223344u);
  // Bounds are memory 1's: 3 pages now.
  EXPECT_EQ(in.call1("load_m1", {Value::from_i32(3 * 65536 - 4)}).i32, 0u);
  std::vector<Value> results;
  vm::Trap t = in.call("load_m1", {Value::from_i32(3 * 65536 - 3)}, results);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
}

}  // namespace
}  // namespace wzvm
