// The frame image every call copies (vm/code.h, CompiledFunc::frame_init;
// vm/lower/function_compiler.cc, compile()): it holds only what the code
// still reads, and what it leaves out changes no result.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vm/code.h"
#include "vm/module.h"
#include "vm/runtime.h"

namespace wzvm {
namespace {

using vm::Value;

std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Fixture {
  std::shared_ptr<const vm::Module> module;
  vm::Store store;
  vm::Instance* inst = nullptr;
  explicit Fixture(vm::LoadOptions options = {}) {
    options.features = vm::Features::all();  // exceptions
    auto m = vm::load_module(read_bytes(std::string(WZVM_TESTDATA_DIR) + "/frame_image.wasm"), options);
    EXPECT_TRUE(m) << m.error().to_string();
    module = m.value();
    auto i = store.instantiate(module, {});
    EXPECT_TRUE(i);
    inst = i.value();
  }
  const vm::CompiledFunc& code(const char* name) { return *inst->exported_func(name)->code; }
  Value call(const char* name, std::vector<Value> args) {
    std::vector<Value> r;
    vm::Trap t = store.invoke(inst->exported_func(name), args, r);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return r.empty() ? Value{} : r[0];
  }
};

// Constants that fusions took as immediates are not copied on each call.
TEST(FrameImage, FoldedConstantsLeaveTheArea) {
  Fixture f;
  EXPECT_TRUE(f.code("folded").consts.empty());
  const int64_t q = 0x1234'5678'9ABC'DEF0;
  EXPECT_EQ(f.call("folded", {Value::from_i32(0), Value::from_i64(q)}).i64, q);
  EXPECT_EQ(f.call("folded", {Value::from_i32(1), Value::from_i64(q)}).i64, uint64_t{0xFFFF'FFFF'9ABC'DEF0});
  EXPECT_EQ(f.call("folded", {Value::from_i32(2), Value::from_i64(q)}).i64, uint64_t{0xFFFF'FFFF'FFFF'DEF0});
  EXPECT_EQ(f.call("folded", {Value::from_i32(3), Value::from_i64(q)}).i64, uint64_t(q));
}

// A v128 constant keeps its two slots side by side when a scalar before it goes.
TEST(FrameImage, V128ConstantStaysWhole) {
  Fixture f;
  const vm::CompiledFunc& c = f.code("v128_after_dead");
  ASSERT_EQ(c.consts.size(), 2u);
  EXPECT_EQ(c.consts[0], 5u);
  EXPECT_EQ(c.consts[1], 0x123456789u);
  EXPECT_EQ(f.call("v128_after_dead", {Value::from_i32(0), Value::from_i64(10)}).i64, 15u);
  EXPECT_EQ(f.call("v128_after_dead", {Value::from_i32(1), Value::from_i64(10)}).i64, 0x123456793u);
}

// The slots a call zeroes for the declared locals of export `name`.
uint32_t zeroed_slots(Fixture& f, const std::string& name) {
  const vm::CompiledFunc& c = f.code((name + "_inner").c_str());
  return c.const_base - c.param_slots;
}

// A local that some path reads before writing it reads zero, whatever the
// frame held before (each export first calls a function that fills it with
// 0x5a bytes), plain or lowered with fuel (counted code: the spec suite's
// counted mode, and the instruction profiles of real programs).
TEST(FrameImage, LocalsReadBeforeWrittenReadZero) {
  vm::LoadOptions fuel;
  fuel.fuel = true;
  for (const vm::LoadOptions& options : {vm::LoadOptions{}, fuel}) {
    Fixture f(options);
    // the loop's first iteration reads $x before its write
    EXPECT_EQ(f.call("loop_second", {Value::from_i32(2)}).i32, 5u);
    EXPECT_EQ(f.call("loop_second", {Value::from_i32(3)}).i32, 10u);
    // a br_if, a br_table past the write
    EXPECT_EQ(f.call("br_skip", {Value::from_i32(1)}).i32, 0u);
    EXPECT_EQ(f.call("br_skip", {Value::from_i32(0)}).i32, 9u);
    EXPECT_EQ(f.call("table_skip", {Value::from_i32(1)}).i32, 0u);
    EXPECT_EQ(f.call("table_skip", {Value::from_i32(0)}).i32, 9u);
    // an if without else, an else arm without the write
    EXPECT_EQ(f.call("if_no_else", {Value::from_i32(0)}).i64, 0u);
    EXPECT_EQ(f.call("if_no_else", {Value::from_i32(1)}).i64, 0x7'0000'0009u);
    // a catch_all entered from a throw before the write
    EXPECT_EQ(f.call("caught", {Value::from_i32(1)}).i32, 0u);
    EXPECT_EQ(f.call("caught", {Value::from_i32(0)}).i32, 9u);
    // a v128 among locals written first
    EXPECT_EQ(f.call("v128_unwritten", {Value::from_i32(0)}).i64, 0u);
    EXPECT_EQ(f.call("v128_unwritten", {Value::from_i32(3)}).i64, 9u);
    // Those locals, and only those, are zeroed on entry.
    EXPECT_EQ(zeroed_slots(f, "loop_second"), 1u);  // not $acc
    EXPECT_EQ(zeroed_slots(f, "br_skip"), 1u);
    EXPECT_EQ(zeroed_slots(f, "table_skip"), 1u);
    EXPECT_EQ(zeroed_slots(f, "if_no_else"), 2u);
    EXPECT_EQ(zeroed_slots(f, "caught"), 1u);
    EXPECT_EQ(zeroed_slots(f, "v128_unwritten"), 2u);  // $v, not $a, $b
    // past the 64 locals tracked: all zeroed
    EXPECT_EQ(f.call("many", {Value::from_i32(7)}).i64, 7u + 63u);
    EXPECT_EQ(zeroed_slots(f, "many"), 6u);
  }
}

// A function whose locals are all written before any read and whose
// constants were all folded copies the least image there is: four words
// (five zeros and three constants before, eight words).
TEST(FrameImage, WrittenFirstAndFoldedCopiesFourWords) {
  Fixture f;
  const vm::CompiledFunc& c = f.code("written_first_inner");
  EXPECT_EQ(c.const_base, c.param_slots);
  EXPECT_TRUE(c.consts.empty());
  EXPECT_EQ(c.frame_init.size(), 4u);
  const int64_t q = 0x1234'5678'9ABC'DEF0;
  for (const char* name : {"written_first", "written_first_inner"}) {
    EXPECT_EQ(f.call(name, {Value::from_i32(1), Value::from_i64(q)}).i64, uint64_t{0xFFFF'FFFF'9ABC'DEF0});
    EXPECT_EQ(f.call(name, {Value::from_i32(2), Value::from_i64(q)}).i64, uint64_t{0xFFFF'FFFF'FFFF'DEF0});
    EXPECT_EQ(f.call(name, {Value::from_i32(0), Value::from_i64(q)}).i64, uint64_t{0x6543'0000});
  }
}

// Runs `check` on the fixture loaded eagerly, then lazily (stubs until a
// body's first call).
template <class Check>
void eager_and_lazy(Check check) {
  for (bool lazy : {false, true}) {
    SCOPED_TRACE(lazy ? "lazy" : "eager");
    vm::LoadOptions options;
    options.lazy = lazy;
    Fixture f(options);
    ASSERT_NE(f.module, nullptr);
    EXPECT_EQ(f.module->lazy, lazy);
    check(f);
  }
}

// A call copies the image from its end, starting at a byte offset the code
// holds (CompiledFunc::frame_init_neg_bytes, vm/interp.cc, init_frame): it
// must be the image's size, in every body and in a lazy load's stubs, or a
// call copies too little or runs past the image without stopping. A short
// image is read from inside the CompiledFunc, where it must end at its end.
void expect_image_placed(const vm::CompiledFunc& c) {
  EXPECT_EQ(c.frame_init_neg_bytes, -8 * static_cast<int64_t>(c.frame_init.size()));
  EXPECT_EQ(c.frame_init_end, c.param_slots + c.frame_init.size());
  if (c.frame_init.size() <= vm::CompiledFunc::kInlineImage)
    EXPECT_TRUE(
        std::equal(c.frame_init.begin(), c.frame_init.end(), std::end(c.image_inline) - c.frame_init.size()));
}
TEST(FrameImage, CopyStartsAtTheImageStart) {
  eager_and_lazy([](Fixture& f) {
    for (const vm::CompiledFunc& c : f.module->code) expect_image_placed(c);
    // and once lowered on its first call (lazy), its body's
    EXPECT_EQ(f.call("many", {Value::from_i32(7)}).i64, 7u + 63u);
    expect_image_placed(f.code("many"));
  });
}

// An image longer than the inline one is copied whole from frame_init: the
// twenty locals read as zeros after a call that left its own values there.
TEST(FrameImage, LongImageIsCopiedWhole) {
  eager_and_lazy([](Fixture& f) {
    EXPECT_EQ(f.call("long_image", {Value::from_i64(3)}).i64, 20u * 3 + 190);
    EXPECT_GT(f.code("long_inner").frame_init.size(), vm::CompiledFunc::kInlineImage);
    EXPECT_EQ(f.call("long_image", {Value::from_i64(0)}).i64, 0u);
    EXPECT_EQ(f.call("long_inner", {Value::from_i64(0)}).i64, 0u);
  });
}

}  // namespace
}  // namespace wzvm
