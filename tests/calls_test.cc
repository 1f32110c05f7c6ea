// Calls and returns between instances and at the depth limit
// (vm/interp.cc, the call paths and Ret). A call to a function of the
// caller's own module is a call_func, which neither tests for a host
// function nor compares instances; an import is a call_import. A return
// (ret0, ret1 or ret) tests the frame's ret_check, which the entry frame and every callee that
// may be of another instance have set: the caller's memory 0 is then
// reloaded, so the size a callee of another instance grew is seen. Each
// case runs in the plain loop, plain with a profiler attached, and counted
// (edge counts, and fuel, whose calls are other ops).

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vm/interp.h"

namespace wzvm::vm {
namespace {

std::vector<uint8_t> testdata(const char* name) {
  std::ifstream in(std::string(WZVM_TESTDATA_DIR) + "/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

enum class How { Plain, Profiled, Counted, Fuel };
const char* how_name(How h) {
  switch (h) {
    case How::Plain:
      return "plain";
    case How::Profiled:
      return "profiled";
    case How::Counted:
      return "counted";
    case How::Fuel:
      return "fuel";
  }
  return "?";
}

// calls_home.wasm linked to an instance of calls_other.wasm, whose memory
// it shares, run as `how` says.
struct Linked {
  explicit Linked(How how, uint32_t max_call_depth = StoreLimits{}.max_call_depth,
                  uint32_t value_stack_slots = StoreLimits{}.value_stack_slots)
      : store(limits(max_call_depth, value_stack_slots)) {
    LoadOptions options;
    options.count_instructions = how == How::Counted || how == How::Fuel;
    options.fuel = how == How::Fuel;
    auto other_module = load_module(testdata("calls_other.wasm"), options);
    auto home_module = load_module(testdata("calls_home.wasm"), options);
    EXPECT_TRUE(other_module.ok() && home_module.ok());
    if (!other_module.ok() || !home_module.ok()) return;
    auto o = store.instantiate(*other_module, {});
    EXPECT_TRUE(o.ok());
    if (!o.ok()) return;
    other = *o;
    Extern mem;
    mem.kind = ExternKind::Memory;
    mem.memory = other->memories.at(0);
    std::vector<Extern> imports{mem};
    for (const char* name : {"grow", "grow_void", "grow_pair"}) {
      Extern f;
      f.func = other->exported_func(name);
      imports.push_back(f);
    }
    auto h = store.instantiate(*home_module, imports);
    EXPECT_TRUE(h.ok());
    if (!h.ok()) return;
    home = *h;
    if (how != How::Plain) {
      p.count_instructions = options.count_instructions;
      p.fuel = uint64_t{1} << 40;
      store.thread()->profiling = &p;
    }
  }
  static StoreLimits limits(uint32_t max_call_depth, uint32_t value_stack_slots) {
    StoreLimits l;
    l.max_call_depth = max_call_depth;
    l.value_stack_slots = value_stack_slots;
    return l;
  }
  Trap call(const char* name, std::vector<Value> args, std::vector<Value>& results) {
    return store.invoke(home->exported_func(name), args, results);
  }
  const char* op_at(const char* name, size_t word) const {
    return iop_name(static_cast<IOp>(home->exported_func(name)->code->code.at(word)));
  }
  uint64_t pages() const { return other->memories.at(0)->current_size() / 65536; }
  Store store;
  Profiling p;
  Instance* other = nullptr;
  Instance* home = nullptr;
};

constexpr How kAll[] = {How::Plain, How::Profiled, How::Counted, How::Fuel};

// The ops lowering picks: call_func for a function of the module,
// call_import for an import; ret0, ret1 and ret by the number of result
// slots. Each return gives its results, the entry's too.
TEST(CallPaths, CallAndReturnOps) {
  Linked l(How::Plain);
  ASSERT_NE(l.home, nullptr);
  EXPECT_STREQ(l.op_at("by_call", 0), "call_import");
  EXPECT_STREQ(l.op_at("by_call", 3), "call_func");
  EXPECT_STREQ(l.op_at("by_call", 3 + vm::kCallFuncWords), "ret1");
  EXPECT_STREQ(l.op_at("by_tail", 0), "call_func");
  EXPECT_STREQ(l.op_at("entry_void", vm::kCallFuncWords), "ret0");
  EXPECT_STREQ(l.op_at("entry_pair", vm::kCallFuncWords), "ret");
  for (How how : kAll) {
    SCOPED_TRACE(how_name(how));
    Linked m(how);
    ASSERT_NE(m.home, nullptr);
    std::vector<Value> r;
    Trap t = m.call("returns", {}, r);
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(r.at(0).i32, 3u + 4 + 7);
    r.clear();
    t = m.call("entry_void", {}, r);
    ASSERT_FALSE(t) << t.message;
    EXPECT_TRUE(r.empty());
    t = m.call("entry_pair", {}, r);
    ASSERT_FALSE(t) << t.message;
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].i32, 3u);
    EXPECT_EQ(r[1].i32, 4u);
  }
}

// A callee of another instance grows the memory the caller shares: after
// its return, by each way of calling it, the caller sees the new size.
TEST(CallPaths, ReturnsFromAnotherInstanceReloadTheMemory) {
  for (How how : kAll) {
    SCOPED_TRACE(how_name(how));
    Linked l(how);
    ASSERT_NE(l.home, nullptr);
    uint64_t pages = 1;
    for (const char* name :
         {"by_call", "by_call_void", "by_call_pair", "by_table", "by_tail", "by_tail_indirect"}) {
      SCOPED_TRACE(name);
      std::vector<Value> r;
      Trap t = l.call(name, {}, r);
      ASSERT_FALSE(t) << t.message;
      EXPECT_EQ(r.at(0).i32, 12u);
      EXPECT_EQ(l.pages(), ++pages);
    }
    // from deep in this instance's own calls, which return without a check
    std::vector<Value> r;
    Trap t = l.call("deep", {Value::from_i32(40)}, r);
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(r.at(0).i32, 12u);
    EXPECT_EQ(l.pages(), ++pages);
  }
}

// call_indirect's type check: a function of the running instance is
// compared by its module's type index, the first of the equal types
// (Module::canonical_types), so a type declared twice matches and another
// does not, in each loop (the counting loop compares the store's ids).
TEST(CallPaths, IndirectCallsMatchEqualTypes) {
  for (How how : kAll) {
    SCOPED_TRACE(how_name(how));
    Linked l(how);
    ASSERT_NE(l.home, nullptr);
    std::vector<Value> r;
    Trap t = l.call("by_equal_type", {}, r);
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(r.at(0).i32, 7u);
    t = l.call("by_other_type", {}, r);
    EXPECT_EQ(t.code, TrapCode::IndirectCallMismatch);
  }
  Linked l(How::Plain);
  ASSERT_NE(l.home, nullptr);
  EXPECT_STREQ(l.op_at("by_equal_type", 0), "call_table");
  const Module& m = *l.home->module;
  const uint32_t word = l.home->exported_func("by_equal_type")->code->code.at(2);
  EXPECT_EQ(word, m.canonical_type(word));            // the first of the equal types
  EXPECT_EQ(word, l.home->funcs.at(3)->module_type);  // $seven's, declared (result i32)
}

// The depth limit is exact: max_call_depth frames fit, one more traps at
// the call, with a backtrace of max_call_depth frames.
TEST(CallPaths, DepthLimitIsExact) {
  for (How how : kAll) {
    SCOPED_TRACE(how_name(how));
    Linked l(how, 50);
    ASSERT_NE(l.home, nullptr);
    std::vector<Value> r;
    Trap t = l.call("dive", {Value::from_i32(49)}, r);  // 50 frames
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(r.at(0).i32, 49u);
    t = l.call("dive", {Value::from_i32(50)}, r);
    ASSERT_EQ(t.code, TrapCode::StackExhausted);
    EXPECT_EQ(t.backtrace.size(), 50u);
    // with a return from the other instance near the limit: deep(47) has 48
    // frames of its own, the other instance's `grow` beside the last, and
    // then `touch` and its callee (50 frames); deep(48) does not fit
    t = l.call("deep", {Value::from_i32(47)}, r);
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(r.at(0).i32, 12u);
    t = l.call("deep", {Value::from_i32(48)}, r);
    ASSERT_EQ(t.code, TrapCode::StackExhausted);
    EXPECT_EQ(t.backtrace.size(), 50u);
  }
}

// The value-stack limit is exact too, the depth far away: dive's frames
// lie `base` slots apart (its recursive call's argument slot), the first at
// the stack's start, so with room for the first frame and kFrames - 1 steps
// kFrames frames fit and one more traps at the call, with a backtrace of
// kFrames frames. A call checks depth and value stack with one compare
// (Frame::callee_limit): either half wrong fails this test or the one above.
TEST(CallPaths, ValueStackLimitIsExact) {
  for (How how : kAll) {
    SCOPED_TRACE(how_name(how));
    Linked probe(how);
    ASSERT_NE(probe.home, nullptr);
    const FuncInst* dive = probe.home->exported_func("dive");
    const std::vector<uint32_t>& code = dive->code->code;
    uint32_t base = 0;
    for (size_t i = 0; i + 2 < code.size() && !base; ++i) {
      if (code[i] >= static_cast<uint32_t>(IOp::Count)) continue;
      std::string op = iop_name(static_cast<IOp>(code[i]));
      if ((op == "call_func" || op == "call_func.counted" || op == "call_local.counted") &&
          code[i + 1] == dive->func_index)
        base = code[i + 2];
    }
    ASSERT_GT(base, 0u);
    constexpr uint32_t kFrames = 20;
    Linked l(how, 1000, (kFrames - 1) * base + dive->code->frame_slots);
    ASSERT_NE(l.home, nullptr);
    std::vector<Value> r;
    Trap t = l.call("dive", {Value::from_i32(kFrames - 1)}, r);
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(r.at(0).i32, kFrames - 1);
    t = l.call("dive", {Value::from_i32(kFrames)}, r);
    ASSERT_EQ(t.code, TrapCode::StackExhausted);
    EXPECT_EQ(t.backtrace.size(), kFrames);
  }
}

}  // namespace
}  // namespace wzvm::vm
