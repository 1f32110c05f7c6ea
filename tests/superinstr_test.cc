// Super-instructions (vm/code.h, vm/chains.def): pairs of instructions that
// lowering fuses into one operation must compute what the pair computes, and
// a trap inside one must look like a trap in the instruction that failed: the
// same byte offset in the backtrace and the same instruction counts.
#include <gtest/gtest.h>

#include <bit>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "profiler/instruction_profile.h"
#include "vm/code.h"
#include "vm/module.h"
#include "vm/runtime.h"

namespace wzvm {
namespace {

std::string path() { return std::string(WZVM_TESTDATA_DIR) + "/superinstr.wasm"; }

std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Fixture {
  std::shared_ptr<const vm::Module> module;
  vm::Store store;
  vm::Instance* inst = nullptr;
  Fixture() {
    auto m = vm::load_module(read_bytes(path()));
    EXPECT_TRUE(m) << m.error().to_string();
    module = m.value();
    auto i = store.instantiate(module, {});
    EXPECT_TRUE(i);
    inst = i.value();
  }
  vm::Trap call(const char* name, std::vector<vm::Value> args, std::vector<vm::Value>& results) {
    return store.invoke(inst->exported_func(name), args, results);
  }
  // The opcode byte at the offset the trap reports for its innermost frame.
  int trap_opcode(const vm::Trap& t) const {
    if (t.backtrace.empty() || t.backtrace[0].offset < 0) return -1;
    return module->bytes.at(static_cast<size_t>(t.backtrace[0].offset));
  }
};

using vm::Value;
Value f64(double d) { return Value::from_f64_bits(std::bit_cast<uint64_t>(d)); }

TEST(SuperInstructions, Results) {
  Fixture f;
  std::vector<Value> r;
  ASSERT_FALSE(f.call("store_f64", {Value::from_i32(64), f64(2.5)}, r));
  ASSERT_FALSE(f.call("bin_load", {Value::from_i32(64), f64(10.0)}, r));
  EXPECT_EQ(r.at(0).f64, 7.5);
  ASSERT_FALSE(f.call("store_bin", {Value::from_i32(128), f64(1.0), f64(4.0)}, r));
  EXPECT_EQ(r.at(0).f64, 0.25);
  ASSERT_FALSE(f.call("accumulate", {Value::from_i32(256), Value::from_i32(64), f64(0.5)}, r));
  EXPECT_EQ(r.at(0).f64, 3.0);
  ASSERT_FALSE(f.call("product3", {f64(3.0), f64(0.5), f64(-4.0)}, r));
  EXPECT_EQ(r.at(0).f64, -6.0);
  // The address sum wraps to 32 bits, as the i32.add it replaces.
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(0xFFFFFFF0u), Value::from_i32(0x10 + 64)}, r));
  EXPECT_EQ(r.at(0).i32, 0u) << "bits of 2.5 at 64: low word";
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(0xFFFFFFF0u), Value::from_i32(0x10 + 68)}, r));
  EXPECT_EQ(r.at(0).i32, 0x40040000u) << "bits of 2.5 at 64: high word";
  // (x << 2) + base + 4, wrapping like the i32.shl and i32.add it replaces.
  ASSERT_FALSE(f.call("load_index", {Value::from_i32(56), Value::from_i32(1)}, r));
  EXPECT_EQ(r.at(0).i32, 0u) << "bits of 2.5 at 64: low word";
  ASSERT_FALSE(f.call("load_index", {Value::from_i32(0xFFFFFFFCu), Value::from_i32(0x40000011u)}, r));
  EXPECT_EQ(r.at(0).i32, 0x40040000u) << "0x44 + 0xFFFFFFFC + 4 = 68: high word";
  ASSERT_FALSE(f.call("load_add_8s", {Value::from_i32(64 + 7 - 3)}, r));
  EXPECT_EQ(r.at(0).i32, 0x40u);
  uint32_t a = 0x87654321u, b = 5, c = 0x0F0F0F0Fu;
  ASSERT_FALSE(f.call("chains", {Value::from_i32(a), Value::from_i32(b), Value::from_i32(c)}, r));
  EXPECT_EQ(r.at(0).i32, (c + (a << b)) ^ (((a << 7) | (a >> 25)) ^ c));
  ASSERT_FALSE(f.call("sum4", {Value::from_i32(0xFFFFFFFFu), Value::from_i32(2), Value::from_i32(3), Value::from_i32(4)}, r));
  EXPECT_EQ(r.at(0).i32, 8u);
  ASSERT_FALSE(f.call("rotate", {Value::from_i32(1), Value::from_i32(2), Value::from_i32(3)}, r));
  EXPECT_EQ(r.at(0).i32, 231u);
}

