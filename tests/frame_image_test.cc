// The frame image every call copies (vm/code.h, CompiledFunc::frame_init;
// vm/lower/function_compiler.cc, compile()): it holds only what the code
// still reads, and what it leaves out changes no result.
#include <gtest/gtest.h>

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
  Fixture() {
    auto m = vm::load_module(read_bytes(std::string(WZVM_TESTDATA_DIR) + "/frame_image.wasm"));
    EXPECT_TRUE(m) << m.error().to_string();
    module = m.value();
    auto i = store.instantiate(module, {});
    EXPECT_TRUE(i);
    inst = i.value();
  }
  const vm::CompiledFunc& code(const char* name) { return *inst->exported_func(name)->code; }
  Value call(const char* name, std::vector<Value> args) {
    std::vector<Value> r;
    EXPECT_FALSE(store.invoke(inst->exported_func(name), args, r)) << name;
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

}  // namespace
}  // namespace wzvm
