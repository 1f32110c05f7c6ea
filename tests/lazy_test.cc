// Lazy lowering (LoadOptions::lazy): every body validated at load, each
// lowered in place of its stub on its first call, by any way in, to exactly
// the code an eager load gives it; a frame that only the lowering sizes is
// checked then; counted bodies are lowered before anything of them is
// counted, and count as eagerly loaded ones; shared memories load eagerly.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vm/code.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/profiling.h"
#include "vm/runtime.h"

namespace wzvm {
namespace {

using vm::Value;

std::vector<uint8_t> read_bytes(const std::string& name) {
  std::ifstream in(std::string(WZVM_TESTDATA_DIR) + "/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::shared_ptr<const vm::Module> load(const std::string& name, bool lazy, vm::LoadOptions lo = {}) {
  lo.lazy = lazy;
  auto m = vm::load_module(read_bytes(name), lo);
  EXPECT_TRUE(m) << m.error().to_string();
  return m ? m.value() : nullptr;
}

// `c`'s code with each pointer into `m`'s own code (a call_func's callee,
// vm::kCallFuncWords) replaced by the callee's index there: two loads of one
// module lower to the same words but for where each keeps its code.
std::vector<uint32_t> code_as_indices(const vm::CompiledFunc& c, const vm::Module& m) {
  std::vector<uint32_t> out = c.code;
  const auto lo = reinterpret_cast<uintptr_t>(m.code.data());
  const auto hi = reinterpret_cast<uintptr_t>(m.code.data() + m.code.size());
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    const uintptr_t p = out[i] | uintptr_t{out[i + 1]} << 32;
    if (p < lo || p >= hi || (p - lo) % sizeof(vm::CompiledFunc) != 0) continue;
    out[i] = static_cast<uint32_t>((p - lo) / sizeof(vm::CompiledFunc));
    out[i + 1] = UINT32_MAX;
  }
  return out;
}

bool is_stub(const vm::CompiledFunc& c) {
  return c.code.at(0) == static_cast<uint32_t>(vm::IOp::LowerFunction);
}

// testdata/lazy.wat's functions, by index.
enum : uint32_t {
  kDouble,
  kPlusOne,
  kBig,
  kDirect,
  kIndirect,
  kCallBig,
  kDown,
  kUnused,
  kDoubleExport,
  kMinusOne
};

struct Lazy {
  std::shared_ptr<const vm::Module> module = load("lazy.wasm", true);
  vm::Store store;
  vm::Instance* inst = nullptr;
  explicit Lazy(vm::StoreLimits limits = {}) : store(limits) {
    auto i = store.instantiate(module, {});
    EXPECT_TRUE(i);
    if (i) inst = i.value();
  }
  vm::Trap call(const char* name, std::vector<Value> args, std::vector<Value>& results) {
    return store.invoke(inst->exported_func(name), args, results);
  }
  bool stub(uint32_t f) const { return is_stub(module->code.at(f)); }
};

TEST(Lazy, BodiesAreLoweredOnFirstCallAsEagerlyLoaded) {
  Lazy l;
  ASSERT_TRUE(l.module->lazy);
  for (uint32_t f = 0; f < l.module->code.size(); ++f) EXPECT_TRUE(l.stub(f)) << f;
  std::vector<Value> r;
  // An export entered from the host, then a direct call.
  ASSERT_FALSE(l.call("direct", {Value::from_i32(21)}, r));
  EXPECT_EQ(r.at(0).i32, 42u);
  EXPECT_FALSE(l.stub(kDirect));
  EXPECT_FALSE(l.stub(kDouble));
  EXPECT_TRUE(l.stub(kPlusOne));
  // call_indirect into a stub.
  ASSERT_FALSE(l.call("indirect", {Value::from_i32(5), Value::from_i32(1)}, r));
  EXPECT_EQ(r.at(0).i32, 6u);
  EXPECT_FALSE(l.stub(kPlusOne));
  // A body already lowered, entered again, and a recursion through a stub.
  ASSERT_FALSE(l.call("direct", {Value::from_i32(-4)}, r));
  EXPECT_EQ(static_cast<int32_t>(r.at(0).i32), -8);
  ASSERT_FALSE(l.call("down", {Value::from_i32(10)}, r));
  EXPECT_EQ(r.at(0).i32, 5u);
  ASSERT_FALSE(l.call("double", {Value::from_i32(7)}, r));
  EXPECT_EQ(r.at(0).i32, 14u);
  ASSERT_FALSE(l.call("tail", {Value::from_i32(5)}, r));  // a tail call into a stub
  EXPECT_EQ(r.at(0).i32, 4u);
  EXPECT_FALSE(l.stub(kMinusOne));
  EXPECT_TRUE(l.stub(kUnused)) << "never called, never lowered";

  // Word for word what an eager load lowered, for each body that ran.
  auto eager = load("lazy.wasm", false);
  ASSERT_TRUE(eager);
  EXPECT_FALSE(eager->lazy);
  for (uint32_t f = 0; f < eager->code.size(); ++f) {
    if (f == kUnused || f == kCallBig) continue;
    const vm::CompiledFunc &a = l.module->code.at(f), &b = eager->code.at(f);
    EXPECT_EQ(code_as_indices(a, *l.module), code_as_indices(b, *eager)) << f;
    EXPECT_EQ(a.frame_init, b.frame_init) << f;
    EXPECT_EQ(a.frame_init_neg_bytes, b.frame_init_neg_bytes) << f;
    EXPECT_EQ(a.frame_slots, b.frame_slots) << f;
    EXPECT_EQ(a.source_map, b.source_map) << f;
  }
}

TEST(Lazy, TwoInstancesShareTheLoweredBody) {
  Lazy l;
  auto other = l.store.instantiate(l.module, {});
  ASSERT_TRUE(other);
  std::vector<Value> r;
  std::vector<Value> three = {Value::from_i32(3)};
  ASSERT_FALSE(l.store.invoke(other.value()->exported_func("double"), three, r));
  EXPECT_EQ(r.at(0).i32, 6u);
  EXPECT_FALSE(l.stub(kDouble));
  ASSERT_FALSE(l.call("double", {Value::from_i32(4)}, r));
  EXPECT_EQ(r.at(0).i32, 8u);
  EXPECT_EQ(l.inst->exported_func("double")->code, other.value()->exported_func("double")->code);
}

// $big's stub frame fits where its lowered frame (76 locals) does not: the
// first call traps when the lowering sizes it, the next at the call, both
// as call stack exhaustion; with room, it runs.
TEST(Lazy, AFrameOnlyTheLoweringSizesIsChecked) {
  vm::StoreLimits small;
  small.value_stack_slots = 48;
  Lazy l(small);
  std::vector<Value> r;
  vm::Trap t = l.call("call_big", {Value::from_i32(3)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::StackExhausted);
  EXPECT_FALSE(l.stub(kBig));
  t = l.call("call_big", {Value::from_i32(3)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::StackExhausted);

  Lazy roomy;
  ASSERT_FALSE(roomy.call("call_big", {Value::from_i32(3)}, r));
  EXPECT_EQ(r.at(0).i32, 3u);
}

// An invalid body is refused at load, lazily as eagerly, with the same error.
TEST(Lazy, InvalidBodiesAreRefusedAtLoad) {
  // () -> i32 whose body is `end` alone.
  std::vector<uint8_t> bytes = {0x00, 'a', 's', 'm',  1, 0,   0,    0,  // header
                                1,    5,   1,   0x60, 0, 1,   0x7F,     // type () -> i32
                                3,    2,   1,   0,                      // function 0: type 0
                                10,   4,   1,   2,    0, 0x0B};         // code: no locals, end
  vm::LoadOptions lazy;
  lazy.lazy = true;
  auto a = vm::load_module(bytes, lazy);
  auto b = vm::load_module(bytes);
  ASSERT_FALSE(a);
  ASSERT_FALSE(b);
  EXPECT_EQ(a.error().to_string(), b.error().to_string());
  EXPECT_EQ(a.error().kind, vm::Error::Kind::Invalid);
}

// Counted, a stub never runs: its first entry, by any way in (the host, a
// call, call_indirect, a tail call), lowers it
// before the call counts the callee's first op or sizes its call-tree
// node's counters (CompiledFunc::kUnlowered). The counts are an eager
// load's, node for node and instruction for instruction, also where the
// lowered frame does not fit.
TEST(Lazy, CountedBodiesAreLoweredBeforeTheyAreCounted) {
  std::vector<vm::Profiling::InstructionCount> counts[2];
  for (bool lazy : {false, true}) {
    vm::LoadOptions counting;
    counting.count_instructions = true;
    auto m = load("lazy.wasm", lazy, counting);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->lazy, lazy);
    vm::StoreLimits small;
    small.value_stack_slots = 64;
    vm::Store store(small);
    auto i = store.instantiate(m, {});
    ASSERT_TRUE(i);
    vm::Profiling p;
    p.count_instructions = true;
    store.thread()->profiling = &p;
    auto call = [&](const char* name, std::vector<Value> args) {
      std::vector<Value> r;
      vm::Trap t = store.invoke(i.value()->exported_func(name), args, r);
      EXPECT_FALSE(t) << name << ": " << t.message;
      return t ? 0 : r.at(0).i32;
    };
    EXPECT_EQ(call("direct", {Value::from_i32(21)}), 42u);
    EXPECT_EQ(call("indirect", {Value::from_i32(5), Value::from_i32(1)}), 6u);
    EXPECT_EQ(call("tail", {Value::from_i32(5)}), 4u);
    std::vector<Value> r;
    std::vector<Value> three = {Value::from_i32(3)};
    EXPECT_EQ(store.invoke(i.value()->exported_func("call_big"), three, r).code,
              vm::TrapCode::StackExhausted);
    if (lazy) {
      EXPECT_FALSE(is_stub(m->code.at(kMinusOne)));
      EXPECT_NE(m->code.at(kBig).frame_slots, vm::CompiledFunc::kUnlowered);
      EXPECT_TRUE(is_stub(m->code.at(kUnused)));
      EXPECT_EQ(m->code.at(kUnused).frame_slots, vm::CompiledFunc::kUnlowered);
    }
    counts[lazy] = p.instruction_counts();
  }
  ASSERT_FALSE(counts[0].empty());
  EXPECT_TRUE(counts[0] == counts[1]) << "node for node and instruction for instruction, as an eager load's";
}

TEST(Lazy, SharedMemoriesLoadEagerly) {
  vm::LoadOptions threads;
  threads.features = vm::Features::all();
  auto s = load("proposals_threads.wasm", true, threads);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->lazy);
  for (const vm::CompiledFunc& f : s->code) EXPECT_FALSE(is_stub(f));
}

}  // namespace
}  // namespace wzvm