// Pairs that lowering merges into one op (vm/compile.cc): two i32.adds into
// locals, which run in order (the second sees the first's result); an
// indexed load; a loop's closing step and test.
TEST(SuperInstructions, PairsBecomeOneOp) {
  Fixture f;
  std::vector<Value> r;
  const vm::CompiledFunc* code = f.inst->exported_func("add_pair")->code;
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->code.at(0), static_cast<uint32_t>(vm::IOp::I32Add2)) << vm::iop_name(static_cast<vm::IOp>(code->code.at(0)));
  // and an indexed load is one op too (the chain's temporary is its address)
  const vm::CompiledFunc* index = f.inst->exported_func("load_index")->code;
  ASSERT_NE(index, nullptr);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(index->code.at(0))), "load_shl_add(I32Load)");
  // and so is a loop's closing step and test, after the loop body's xor
  const vm::CompiledFunc* loop = f.inst->exported_func("count_up")->code;
  ASSERT_NE(loop, nullptr);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(loop->code.at(4))), "i32.add+jump_if.back(I32Ne)");
  ASSERT_FALSE(f.call("count_up", {Value::from_i32(5)}, r));
  EXPECT_EQ(r.at(0).i32, 0u ^ 1 ^ 2 ^ 3 ^ 4);
  // 3 iterations of 11 instructions (get get xor set get const add tee get
  // ne br_if) and the local.get after the loop; `loop` itself counts nothing.
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "count_up", {Value::from_i32(3)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->total(), 34u);
  // local 0 = 0xFFFFFFFC + 8 = 4 (wraps), local 1 = 5 + 4 = 9, then 4 - 9.
  ASSERT_FALSE(f.call("add_pair", {Value::from_i32(0xFFFFFFFCu), Value::from_i32(5)}, r));
  EXPECT_EQ(r.at(0).i32, 0xFFFFFFFBu);
}

TEST(SuperInstructions, TrapReportsTheFailingInstruction) {
  Fixture f;
  std::vector<Value> r;
  vm::Trap t = f.call("load_add", {Value::from_i32(65536 - 2), Value::from_i32(0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load";
  t = f.call("load_index", {Value::from_i32(65536 - 8), Value::from_i32(1)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load of load_index";
  t = f.call("bin_load", {Value::from_i32(65536 - 4), f64(1.0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x2B) << "f64.load";
  t = f.call("store_bin", {Value::from_i32(65536 - 8), f64(1.0), f64(2.0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x39) << "f64.store";
  t = f.call("accumulate", {Value::from_i32(0), Value::from_i32(65536 - 1), f64(1.0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x2B) << "f64.load of accumulate";
  t = f.call("accumulate", {Value::from_i32(65536 - 1), Value::from_i32(0), f64(1.0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x39) << "f64.store of accumulate";
}

// Instructions before the trap count, the trapping one counts, later ones do not.
TEST(SuperInstructions, TrapKeepsExactCounts) {
  struct Case {
    const char* name;
    std::vector<Value> args;
    uint64_t count;
  };
  const Case cases[] = {
      {"load_add", {Value::from_i32(65536 - 2), Value::from_i32(0)}, 4},                      // get get add load
      {"bin_load", {Value::from_i32(65536 - 4), f64(1.0)}, 3},                    // get get load
      {"store_bin", {Value::from_i32(65536 - 8), f64(1.0), f64(2.0)}, 5},  // get get get div store
      {"accumulate", {Value::from_i32(0), Value::from_i32(65536 - 1), f64(1.0)}, 4},  // get get get load
      {"accumulate", {Value::from_i32(65536 - 1), Value::from_i32(0), f64(1.0)}, 6},  // ... add store
      {"load_index", {Value::from_i32(65536 - 8), Value::from_i32(1)}, 6},  // get get const shl add load
      {"add_pair_trap", {Value::from_i32(0), Value::from_i32(65536 - 2)}, 10},  // (get const add set) x2, get load
  };
  for (const Case& c : cases) {
    auto p = profiler::InstructionProfile::run_and_count_file(path(), c.name, c.args);
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds) << c.name;
    EXPECT_EQ(p->total(), c.count) << c.name;
  }
}

}  // namespace
}  // namespace wzvm
