// Super-instructions (vm/code.h, vm/chains.def): pairs of instructions that
// lowering fuses into one operation must compute what the pair computes, and
// a trap inside one must look like a trap in the instruction that failed: the
// same byte offset in the backtrace and the same instruction counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "profiler/instruction_profile.h"
#include "vm/code.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/profiling.h"
#include "vm/runtime.h"

namespace wzvm {
namespace {

// vm/iops.inc is the one list of internal ops that the IOp enum, iop_name
// and the interpreter's dispatch tables all expand. Checked against the
// source tables, expanded here on their own: each row's enumerator carries
// that row's name, the derived families name their row, and no two ops
// share a name (a family expanded twice, or out of step, would).
TEST(InternalOps, OneListNamesEveryOpInOrder) {
#define WZVM_OP(Name, prefix, code, text, ...) EXPECT_STREQ(vm::iop_name(vm::IOp::Name), text) << #Name;
#include "vm/opcodes.def"
#undef WZVM_OP
#define WZVM_IOP(Name, text) EXPECT_STREQ(vm::iop_name(vm::IOp::Name), text) << #Name;
#define WZVM_PLAIN_IOP(Name, text) WZVM_IOP(Name, text)
#include "vm/internal_ops.def"
#undef WZVM_PLAIN_IOP
#undef WZVM_IOP
#define WZVM_CHAIN(Name, First, Second, T, text) EXPECT_STREQ(vm::iop_name(vm::IOp::Name), text) << #Name;
#include "vm/chains.def"
#undef WZVM_CHAIN
#define WZVM_SWITCH_PAIR(Name, First, Load, text) EXPECT_STREQ(vm::iop_name(vm::IOp::Name), text) << #Name;
#include "vm/switch_pairs.def"
#undef WZVM_SWITCH_PAIR
// a step pair is named for its two ops
#define WZVM_STEP_JUMP(Name, Step, Jump, Test, T, text)                                            \
  EXPECT_STREQ(vm::iop_name(vm::IOp::Name), text) << #Name;                                        \
  EXPECT_EQ(std::string(text),                                                                     \
            std::string(vm::iop_name(vm::IOp::Step)) + "+" + vm::iop_name(vm::IOp::Jump##_##Test)) \
      << #Name;
#include "vm/step_jumps.def"
#undef WZVM_STEP_JUMP
// a load pair likewise
#define WZVM_LOAD_JUMP(Name, Load, Jump, Test, text)                                               \
  EXPECT_STREQ(vm::iop_name(vm::IOp::Name), text) << #Name;                                        \
  EXPECT_EQ(std::string(text),                                                                     \
            std::string(vm::iop_name(vm::IOp::Load)) + "+" + vm::iop_name(vm::IOp::Jump##_##Test)) \
      << #Name;
#include "vm/load_jumps.def"
#undef WZVM_LOAD_JUMP
#define WZVM_COUNTED_IOP(Name, text) EXPECT_STREQ(vm::iop_name(vm::IOp::Name), text) << #Name;
#include "vm/counted_ops.def"
#undef WZVM_COUNTED_IOP
  EXPECT_STREQ(vm::iop_name(vm::IOp::JumpIf_I32LtS), "jump_if(I32LtS)");
  EXPECT_STREQ(vm::iop_name(vm::IOp::JumpIfBack_I32LtS), "jump_if.back(I32LtS)");
  EXPECT_STREQ(vm::iop_name(vm::IOp::LoadShlAdd_I32Load), "load_shl_add(I32Load)");
  EXPECT_STREQ(vm::iop_name(vm::IOp::StoreBinLoad_F64Mul), "store_bin_load(F64Mul)");
  EXPECT_STREQ(vm::iop_name(vm::IOp::Imm_I64Add), "imm(I64Add)");
  EXPECT_STREQ(vm::iop_name(vm::IOp::JumpIfBackExit_I32LtS), "jump_if.back_exit(I32LtS)");
  // The WebAssembly instructions come first, in opcodes.def's order.
  EXPECT_EQ(static_cast<uint32_t>(vm::IOp::Unreachable), 0u);
  std::map<std::string, uint32_t> seen;
  for (uint32_t i = 0; i < static_cast<uint32_t>(vm::IOp::Count); ++i) {
    if (static_cast<vm::IOp>(i) == vm::IOp::SelectT) continue;  // `select t*` is written "select" too
    auto [it, fresh] = seen.emplace(vm::iop_name(static_cast<vm::IOp>(i)), i);
    EXPECT_TRUE(fresh) << it->first << " at " << i << " and " << it->second;
  }
}

std::string path() { return std::string(WZVM_TESTDATA_DIR) + "/superinstr.wasm"; }

std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The code of superinstr.wasm's export `name` lowered with `options`.
// Empty, and a failure, when the module or the export is missing.
vm::CompiledFunc lowered_with(const std::string& name, const vm::LoadOptions& options) {
  auto m = vm::load_module(read_bytes(path()), options);
  EXPECT_TRUE(m) << m.error().to_string();
  if (!m) return {};
  const vm::Module& mod = *m.value();
  for (const vm::Export& e : mod.exports)
    if (e.kind == vm::ExternKind::Func && e.name == name && e.index >= mod.num_imported_funcs)
      return mod.code.at(e.index - mod.num_imported_funcs);
  ADD_FAILURE() << "no exported function " << name;
  return {};
}

// ... lowered for fuel (LoadOptions::fuel): what the fused forms look like
// in code charging fuel.
vm::CompiledFunc fuel_lowered(const std::string& name) {
  vm::LoadOptions fuel;
  fuel.fuel = true;
  return lowered_with(name, fuel);
}

// ... lowered for instruction counting without fuel: the counting loop's code.
vm::CompiledFunc counted_lowered(const std::string& name) {
  vm::LoadOptions counted;
  counted.count_instructions = true;
  return lowered_with(name, counted);
}

// How many words of `code` are `op` (an operand may match too: the tests
// choose functions whose operands do not).
size_t op_count(const std::vector<uint32_t>& code, vm::IOp op) {
  return static_cast<size_t>(std::count(code.begin(), code.end(), static_cast<uint32_t>(op)));
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
  // The name of the op at word `word` of export `name`'s code.
  const char* op_at(const char* name, size_t word) const {
    return vm::iop_name(static_cast<vm::IOp>(inst->exported_func(name)->code->code.at(word)));
  }
  // The opcode byte at the offset the trap reports for its innermost frame.
  int trap_opcode(const vm::Trap& t) const {
    if (t.backtrace.empty() || t.backtrace[0].offset < 0) return -1;
    return module->bytes.at(static_cast<size_t>(t.backtrace[0].offset));
  }
};

using vm::Value;
Value f64(double d) { return Value::from_f64_bits(std::bit_cast<uint64_t>(d)); }

// A call of an export of superinstr.wasm in counted code: how many wasm
// instructions it runs and how it ends, checked for each case (with `options`,
// e.g. fuel).
struct CountCase {
  const char* name;
  std::vector<Value> args;
  uint64_t count;
  vm::TrapCode trap;
};
void expect_counts(const std::vector<CountCase>& cases, const profiler::RunOptions& options = {},
                   const char* how = "") {
  for (const CountCase& c : cases) {
    auto p = profiler::InstructionProfile::run_and_count_file(path(), c.name, c.args, {}, options);
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->trap().code, c.trap) << c.name << how;
    EXPECT_EQ(p->total(), c.count) << c.name << " " << (c.args.empty() ? 0 : c.args[0].i32) << how;
  }
}

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
  ASSERT_FALSE(f.call(
      "sum4", {Value::from_i32(0xFFFFFFFFu), Value::from_i32(2), Value::from_i32(3), Value::from_i32(4)}, r));
  EXPECT_EQ(r.at(0).i32, 8u);
  ASSERT_FALSE(f.call("rotate", {Value::from_i32(1), Value::from_i32(2), Value::from_i32(3)}, r));
  EXPECT_EQ(r.at(0).i32, 231u);
}

// Pairs that lowering merges into one op (vm/lower/fusion.cc): two i32.adds into
// locals, which run in order (the second sees the first's result); an
// indexed load; a loop's closing step and test.
TEST(SuperInstructions, PairsBecomeOneOp) {
  Fixture f;
  std::vector<Value> r;
  const vm::CompiledFunc* code = f.inst->exported_func("add_pair")->code;
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->code.at(0), static_cast<uint32_t>(vm::IOp::I32Add2))
      << vm::iop_name(static_cast<vm::IOp>(code->code.at(0)));
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

// f64.mul+add (vm/chains.def, nbody's and dot products' a * b + c) rounds
// the product and then the sum, as the two instructions do: never one FMA.
// With a = 1 + 2^-27 and b = 1 - 2^-27 the product 1 - 2^-54 rounds to 1, so
// a * b - 1 is 0, where an FMA gives -2^-54. The temporary as the add's
// second operand is not fused (a NaN's payload could change).
TEST(SuperInstructions, MultiplyAddRoundsTwice) {
  Fixture f;
  std::vector<Value> r;
  EXPECT_STREQ(f.op_at("mul_add", 0), "f64.mul+add");
  EXPECT_STREQ(f.op_at("add_mul", 0), "f64.mul");
  const double a = 1 + 0x1p-27, b = 1 - 0x1p-27;
  for (const char* name : {"mul_add", "add_mul"}) {
    ASSERT_FALSE(f.call(name, {f64(a), f64(b), f64(-1.0)}, r));
    EXPECT_EQ(std::bit_cast<uint64_t>(r.at(0).f64), 0u) << name << ": +0, not an FMA's -2^-54";
    ASSERT_FALSE(f.call(name, {f64(3.0), f64(0.5), f64(-4.0)}, r));
    EXPECT_EQ(r.at(0).f64, -2.5) << name;
  }
  expect_counts({{"mul_add", {f64(a), f64(b), f64(-1.0)}, 5, vm::TrapCode::None}});
}

// bench/suite's numeric loops (vm/lower/fusion.cc): an f64 binary whose
// load takes its address from an i32.add (gemm's `a * b[j + 1]`), a loop
// closed by an i32.add2 and its test (gemm, nbody), and SHA-256's sigma
// functions. Results, the trap and instruction counts as unfused code.
TEST(SuperInstructions, NumericLoopShapesAreFused) {
  Fixture f;
  std::vector<Value> r;
  EXPECT_STREQ(f.op_at("load_add_mul", 0), "bin_load_add(F64Mul)");
  EXPECT_STREQ(f.op_at("add2_loop", 0), "i32.add2+jump_if.back(I32Ne)");
  EXPECT_STREQ(f.op_at("add2_countdown", 0), "i32.add2+jump_if.back");
  EXPECT_STREQ(f.op_at("big_sigma", 0), "i32.rotl3+xor");
  EXPECT_STREQ(f.op_at("small_sigma", 0), "i32.rotl2+shr_u+xor");
  EXPECT_STREQ(f.op_at("rot3", 0), "i32.rotl3+xor");
  EXPECT_STREQ(f.op_at("rot2_shr", 0), "i32.rotl2+shr_u+xor");
  EXPECT_STREQ(f.op_at("rot2", 0), "i32.rotl2+xor");

  ASSERT_FALSE(f.call("store_f64", {Value::from_i32(72), f64(2.5)}, r));
  ASSERT_FALSE(f.call("load_add_mul", {Value::from_i32(64), f64(3.0)}, r));
  EXPECT_EQ(r.at(0).f64, 7.5);
  // The address sum wraps to 32 bits, as the i32.add it replaces.
  ASSERT_FALSE(f.call("store_f64", {Value::from_i32(0), f64(-1.5)}, r));
  ASSERT_FALSE(f.call("load_add_mul", {Value::from_i32(0xFFFFFFF8u), f64(2.0)}, r));
  EXPECT_EQ(r.at(0).f64, -3.0);
  vm::Trap t = f.call("load_add_mul", {Value::from_i32(65536 - 8), f64(1.0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x2B) << "f64.load of load_add_mul";

  ASSERT_FALSE(f.call("add2_loop", {Value::from_i32(5)}, r));
  EXPECT_EQ(r.at(0).i32, 15u);
  ASSERT_FALSE(f.call("add2_countdown", {Value::from_i32(4)}, r));
  EXPECT_EQ(r.at(0).i32, 12u);

  const uint32_t x = 0x6A09E667u, y = 0xBB67AE85u;
  auto rotl = [](uint32_t v, uint32_t k) { return std::rotl(v, static_cast<int>(k & 31)); };
  ASSERT_FALSE(f.call("big_sigma", {Value::from_i32(x)}, r));
  EXPECT_EQ(r.at(0).i32, rotl(x, 26) ^ rotl(x, 21) ^ rotl(x, 7));
  ASSERT_FALSE(f.call("small_sigma", {Value::from_i32(x)}, r));
  EXPECT_EQ(r.at(0).i32, rotl(x, 25) ^ rotl(x, 14) ^ (x >> 3));
  ASSERT_FALSE(f.call(
      "rot3",
      {Value::from_i32(x), Value::from_i32(37), Value::from_i32(64 + 21), Value::from_i32(0xFFFFFFE7u)}, r));
  EXPECT_EQ(r.at(0).i32, rotl(x, 5) ^ rotl(x, 21) ^ rotl(x, 7));
  ASSERT_FALSE(f.call(
      "rot2_shr", {Value::from_i32(x), Value::from_i32(26), Value::from_i32(21), Value::from_i32(35)}, r));
  EXPECT_EQ(r.at(0).i32, rotl(x, 26) ^ rotl(x, 21) ^ (x >> 3));
  ASSERT_FALSE(
      f.call("rot2", {Value::from_i32(x), Value::from_i32(5), Value::from_i32(y), Value::from_i32(40)}, r));
  EXPECT_EQ(r.at(0).i32, rotl(x, 5) ^ rotl(y, 8));

  // Per pass `get const add set, get get const add tee ne br_if` (11) and
  // `get const add set, get const add tee br_if` (9), then the get after.
  const std::vector<CountCase> cases = {
      {"load_add_mul", {Value::from_i32(64), f64(3.0)}, 6, vm::TrapCode::None},
      {"load_add_mul", {Value::from_i32(65536 - 8), f64(1.0)}, 5, vm::TrapCode::MemoryOutOfBounds},
      {"add2_loop", {Value::from_i32(5)}, 5u * 11 + 1, vm::TrapCode::None},
      {"add2_countdown", {Value::from_i32(4)}, 4u * 9 + 1, vm::TrapCode::None},
      {"big_sigma", {Value::from_i32(x)}, 11, vm::TrapCode::None},
      {"small_sigma", {Value::from_i32(x)}, 11, vm::TrapCode::None},
      {"rot2",
       {Value::from_i32(x), Value::from_i32(5), Value::from_i32(y), Value::from_i32(40)},
       7,
       vm::TrapCode::None},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// A bytecode loop's fetch (bench/suite interp): `i = &code[pc]` into a local,
// then a switch on `i->op`. The chain runs with the load and the switch in
// one dispatch; a trap in the load is the load's, with exact counts.
TEST(SuperInstructions, FetchAndSwitchAreOneDispatch) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("fetch_switch")->code->code;
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "i32.shl+add+i32.load8_u+switch");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(5))), "i32.load8_u+switch");
  ASSERT_FALSE(f.call("fetch_switch", {Value::from_i32(8192), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(0).i32, 42u) << "op 0 reads its argument through the local";
  ASSERT_FALSE(f.call("fetch_switch", {Value::from_i32(8192), Value::from_i32(1)}, r));
  EXPECT_EQ(r.at(0).i32, 100u);
  ASSERT_FALSE(f.call("fetch_switch", {Value::from_i32(8192), Value::from_i32(2)}, r));
  EXPECT_EQ(r.at(0).i32, 200u) << "op 7: the default";
  vm::Trap t = f.call("fetch_switch", {Value::from_i32(65536 - 8), Value::from_i32(1)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x2D) << "i32.load8_u";
  // get get const shl add tee load8_u br_table, then each case's own.
  const std::vector<CountCase> cases = {
      {"fetch_switch", {Value::from_i32(8192), Value::from_i32(0)}, 11, vm::TrapCode::None},
      {"fetch_switch", {Value::from_i32(8192), Value::from_i32(1)}, 10, vm::TrapCode::None},
      {"fetch_switch", {Value::from_i32(8192), Value::from_i32(2)}, 9, vm::TrapCode::None},
      {"fetch_switch", {Value::from_i32(65536 - 8), Value::from_i32(1)}, 7, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// An i32.add right before a load at another sum runs with it (sha256's
// rounds; gemm's f64 multiply of such a load likewise): both ops whole, the add first, a trap in the load at
// its own instruction with exact counts.
TEST(SuperInstructions, AnAddAndTheLoadAfterItArePaired) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("add_then_load")->code->code;
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "i32.add+load_add(I32Load)");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(4))), "load_add(I32Load)");
  ASSERT_FALSE(f.call("add_then_load", {Value::from_i32(5), Value::from_i32(1024)}, r));
  EXPECT_EQ(r.at(0).i32, 5u + 64 + 0x3FC) << "the i32 at 1028";
  vm::Trap t = f.call("add_then_load", {Value::from_i32(0), Value::from_i32(65536 - 6)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load";
  // gemm's shape: an i32.add into a local, then bin_load_add(F64Mul).
  const std::vector<uint32_t>& mul = f.inst->exported_func("add_then_mul")->code->code;
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(mul.at(0))), "i32.add+bin_load_add(F64Mul)");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(mul.at(4))), "bin_load_add(F64Mul)");
  ASSERT_FALSE(f.call("store_f64", {Value::from_i32(72), f64(2.5)}, r));
  ASSERT_FALSE(f.call("add_then_mul", {Value::from_i32(1), Value::from_i32(64), f64(3.0)}, r));
  EXPECT_EQ(r.at(0).f64, 7.5 + 9.0);
  t = f.call("add_then_mul", {Value::from_i32(1), Value::from_i32(65536 - 8), f64(1.0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x2B) << "f64.load";
  // get const add set, get get const add load mul, get convert add.
  const std::vector<CountCase> cases = {
      {"add_then_mul", {Value::from_i32(1), Value::from_i32(64), f64(3.0)}, 13, vm::TrapCode::None},
      {"add_then_mul",
       {Value::from_i32(1), Value::from_i32(65536 - 8), f64(1.0)},
       9,
       vm::TrapCode::MemoryOutOfBounds},
      {"add_then_load", {Value::from_i32(5), Value::from_i32(1024)}, 8, vm::TrapCode::None},
      {"add_then_load", {Value::from_i32(0), Value::from_i32(65536 - 6)}, 7, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// An i32.add whose result is only a store's address is part of the store
// (store_add): the sum wraps to 32 bits as the add's did (a 33-bit sum would
// trap), a trap is the store's, at the store, with exact counts, plain and
// counted; Go's wrapped zext(SP) + c is one too; a sum teed into a local
// stays an add, the local written.
TEST(SuperInstructions, StoreAddressFromAnAdd) {
  Fixture f;
  std::vector<Value> r;
  auto i64 = [](uint64_t v) { return Value::from_i64(v); };
  EXPECT_STREQ(f.op_at("store_add", 0), "store_add(I64Store)");
  EXPECT_STREQ(f.op_at("sp_store", 0), "store_add(I64Store32)");
  EXPECT_STREQ(f.op_at("store_add_teed", 0), "i32.add");
  const uint64_t v = 0x0123456789ABCDEFu;
  ASSERT_FALSE(f.call("store_add", {Value::from_i32(0xFFFFFFF0u), Value::from_i32(0x10 + 64), i64(v)}, r));
  EXPECT_EQ(r.at(0).i64, v);
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(70), Value::from_i32(2)}, r));
  EXPECT_EQ(r.at(0).i32, 0x89ABCDEFu) << "stored at -16 + 80 + 8 = 72";
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(76), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(0).i32, 0x01234567u);
  ASSERT_FALSE(f.call("sp_store", {Value::from_i32(0xFFFFFFF8u), i64(0xAAAAAAAA11223344u)}, r));
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(64), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(0).i32, 0x11223344u) << "-8 + 72 = 64, four bytes";
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(68), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(0).i32, 0u) << "the next word untouched";
  ASSERT_FALSE(f.call("store_add_teed", {Value::from_i32(100), Value::from_i32(28)}, r));
  EXPECT_EQ(r.at(0).i32, 128u + 0xFFu);

  // Two store_adds in a row, then two load_adds: pairs, each second op whole.
  EXPECT_STREQ(f.op_at("sp_pairs", 0), "store_add+store_add(I64Store)");
  EXPECT_STREQ(f.op_at("sp_pairs", 5), "store_add(I64Store)");
  EXPECT_STREQ(f.op_at("sp_pairs", 10), "load_add+load_add(I64Load)");
  EXPECT_STREQ(f.op_at("sp_pairs", 15), "load_add(I64Load)");
  ASSERT_FALSE(f.call("sp_pairs", {Value::from_i32(512), i64(520), i64(0x1122334455667788u)}, r));
  EXPECT_EQ(r.at(0).i64, 0x1122334455667788u) << "mem[mem[520] + 8], mem[520] = 520";
  // Traps: the first store (get const add get store), the second (its own
  // offset: ... get const add get store, the first store done), the second
  // load (the value loaded, 65536 - 4, plus 8 out of range: ... load wrap
  // const add load).
  vm::Trap in_second = f.call("sp_pairs", {Value::from_i32(65536 - 20), i64(7), i64(1)}, r);
  EXPECT_EQ(in_second.code, vm::TrapCode::MemoryOutOfBounds);
  vm::Trap in_first = f.call("sp_pairs", {Value::from_i32(65536 - 12), i64(7), i64(1)}, r);
  ASSERT_FALSE(in_first.backtrace.empty());
  ASSERT_FALSE(in_second.backtrace.empty());
  EXPECT_GT(in_second.backtrace[0].offset, in_first.backtrace[0].offset);
  EXPECT_EQ(f.trap_opcode(in_second), 0x37);
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(65536 - 12), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(0).i32, 7u) << "the first store done";
  vm::Trap in_load = f.call("sp_pairs", {Value::from_i32(256), i64(65536 - 4), i64(1)}, r);
  EXPECT_EQ(in_load.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(in_load), 0x29);
  expect_counts(
      {{"sp_pairs", {Value::from_i32(65536 - 12), i64(7), i64(1)}, 5, vm::TrapCode::MemoryOutOfBounds},
       {"sp_pairs", {Value::from_i32(65536 - 20), i64(7), i64(1)}, 10, vm::TrapCode::MemoryOutOfBounds},
       {"sp_pairs", {Value::from_i32(256), i64(65536 - 4), i64(1)}, 18, vm::TrapCode::MemoryOutOfBounds},
       {"sp_pairs", {Value::from_i32(512), i64(520), i64(5)}, 18, vm::TrapCode::None}});

  // Two i64 stores in a row: one paired op, the second store whole; a trap
  // in the second is at its own instruction, the first store done.
  EXPECT_STREQ(f.op_at("two_stores64", 0), "i64.store+i64.store");
  EXPECT_STREQ(f.op_at("two_stores64", 4), "i64.store");
  ASSERT_FALSE(f.call("two_stores64", {Value::from_i32(256), i64(50), i64(8)}, r));
  EXPECT_EQ(r.at(0).i64, 42u);
  vm::Trap second = f.call("two_stores64", {Value::from_i32(65536 - 12), i64(v), i64(1)}, r);
  EXPECT_EQ(second.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(second), 0x37);
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(65536 - 12), Value::from_i32(4)}, r));
  EXPECT_EQ(r.at(0).i32, 0x01234567u) << "the first store done";
  expect_counts(
      {{"two_stores64", {Value::from_i32(65536 - 12), i64(v), i64(1)}, 6, vm::TrapCode::MemoryOutOfBounds},
       {"two_stores64", {Value::from_i32(65536 - 4), i64(v), i64(1)}, 3, vm::TrapCode::MemoryOutOfBounds},
       {"two_stores64", {Value::from_i32(256), i64(50), i64(8)}, 11, vm::TrapCode::None}});

  vm::Trap t = f.call("store_add", {Value::from_i32(65536 - 8), Value::from_i32(0), i64(v)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x37) << "i64.store";
  t = f.call("sp_store", {Value::from_i32(65536 - 72 - 3), i64(v)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x3E) << "i64.store32";
  const std::vector<CountCase> cases = {
      {"store_add", {Value::from_i32(64), Value::from_i32(0), i64(v)}, 9, vm::TrapCode::None},
      {"store_add",
       {Value::from_i32(65536 - 8), Value::from_i32(0), i64(v)},
       5,
       vm::TrapCode::MemoryOutOfBounds},
      {"sp_store", {Value::from_i32(0xFFFFFFF8u), i64(v)}, 7, vm::TrapCode::None},
      {"sp_store", {Value::from_i32(65536 - 72 - 3), i64(v)}, 7, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
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
      {"load_add", {Value::from_i32(65536 - 2), Value::from_i32(0)}, 4},              // get get add load
      {"bin_load", {Value::from_i32(65536 - 4), f64(1.0)}, 3},                        // get get load
      {"store_bin", {Value::from_i32(65536 - 8), f64(1.0), f64(2.0)}, 5},             // get get get div store
      {"accumulate", {Value::from_i32(0), Value::from_i32(65536 - 1), f64(1.0)}, 4},  // get get get load
      {"accumulate", {Value::from_i32(65536 - 1), Value::from_i32(0), f64(1.0)}, 6},  // ... add store
      {"load_index", {Value::from_i32(65536 - 8), Value::from_i32(1)}, 6},  // get get const shl add load
      {"add_pair_trap",
       {Value::from_i32(0), Value::from_i32(65536 - 2)},
       10},  // (get const add set) x2, get load
  };
  for (const Case& c : cases) {
    auto p = profiler::InstructionProfile::run_and_count_file(path(), c.name, c.args);
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds) << c.name;
    EXPECT_EQ(p->total(), c.count) << c.name;
  }
}

// Two loads in a row are one paired op (vm/mem_pairs.def) followed by the
// second load, whole: results as two loads, a trap in either at its own
// instruction with exact counts.
TEST(SuperInstructions, LoadsInARowArePaired) {
  Fixture f;
  std::vector<Value> r;
  for (auto [name, pair] :
       {std::pair{"chase", "i32.load+i32.load"}, std::pair{"chase_tee", "i32.load+i32.load8_u"},
        std::pair{"two_fields", "i32.load+i32.load"}, std::pair{"chase3", "i32.load+i32.load"},
        std::pair{"store_load", "i32.store+i32.load"}}) {
    const vm::CompiledFunc* code = f.inst->exported_func(name)->code;
    ASSERT_NE(code, nullptr);
    EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code->code.at(0))), pair) << name;
    EXPECT_TRUE(
        std::any_of(code->source_map.begin(), code->source_map.end(), [](auto& e) { return e.first == 4; }))
        << "the second op whole, at word 4, with its own source offset: " << name;
  }
  const vm::CompiledFunc* three = f.inst->exported_func("chase3")->code;
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(three->code.at(4))), "i32.load+i32.load");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(three->code.at(8))), "i32.load");
  ASSERT_FALSE(f.call("chase3", {Value::from_i32(1028)}, r));
  EXPECT_EQ(r.at(0).i32, 0x12345678u) << "mem[mem[mem[1028] + 4] + 8]";
  // The load sees the store: bytes 2-5 at 2048 after 0x11223344 went to 2052.
  ASSERT_FALSE(f.call("store_load", {Value::from_i32(2048), Value::from_i32(0x11223344u)}, r));
  EXPECT_EQ(r.at(0).i32, 0x33440000u);
  ASSERT_FALSE(f.call("chase", {Value::from_i32(1020)}, r));
  EXPECT_EQ(r.at(0).i32, 0x12345678u) << "mem[mem[1024] + 8]";
  ASSERT_FALSE(f.call("chase_tee", {Value::from_i32(1024)}, r));
  EXPECT_EQ(r.at(0).i32, 0x78u + 1040) << "the byte at mem[1024] + 8, plus mem[1024]";
  ASSERT_FALSE(f.call("two_fields", {Value::from_i32(1040)}, r));
  EXPECT_EQ(r.at(0).i32, 2u - 0x9abcdef0u);
  struct Case {
    const char* name;
    uint32_t arg;
    int opcode;      // of the trapping load
    int64_t after;   // its offset past the first load's (0: the first traps)
    uint64_t count;  // instructions run, the trapping one included
  };
  const Case cases[] = {
      {"chase", 65532, 0x28, 0, 2},            // get load
      {"chase", 1032, 0x28, 3, 3},             // get load load (at 65532 + 8)
      {"chase_tee", 65534, 0x28, 0, 2},        // get load
      {"chase_tee", 1036, 0x2D, 5, 4},         // get load tee load8_u
      {"two_fields", 65532, 0x28, 0, 2},       // get load
      {"two_fields", 65536 - 12, 0x28, 5, 4},  // get load get load
      {"chase3", 1036, 0x28, 3, 3},            // get load load (at 65532 + 4)
      {"chase3", 1032, 0x28, 6, 4},            // get load load load (at 1032 + 4, then 65532 + 8)
  };
  for (const Case& c : cases) {
    vm::Trap first = f.call(c.name, {Value::from_i32(65534)}, r);  // in the first load
    vm::Trap t = f.call(c.name, {Value::from_i32(c.arg)}, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << c.name << " " << c.arg;
    EXPECT_EQ(f.trap_opcode(t), c.opcode) << c.name << " " << c.arg;
    ASSERT_FALSE(t.backtrace.empty());
    ASSERT_FALSE(first.backtrace.empty());
    EXPECT_EQ(t.backtrace[0].offset - first.backtrace[0].offset, c.after) << c.name << " " << c.arg;
    auto p = profiler::InstructionProfile::run_and_count_file(path(), c.name, {Value::from_i32(c.arg)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds) << c.name << " " << c.arg;
    EXPECT_EQ(p->total(), c.count) << c.name << " " << c.arg;
  }
}

// An argument's copy right before a call_func is a paired op followed by
// the call, whole (vm/internal_ops.def, copy+call_func): the callee gets its
// arguments, a trap in it or a stack overflow at the call is reported at
// the call, counts are exact, and a branch target between the two keeps
// them apart.
TEST(SuperInstructions, ArgumentCopyAndCallArePaired) {
  Fixture f;
  std::vector<Value> r;
  EXPECT_STREQ(f.op_at("call_one", 0), "copy+call_func");
  EXPECT_STREQ(f.op_at("call_one", 3), "call_func");
  EXPECT_STREQ(f.op_at("call_two", 0), "copy2+call_func");
  EXPECT_STREQ(f.op_at("call_two", 5), "call_func");
  EXPECT_STREQ(f.op_at("call_three", 0), "copy3+call_func");
  EXPECT_STREQ(f.op_at("call_three", 7), "call_func");
  EXPECT_STREQ(f.op_at("call_three_run", 0), "copy4+call_func") << "the local's copy, then three arguments";
  EXPECT_STREQ(f.op_at("call_three_run", 9), "call_func");
  EXPECT_STREQ(f.op_at("call_four", 0), "copy4+call_func");
  EXPECT_STREQ(f.op_at("call_four", 9), "call_func");
  ASSERT_FALSE(f.call("call_one", {Value::from_i32(1024)}, r));
  EXPECT_EQ(r.at(0).i32, 1040u);
  ASSERT_FALSE(f.call("call_two", {Value::from_i32(5), Value::from_i32(100)}, r));
  EXPECT_EQ(r.at(0).i32, 100u - 5);
  ASSERT_FALSE(f.call("call_three", {Value::from_i32(1), Value::from_i32(100), Value::from_i32(10)}, r));
  EXPECT_EQ(r.at(0).i32, 100u - 10 - 1);
  ASSERT_FALSE(f.call("call_three_run", {Value::from_i32(1), Value::from_i32(100), Value::from_i32(10)}, r));
  EXPECT_EQ(r.at(0).i32, 100u - 10 - 1);
  ASSERT_FALSE(f.call("call_four",
                      {Value::from_i32(1), Value::from_i32(10), Value::from_i32(100), Value::from_i32(1000)},
                      r));
  EXPECT_EQ(r.at(0).i32, 1000u - 100 - 10 - 1);
  ASSERT_FALSE(f.call("call_deep", {Value::from_i32(1000)}, r));
  EXPECT_EQ(r.at(0).i32, 2000u);
  // A trap in the callee: the load there, then the paired call in the caller.
  vm::Trap t = f.call("call_one", {Value::from_i32(65534)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  ASSERT_EQ(t.backtrace.size(), 2u);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load";
  EXPECT_EQ(f.module->bytes.at(static_cast<size_t>(t.backtrace[1].offset)), 0x10) << "call";
  // The stack overflows at a paired call: the trap is the call's.
  t = f.call("call_deep", {Value::from_i32(100000000)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::StackExhausted);
  EXPECT_EQ(f.trap_opcode(t), 0x10) << "call";
  // The branch lands on the call, after the block's result was copied into
  // the argument's slot on the other way: no pair across the label.
  const std::vector<uint32_t>& code = f.inst->exported_func("call_after_label")->code->code;
  EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::CopyCallFunc)), 0);
  EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::CallFunc)), 1);
  ASSERT_FALSE(
      f.call("call_after_label", {Value::from_i32(1040), Value::from_i32(1), Value::from_i32(1024)}, r));
  EXPECT_EQ(r.at(0).i32, 1u) << "branch taken: mem[1040]";
  ASSERT_FALSE(
      f.call("call_after_label", {Value::from_i32(1040), Value::from_i32(0), Value::from_i32(1024)}, r));
  EXPECT_EQ(r.at(0).i32, 1040u) << "not taken: mem[1024]";
  // Counted code calls with call_func.counted: the same counts either way.
  expect_counts({
      {"call_three", {Value::from_i32(1), Value::from_i32(2), Value::from_i32(3)}, 9, vm::TrapCode::None},
      {"call_one", {Value::from_i32(65534)}, 4, vm::TrapCode::MemoryOutOfBounds},  // get call get load
      {"call_deep", {Value::from_i32(5)}, 53, vm::TrapCode::None},  // 10 per level (if, call, ...), then 3
  });
  // ... and pairs its copies with call_local.counted (vm/counted_ops.def):
  // the callee gets its arguments there too.
  const std::pair<const char*, const char*> counted_pairs[] = {{"call_one", "copy+call_local.counted"},
                                                               {"call_two", "copy2+call_local.counted"},
                                                               {"call_three", "copy3+call_local.counted"},
                                                               {"call_four", "copy4+call_local.counted"}};
  for (auto [name, op] : counted_pairs) {
    const vm::CompiledFunc counted = counted_lowered(name);
    // after the body's CountInstr (3 words)
    EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(counted.code.at(3))), op) << name;
  }
  for (auto [name, args, want] :
       {std::tuple{"call_two", std::vector<Value>{Value::from_i32(5), Value::from_i32(100)}, 100u - 5},
        std::tuple{"call_four",
                   std::vector<Value>{Value::from_i32(1), Value::from_i32(10), Value::from_i32(100),
                                      Value::from_i32(1000)},
                   1000u - 100 - 10 - 1}}) {
    auto p = profiler::InstructionProfile::run_and_count_file(path(), name, args);
    ASSERT_TRUE(p) << p.error().to_string();
    ASSERT_EQ(p->results().size(), 1u) << name;
    EXPECT_EQ(p->results()[0].i32, want) << name << ", counted";
  }
}

// Copies in a row are one op, up to four (vm/lower/fusion.cc, merge_copy):
// each copy reads what the ones before it wrote, a trap after them is the
// trapping instruction's, and counts are per wasm instruction.
TEST(SuperInstructions, CopiesInARowAreOneOp) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("copy_run")->code->code;
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "copy4");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(9))), "copy") << "a fifth copy starts a run";
  ASSERT_FALSE(f.call("copy_run", {Value::from_i32(1100), Value::from_i32(60)}, r));
  EXPECT_EQ(r.at(0).i32, 1u) << "mem[1100 - 60]: local 5 is local 0's, through locals 2 and 3";
  vm::Trap t = f.call("copy_run", {Value::from_i32(65600), Value::from_i32(60)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load";
  // get set x5, get get sub load: the load traps, counted
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "copy_run",
                                                            {Value::from_i32(65600), Value::from_i32(60)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(p->total(), 5u * 2 + 4);
}

// A copy right before a jump runs with it (vm/lower/fusion.cc,
// pair_copy_jumps): the copy's op word is the pair's, the jump whole after
// it, forward or back; results are the wasm's, and code lowered for fuel
// (whose jumps are plain, so it pairs) counts what counted code does.
TEST(SuperInstructions, ACopyBeforeAJumpRunsWithIt) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("copy_jumps")->code->code;
  for (vm::IOp pair : {vm::IOp::CopyJump, vm::IOp::CopyJumpIf, vm::IOp::CopyJumpUnless})
    EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(pair)), 1) << vm::iop_name(pair);
  EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::Copy)), 0);
  ASSERT_FALSE(f.call("copy_jumps", {Value::from_i32(5)}, r));
  EXPECT_EQ(r.at(0).i32, 2u * (5 + 3 + 1));
  ASSERT_FALSE(f.call("copy_jumps", {Value::from_i32(4)}, r));
  EXPECT_EQ(r.at(0).i32, 2u * (3 + 1));
  // Each pass `get const and set, get set, get if` (8), `get get add set`
  // when odd (4), `get const sub set, get set, get br_if` (8); then `get
  // get add set, get set, br` (7) and `get get add` (3).
  const std::vector<CountCase> cases = {
      {"copy_jumps", {Value::from_i32(5)}, 5u * 16 + 3 * 4 + 10, vm::TrapCode::None},
      {"copy_jumps", {Value::from_i32(4)}, 4u * 16 + 2 * 4 + 10, vm::TrapCode::None},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
  const std::vector<uint32_t> fuel_code = fuel_lowered("copy_jumps").code;
  EXPECT_GT(
      std::count(fuel_code.begin(), fuel_code.end(), static_cast<uint32_t>(vm::IOp::CopyJumpIf)) +
          std::count(fuel_code.begin(), fuel_code.end(), static_cast<uint32_t>(vm::IOp::CopyJumpUnless)) +
          std::count(fuel_code.begin(), fuel_code.end(), static_cast<uint32_t>(vm::IOp::CopyJump)),
      0)
      << "code lowered for fuel pairs too";
  // Counted code pairs with the counted jumps (expect_counts above ran it).
  const std::vector<uint32_t> counted = counted_lowered("copy_jumps").code;
  EXPECT_EQ(op_count(counted, vm::IOp::CopyJumpUnlessExit), 1u) << "the if";
  EXPECT_EQ(op_count(counted, vm::IOp::CopyJumpIfExit), 1u) << "the br_if back";
  EXPECT_EQ(op_count(counted, vm::IOp::CopyJumpCounted), 1u) << "the br";
  EXPECT_EQ(op_count(counted, vm::IOp::CopyJumpIf) + op_count(counted, vm::IOp::CopyJumpUnless) +
                op_count(counted, vm::IOp::CopyJump),
            0u);
}

// A load of memory 0 right before a conditional jump on a slot is one
// dispatch (vm/internal_ops.def, i32.load+jump_if; pair_copy_jumps): the
// load's op word is the pair's, the jump whole after it. Results are the
// wasm's whichever way each jump goes; a load out of bounds traps at that
// load (its opcode, exact counts, the jump not run).
TEST(SuperInstructions, ALoadBeforeAConditionalJumpRunsWithIt) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("load_jumps")->code->code;
  for (vm::IOp pair : {vm::IOp::I32LoadJumpIf, vm::IOp::I32LoadJumpUnless, vm::IOp::I32Load8UJumpUnless})
    EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(pair)), 1) << vm::iop_name(pair);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "i32.load+jump_if");
  constexpr uint32_t p = 4096;
  for (uint32_t bits = 0; bits < 8; ++bits) {
    SCOPED_TRACE(bits);
    ASSERT_FALSE(f.call("store32", {Value::from_i32(p), Value::from_i32(bits & 1 ? 0x100 : 0)}, r));
    ASSERT_FALSE(f.call("store32", {Value::from_i32(p + 4), Value::from_i32(bits & 2 ? 0x10000 : 0)}, r));
    ASSERT_FALSE(f.call("store32", {Value::from_i32(p + 8), Value::from_i32(bits & 4 ? 0x80 : 0x100)}, r));
    ASSERT_FALSE(f.call("load_jumps", {Value::from_i32(p)}, r));
    EXPECT_EQ(r.at(0).i32, (bits & 1 ? 0u : 1u) + (bits & 2 ? 10u : 0u) + (bits & 4 ? 100u : 0u));
  }
  vm::Trap t = f.call("load_jumps", {Value::from_i32(65536 - 2)}, r);
  ASSERT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "the first i32.load";
  t = f.call("load_jumps", {Value::from_i32(65536 - 8)}, r);
  ASSERT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x2D) << "the i32.load8_u";
  // The first load of 0 (p = 65536 - 8 holds zeros), `local.get load
  // br_if` (3), `const set` (2), `get load if` (3) not taken, `get load8_u`
  // (2) trapping: 10 ran. In a fresh instance's zeros at p: 5, then two
  // ifs not taken (3 each) and the result's `local.get`: 12. The pairs are
  // plain code's only: code lowered for fuel keeps the load and the jump
  // apart (the counting loop has no handler for them) and counts the same;
  // counted code pairs the load with the counted jump (i32.load+jump_if.exit
  // and the others), the traps in those loads too.
  const std::vector<CountCase> cases = {
      {"load_jumps", {Value::from_i32(65536 - 8)}, 10, vm::TrapCode::MemoryOutOfBounds},
      {"load_jumps", {Value::from_i32(p)}, 12, vm::TrapCode::None},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
  const std::vector<uint32_t> fuel_code = fuel_lowered("load_jumps").code;
  EXPECT_EQ(std::count(fuel_code.begin(), fuel_code.end(), static_cast<uint32_t>(vm::IOp::I32Load)), 2);
  for (vm::IOp pair : {vm::IOp::I32LoadJumpIf, vm::IOp::I32LoadJumpUnless, vm::IOp::I32Load8UJumpUnless})
    EXPECT_EQ(std::count(fuel_code.begin(), fuel_code.end(), static_cast<uint32_t>(pair)), 0)
        << vm::iop_name(pair);
  const std::vector<uint32_t> counted = counted_lowered("load_jumps").code;
  for (vm::IOp pair :
       {vm::IOp::I32LoadJumpIfExit, vm::IOp::I32LoadJumpUnlessExit, vm::IOp::I32Load8UJumpUnlessExit})
    EXPECT_EQ(op_count(counted, pair), 1u) << vm::iop_name(pair);
  EXPECT_EQ(op_count(counted, vm::IOp::I32Load) + op_count(counted, vm::IOp::I32Load8U), 0u);
}

// Past a function's constant area, a constant it holds is named in place,
// and a constant address of a load or store goes into the access's offset
// (vm/lower/fusion.cc, fuse_const_address): no const32 is left, results are
// those of the constants, and a trap is the access's, with exact counts.
TEST(SuperInstructions, ConstantAddressesGoIntoTheOffset) {
  Fixture f;
  std::vector<Value> r;
  for (const char* name : {"const_full", "const_addr_trap", "const_store_trap"}) {
    const std::vector<uint32_t>& code = f.inst->exported_func(name)->code->code;
    EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::Const32)), 0) << name;
  }
  ASSERT_FALSE(f.call("const_full", {Value::from_i32(12345)}, r));
  EXPECT_EQ(r.at(0).i32, ((((12345u + 1000) ^ 2000) - 3000) | 0) + 2000 + 1)
      << "stored at 4104, plus mem[1040]";
  vm::Trap t = f.call("const_addr_trap", {Value::from_i32(1)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load";
  t = f.call("const_store_trap", {Value::from_i32(1)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x36) << "i32.store";
  for (auto [name, count] : {std::pair{"const_addr_trap", 11u}, std::pair{"const_store_trap", 13u}}) {
    auto p = profiler::InstructionProfile::run_and_count_file(path(), name, {Value::from_i32(1)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds) << name;
    EXPECT_EQ(p->total(), count) << name;
  }
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "const_full", {Value::from_i32(7)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->trap().code, vm::TrapCode::None);
  EXPECT_EQ(p->total(), 28u);  // 5 x (get const op set), const get store, const load const load add
}

// A br_table on x - k switches on x with k more entries in front of its
// table, to the default (vm/lower/fusion.cc, rebase_switch_index): the add
// is gone, every x goes where x - k went (the k below it wrapped past the
// table), a branch target between the add and the br_table keeps the add,
// and counted code, unchanged, counts what ran.
TEST(SuperInstructions, SwitchOnXMinusKSwitchesOnX) {
  Fixture f;
  std::vector<Value> r;
  auto adds = [&](const char* name) {
    const std::vector<uint32_t>& code = f.inst->exported_func(name)->code->code;
    return std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::I32Add)) +
           std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::Imm_I32Add));
  };
  EXPECT_EQ(adds("switch_rebased"), 0);
  EXPECT_EQ(adds("switch_rebased_value"), 1) << "the target's own add";
  EXPECT_EQ(adds("switch_after_label"), 1);
  const vm::CompiledFunc* imm = f.inst->exported_func("switch_rebased_imm")->code;
  EXPECT_EQ(std::count(imm->code.begin(), imm->code.end(), static_cast<uint32_t>(vm::IOp::Imm_I32Add)), 0)
      << "past the constant area, the add's -1 was an immediate";
  EXPECT_EQ(adds("switch_rebased_imm"), 1) << "the first local.set's";
  auto call = [&](const char* name, std::vector<Value> args) {
    r.clear();
    vm::Trap t = f.call(name, std::move(args), r);
    EXPECT_FALSE(t) << name;
    return r.empty() ? 0xBADu : r.at(0).i32;
  };
  const std::pair<uint32_t, uint32_t> rebased[] = {
      {2, 10}, {3, 11}, {4, 12}, {5, 0}, {1, 0}, {0xFFFFFFFFu, 0}, {0x80000001u, 0}, {0x80000003u, 0}};
  for (auto [x, want] : rebased) {
    if (want == 0) {
      vm::Trap t = f.call("switch_rebased", {Value::from_i32(x)}, r);
      EXPECT_EQ(t.code, vm::TrapCode::Unreachable) << x;
      EXPECT_EQ(f.trap_opcode(t), 0x00) << "unreachable, for " << x;
    } else {
      EXPECT_EQ(call("switch_rebased", {Value::from_i32(x)}), want) << x;
    }
  }
  const std::pair<uint32_t, uint32_t> imm_cases[] = {{0, 29}, {1, 20}, {2, 21}, {3, 29}, {0xFFFFFFFFu, 29}};
  for (auto [x, want] : imm_cases) EXPECT_EQ(call("switch_rebased_imm", {Value::from_i32(x)}), want) << x;
  EXPECT_EQ(call("switch_rebased_value", {Value::from_i32(1)}), 103u);
  EXPECT_EQ(call("switch_rebased_value", {Value::from_i32(2)}), 6u);
  EXPECT_EQ(call("switch_rebased_value", {Value::from_i32(0)}), 0u);
  EXPECT_EQ(call("switch_after_label", {Value::from_i32(2), Value::from_i32(0)}), 10u) << "x - 2";
  EXPECT_EQ(call("switch_after_label", {Value::from_i32(2), Value::from_i32(1)}), 99u) << "x, branched";
  EXPECT_EQ(call("switch_after_label", {Value::from_i32(1), Value::from_i32(1)}), 11u) << "x, branched";
  struct Case {
    const char* name;
    uint32_t x;
    uint64_t count;
    vm::TrapCode trap;
  };
  const Case cases[] = {
      {"switch_rebased", 3, 6, vm::TrapCode::None},         // get const add br_table, const return
      {"switch_rebased", 1, 5, vm::TrapCode::Unreachable},  // get const add br_table, unreachable
      {"switch_rebased_imm", 2, 22, vm::TrapCode::None},    // 4 x (get const op set), 4, const return
  };
  for (const Case& c : cases) {
    auto p = profiler::InstructionProfile::run_and_count_file(path(), c.name, {Value::from_i32(c.x)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->trap().code, c.trap) << c.name;
    EXPECT_EQ(p->total(), c.count) << c.name << " " << c.x;
  }
}

// An i32.load whose address is an add of an immediate (a constant past the
// constant area) is one op: the sum wraps to 32 bits before the offset is
// added, as the add's result did, and a trap is the load's, with exact counts.
TEST(SuperInstructions, LoadAtAnImmediateFromAPointer) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("load_add_imm")->code->code;
  EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::LoadAddImm_I32Load)), 1);
  EXPECT_EQ(std::count(code.begin(), code.end(), static_cast<uint32_t>(vm::IOp::Imm_I32Add)), 0);
  ASSERT_FALSE(f.call("store_f64", {Value::from_i32(64), f64(2.5)}, r));
  ASSERT_FALSE(f.call("load_add_imm", {Value::from_i32(72)}, r));
  EXPECT_EQ(r.at(0).i32, 0x40040000u) << "bits of 2.5 at 64: high word, at 72 - 8 + 4";
  // 4 - 8 wraps to 0xFFFFFFFC, and 0xFFFFFFFC + 4 is past the memory (not 0).
  vm::Trap t = f.call("load_add_imm", {Value::from_i32(4)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load";
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "load_add_imm", {Value::from_i32(4)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(p->total(), 4u * 4 + 4) << "4 x (get const op set), then get const add load";
}

// A load whose value a br_table switches on, right before it, runs with the
// switch in one dispatch (vm/switch_pairs.def): the load's op word is the
// pair's and the switch stays whole after it. Every value goes where the
// switch sent it, a value teed into a local is there for the cases, a trap
// is the load's with exact counts (counted code's switch is never paired;
// fuel's is, and counts the same), and a load that is not the index, or a
// branch target between the two, keeps them apart.
TEST(SuperInstructions, LoadAndSwitchOnItArePaired) {
  Fixture f;
  std::vector<Value> r;
  auto op_at = [&](const vm::Instance* inst, const char* name, size_t word) {
    return vm::iop_name(static_cast<vm::IOp>(inst->exported_func(name)->code->code.at(word)));
  };
  auto pairs = [&](const vm::Instance* inst, const char* name) {
    const std::vector<uint32_t>& code = inst->exported_func(name)->code->code;
    return std::count_if(code.begin(), code.end(), [](uint32_t w) {
#define WZVM_SWITCH_PAIR(Name, First, Load, text) \
  if (w == static_cast<uint32_t>(vm::IOp::Name)) return true;
#include "vm/switch_pairs.def"
#undef WZVM_SWITCH_PAIR
      return false;
    });
  };
  EXPECT_STREQ(op_at(f.inst, "switch_load", 0), "i32.load+switch");
  EXPECT_STREQ(op_at(f.inst, "switch_load", 4), "switch");
  EXPECT_STREQ(op_at(f.inst, "switch_load8_tee", 0), "i32.load8_u+switch");
  EXPECT_STREQ(op_at(f.inst, "switch_load8_tee", 4), "switch");
  EXPECT_STREQ(op_at(f.inst, "switch_load_index", 0), "load_shl_add(I32Load)+switch");
  EXPECT_STREQ(op_at(f.inst, "switch_load_index", 6), "switch");
  EXPECT_STREQ(op_at(f.inst, "switch_load_rebased", 0), "i32.load8_u+switch") << "the add rebased away";
  EXPECT_STREQ(op_at(f.inst, "switch_load_rebased", 4), "switch");
  const vm::CompiledFunc* sw = f.inst->exported_func("switch_load")->code;
  EXPECT_TRUE(std::any_of(sw->source_map.begin(), sw->source_map.end(), [](auto& e) { return e.first == 4; }))
      << "the switch whole, at word 4, with its own source offset";
  EXPECT_EQ(pairs(f.inst, "switch_carries_load"), 0);
  EXPECT_STREQ(op_at(f.inst, "switch_carries_load", 0), "i32.load");
  EXPECT_EQ(pairs(f.inst, "switch_load_after_label"), 0);
  auto call = [&](const char* name, std::vector<Value> args) {
    r.clear();
    vm::Trap t = f.call(name, std::move(args), r);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return r.empty() ? 0xBADu : r.at(0).i32;
  };
  // at x + 4: mem[4] = 0, mem[1040] = 1, mem[1044] = 2, mem[1024] = 1040, mem[1048] = 0x12345678
  const std::pair<uint32_t, uint32_t> loads[] = {{0, 10}, {1036, 11}, {1040, 12}, {1020, 99}, {1044, 99}};
  for (auto [x, want] : loads) EXPECT_EQ(call("switch_load", {Value::from_i32(x)}), want) << x;
  const std::pair<uint32_t, uint32_t> bytes[] = {{0, 100}, {1039, 201}, {1043, 302}, {1047, 0x78u + 300}};
  for (auto [x, want] : bytes) EXPECT_EQ(call("switch_load8_tee", {Value::from_i32(x)}), want) << x;
  // 1036 + (0x40000001 << 2) wraps to 1040
  const std::tuple<uint32_t, uint32_t, uint32_t> indexed[] = {
      {0, 1, 20}, {1040, 0, 21}, {1036, 0x40000001u, 21}, {1040, 1, 29}};
  for (auto [x, i, want] : indexed)
    EXPECT_EQ(call("switch_load_index", {Value::from_i32(x), Value::from_i32(i)}), want) << x << " " << i;
  // the byte at x + 8, less 3: 3 and 4 go to the cases, the rest wrap or clamp to the default
  const std::pair<uint32_t, uint32_t> rebased[] = {{1021, 30}, {1017, 31}, {1024, 39}, {1032, 39}, {0, 39}};
  for (auto [x, want] : rebased) EXPECT_EQ(call("switch_load_rebased", {Value::from_i32(x)}), want) << x;
  // switched on local 1, not on the value loaded (1 and 0 here)
  EXPECT_EQ(call("switch_carries_load", {Value::from_i32(1040), Value::from_i32(0)}), 1001u);
  EXPECT_EQ(call("switch_carries_load", {Value::from_i32(1040), Value::from_i32(7)}), 1u);
  EXPECT_EQ(call("switch_carries_load", {Value::from_i32(0), Value::from_i32(1)}), 0u);
  EXPECT_EQ(call("switch_load_after_label", {Value::from_i32(1040), Value::from_i32(0)}), 11u) << "mem[1040]";
  EXPECT_EQ(call("switch_load_after_label", {Value::from_i32(0), Value::from_i32(0)}), 10u) << "mem[0]";
  EXPECT_EQ(call("switch_load_after_label", {Value::from_i32(0), Value::from_i32(1)}), 11u) << "branched";
  // A trap in the load: the load's, at its offset, the switch not run.
  struct Trapping {
    const char* name;
    std::vector<Value> args;
    int opcode;
  };
  const Trapping traps[] = {{"switch_load", {Value::from_i32(65532)}, 0x28},
                            {"switch_load8_tee", {Value::from_i32(65535)}, 0x2D},
                            {"switch_load_index", {Value::from_i32(65534), Value::from_i32(0)}, 0x28},
                            {"switch_load_rebased", {Value::from_i32(65528)}, 0x2D}};
  for (const Trapping& c : traps) {
    vm::Trap t = f.call(c.name, c.args, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << c.name;
    EXPECT_EQ(f.trap_opcode(t), c.opcode) << c.name;
  }
  // Code lowered for fuel keeps the plain switch, so it pairs too.
  vm::LoadOptions fuel;
  fuel.fuel = true;
  auto m = vm::load_module(read_bytes(path()), fuel);
  ASSERT_TRUE(m) << m.error().to_string();
  vm::Store s;
  auto inst = s.instantiate(m.value(), {});
  ASSERT_TRUE(inst);
  EXPECT_EQ(pairs(inst.value(), "switch_load") + pairs(inst.value(), "switch_load8_tee") +
                pairs(inst.value(), "switch_load_index"),
            3);
  const std::vector<CountCase> cases = {
      {"switch_load", {Value::from_i32(1036)}, 5, vm::TrapCode::None},  // get load br_table, const return
      {"switch_load", {Value::from_i32(1020)}, 4, vm::TrapCode::None},  // get load br_table, const
      {"switch_load", {Value::from_i32(65532)}, 2, vm::TrapCode::MemoryOutOfBounds},  // get load
      {"switch_load8_tee",
       {Value::from_i32(1039)},
       8,
       vm::TrapCode::None},  // get load tee br_table, get const add return
      {"switch_load8_tee", {Value::from_i32(65535)}, 2, vm::TrapCode::MemoryOutOfBounds},
      {"switch_load_index",
       {Value::from_i32(1040), Value::from_i32(0)},
       9,
       vm::TrapCode::None},  // get get const shl add load br_table, const return
      {"switch_load_index", {Value::from_i32(65534), Value::from_i32(0)}, 6, vm::TrapCode::MemoryOutOfBounds},
      // get load const add br_table, const return (no rebase in code counted with fuel or not)
      {"switch_load_rebased", {Value::from_i32(1021)}, 7, vm::TrapCode::None},
      {"switch_load_rebased", {Value::from_i32(65528)}, 2, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// i32.wrap_i64 emits nothing (vm/lower/values.cc): an i32 is its slot's low
// half. Every way an i32 is used must see only that half.
TEST(GoShapes, WrapReadsTheLowHalf) {
  Fixture f;
  std::vector<Value> r;
  auto i64 = [](uint64_t v) { return Value::from_i64(v); };
  ASSERT_FALSE(f.call("store_f64", {Value::from_i32(64), f64(2.5)}, r));
  // [i64.add] [wrap] [i32.load] -> load_add of the low halves: 0xFFFFFFF0 + 0x50 = 0x40.
  const vm::CompiledFunc* load = f.inst->exported_func("wrap_load")->code;
  ASSERT_NE(load, nullptr);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(load->code.at(0))), "load_add(I32Load)");
  ASSERT_FALSE(f.call("wrap_load", {i64(0xABCD0000FFFFFFF0u), i64(0x0000000100000050u)}, r));
  EXPECT_EQ(r.at(0).i32, 0u) << "bits of 2.5 at 64: low word";
  ASSERT_FALSE(f.call("wrap_load", {i64(0xABCD0000FFFFFFF0u), i64(0x0000000100000054u)}, r));
  EXPECT_EQ(r.at(0).i32, 0x40040000u) << "bits of 2.5 at 64: high word";
  ASSERT_FALSE(f.call("wrap_eqz", {i64(0x100000000u)}, r));
  EXPECT_EQ(r.at(0).i32, 1u);
  ASSERT_FALSE(f.call("wrap_extend_u", {i64(0xFFFFFFFF00000005u)}, r));
  EXPECT_EQ(r.at(0).i64, 5u);
  ASSERT_FALSE(f.call("wrap_extend_s", {i64(0x00000001FFFFFFFFu)}, r));
  EXPECT_EQ(r.at(0).i64, ~uint64_t{0});
  ASSERT_FALSE(f.call("wrap_extend_s", {i64(0xFFFFFFFF7FFFFFFFu)}, r));
  EXPECT_EQ(r.at(0).i64, 0x7FFFFFFFu);
  EXPECT_EQ(f.call("wrap_div", {Value::from_i32(9), i64(0x300000000u)}, r).code,
            vm::TrapCode::IntegerDivideByZero);
  ASSERT_FALSE(f.call("wrap_div", {Value::from_i32(9), i64(0x300000003u)}, r));
  EXPECT_EQ(r.at(0).i32, 3u);
  // zext(x) + 0x1_00000048, wrapped: x + 72 as i32.add (wrapping), fused with the load.
  const vm::CompiledFunc* sp = f.inst->exported_func("sp_load")->code;
  ASSERT_NE(sp, nullptr);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(sp->code.at(0))), "load_add(I64Load)");
  ASSERT_FALSE(f.call("sp_load", {Value::from_i32(0xFFFFFFF8u)}, r));
  EXPECT_EQ(r.at(0).i64, std::bit_cast<uint64_t>(2.5)) << "-8 + 72 = 64";
  vm::Trap oob = f.call("sp_load", {Value::from_i32(65536 - 72)}, r);
  EXPECT_EQ(oob.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(oob), 0x29) << "i64.load";
  auto counted =
      profiler::InstructionProfile::run_and_count_file(path(), "sp_load", {Value::from_i32(65536 - 72)});
  ASSERT_TRUE(counted) << counted.error().to_string();
  EXPECT_EQ(counted->total(), 6u) << "get extend const add wrap load";
  // Counted code narrows it too (the add's count mark goes): the same op
  // after the entry's count, the same counts as fuel's, which narrows too.
  vm::LoadOptions counting;
  counting.count_instructions = true;
  auto cm = vm::load_module(read_bytes(path()), counting);
  ASSERT_TRUE(cm) << cm.error().to_string();
  vm::Store cs;
  auto ci = cs.instantiate(cm.value(), {});
  ASSERT_TRUE(ci);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(ci.value()->exported_func("sp_load")->code->code.at(3))),
               "load_add(I64Load)");
  const std::vector<CountCase> sp_cases = {
      {"sp_load", {Value::from_i32(0xFFFFFFF8u)}, 6, vm::TrapCode::None},
      {"sp_load", {Value::from_i32(65536 - 72)}, 6, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(sp_cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(sp_cases, with_fuel, " (fuel)");
  const uint64_t a = 0xFEDCBA9876543210u, b = 0x0123456789ABCDEFu, c = 0x8000000000000001u;
  ASSERT_FALSE(f.call("i64_chains", {i64(a), i64(b), i64(c)}, r));
  EXPECT_EQ(r.at(0).i64, (c + a * b) ^ (((a << 3) + c) + b));
  // An index teed into a local and loaded through at once: one dispatch,
  // the load whole, its trap at its own instruction.
  EXPECT_STREQ(f.op_at("index_load", 0), "i64.mul+add+i64.load32_u");
  EXPECT_STREQ(f.op_at("index_load", 5), "i64.load32_u");
  ASSERT_FALSE(f.call("two_stores64", {Value::from_i32(256), i64(0x0000000700000005u), i64(0)}, r));
  ASSERT_FALSE(f.call("index_load", {i64(232), i64(2)}, r));
  EXPECT_EQ(r.at(0).i64, 12u) << "the words at 232 + 2 * 12 = 256 and 260";
  ASSERT_FALSE(f.call("index_load", {i64(0xFFFFFFFF00000100u - 12), i64(1)}, r));
  EXPECT_EQ(r.at(0).i64, 12u) << "the address wraps to 32 bits";
  vm::Trap t = f.call("index_load", {i64(65534), i64(0)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x35) << "i64.load32_u";
  expect_counts({{"index_load", {i64(232), i64(2)}, 12, vm::TrapCode::None},
                 {"index_load", {i64(65534), i64(0)}, 8, vm::TrapCode::MemoryOutOfBounds}});
  EXPECT_STREQ(f.op_at("midpoint", 0), "i64.add+shr_u");
  EXPECT_STREQ(f.op_at("shift_by_sum", 0), "i64.add");
  ASSERT_FALSE(f.call("midpoint", {i64(0xFFFFFFFFFFFFFFF0u), i64(0x30u)}, r));
  EXPECT_EQ(r.at(0).i64, 0x10u) << "the sum wraps to 0x20 before the shift";
  ASSERT_FALSE(f.call("shift_by_sum", {i64(0x8000000000000000u), i64(0x21u)}, r));
  EXPECT_EQ(r.at(0).i64, 0x8000000000000000u >> 2) << "a count of 66 is 2";
  expect_counts({{"midpoint", {i64(1), i64(2)}, 5, vm::TrapCode::None}});
  // A result leaves as an i32 whose high half is zero.
  ASSERT_FALSE(f.call("wrap_ret", {i64(0xC000000080000001u)}, r));
  EXPECT_EQ(r.at(0).type, vm::ValType::I32);
  EXPECT_EQ(r.at(0).i64, 2u);
  ASSERT_FALSE(f.call("wrap_br_if", {i64(0x100000000u)}, r));
  EXPECT_EQ(r.at(0).i32, 2u) << "the low half is 0: not taken";
  ASSERT_FALSE(f.call("wrap_br_if", {i64(0x100000001u)}, r));
  EXPECT_EQ(r.at(0).i32, 1u);
  // x + x = 2^32: the local holds all 64 bits, its i32 is 0.
  ASSERT_FALSE(f.call("wrap_set", {i64(0x8000000080000000u)}, r));
  EXPECT_EQ(r.at(0).i64, 0u);
  ASSERT_FALSE(f.call("wrap_global", {i64(0x0000000155555556u)}, r));
  EXPECT_EQ(r.at(0).i64, 2u) << "3 * 0x155555556 = 0x400000002";
}

TEST(GoShapes, EqzOfACompareIsTheNegatedCompare) {
  Fixture f;
  std::vector<Value> r;
  auto i64 = [](int64_t v) { return Value::from_i64(static_cast<uint64_t>(v)); };
  const vm::CompiledFunc* code = f.inst->exported_func("not_lt_u")->code;
  ASSERT_NE(code, nullptr);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code->code.at(0))), "jump_unless(I64GeU)");
  struct Case {
    int64_t a, b;
  };
  for (Case c : {Case{1, 2}, Case{2, 2}, Case{3, 2}, Case{-1, 0}, Case{0, -1}, Case{INT64_MIN, INT64_MAX}}) {
    ASSERT_FALSE(f.call("not_lt_u", {i64(c.a), i64(c.b)}, r));
    EXPECT_EQ(r.at(0).i32, !(static_cast<uint64_t>(c.a) < static_cast<uint64_t>(c.b)) ? 1u : 0u)
        << c.a << " " << c.b;
    ASSERT_FALSE(f.call("not_gt_s", {i64(c.a), i64(c.b)}, r));
    EXPECT_EQ(r.at(0).i32, !(c.a > c.b) ? 1u : 0u) << c.a << " " << c.b;
  }
  const vm::CompiledFunc* eqz = f.inst->exported_func("eqz64_if")->code;
  ASSERT_NE(eqz, nullptr);
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(eqz->code.at(0))), "jump_unless(I64Eq)");
  for (uint64_t x : {uint64_t{0}, uint64_t{1}, uint64_t{0x100000000u}, ~uint64_t{0}}) {
    ASSERT_FALSE(f.call("eqz64_if", {Value::from_i64(x)}, r));
    EXPECT_EQ(r.at(0).i32, x == 0 ? 1u : 2u) << x;
    ASSERT_FALSE(f.call("eqz64_br_if", {Value::from_i64(x)}, r));
    EXPECT_EQ(r.at(0).i32, x == 0 ? 1u : 2u) << x;
  }
  // !(x < NaN) is 1; NaN >= x would be 0.
  ASSERT_FALSE(f.call("not_flt", {f64(1.0), f64(std::numeric_limits<double>::quiet_NaN())}, r));
  EXPECT_EQ(r.at(0).i32, 1u);
  ASSERT_FALSE(f.call("not_flt", {f64(1.0), f64(2.0)}, r));
  EXPECT_EQ(r.at(0).i32, 0u);
}

TEST(GoShapes, AComparisonsBoolIsAlreadyAnI64) {
  Fixture f;
  std::vector<Value> r;
  auto i64 = [](uint64_t v) { return Value::from_i64(v); };
  const uint64_t wide = 0xFFFFFFFF00000000u;
  // The comparison reuses the slot the add left wide: 0, not 0xFFFFFFFF00000000.
  for (auto [a, b] : {std::pair{wide, uint64_t{1}}, std::pair{uint64_t{1}, wide}, std::pair{wide, wide}}) {
    ASSERT_FALSE(f.call("bool64", {i64(a), i64(b)}, r));
    EXPECT_EQ(r.at(0).i64, a < b ? 1u : 0u) << a << " " << b;
    ASSERT_FALSE(f.call("bool64_set", {i64(a), i64(b)}, r));
    EXPECT_EQ(r.at(0).i64, static_cast<int64_t>(a) > static_cast<int64_t>(b) ? 1u : 0u) << a << " " << b;
  }
  for (uint64_t x : {uint64_t{4}, uint64_t{5}, wide + 4}) {
    ASSERT_FALSE(f.call("bool64_imm", {i64(x)}, r));
    EXPECT_EQ(r.at(0).i64, x < 5 ? 1u : 0u) << x;
  }
  // eqz(eqz(eqz(x))) is eqz(x): one eqz op left.
  for (uint64_t x : {uint64_t{0}, uint64_t{1}, wide, uint64_t{0x100000000u}}) {
    ASSERT_FALSE(f.call("go_bool_if", {i64(x)}, r));
    EXPECT_EQ(r.at(0).i32, x == 0 ? 1u : 2u) << x;
  }
  for (uint32_t x : {0u, 1u, 2u, 0x80000000u}) {
    ASSERT_FALSE(f.call("eqz3", {Value::from_i32(x)}, r));
    EXPECT_EQ(r.at(0).i32, x == 0 ? 1u : 0u) << x;
  }
  const vm::CompiledFunc* eqz3 = f.inst->exported_func("eqz3")->code;
  ASSERT_NE(eqz3, nullptr);
  EXPECT_EQ(std::count(eqz3->code.begin(), eqz3->code.end(), static_cast<uint32_t>(vm::IOp::I32Eqz)), 1);
  const std::vector<CountCase> eqz_cases = {{"go_bool_if", {i64(0)}, 7, vm::TrapCode::None},
                                            {"go_bool_if", {i64(5)}, 7, vm::TrapCode::None},
                                            {"eqz3", {Value::from_i32(0)}, 4, vm::TrapCode::None}};
  expect_counts(eqz_cases);
  profiler::RunOptions eqz_fuel;
  eqz_fuel.fuel = 1000;
  expect_counts(eqz_cases, eqz_fuel, " (fuel)");
  ASSERT_FALSE(f.call("bool64_f64", {f64(-1.5), f64(2.0)}, r));
  EXPECT_EQ(r.at(0).i64, 1u) << "-1.5 < 2: the slot held -1.5's bits";
  ASSERT_FALSE(f.call("bool64_f64", {f64(-1.5), f64(std::numeric_limits<double>::quiet_NaN())}, r));
  EXPECT_EQ(r.at(0).i64, 0u);
  // No op for the extend: the i64.lt_u [dst a k] (5 from the constant
  // area), then the return.
  const vm::CompiledFunc* code = f.inst->exported_func("bool64_imm")->code;
  ASSERT_NE(code, nullptr);
  size_t at = 0;
  while (at < code->code.size() && code->code[at] != static_cast<uint32_t>(vm::IOp::I64LtU)) ++at;
  ASSERT_LT(at + 4, code->code.size());
  EXPECT_EQ(std::string(vm::iop_name(static_cast<vm::IOp>(code->code[at + 4]))).rfind("ret", 0), 0u)
      << vm::iop_name(static_cast<vm::IOp>(code->code[at + 4]));
  // Counted, the extend is still an instruction: drop's add (get get add
  // drop), then get const lt_u extend.
  const std::vector<CountCase> cases = {{"bool64_imm", {i64(3)}, 8, vm::TrapCode::None}};
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

TEST(GoShapes, ShiftsUpAndBackAreASignExtension) {
  Fixture f;
  std::vector<Value> r;
  auto i64 = [](uint64_t v) { return Value::from_i64(v); };
  auto has = [&](const char* fn, vm::IOp op) {
    const vm::CompiledFunc* code = f.inst->exported_func(fn)->code;
    return code &&
           std::find(code->code.begin(), code->code.end(), static_cast<uint32_t>(op)) != code->code.end();
  };
  EXPECT_TRUE(has("sext32", vm::IOp::I64Extend32S));
  EXPECT_FALSE(has("sext32", vm::IOp::I64ShrS));
  EXPECT_TRUE(has("sext16", vm::IOp::I64Extend16S));
  EXPECT_TRUE(has("sext8", vm::IOp::I64Extend8S));
  EXPECT_TRUE(has("sext32_full", vm::IOp::I64Extend32S)) << "from the shift's immediate and a const64";
  EXPECT_FALSE(has("sext32_full", vm::IOp::Imm_I64ShrS));
  EXPECT_FALSE(has("shl_shr_unequal", vm::IOp::I64Extend32S));
  for (uint64_t x : {uint64_t{0}, uint64_t{0x7F}, uint64_t{0x80}, uint64_t{0xFFFF8000u},
                     uint64_t{0x12345678ABCDEF01u}, uint64_t{0x00000000FFFFFFFFu}, ~uint64_t{0}}) {
    ASSERT_FALSE(f.call("sext32", {i64(x)}, r));
    EXPECT_EQ(r.at(0).i64, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(x)))) << x;
    ASSERT_FALSE(f.call("sext16", {i64(x)}, r));
    EXPECT_EQ(r.at(0).i64, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(x)))) << x;
    ASSERT_FALSE(f.call("sext8", {i64(x)}, r));
    EXPECT_EQ(r.at(0).i64, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(x)))) << x;
    ASSERT_FALSE(f.call("sext32_full", {i64(x)}, r));
    EXPECT_EQ(r.at(0).i64, 4006 + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(x)))) << x;
    ASSERT_FALSE(f.call("shl_shr_unequal", {i64(x)}, r));
    EXPECT_EQ(r.at(0).i64, static_cast<uint64_t>(static_cast<int64_t>(x << 32) >> 31)) << x;
  }
  // After an i64.load32_s into the temporary the shifts read, they are
  // nothing: the loaded value is sign-extended already.
  EXPECT_FALSE(has("load32s_sext", vm::IOp::I64Extend32S));
  EXPECT_FALSE(has("load32s_sext", vm::IOp::I64ShrS));
  EXPECT_FALSE(has("load32s_sext_store", vm::IOp::I64Extend32S));
  EXPECT_TRUE(has("load32s_teed_sext", vm::IOp::I64Extend32S)) << "the shifts read a local";
  EXPECT_TRUE(has("load32u_sext", vm::IOp::I64Extend32S));
  ASSERT_FALSE(f.call("sp_store", {Value::from_i32(0xFFFFFFF8u), i64(0x80000005u)}, r));  // at 64
  ASSERT_FALSE(f.call("load32s_sext", {Value::from_i32(60)}, r));
  EXPECT_EQ(r.at(0).i64, 0xFFFFFFFF80000006u);
  ASSERT_FALSE(f.call("load32u_sext", {Value::from_i32(64)}, r));
  EXPECT_EQ(r.at(0).i64, 0xFFFFFFFF80000005u);
  ASSERT_FALSE(f.call("load32s_teed_sext", {Value::from_i32(64)}, r));
  EXPECT_EQ(r.at(0).i64, 0xFFFFFFFF80000005u);
  ASSERT_FALSE(f.call("load32s_sext_store", {Value::from_i32(64), Value::from_i32(128)}, r));
  ASSERT_FALSE(f.call("load_add", {Value::from_i32(128), Value::from_i32(4)}, r));
  EXPECT_EQ(r.at(0).i32, 0xFFFFFFFFu) << "the high word of the stored i64";
  EXPECT_EQ(f.call("load32s_sext_store", {Value::from_i32(64), Value::from_i32(65536 - 4)}, r).code,
            vm::TrapCode::MemoryOutOfBounds);
  // Every instruction counted: get const shl const shr_s; 4 x (get const add
  // set), then get get const shl const shr_s add; the dropped shifts too, at
  // a trap after them (get get load const shl const shr_s store), none at one
  // before (get get load).
  const std::vector<CountCase> cases = {
      {"sext32", {i64(5)}, 5, vm::TrapCode::None},
      {"sext32_full", {i64(5)}, 23, vm::TrapCode::None},
      {"load32s_sext", {Value::from_i32(60)}, 8, vm::TrapCode::None},
      {"load32s_sext_store",
       {Value::from_i32(64), Value::from_i32(65536 - 4)},
       8,
       vm::TrapCode::MemoryOutOfBounds},
      {"load32s_sext_store",
       {Value::from_i32(65536 - 2), Value::from_i32(128)},
       3,
       vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

TEST(GoShapes, AGlobalGetRunsWithTheJumpAfterIt) {
  Fixture f;
  std::vector<Value> r;
  auto op_in = [&](const char* fn, vm::IOp op) {
    const vm::CompiledFunc* code = f.inst->exported_func(fn)->code;
    return code &&
           std::find(code->code.begin(), code->code.end(), static_cast<uint32_t>(op)) != code->code.end();
  };
  EXPECT_TRUE(op_in("gg_br_if", vm::IOp::GlobalGetJumpIf));
  EXPECT_TRUE(op_in("gg_br_unless", vm::IOp::GlobalGetJumpUnless));
  // $g32 is set by wrap_global: 3 * 0x155555556 wrapped is 2.
  ASSERT_FALSE(f.call("wrap_global", {Value::from_i64(0x0000000155555556u)}, r));
  for (uint32_t x : {0u, 1u, 0x80000000u}) {
    ASSERT_FALSE(f.call("gg_br_if", {Value::from_i32(x)}, r));
    EXPECT_EQ(r.at(0).i32, x ? 2u : 5u) << x;
    ASSERT_FALSE(f.call("gg_br_unless", {Value::from_i32(x)}, r));
    EXPECT_EQ(r.at(0).i32, x ? 5u : 2u) << x;
  }
  // Counted code's: the counted jumps (global.get+jump_if.exit, ...), and
  // the counts: `global.get local.set local.get br_if` (4; the eqz one
  // more), then `i32.const local.set` (2) unless it branched, and the
  // `local.get` after the block (1).
  EXPECT_EQ(op_count(counted_lowered("gg_br_if").code, vm::IOp::GlobalGetJumpIfExit), 1u);
  EXPECT_EQ(op_count(counted_lowered("gg_br_unless").code, vm::IOp::GlobalGetJumpUnlessExit), 1u);
  const std::vector<CountCase> cases = {
      {"gg_br_if", {Value::from_i32(1)}, 5, vm::TrapCode::None},
      {"gg_br_if", {Value::from_i32(0)}, 7, vm::TrapCode::None},
      {"gg_br_unless", {Value::from_i32(0)}, 6, vm::TrapCode::None},
      {"gg_br_unless", {Value::from_i32(1)}, 8, vm::TrapCode::None},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// Past the 64 constants of a function's constant area, constants are ops
// of their own; an integer binary right after one takes it as an immediate.
TEST(SuperInstructions, ConstantsBeyondTheAreaAreImmediates) {
  Fixture f;
  std::vector<Value> r;
  const vm::CompiledFunc* code = f.inst->exported_func("imm_ops")->code;
  ASSERT_NE(code, nullptr);
  EXPECT_LE(code->consts.size(), 64u);
  // The ops that the source map places at `i32.shr_u`, `i64.rotl` and the last `i64.add`.
  std::map<std::string, int> seen;
  for (auto [word, offset] : code->source_map)
    seen[vm::iop_name(static_cast<vm::IOp>(code->code.at(word)))]++;
  EXPECT_GE(seen["imm(I32ShrU)"], 1);
  EXPECT_GE(seen["imm(I64Rotl)"], 1);
  EXPECT_GE(seen["imm(I64Add)"], 1);
  EXPECT_GE(seen["imm(I32Add)"], 1) << "the later local.set additions";
  const uint32_t a = 0xDEADBEEFu, d = 7;
  const uint64_t b = 0xFEDCBA9876543210u;
  ASSERT_FALSE(f.call("imm_ops", {Value::from_i32(a), Value::from_i64(b), Value::from_i32(d)}, r));
  const uint32_t sum = 8028u;
  const uint64_t want =
      static_cast<uint64_t>((sum + (a >> 3)) ^ (a / d)) + (std::rotl(b, 13) + 0x123456789abcdefu);
  EXPECT_EQ(r.at(0).i64, want);
  // A trapping op with an immediate traps as the op, at the op's offset, with exact counts.
  vm::Trap t = f.call("imm_div", {Value::from_i32(5)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::IntegerDivideByZero);
  EXPECT_EQ(f.trap_opcode(t), 0x6D) << "i32.div_s";
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "imm_div", {Value::from_i32(5)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->trap().code, vm::TrapCode::IntegerDivideByZero);
  EXPECT_EQ(p->total(), 8u * 4 + 4) << "8 x (get const add set), then get get const div_s";
}

// Go's jumps (`i32.const N; local.set 0; br $top` to a loop that starts by
// switching on local 0) go straight to the switch's target.
TEST(GoShapes, JumpsGoStraightToTheResumePoint) {
  Fixture f;
  std::vector<Value> r;
  const vm::CompiledFunc* code = f.inst->exported_func("go_shape")->code;
  ASSERT_NE(code, nullptr);
  // Every `br $top` (opcode 0x0C) lowered to a jump whose target is not the
  // br_table (0x0E): the op at the target came from another instruction.
  auto source_byte = [&](uint32_t word) {
    auto it =
        std::upper_bound(code->source_map.begin(), code->source_map.end(), std::make_pair(word, UINT32_MAX));
    EXPECT_NE(it, code->source_map.begin());
    return f.module->bytes.at(std::prev(it)->second);
  };
  int jumps = 0;
  for (auto [word, offset] : code->source_map) {
    if (f.module->bytes.at(offset) != 0x0C) continue;
    const auto op = static_cast<vm::IOp>(code->code.at(word));
    ASSERT_TRUE(op == vm::IOp::Jump || op == vm::IOp::JumpBack) << vm::iop_name(op);
    const uint32_t target = word + code->code.at(word + 1);
    EXPECT_NE(source_byte(target), 0x0E) << "jump at word " << word << " still goes through the switch";
    EXPECT_EQ(op == vm::IOp::JumpBack, target <= word) << "a backward jump keeps its back-edge form";
    ++jumps;
  }
  EXPECT_EQ(jumps, 3);
  // The loop is in no other, every jump to its head was threaded and only
  // the switch reads $pc: after the switch $pc is dead, and the writes
  // before the jumps are gone (a `local.set $pc` became the jump, or the
  // copy2 it had merged into a copy of the other local).
  int writes = 0;
  for (auto [word, offset] : code->source_map) {
    if (f.module->bytes.at(offset) != 0x21 || f.module->bytes.at(offset + 1) != 0) continue;
    const auto op = static_cast<vm::IOp>(code->code.at(word));
    // (the copy runs with the jump after it: copy+jump, pair_copy_jumps)
    EXPECT_TRUE(op == vm::IOp::Jump || op == vm::IOp::JumpBack ||
                (op == vm::IOp::CopyJump && code->code.at(word + 1) != 0))
        << vm::iop_name(op) << " at word " << word;
    ++writes;
  }
  EXPECT_EQ(writes, 3);
  ASSERT_FALSE(f.call("go_shape", {Value::from_i32(0), Value::from_i32(100)}, r));
  EXPECT_EQ(r.at(0).i32, 5050u);
  ASSERT_FALSE(f.call("go_shape", {Value::from_i32(1), Value::from_i32(3)}, r));
  EXPECT_EQ(r.at(0).i32, 6u) << "resumed at 1 with acc = 0";
  ASSERT_FALSE(f.call("go_shape", {Value::from_i32(9), Value::from_i32(3)}, r));
  EXPECT_EQ(r.at(0).i32, 0u) << "the default: done at once";
  ASSERT_FALSE(f.call("go_shape_reads", {Value::from_i32(0), Value::from_i32(3)}, r));
  EXPECT_EQ(r.at(0).i32, 6u + 7) << "$pc is read after the loop: its last write stays";
  // A run of three copies before the jump, the last one $pc's: the write
  // goes and the run is a copy2 (jump threading drops a run's last copy).
  const vm::CompiledFunc* run = f.inst->exported_func("go_run")->code;
  for (auto [word, offset] : run->source_map) {
    if (f.module->bytes.at(offset) != 0x21 || f.module->bytes.at(offset + 1) != 0) continue;
    const auto op = static_cast<vm::IOp>(run->code.at(word));
    EXPECT_TRUE(op == vm::IOp::Jump || op == vm::IOp::JumpBack || op == vm::IOp::Copy2)
        << vm::iop_name(op) << " at word " << word;
    if (op == vm::IOp::Copy2) {
      EXPECT_NE(run->code.at(word + 3), 0u) << "the copy2 does not write $pc";
    }
  }
  EXPECT_EQ(std::count(run->code.begin(), run->code.end(), static_cast<uint32_t>(vm::IOp::Copy3)), 0);
  ASSERT_FALSE(f.call("go_run", {Value::from_i32(0), Value::from_i32(100)}, r));
  EXPECT_EQ(r.at(0).i32, 5050u + 100);
  ASSERT_FALSE(f.call("go_twice", {Value::from_i32(3)}, r));
  EXPECT_EQ(r.at(0).i32, 6u) << "the second run starts at the $pc the first left: done at once";
  // Counted code threads its jumps too, each counting the switch's edge
  // with its own (CountedJumpsAreThreadedCountingBothEdges), so counts are
  // those of the wasm: entry `local.get br_table`
  // (2); point 0 `const set const set br` (5); each return to the head
  // `local.get br_table` (2); each pass of point 1 `get get add set get
  // const sub set get if` (10) and `const set br` (3); at the end `local.get` (1).
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "go_shape",
                                                            {Value::from_i32(0), Value::from_i32(3)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->total(), 2u + 5 + 2 + 3 * (10 + 3 + 2) + 1);
}

// A loop's jump back that lands on its exit test (Go's loops, threaded to
// the head's resume point; clang's unrotated `while`) is that test at the
// back edge, a backward conditional jump to the side that stays in the
// loop, then a jump to the other side (rotate_back_edge, control.cc): the
// loop's results, a trap in its body at its own instruction, an interrupt
// in a loop that never ends, and counts (counted code and fuel keep the
// plain jump).
TEST(GoShapes, ALoopsBackEdgeRunsItsExitTest) {
  Fixture f;
  std::vector<Value> r;
  auto op_at = [](const std::vector<uint32_t>& code, uint32_t w) { return static_cast<vm::IOp>(code.at(w)); };
  auto target = [](const std::vector<uint32_t>& code, uint32_t w, uint32_t len) {
    return w + code.at(w + len - 1);  // a jump's offset is its last word
  };
  const vm::CompiledFunc* go = f.inst->exported_func("go_loop")->code;
  ASSERT_NE(go, nullptr);
  // The head's test, from `i64.lt_s` (0x53) and the `i32.eqz` (negated) and
  // `if` after it; the rotated back edge, moved to the dropped write's word.
  uint32_t head = UINT32_MAX, back = UINT32_MAX;
  for (auto [word, offset] : go->source_map) {
    if (f.module->bytes.at(offset) == 0x53) head = word;
    if (op_at(go->code, word) == vm::IOp::JumpIfBack_I64LtS) back = word;
  }
  ASSERT_NE(head, UINT32_MAX);
  ASSERT_NE(back, UINT32_MAX) << "no rotated back edge";
  EXPECT_EQ(op_at(go->code, head), vm::IOp::JumpUnless_I64GeS);
  EXPECT_EQ(go->code.at(back + 1), go->code.at(head + 1)) << "the same operands";
  EXPECT_EQ(go->code.at(back + 2), go->code.at(head + 2));
  EXPECT_EQ(target(go->code, back, 4), target(go->code, head, 4)) << "taken: the body, as the test's";
  EXPECT_EQ(op_at(go->code, head + 4), vm::IOp::Jump) << "the exit's jump, its write gone";
  ASSERT_EQ(op_at(go->code, back + 4), vm::IOp::Jump) << "else: out, forward";
  EXPECT_EQ(target(go->code, back + 4, 2), target(go->code, head + 4, 2))
      << "else: where the exit's jump after the head's test goes, straight";
  ASSERT_FALSE(f.call("go_upto", {Value::from_i64(1000)}, r));
  EXPECT_EQ(r.at(0).i64, 1000u);
  for (uint64_t n : {0, 1, 2, 7}) {
    ASSERT_FALSE(f.call("go_loop", {Value::from_i32(4096), Value::from_i64(n)}, r));
    EXPECT_EQ(r.at(0).i64, (n * (n - 1) / 2) << 32) << n;
  }
  ASSERT_FALSE(f.call("go_loop", {Value::from_i32(1552), Value::from_i64(2)}, r));
  EXPECT_EQ(r.at(0).i64, 0x1122334455667788u + (1ull << 32)) << "the loads: 0 at 1552, then 1560's";
  // i = 3 loads at 65536: the load traps, in its iteration.
  vm::Trap t = f.call("go_loop", {Value::from_i32(65536 - 24), Value::from_i64(5)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x29) << "i64.load";

  const vm::CompiledFunc* w = f.inst->exported_func("while_lt")->code;
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(op_at(w->code, 0), vm::IOp::JumpIf_I32GeS);
  back = UINT32_MAX;
  for (auto [word, offset] : w->source_map)
    if (op_at(w->code, word) == vm::IOp::JumpIfBack_I32LtS) back = word;
  ASSERT_NE(back, UINT32_MAX) << "no inverted test at the back edge";
  EXPECT_EQ(target(w->code, back, 4), 4u) << "taken (i < n): the body, after the head's test";
  ASSERT_EQ(op_at(w->code, back + 4), vm::IOp::Jump);
  EXPECT_EQ(target(w->code, back + 4, 2), target(w->code, 0, 4)) << "else the exit, where the test goes";
  for (uint32_t n : {0, 1, 5}) {
    ASSERT_FALSE(f.call("while_lt", {Value::from_i32(n)}, r));
    uint32_t acc = 0;
    for (uint32_t i = 0; i < n; ++i) acc ^= i * i;
    EXPECT_EQ(r.at(0).i32, acc) << n;
  }
  // A float compare has no negation: its loop keeps the jump back to the head.
  const vm::CompiledFunc* flt = f.inst->exported_func("while_flt")->code;
  for (auto [word, offset] : flt->source_map) {
    if (f.module->bytes.at(offset) == 0x0C) {
      EXPECT_EQ(op_at(flt->code, word), vm::IOp::JumpBack);
    }
  }
  ASSERT_FALSE(f.call("while_flt", {f64(2.5)}, r));
  EXPECT_EQ(r.at(0).i32, 3u);

  // Counted code and fuel run the wasm's jumps: entry `get br_table` (2),
  // point 0 (7), to the head `get br_table` (2); each iteration: the test
  // `get get lt_s eqz if` (5), the body (14 + 4), `const set br` (3), `get
  // br_table` (2); at the end the test (5), `const set br` (3), `get
  // br_table` (2), `local.get` (1).
  const std::vector<CountCase> cases = {
      {"go_loop", {Value::from_i32(4096), Value::from_i64(0)}, 22, vm::TrapCode::None},
      {"go_loop", {Value::from_i32(4096), Value::from_i64(7)}, 22 + 7 * 28, vm::TrapCode::None},
      // three iterations, then the test and 8 of the body's (up to its load)
      {"go_loop",
       {Value::from_i32(65536 - 24), Value::from_i64(5)},
       11 + 3 * 28 + 13,
       vm::TrapCode::MemoryOutOfBounds},
      // (get get ge_s br_if, get get get mul xor set, get const add set, br) x 5, the last test, get
      {"while_lt", {Value::from_i32(5)}, 5 * 15 + 4 + 1, vm::TrapCode::None},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
  const vm::CompiledFunc fueled = fuel_lowered("go_loop");
  ASSERT_FALSE(fueled.source_map.empty());
  for (auto [word, offset] : fueled.source_map)
    EXPECT_NE(op_at(fueled.code, word), vm::IOp::JumpIfBack_I64LtS) << "rotated in code charging fuel";
}

// A loop's step and the compare-and-branch after it run in one dispatch
// (vm/step_jumps.def): the step's op word becomes the pair's, the jump
// stays whole 4 words on. Go's `i++` before its rotated back edge (the
// threaded jump's write, dropped, stood between), a step before a label that
// a jump skips to (the test then runs alone), a step before a forward exit
// test whose body traps; results, the trap's instruction, counts, and fuel's
// code (pairs without a label between) and counted code (the counted twin,
// with the counted jump).
TEST(GoShapes, ALoopsStepRunsWithItsTest) {
  Fixture f;
  std::vector<Value> r;
  auto op_at = [](const vm::CompiledFunc* c, uint32_t w) { return static_cast<vm::IOp>(c->code.at(w)); };
  // the first op `op` at an instruction's word
  auto find = [&](const vm::CompiledFunc* c, vm::IOp op) {
    for (auto [word, offset] : c->source_map)
      if (op_at(c, word) == op) return word;
    return UINT32_MAX;
  };
  const struct {
    const char* func;
    vm::IOp pair, jump;
  } shapes[] = {
      {"go_upto", vm::IOp::I64AddJumpIfBackI64LtS, vm::IOp::JumpIfBack_I64LtS},
      {"go_loop", vm::IOp::I64AddJumpIfBackI64LtS, vm::IOp::JumpIfBack_I64LtS},
      {"step_label", vm::IOp::I64AddJumpIfBackI64LtS, vm::IOp::JumpIfBack_I64LtS},
      {"step_exit", vm::IOp::I64AddJumpUnlessI64GeS, vm::IOp::JumpUnless_I64GeS},
  };
  for (const auto& s : shapes) {
    const vm::CompiledFunc* c = f.inst->exported_func(s.func)->code;
    ASSERT_NE(c, nullptr);
    const uint32_t at = find(c, s.pair);
    ASSERT_NE(at, UINT32_MAX) << s.func << ": no " << vm::iop_name(s.pair);
    EXPECT_EQ(op_at(c, at + 4), s.jump) << s.func << ": the jump whole after it";
    EXPECT_EQ(f.module->bytes.at(std::prev(std::upper_bound(c->source_map.begin(), c->source_map.end(),
                                                            std::make_pair(at, UINT32_MAX)))
                                     ->second),
              0x7C)
        << s.func << ": the pair's source offset is the i64.add's";
  }
  ASSERT_FALSE(f.call("go_upto", {Value::from_i64(1000)}, r));
  EXPECT_EQ(r.at(0).i64, 1000u);
  auto step_label = [&](int64_t n, int64_t skip) {
    EXPECT_FALSE(f.call("step_label", {Value::from_i64(n), Value::from_i64(skip)}, r));
    return r.at(0).i64;
  };
  EXPECT_EQ(step_label(5, 0), (5ull << 32) | 5);
  EXPECT_EQ(step_label(5, 3), (6ull << 32) | 5) << "the third pass skips the step: the test alone";
  EXPECT_EQ(step_label(5, 1), (6ull << 32) | 5);
  EXPECT_EQ(step_label(0, 0), (1ull << 32) | 1);
  // at 1528 + 8: the four i64s of the data at 1536
  ASSERT_FALSE(f.call("step_exit", {Value::from_i32(1528), Value::from_i64(4)}, r));
  EXPECT_EQ(r.at(0).i64, 0xffffffff00000610u + 0xfffcu + 0x1122334455667788u);
  ASSERT_FALSE(f.call("step_exit", {Value::from_i32(1528), Value::from_i64(0)}, r));
  EXPECT_EQ(r.at(0).i64, 0u);
  // i = 3 loads at 65536: the load traps, after two paired steps and a third
  vm::Trap t = f.call("step_exit", {Value::from_i32(65536 - 24), Value::from_i64(5)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x29) << "i64.load";

  // Counts are the wasm's: step_label's pass `get const add set` (4), `get
  // get eq br_if` (4), the step (4) unless skipped, `get get lt_s br_if`
  // (4), then `get const shl get add` (5); step_exit's iteration the step
  // (4), `get get lt_s eqz if` (5), the body (10), `br` (1), the last one's
  // step and test (9), `local.get` (1).
  const std::vector<CountCase> cases = {
      {"step_label", {Value::from_i64(5), Value::from_i64(0)}, 5 * 16 + 5, vm::TrapCode::None},
      {"step_label", {Value::from_i64(5), Value::from_i64(3)}, 6 * 16 - 4 + 5, vm::TrapCode::None},
      {"step_exit", {Value::from_i32(1528), Value::from_i64(4)}, 4 * 20 + 9 + 1, vm::TrapCode::None},
      // two iterations, then the step, the test and 8 of the body's (up to its load)
      {"step_exit",
       {Value::from_i32(65536 - 24), Value::from_i64(5)},
       2 * 20 + 9 + 8,
       vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
  for (bool counting : {false, true}) {
    vm::LoadOptions o;
    (counting ? o.count_instructions : o.fuel) = true;
    auto m = vm::load_module(read_bytes(path()), o);
    ASSERT_TRUE(m) << m.error().to_string();
    vm::Store st;
    auto inst = st.instantiate(m.value(), {});
    ASSERT_TRUE(inst);
    const vm::CompiledFunc* c = inst.value()->exported_func("step_exit")->code;
    // fuel's code pairs a step and test with no label between; counted code's
    // jumps are their counted forms, and so are its pairs
    EXPECT_EQ(find(c, vm::IOp::I64AddJumpUnlessI64GeS) != UINT32_MAX, !counting) << counting;
    EXPECT_EQ(find(c, vm::IOp::I64AddJumpUnlessI64GeSCounted) != UINT32_MAX, counting) << counting;
  }
}

// A rotated back edge is still a back edge: a loop that never ends (n
// beyond reach) stops at an interrupt.
TEST(GoShapes, ARotatedEndlessLoopIsStillInterrupted) {
  Fixture f;
  vm::Profiling p;
  f.store.thread()->profiling = &p;
  std::thread interrupter([&p] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    vm::set_flag(p.interrupt_requested, 1);
    p.raise();
  });
  std::vector<Value> r;
  const auto t0 = std::chrono::steady_clock::now();
  vm::Trap t = f.call("go_upto", {Value::from_i64(std::numeric_limits<int64_t>::max())}, r);
  interrupter.join();
  f.store.thread()->profiling = nullptr;
  EXPECT_EQ(t.code, vm::TrapCode::Interrupted);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// Counted code threads Go's jumps too (jump.threaded_counted,
// vm/counted_ops.def): each counts its own edge, back to the loop's head,
// and the head switch's edge to the target it goes to, one counter with both
// ranges (CompiledFunc::CountRange). Counts are the wasm's,
// hand-computed, and fuel's, whose code runs the switch at every jump: an
// edge dropped would leave each jump's `local.get br_table` uncounted (its
// own) or the instructions the switch skips counted (the switch's).
TEST(GoShapes, CountedJumpsAreThreadedCountingBothEdges) {
  vm::LoadOptions counting;
  counting.count_instructions = true;
  auto m = vm::load_module(read_bytes(path()), counting);
  ASSERT_TRUE(m) << m.error().to_string();
  vm::Store s;
  auto inst = s.instantiate(m.value(), {});
  ASSERT_TRUE(inst);
  const std::vector<uint8_t>& bytes = m.value()->bytes;
  for (const char* name : {"go_shape", "go_shape_reads", "go_twice", "go_trap"}) {
    const vm::CompiledFunc* code = inst.value()->exported_func(name)->code;
    ASSERT_NE(code, nullptr);
    const auto& map = code->source_map;
    auto is_threaded = [&](uint32_t word) {
      const auto op = static_cast<vm::IOp>(code->code.at(word));
      return op == vm::IOp::JumpThreadedCounted || op == vm::IOp::JumpBackThreadedCounted;
    };
    // At an instruction's word: a jump, a dead write that became the jump,
    // or a copy (a copy2 that lost its second) with the jump after it.
    std::set<uint32_t> jumps;
    for (auto [word, offset] : map) {
      if (is_threaded(word)) jumps.insert(word);
      else if (static_cast<vm::IOp>(code->code.at(word)) == vm::IOp::Copy && is_threaded(word + 3))
        jumps.insert(word + 3);
    }
    int threaded = 0;
    for (uint32_t word : jumps) {
      const auto op = static_cast<vm::IOp>(code->code.at(word));
      const uint32_t target = word + code->code.at(word + 1);
      auto at = std::upper_bound(map.begin(), map.end(), std::make_pair(target, UINT32_MAX));
      ASSERT_NE(at, map.begin());
      EXPECT_NE(bytes.at(std::prev(at)->second), 0x0E)
          << name << ": the jump at " << word << " goes to the switch";
      EXPECT_EQ(op == vm::IOp::JumpBackThreadedCounted, target <= word) << name << " " << word;
      // One increment counts both edges: the jump's counter carries the
      // switch entry's range as its second (CountRange::lo2, the handler
      // no longer bumps the switch's counter).
      const vm::CompiledFunc::CountRange& own = code->counters.at(code->code.at(word + 2));
      const vm::CompiledFunc::CountRange& sw = code->counters.at(code->code.at(word + 3));
      EXPECT_EQ(sw.sign2, 0) << name << " " << word;
      EXPECT_EQ(own.sign2, sw.sign) << name << " " << word;
      EXPECT_EQ(own.lo2, sw.lo) << name << " " << word;
      EXPECT_EQ(own.hi2, sw.hi) << name << " " << word;
      ++threaded;
    }
    EXPECT_EQ(threaded, std::string(name) == "go_trap" ? 2 : 3) << name;
  }
  auto i32 = [](uint32_t v) { return Value::from_i32(v); };
  // go_shape: entry `local.get br_table` (2), point 0 `const set const set br`
  // (5), each pass of point 1 (10) and its `const set br` (3), each return to
  // the head (2), `local.get` at the end (1). go_trap's pass is 8 + 4 + 3, its
  // trap 6 in (`get const get const sub div_u`).
  const std::vector<CountCase> cases = {
      {"go_shape", {i32(0), i32(3)}, 2 + 5 + 2 + 3 * (10 + 3 + 2) + 1, vm::TrapCode::None},
      {"go_shape", {i32(0), i32(100)}, 2 + 5 + 2 + 100 * (10 + 3 + 2) + 1, vm::TrapCode::None},
      {"go_shape", {i32(1), i32(3)}, 2 + 3 * (10 + 3 + 2) + 1, vm::TrapCode::None},
      {"go_shape", {i32(9), i32(3)}, 2 + 1, vm::TrapCode::None},
      {"go_shape_reads", {i32(0), i32(3)}, 2 + 5 + 2 + 3 * (10 + 3 + 2) + 3, vm::TrapCode::None},
      // two rounds of the inner loop (the second done at once), each followed
      // by `const set` and `get const add tee const lt_u br_if`
      {"go_twice", {i32(3)}, (2 + 3 + 2 + 3 * (10 + 3 + 2) + 2 + 7) + (2 + 2 + 7) + 1, vm::TrapCode::None},
      {"go_trap", {i32(0), i32(3)}, 2 + 3 + 2 + 2 * (8 + 4 + 3 + 2) + 6, vm::TrapCode::IntegerDivideByZero},
      {"go_trap", {i32(1), i32(2)}, 2 + (8 + 4 + 3 + 2) + 6, vm::TrapCode::IntegerDivideByZero},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000000;
  expect_counts(cases, with_fuel, " (fuel)");
  // The trap is the division's, threaded or not.
  Fixture f;
  std::vector<Value> r;
  vm::Trap t = f.call("go_trap", {i32(0), i32(3)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::IntegerDivideByZero);
  EXPECT_EQ(f.trap_opcode(t), 0x6E) << "i32.div_u";
}

// Go's pointer chase, an i64.load whose low half addresses the next, is a
// paired op followed by the second load whole (vm/mem_pairs.def): the
// result of two loads, a trap in either at its own instruction, exact counts.
TEST(GoShapes, I64LoadsInARowArePaired) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("chase64")->code->code;
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "i64.load+i64.load");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(4))), "i64.load");
  ASSERT_FALSE(f.call("chase64", {Value::from_i32(1536)}, r));
  EXPECT_EQ(r.at(0).i64, 0x1122334455667788u)
      << "mem[low half of mem[1536]] + 8, a high half of ones ignored";
  struct Case {
    uint32_t arg;
    int64_t after;   // the trapping load's offset past the first's (0: the first traps)
    uint64_t count;  // instructions run, the trapping one included
  };
  const Case cases[] = {
      {65532, 0, 2},  // get load
      {1544, 4, 4},   // get load wrap load (at 65532 + 8)
  };
  const vm::Trap first = f.call("chase64", {Value::from_i32(65532)}, r);
  ASSERT_FALSE(first.backtrace.empty());
  for (const Case& c : cases) {
    vm::Trap t = f.call("chase64", {Value::from_i32(c.arg)}, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << c.arg;
    EXPECT_EQ(f.trap_opcode(t), 0x29) << "i64.load " << c.arg;
    ASSERT_FALSE(t.backtrace.empty());
    EXPECT_EQ(t.backtrace[0].offset - first.backtrace[0].offset, c.after) << c.arg;
    auto p = profiler::InstructionProfile::run_and_count_file(path(), "chase64", {Value::from_i32(c.arg)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds) << c.arg;
    EXPECT_EQ(p->total(), c.count) << c.arg;
  }
}

// A call's frame image (vm/interp.cc, init_frame) zeroes every declared local
// and copies every constant, whatever its size: callees of 1, 2, 3 and 5
// locals and one with a constant area, each entered where $dirty left -1 in
// every slot.
TEST(Calls, FrameImagesZeroLocalsAndCopyConstants) {
  Fixture f;
  std::vector<Value> r;
  for (int64_t x : {int64_t{0}, int64_t{7}, int64_t{-40}}) {
    ASSERT_FALSE(f.call("frame_image", {Value::from_i64(static_cast<uint64_t>(x))}, r));
    EXPECT_EQ(static_cast<int64_t>(r.at(0).i64), 5 * x + 3 * 1000003) << x;
  }
}

// Go's stack pointer moves, `SP - frame` teed into a local and set into
// the global, are a paired op followed by the global.set whole
// (vm/internal_ops.def, i32.sub+global.set and i32.add+global.set), and the
// global.get before a move down runs with both: the local and the global
// both written, a trap right after at its own instruction with the global
// already moved, exact counts, and a label between keeps them apart. Each
// global.set stores its op's own result here: the .own ops.
TEST(GoShapes, StackPointerMovesArePaired) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("sp_frame")->code->code;
  auto count_of = [](const std::vector<uint32_t>& c, vm::IOp op) {
    return std::count(c.begin(), c.end(), static_cast<uint32_t>(op));
  };
  // The global.get before the move down runs with it (a C prologue), the
  // pair after it whole.
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "global.get+i32.sub+global.set.own");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(3))), "i32.sub+global.set.own");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(7))), "global.set");
  EXPECT_EQ(count_of(code, vm::IOp::I32AddGlobalSetOwn), 1);
  EXPECT_EQ(count_of(code, vm::IOp::GlobalSet), 2);
  ASSERT_FALSE(f.call("sp_frame", {Value::from_i32(16)}, r));
  EXPECT_EQ(r.at(0).i32, (8192u - 16) ^ (8192u << 16));
  ASSERT_FALSE(f.call("sp_get", {}, r));
  EXPECT_EQ(r.at(0).i32, 8192u);
  // SP - 9000 wraps: the store traps, after the global took the new SP.
  vm::Trap t = f.call("sp_frame", {Value::from_i32(9000)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x36) << "i32.store";
  ASSERT_FALSE(f.call("sp_get", {}, r));
  EXPECT_EQ(r.at(0).i32, 8192u - 9000);
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "sp_frame", {Value::from_i32(9000)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->trap().code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(p->total(), 8u) << "get get sub tee set get const store";
  p = profiler::InstructionProfile::run_and_count_file(path(), "sp_frame", {Value::from_i32(16)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->total(), 20u);
  const std::vector<uint32_t>& apart = f.inst->exported_func("sp_after_label")->code->code;
  EXPECT_EQ(count_of(apart, vm::IOp::I32SubGlobalSet), 0);
  EXPECT_EQ(count_of(apart, vm::IOp::GlobalGetI32SubGlobalSet), 0);
  EXPECT_EQ(count_of(apart, vm::IOp::GlobalSet), 1);
  ASSERT_FALSE(f.call("sp_after_label", {Value::from_i32(5), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(0).i32, 8192u - 9000 - 5);
  ASSERT_FALSE(f.call("sp_after_label", {Value::from_i32(5), Value::from_i32(1)}, r));
  EXPECT_EQ(r.at(0).i32, 8192u - 9000 - 5) << "taken: the global set to itself";
}

// Go's function entry (the stack pointer's global.get before the switch
// over resume points) and return (two stack pointer moves before `return
// 0`) each run in one dispatch in plain code (vm/internal_ops.def,
// global.get+switch and i32.add+global.set2+ret1), every op whole: a jump
// to the first pair runs the epilogue, a jump to the second runs it and
// the return alone; counted code keeps them apart, its counts exact.
TEST(GoShapes, EntryAndReturnRunInOneDispatchEach) {
  Fixture f;
  std::vector<Value> r;
  auto count_of = [](const std::vector<uint32_t>& c, vm::IOp op) {
    return std::count(c.begin(), c.end(), static_cast<uint32_t>(op));
  };
  for (const char* name : {"go_frame", "go_frame_mid"}) {
    const std::vector<uint32_t>& code = f.inst->exported_func(name)->code->code;
    EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "global.get+switch") << name;
    EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(3))), "switch") << name;
    EXPECT_EQ(count_of(code, vm::IOp::I32AddGlobalSet2Ret1Own), 1) << name;
    EXPECT_EQ(count_of(code, vm::IOp::I32AddGlobalSetOwn), 1) << name << ": the second pair whole";
    EXPECT_EQ(count_of(code, vm::IOp::GlobalSet), name == std::string("go_frame") ? 3 : 2) << name;
  }
  ASSERT_FALSE(f.call("sp_get", {}, r));
  const uint32_t sp = r.at(0).i32;
  auto sp_after = [&](const char* name, uint32_t pc, uint32_t want_result) {
    std::vector<Value> out;
    EXPECT_FALSE(f.call(name, {Value::from_i32(pc)}, out)) << name << " " << pc;
    EXPECT_EQ(out.at(0).i32, want_result) << name << " " << pc;
    EXPECT_FALSE(f.call("sp_get", {}, out));
    return out.at(0).i32;
  };
  EXPECT_EQ(sp_after("go_frame", 0, 0), sp + 8) << "down 16, the store, up 16 and 8";
  EXPECT_EQ(sp_after("go_frame", 1, 0), sp + 8 + 24) << "the epilogue alone";
  EXPECT_EQ(sp_after("go_frame", 2, sp + 33), sp + 32) << "past it";
  EXPECT_EQ(sp_after("go_frame", 7, sp + 33), sp + 32) << "the table's default";
  EXPECT_EQ(sp_after("go_frame_caller", 0, 1000), sp + 40) << "returned to a wasm caller";
  EXPECT_EQ(sp_after("go_frame_caller", 2, sp + 1041), sp + 40);
  EXPECT_EQ(sp_after("go_frame_mid", 0, 0), sp + 40 + 24);
  EXPECT_EQ(sp_after("go_frame_mid", 1, 0), sp + 40 + 24 + 8) << "the second pair and the return";
  // Counted: every instruction that ran once (block and end are not
  // counted): go_frame(0) 4 of the entry, 8 of resume point 0, 10 of the
  // pairs, 2 of the return.
  for (auto [name, pc, total] : {std::tuple{"go_frame", 0u, 24u}, std::tuple{"go_frame", 1u, 16u},
                                 std::tuple{"go_frame", 2u, 7u}, std::tuple{"go_frame_mid", 1u, 11u}}) {
    auto p = profiler::InstructionProfile::run_and_count_file(path(), name, {Value::from_i32(pc)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->total(), total) << name << " " << pc;
  }
}

// A stack pointer move whose global.set does not store the op's own result
// (vm/lower/fusion.cc, own_global_moves) keeps its plain op, and runs as the
// wasm says: the subtrahend in the slot the global.get wrote, another local
// set, another global read, and Go's epilogues whose second add reads its
// own first result twice or another local.
TEST(GoShapes, StackPointerMovesOfOtherValuesStayApart) {
  Fixture f;
  std::vector<Value> r;
  auto count_of = [&](const char* name, vm::IOp op) {
    const std::vector<uint32_t>& c = f.inst->exported_func(name)->code->code;
    return std::count(c.begin(), c.end(), static_cast<uint32_t>(op));
  };
  auto sp_get = [&](const char* which) {
    std::vector<Value> out;
    EXPECT_FALSE(f.call(which, {}, out));
    return out.at(0).i32;
  };
  auto set_sp = [&](uint32_t v) { ASSERT_FALSE(f.call("sp_set", {Value::from_i32(v)}, r)); };

  EXPECT_EQ(count_of("sp_sub_self", vm::IOp::GlobalGetI32SubGlobalSetOwn), 0);
  EXPECT_EQ(count_of("sp_sub_self", vm::IOp::GlobalGetI32SubGlobalSet), 1);
  set_sp(5000);
  ASSERT_FALSE(f.call("sp_sub_self", {}, r));
  EXPECT_EQ(r.at(0).i32, 5000u) << "SP - SP, plus SP";
  EXPECT_EQ(sp_get("sp_get"), 0u);

  EXPECT_EQ(count_of("sp_set_other", vm::IOp::GlobalGetI32SubGlobalSet), 1);
  EXPECT_EQ(count_of("sp_set_other", vm::IOp::I32SubGlobalSet), 1);
  EXPECT_EQ(count_of("sp_set_other", vm::IOp::I32SubGlobalSetOwn), 0);
  set_sp(5000);
  ASSERT_FALSE(f.call("sp_set_other", {Value::from_i32(40)}, r));
  EXPECT_EQ(r.at(0).i32, 4960u);
  EXPECT_EQ(sp_get("sp_get"), 41u);

  EXPECT_EQ(count_of("sp_into_other", vm::IOp::GlobalGetI32SubGlobalSet), 1);
  EXPECT_EQ(count_of("sp_into_other", vm::IOp::I32SubGlobalSetOwn), 1) << "its own move is";
  set_sp(5000);
  ASSERT_FALSE(f.call("sp_into_other", {Value::from_i32(40)}, r));
  EXPECT_EQ(r.at(0).i32, 4960u + 5000u);
  EXPECT_EQ(sp_get("sp_get"), 5000u);
  EXPECT_EQ(sp_get("sp2_get"), 4960u);

  EXPECT_EQ(count_of("go_epilogue_double", vm::IOp::I32AddGlobalSet2Ret1), 1);
  EXPECT_EQ(count_of("go_epilogue_double", vm::IOp::I32AddGlobalSet2Ret1Own), 0);
  ASSERT_FALSE(f.call("go_epilogue_double", {Value::from_i32(100)}, r));
  EXPECT_EQ(sp_get("sp_get"), 232u) << "(100 + 16) * 2";

  EXPECT_EQ(count_of("go_epilogue_other", vm::IOp::I32AddGlobalSet2Ret1), 1);
  EXPECT_EQ(count_of("go_epilogue_other", vm::IOp::I32AddGlobalSet2Ret1Own), 0);
  ASSERT_FALSE(f.call("go_epilogue_other", {Value::from_i32(100)}, r));
  EXPECT_EQ(sp_get("sp_get"), 108u);
  set_sp(8192);
}

TEST(GoShapes, AThreadedEndlessLoopIsStillInterrupted) {
  Fixture f;
  vm::Profiling p;
  f.store.thread()->profiling = &p;
  std::thread interrupter([&p] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    vm::set_flag(p.interrupt_requested, 1);
    p.raise();
  });
  std::vector<Value> r;
  const auto t0 = std::chrono::steady_clock::now();
  vm::Trap t = f.call("go_spin", {Value::from_i32(0)}, r);
  interrupter.join();
  f.store.thread()->profiling = nullptr;
  EXPECT_EQ(t.code, vm::TrapCode::Interrupted);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// Lua 5.4's decode and tag tests, each one dispatch: a register's address
// from a field of the instruction word (i32.shr_u+and+add), the branch on
// !(tt & m) (the eqz goes into jump_unless(I32And)) and on tt != v, each
// paired with the load of the tag byte (vm/load_jumps.def), and setobj's
// tag copy (i32.load8_u+i32.store8). Results as the wasm's, a trap in the
// load is the load's (in a pair, at the pair's op word) with exact counts,
// and a branch back to a loop on an eqz keeps a back form.
TEST(LuaShapes, DecodeAndTagTestsAreFused) {
  Fixture f;
  std::vector<Value> r;
  EXPECT_STREQ(f.op_at("lua_ra", 0), "i32.shr_u+and+add");
  EXPECT_STREQ(f.op_at("lua_rb", 0), "i32.shr_u+and+add");
  EXPECT_STREQ(f.op_at("tag_and", 0), "i32.load8_u+jump_unless(I32And)");
  EXPECT_STREQ(f.op_at("tag_and", 4), "jump_unless(I32And)") << "the jump whole after the load";
  EXPECT_STREQ(f.op_at("tag_ne", 0), "i32.load8_u+jump_if(I32Ne)");
  EXPECT_STREQ(f.op_at("tag_ne", 4), "jump_if(I32Ne)");
  EXPECT_STREQ(f.op_at("eqz_and_if", 0), "jump_if(I32And)") << "the and and the eqz, one branch";
  EXPECT_STREQ(f.op_at("copy_tag", 0), "i32.load8_u+i32.store8");
  // Counted code's pairs are the counted twins, run by expect_counts below
  // (the traps in the load too).
  EXPECT_EQ(op_count(counted_lowered("tag_and").code, vm::IOp::I32Load8UJumpUnlessI32AndCounted), 1u);
  EXPECT_EQ(op_count(counted_lowered("tag_ne").code, vm::IOp::I32Load8UJumpIfI32NeCounted), 1u);
  EXPECT_EQ(op_count(counted_lowered("tag_ne").code, vm::IOp::I32Load8UJumpIfI32Ne), 0u);
  auto call = [&](const char* name, std::vector<Value> args) {
    r.clear();
    vm::Trap t = f.call(name, std::move(args), r);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return r.empty() ? 0xBADu : r.at(0).i32;
  };
  EXPECT_EQ(call("lua_ra", {Value::from_i32(0x12345678u), Value::from_i32(1000)}),
            ((0x12345678u >> 3) & 4080u) + 1000u);
  EXPECT_EQ(call("lua_ra", {Value::from_i32(0xffffffffu), Value::from_i32(0xfffffff0u)}), 4080u - 16u)
      << "the add wraps";
  EXPECT_EQ(call("lua_rb", {Value::from_i32(0x12345678u), Value::from_i32(35)}),
            ((0x12345678u >> 3) & 4080u) + 35u)
      << "the shift count taken mod 32";
  // the tag bytes at 1024 + 8 on: 08 04 00 00 fc ff 00 00
  const std::pair<uint32_t, uint32_t> tags[] = {{1024, 1}, {1025, 1}, {1026, 0}, {1028, 1}, {1031, 0}};
  for (auto [a, want] : tags) EXPECT_EQ(call("tag_and", {Value::from_i32(a)}), want) << a;
  EXPECT_EQ(call("tag_ne", {Value::from_i32(1024), Value::from_i32(8)}), 1u);
  EXPECT_EQ(call("tag_ne", {Value::from_i32(1024), Value::from_i32(9)}), 0u);
  EXPECT_EQ(call("tag_ne", {Value::from_i32(1028), Value::from_i32(0xfc)}), 1u);
  EXPECT_EQ(call("eqz_and_if", {Value::from_i32(6), Value::from_i32(3)}), 1u);
  EXPECT_EQ(call("eqz_and_if", {Value::from_i32(6), Value::from_i32(9)}), 2u);
  EXPECT_EQ(call("eqz_and_loop", {Value::from_i32(9)}), 7u) << "9 -> 8 -> 7, odd";
  EXPECT_EQ(call("eqz_and_loop", {Value::from_i32(2)}), 1u);
  call("copy_tag", {Value::from_i32(1028), Value::from_i32(2048)});
  EXPECT_EQ(call("tag_ne", {Value::from_i32(2048), Value::from_i32(0xfc)}), 1u) << "mem[2056] = mem[1036]";
  // Traps: the tag's load at 65536, the store of the copy at 65536.
  for (auto [name, args] :
       {std::pair{"tag_and", std::vector<Value>{Value::from_i32(65528)}},
        std::pair{"tag_ne", std::vector<Value>{Value::from_i32(65528), Value::from_i32(0)}}}) {
    vm::Trap t = f.call(name, args, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << name;
    EXPECT_EQ(f.trap_opcode(t), 0x2D) << name << ": i32.load8_u";
  }
  vm::Trap t = f.call("copy_tag", {Value::from_i32(1024), Value::from_i32(65528)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x3A) << "i32.store8";
  t = f.call("copy_tag", {Value::from_i32(65528), Value::from_i32(1024)}, r);
  EXPECT_EQ(f.trap_opcode(t), 0x2D) << "i32.load8_u";
  // Counts (a block is not counted): tag_and's `get load8_u const and eqz
  // br_if` (6), then `const return` (2) or `const` after the block's end
  // (1); tag_ne's `get load8_u get ne br_if` (5) likewise; a trap in the
  // load after `get load8_u` (2); copy_tag's `get get load8_u store8` (4).
  const std::vector<CountCase> cases = {
      {"tag_and", {Value::from_i32(1024)}, 8, vm::TrapCode::None},
      {"tag_and", {Value::from_i32(1026)}, 7, vm::TrapCode::None},
      {"tag_and", {Value::from_i32(65528)}, 2, vm::TrapCode::MemoryOutOfBounds},
      {"tag_ne", {Value::from_i32(1024), Value::from_i32(8)}, 7, vm::TrapCode::None},
      {"tag_ne", {Value::from_i32(1024), Value::from_i32(9)}, 6, vm::TrapCode::None},
      {"tag_ne", {Value::from_i32(65528), Value::from_i32(8)}, 2, vm::TrapCode::MemoryOutOfBounds},
      {"copy_tag", {Value::from_i32(1024), Value::from_i32(65528)}, 4, vm::TrapCode::MemoryOutOfBounds},
      {"copy_tag", {Value::from_i32(65528), Value::from_i32(1024)}, 3, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// Lua's dispatch, `switch (table[i & 0x7f] - 2)`, is one op and the switch:
// the and, the shl and the add go into the load (load_and_shl_add(I32Load)),
// which pairs with the switch (vm/switch_pairs.def). Every index goes where
// the wasm sends it, the mask and the shift count are applied as wasm does,
// a trap is the load's with exact counts; the and+shl and and+shl+add forms
// compute what the pairs do.
TEST(LuaShapes, DispatchOnAMaskedOpcodeIsOneOp) {
  Fixture f;
  std::vector<Value> r;
  EXPECT_STREQ(f.op_at("lua_dispatch", 0), "load_and_shl_add(I32Load)+switch");
  EXPECT_STREQ(f.op_at("lua_dispatch", 7), "switch") << "the switch whole after it";
  EXPECT_STREQ(f.op_at("and_shl", 0), "i32.and+shl");
  EXPECT_STREQ(f.op_at("and_shl_add", 0), "i32.and+shl+add");
  auto call = [&](const char* name, uint32_t a, uint32_t b) {
    r.clear();
    vm::Trap t = f.call(name, {Value::from_i32(a), Value::from_i32(b)}, r);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return r.empty() ? 0xBADu : r.at(0).i32;
  };
  // the table at 3072: 2 3 4 5 0, less 2: cases 0 1 2, then the default
  const std::pair<uint32_t, uint32_t> ops[] = {{0, 10}, {1, 11},   {2, 12},          {3, 13},
                                               {4, 13}, {129, 11}, {0xffffff80u, 10}};
  for (auto [i, want] : ops) EXPECT_EQ(call("lua_dispatch", i, 3072), want) << i;
  EXPECT_EQ(call("lua_dispatch", 1, 3072 + 0xfffffffcu), 10u) << "the address wraps: the entry at 3072";
  EXPECT_EQ(call("and_shl", 0x1ff, 4), 0x7f0u);
  EXPECT_EQ(call("and_shl", 0x1ff, 36), 0x7f0u) << "the shift count taken mod 32";
  EXPECT_EQ(call("and_shl_add", 0x181, 0xfffffff0u), 0u) << "(1 << 4) + base, wrapped";
  vm::Trap t = f.call("lua_dispatch", {Value::from_i32(2), Value::from_i32(65536 - 8)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "i32.load";
  // `get const and const shl get add load` (8), then `const add br_table`
  // (3) and `const return` (2) or the block's `const` (1)
  const std::vector<CountCase> cases = {
      {"lua_dispatch", {Value::from_i32(2), Value::from_i32(65536 - 8)}, 8, vm::TrapCode::MemoryOutOfBounds},
      {"lua_dispatch", {Value::from_i32(1), Value::from_i32(3072)}, 13, vm::TrapCode::None},
      {"lua_dispatch", {Value::from_i32(4), Value::from_i32(3072)}, 12, vm::TrapCode::None},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
  // Counted code rebases the switch too and pairs the load with the
  // switch.counted (the counted twin): the counts above are that code's.
  const std::vector<uint32_t> counted = counted_lowered("lua_dispatch").code;
  EXPECT_EQ(op_count(counted, vm::IOp::LoadAndShlAddI32LoadSwitchCounted), 1u);
  EXPECT_EQ(op_count(counted, vm::IOp::SwitchCounted), 1u) << "the switch whole after it";
  EXPECT_EQ(op_count(counted, vm::IOp::Imm_I32Add) + op_count(counted, vm::IOp::I32Add), 0u)
      << "the - 2 rebased away";
}

// Lua's shared tail: `pc++` and the jump to the tail are one dispatch
// (i32.add+jump, with the two copies before it copy2+i32.add+jump), and
// the tail's load, decode and jump back another
// (i32.load+shr_u+and+add+jump); a load and decode with no jump after them
// pair alone (vm/lower/fusion.cc, pair_lua_tail and pair_load_decode). Every
// op stays whole after the pair's op word: results are the wasm's, a trap
// is the load's with exact counts, and fuel's code pairs with the same counts.
TEST(LuaShapes, TheSharedTailIsTwoDispatches) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& tail = f.inst->exported_func("lua_tail")->code->code;
  EXPECT_EQ(op_count(tail, vm::IOp::Copy2I32AddJump), 1u);
  EXPECT_EQ(op_count(tail, vm::IOp::I32AddJump), 1u) << "the add whole after the copies";
  EXPECT_EQ(op_count(tail, vm::IOp::I32LoadShrUAndAddJump), 1u);
  EXPECT_EQ(op_count(tail, vm::IOp::I32ShrUAndAdd), 1u) << "the decode whole after the load";
  EXPECT_EQ(op_count(tail, vm::IOp::JumpBack), 1u) << "the jump back whole after the decode";
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(f.inst->exported_func("load_decode")->code->code.at(0))),
               "i32.load+shr_u+and+add");
  auto call = [&](const char* name, std::vector<Value> args) {
    r.clear();
    vm::Trap t = f.call(name, std::move(args), r);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return r.empty() ? 0xBADu : r.at(0).i32;
  };
  // the words at 3584: 0x12345678 0xffffffff 8 0x80000000
  auto field = [](uint32_t w) { return (w >> 3) & 4080u; };
  const uint32_t fields = field(0x12345678u) + field(0xffffffffu) + field(8) + field(0x80000000u);
  EXPECT_EQ(call("lua_tail", {Value::from_i32(3580), Value::from_i32(1000), Value::from_i32(5)}),
            4000u + fields + 3580 + 12);
  EXPECT_EQ(call("lua_tail", {Value::from_i32(3580), Value::from_i32(0xfffffff0u), Value::from_i32(3)}),
            field(0x12345678u) + field(0xffffffffu) - 32u + 3580 + 4)
      << "the adds wrap";
  EXPECT_EQ(call("lua_tail", {Value::from_i32(3580), Value::from_i32(7), Value::from_i32(1)}), 0u);
  EXPECT_EQ(call("load_decode", {Value::from_i32(3584), Value::from_i32(100)}), 100u + field(0x12345678u));
  for (auto [name, args] :
       {std::pair{"lua_tail",
                  std::vector<Value>{Value::from_i32(65532), Value::from_i32(0), Value::from_i32(2)}},
        std::pair{"load_decode", std::vector<Value>{Value::from_i32(65534), Value::from_i32(0)}}}) {
    vm::Trap t = f.call(name, args, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << name;
    EXPECT_EQ(f.trap_opcode(t), 0x28) << name << ": i32.load";
  }
  // lua_tail: a pass that goes on runs `get get add set, get const sub tee,
  // eqz if` (10), `get set get set` (4), `get const add set br` (5) and the
  // tail's `get get load tee const shr_u const and add set br` (11); the
  // last one `get get add return` after the 10; a trap in the load after
  // 19 + 3. load_decode: `get get load const shr_u const and add` (8), or a
  // trap after 3.
  const std::vector<CountCase> cases = {
      {"lua_tail",
       {Value::from_i32(3580), Value::from_i32(1000), Value::from_i32(5)},
       4u * 30 + 14,
       vm::TrapCode::None},
      {"lua_tail",
       {Value::from_i32(65532), Value::from_i32(0), Value::from_i32(2)},
       22,
       vm::TrapCode::MemoryOutOfBounds},
      {"lua_tail",
       {Value::from_i32(65528), Value::from_i32(0), Value::from_i32(3)},
       30 + 22,
       vm::TrapCode::MemoryOutOfBounds},
      {"load_decode", {Value::from_i32(3584), Value::from_i32(0)}, 8, vm::TrapCode::None},
      {"load_decode", {Value::from_i32(65534), Value::from_i32(0)}, 3, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
  const std::vector<uint32_t> fuel_tail = fuel_lowered("lua_tail").code;
  EXPECT_EQ(op_count(fuel_tail, vm::IOp::Copy2I32AddJump), 1u) << "code lowered for fuel pairs too";
  EXPECT_EQ(op_count(fuel_tail, vm::IOp::I32LoadShrUAndAddJump), 1u) << "code lowered for fuel pairs too";
  // Counted code pairs into the counted forms (the jumps are jump.counted):
  // expect_counts above ran them, with the counts the wasm gives.
  const std::vector<uint32_t> counted_tail = counted_lowered("lua_tail").code;
  EXPECT_EQ(op_count(counted_tail, vm::IOp::Copy2I32AddJumpCounted), 1u);
  EXPECT_EQ(op_count(counted_tail, vm::IOp::I32AddJumpCounted), 1u) << "the add whole after the copies";
  EXPECT_EQ(op_count(counted_tail, vm::IOp::I32LoadShrUAndAddJumpCounted), 1u);
  EXPECT_EQ(op_count(counted_tail, vm::IOp::JumpBackCounted), 1u) << "the jump back whole after the decode";
  EXPECT_EQ(
      op_count(counted_tail, vm::IOp::I32AddJump) + op_count(counted_tail, vm::IOp::I32LoadShrUAndAddJump),
      0u)
      << "no plain form in counted code";
}

// In plain code, the pairs whose jump lands on the tail, and the tail's
// whose jump lands on the loop's switch, go on into their target without a
// dispatch (vm/internal_ops.def): a handler's end, the tail and the switch
// are one dispatch; in counted code too, with the jumps' edges counted
// (vm/counted_ops.def). Every target stays whole; results, traps (the
// tail's load, the switch's) and counts are the wasm's; fuel's code keeps
// the forms that dispatch.
TEST(LuaShapes, HandlerEndTailAndSwitchAreOneDispatch) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("lua_loop")->code->code;
  EXPECT_EQ(op_count(code, vm::IOp::I32AddJumpTail), 2u) << "both handlers' pc++";
  EXPECT_EQ(op_count(code, vm::IOp::I32LoadShrUAndAddJumpSwitch), 1u);
  EXPECT_EQ(op_count(code, vm::IOp::LoadAndShlAddI32LoadSwitch), 1u) << "the switch whole";
  EXPECT_EQ(op_count(code, vm::IOp::I32LoadShrUAndAddJump) + op_count(code, vm::IOp::I32AddJump), 0u);
  const std::vector<uint32_t>& tail = f.inst->exported_func("lua_tail")->code->code;
  EXPECT_EQ(op_count(tail, vm::IOp::I32LoadShrUAndAddJump), 1u) << "lua_tail's jumps to no switch";
  // The plain tail passes the instruction it loads to the decode and the
  // switch in a register: not where the decode overwrites it, and the
  // switch reads the decode (pc 6000: xor ra = 3088, then the decode 3104
  // picks table[32] = 0, the default, return 2 * 3088).
  const std::vector<uint32_t>& over = f.inst->exported_func("lua_loop_decode_over_i")->code->code;
  EXPECT_EQ(op_count(over, vm::IOp::I32LoadShrUAndAddJump), 1u);
  EXPECT_EQ(op_count(over, vm::IOp::I32LoadShrUAndAddJumpSwitch) + op_count(over, vm::IOp::I32AddJumpTail),
            0u);
  ASSERT_FALSE(f.call("lua_loop_decode_over_i", {Value::from_i32(6000), Value::from_i32(3072)}, r));
  EXPECT_EQ(r.at(0).i32, 2u * (3072 + 16));
  // Counted code the same with the counted forms (the counting loop's);
  // fuel's keeps the forms that dispatch.
  const std::vector<uint32_t> counted = counted_lowered("lua_loop").code;
  EXPECT_EQ(op_count(counted, vm::IOp::I32AddJumpTailCounted), 2u);
  EXPECT_EQ(op_count(counted, vm::IOp::I32LoadShrUAndAddJumpSwitchCounted), 1u);
  EXPECT_EQ(op_count(counted, vm::IOp::LoadAndShlAddI32LoadSwitchCounted), 1u) << "the switch whole";
  EXPECT_EQ(
      op_count(counted, vm::IOp::I32AddJumpTail) + op_count(counted, vm::IOp::I32LoadShrUAndAddJumpSwitch),
      0);
  const std::vector<uint32_t> fuel = fuel_lowered("lua_loop").code;
  EXPECT_EQ(op_count(fuel, vm::IOp::I32LoadShrUAndAddJump), 1u);
  for (const vm::IOp op : {vm::IOp::I32AddJumpTail, vm::IOp::I32LoadShrUAndAddJumpSwitch,
                           vm::IOp::I32AddJumpTailCounted, vm::IOp::I32LoadShrUAndAddJumpSwitchCounted})
    EXPECT_EQ(op_count(fuel, op), 0u) << vm::iop_name(op) << " in fuel's code";
  // Instructions from 6000: xor a=1, xor a=2, sub a=1, xor a=5, return
  // a=3; ra = tab + 16a.
  ASSERT_FALSE(f.call("lua_loop", {Value::from_i32(6000), Value::from_i32(3072)}, r));
  EXPECT_EQ(r.at(0).i32, ((((3072u + 16) ^ (3072 + 32)) - (3072 + 16)) ^ (3072 + 80)) + (3072 + 48));
  // The tail's load past the end (the zero word at 65532 is xor a=0), and
  // the switch's (its table at 65534).
  vm::Trap t = f.call("lua_loop", {Value::from_i32(65532), Value::from_i32(3072)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "the tail's i32.load";
  t = f.call("lua_loop", {Value::from_i32(6000), Value::from_i32(65534)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  EXPECT_EQ(f.trap_opcode(t), 0x28) << "the switch's i32.load";
  // The prologue's decode (10); a pass's switch (11), handler (9) and tail
  // (11); the return (4).
  const std::vector<CountCase> cases = {
      {"lua_loop", {Value::from_i32(6000), Value::from_i32(3072)}, 10 + 4 * 31 + 11 + 4, vm::TrapCode::None},
      {"lua_loop",
       {Value::from_i32(65532), Value::from_i32(3072)},
       10 + 20 + 3,
       vm::TrapCode::MemoryOutOfBounds},
      {"lua_loop", {Value::from_i32(6000), Value::from_i32(65534)}, 10 + 8, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// Lua's setobj, an i64.load+i64.store pair right before an
// i32.load8_u+i32.store8 pair, is one op (vm/lower/fusion.cc,
// pair_mem_access): the four accesses in order, a trap in any of them at its
// own instruction with exact counts.
TEST(LuaShapes, SetobjIsOneOp) {
  Fixture f;
  std::vector<Value> r;
  const std::vector<uint32_t>& code = f.inst->exported_func("lua_setobj")->code->code;
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(0))), "i64.load+i64.store+i32.load8_u+i32.store8");
  EXPECT_STREQ(vm::iop_name(static_cast<vm::IOp>(code.at(8))), "i32.load8_u+i32.store8")
      << "the second pair whole after the first";
  ASSERT_FALSE(f.call("lua_setobj", {Value::from_i32(2048), Value::from_i32(3584)}, r));
  EXPECT_EQ(r.at(0).i64, 0xffffffff12345678ull + 8) << "the value and the tag at 3592, copied to 2048";
  // i64.load, i64.store, i32.load8_u, i32.store8 out of bounds in turn
  const std::tuple<uint32_t, uint32_t, int, uint64_t> traps[] = {
      {2048, 65530, 0x29, 3}, {65530, 3584, 0x37, 4}, {2048, 65528, 0x2D, 7}, {65528, 3584, 0x3A, 8}};
  std::vector<CountCase> cases = {
      {"lua_setobj", {Value::from_i32(2048), Value::from_i32(3584)}, 13, vm::TrapCode::None}};
  for (auto [dst, src, opcode, count] : traps) {
    vm::Trap t = f.call("lua_setobj", {Value::from_i32(dst), Value::from_i32(src)}, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << dst << " " << src;
    EXPECT_EQ(f.trap_opcode(t), opcode) << dst << " " << src;
    cases.push_back(
        {"lua_setobj", {Value::from_i32(dst), Value::from_i32(src)}, count, vm::TrapCode::MemoryOutOfBounds});
  }
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// An i32.load, an add of a constant and an i32.store to the same address
// are one op (vm/lower/fusion.cc, fuse_rmw_add): Py_INCREF and Py_DECREF.
// The sum is stored (and teed into its local), a trap is the load's with
// nothing written, counted runs count every instruction whether the op
// traps, finishes, or an op after it traps, and shapes that differ in
// address or where the sum goes stay apart.
TEST(SuperInstructions, ReadModifyWriteIsOneOp) {
  Fixture f;
  std::vector<Value> r;
  auto count_of = [&](const char* name, vm::IOp op) {
    const std::vector<uint32_t>& c = f.inst->exported_func(name)->code->code;
    return std::count(c.begin(), c.end(), static_cast<uint32_t>(op));
  };
  EXPECT_EQ(count_of("rmw_inc", vm::IOp::RmwAdd_I32), 1);
  EXPECT_EQ(count_of("rmw_inc", vm::IOp::I32Load), 0);
  EXPECT_EQ(count_of("rmw_dec", vm::IOp::RmwAddTee_I32), 1);
  EXPECT_EQ(count_of("rmw_const_first", vm::IOp::RmwAdd_I32), 1);
  EXPECT_EQ(count_of("rmw_imm", vm::IOp::RmwAdd_I32), 1) << "the constant an immediate";
  EXPECT_EQ(count_of("rmw_imm", vm::IOp::Imm_I32Add), 0);
  EXPECT_EQ(count_of("rmw_after_store", vm::IOp::RmwAdd_I32), 1);
  EXPECT_EQ(count_of("rmw_after_store", vm::IOp::I32StoreI32Load), 0);
  EXPECT_EQ(count_of("rmw_after_store", vm::IOp::I32StoreRmwAdd_I32), 1) << "the store paired with the rmw";
  EXPECT_EQ(count_of("rmw_decref", vm::IOp::RmwAddTeeJumpIf_I32), 1);
  EXPECT_EQ(count_of("rmw_decref", vm::IOp::JumpIf), 1) << "the jump stays whole";
  EXPECT_EQ(op_count(counted_lowered("rmw_decref").code, vm::IOp::RmwAddTeeJumpIfExit_I32), 1u)
      << "counted code's: the counted jump (its counts and trap below)";
  EXPECT_EQ(count_of("rmw_other_offset", vm::IOp::RmwAdd_I32), 0);
  EXPECT_EQ(count_of("rmw_tee_addr", vm::IOp::RmwAddTee_I32), 0);
  auto call = [&](const char* name, std::vector<Value> args) {
    r.clear();
    vm::Trap t = f.call(name, std::move(args), r);
    EXPECT_FALSE(t) << name;
    return r.empty() ? 0xBADu : r.at(0).i32;
  };
  auto at = [&](uint32_t addr) {
    return call("rmw_then_load", {Value::from_i32(4096), Value::from_i32(addr)});
  };
  // 4096 + 4 is a scratch word that rmw_then_load increments each time.
  const uint32_t scratch = at(4100);
  EXPECT_EQ(at(4100), scratch + 1);
  call("rmw_inc", {Value::from_i32(4096)});
  EXPECT_EQ(at(4100), scratch + 3);
  EXPECT_EQ(call("rmw_dec", {Value::from_i32(4096)}), scratch + 2) << "the teed sum";
  EXPECT_EQ(at(4100), scratch + 3);
  EXPECT_EQ(call("rmw_imm", {Value::from_i32(4096)}), ((((4096u + 1000) ^ 2000) - 3000) | 4000));
  EXPECT_EQ(at(4100), scratch + 5004);
  EXPECT_EQ(call("rmw_const_first", {Value::from_i32(4092)}), scratch + 5004 + 16) << "at 4092 + 8";
  call("rmw_after_store", {Value::from_i32(4096), Value::from_i32(4100)});
  EXPECT_EQ(at(4100), 9u) << "7, then + 1 by rmw_after_store, + 1 by rmw_then_load";
  call("rmw_other_offset", {Value::from_i32(4092)});
  EXPECT_EQ(at(4100), 2u) << "rmw_other_offset: at 4092 + 8, 1 more than at 4092 + 4 (0)";
  EXPECT_EQ(call("rmw_tee_addr", {Value::from_i32(4096)}), 10u) << "the sum, into the address's local";
  EXPECT_EQ(at(4100), 11u) << "stored at the address read before the tee";
  // A trap is the load's, and nothing is written.
  const uint32_t last = 65536 - 4;  // the last word of the page
  ASSERT_FALSE(f.call("rmw_inc", {Value::from_i32(last - 4)}, r));
  for (const uint32_t a : {last - 3, 0xFFFFFFFCu})  // the offset's sum is 33 bits: never wraps
    for (const char* name : {"rmw_inc", "rmw_dec", "rmw_imm"}) {
      vm::Trap t = f.call(name, {Value::from_i32(a)}, r);
      EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << name;
      EXPECT_EQ(f.trap_opcode(t), 0x28) << name << ": i32.load";
    }
  EXPECT_EQ(call("rmw_dec", {Value::from_i32(last - 4)}), 0u) << "1 from rmw_inc, unchanged by the traps";
  EXPECT_EQ(call("rmw_decref", {Value::from_i32(last - 4)}), 0xFFFFFFFFu) << "0 - 1: the branch taken";
  ASSERT_FALSE(f.call("rmw_inc", {Value::from_i32(last - 4)}, r));
  ASSERT_FALSE(f.call("rmw_inc", {Value::from_i32(last - 4)}, r));
  EXPECT_EQ(call("rmw_decref", {Value::from_i32(last - 4)}), 99u) << "1 - 1: zero, not taken";
  {
    vm::Trap t = f.call("rmw_after_store", {Value::from_i32(last - 3), Value::from_i32(64)}, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
    EXPECT_EQ(f.trap_opcode(t), 0x28) << "the rmw's i32.load, after the paired store";
    t = f.call("rmw_decref", {Value::from_i32(last - 3)}, r);
    EXPECT_EQ(f.trap_opcode(t), 0x28) << "rmw_decref: i32.load";
  }
  const std::vector<CountCase> cases = {
      {"rmw_inc", {Value::from_i32(64)}, 6, vm::TrapCode::None},  // get get load const add store
      {"rmw_inc", {Value::from_i32(65533)}, 3, vm::TrapCode::MemoryOutOfBounds},
      {"rmw_dec", {Value::from_i32(64)}, 8, vm::TrapCode::None},  // ... add tee store get
      {"rmw_dec", {Value::from_i32(65533)}, 3, vm::TrapCode::MemoryOutOfBounds},
      {"rmw_imm", {Value::from_i32(64)}, 23, vm::TrapCode::None},  // 4 x (get const op set), 6, get
      {"rmw_imm", {Value::from_i32(65533)}, 19, vm::TrapCode::MemoryOutOfBounds},
      {"rmw_then_load", {Value::from_i32(64), Value::from_i32(65533)}, 8, vm::TrapCode::MemoryOutOfBounds},
      // get get load const add tee store get br_if, get: 0 - 1, the branch taken
      {"rmw_decref", {Value::from_i32(64)}, 10, vm::TrapCode::None},
      {"rmw_decref", {Value::from_i32(65533)}, 3, vm::TrapCode::MemoryOutOfBounds},
      {"rmw_after_store", {Value::from_i32(64), Value::from_i32(65533)}, 3, vm::TrapCode::MemoryOutOfBounds},
      {"rmw_after_store", {Value::from_i32(65533), Value::from_i32(64)}, 6, vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000;
  expect_counts(cases, with_fuel, " (fuel)");
}

// CPython 3.11's dispatch (vm/internal_ops.def): the switch on `(opcode &
// 255) - 1` runs with the chain that computes it, and the decode of the next
// code unit (`opcode = word | use_tracing`, `oparg = word >> 8`) is one
// dispatch for three whole ops. Results, a trap in the decode's load (at the
// load, with exact counts), and the ops each function became.
TEST(PythonShapes, DispatchAndDecodeAreFused) {
  Fixture f;
  std::vector<Value> r;
  auto count_of = [&](const char* name, vm::IOp op) {
    const std::vector<uint32_t>& c = f.inst->exported_func(name)->code->code;
    return std::count(c.begin(), c.end(), static_cast<uint32_t>(op));
  };
  EXPECT_STREQ(f.op_at("py_dispatch", 0), "i32.and+add+switch");
  EXPECT_STREQ(f.op_at("py_dispatch", 5), "switch") << "the switch whole after it";
  EXPECT_EQ(count_of("py_head", vm::IOp::Copy3AndAddSwitch), 1);
  EXPECT_EQ(count_of("py_head", vm::IOp::I32AndAddSwitch), 1) << "whole after the copies";
  EXPECT_EQ(count_of("py_head7", vm::IOp::Copy7AndAddSwitch), 1) << "seven copies: copy4, copy3";
  EXPECT_EQ(count_of("py_head7", vm::IOp::Copy3AndAddSwitch), 1) << "the copy3 whole (and paired) after it";
  EXPECT_EQ(count_of("py_head7", vm::IOp::I32AndAddSwitch), 1);
  EXPECT_EQ(count_of("py_decode", vm::IOp::I32Load16UOrShrU), 1);
  EXPECT_EQ(count_of("py_decode", vm::IOp::I32Or), 1) << "the or whole after it";
  EXPECT_EQ(count_of("py_decode", vm::IOp::I32ShrU), 1) << "the shift whole after it";
  EXPECT_EQ(count_of("py_decode_label", vm::IOp::I32Load16UOrShrU), 1);
  EXPECT_EQ(count_of("py_decode_loop", vm::IOp::I32Load16UOrShrU), 1) << "before the loop";
  EXPECT_EQ(count_of("py_decode_loop", vm::IOp::I32Load16UOrShrUJump), 1) << "with the jump back";
  EXPECT_EQ(count_of("py_decode_loop", vm::IOp::JumpBack), 1) << "the jump whole after it";
  EXPECT_EQ(count_of("py_decode_shift_first", vm::IOp::I32Load16UShrULoad8UOr), 1);
  EXPECT_EQ(count_of("py_decode_shift_first", vm::IOp::I32Load16UShrULoad8UOrJump), 1);
  // Counted code's with the jump.counted (its counts and traps checked by
  // expect_counts below).
  EXPECT_EQ(op_count(counted_lowered("py_decode_loop").code, vm::IOp::I32Load16UOrShrUJumpCounted), 1u);
  EXPECT_EQ(
      op_count(counted_lowered("py_decode_shift_first").code, vm::IOp::I32Load16UShrULoad8UOrJumpCounted),
      1u);
  auto call = [&](const char* name, std::vector<Value> args) {
    r.clear();
    vm::Trap t = f.call(name, std::move(args), r);
    EXPECT_FALSE(t) << name << ": " << t.message;
    return r.empty() ? 0xBADu : r.at(0).i32;
  };
  const std::pair<uint32_t, uint32_t> ops[] = {{1, 10}, {2, 11},     {3, 12},          {4, 13},
                                               {0, 13}, {0x101, 10}, {0xffffff03u, 12}};
  for (auto [x, want] : ops) EXPECT_EQ(call("py_dispatch", {Value::from_i32(x)}), want) << x;
  EXPECT_EQ(call("py_head", {Value::from_i32(1)}), 11u) << "10 + the constant copied";
  EXPECT_EQ(call("py_head", {Value::from_i32(0x102)}), 103u)
      << "round once with 3, then the copy of the copy";
  EXPECT_EQ(call("py_head", {Value::from_i32(3)}), 103u);
  EXPECT_EQ(call("py_head", {Value::from_i32(0)}), 13u);
  EXPECT_EQ(call("py_head7", {Value::from_i32(1)}), 18u) << "10 + the constants copied";
  EXPECT_EQ(call("py_head7", {Value::from_i32(0x102)}), 106u) << "round once with 3, then copies of copies";
  EXPECT_EQ(call("py_head7", {Value::from_i32(3)}), 106u);
  EXPECT_EQ(call("py_head7", {Value::from_i32(0)}), 13u);
  // The code unit 0x2a7c at 4098 (offset 2 from 4096); the flag byte at 4200
  // is 0, then 255 (tracing: every opcode becomes 255).
  ASSERT_FALSE(f.call("store16", {Value::from_i32(4098), Value::from_i32(0x2a7c)}, r));
  for (const char* name : {"py_decode", "py_decode_label"}) {
    ASSERT_FALSE(f.call("store8", {Value::from_i32(4200), Value::from_i32(0)}, r));
    EXPECT_EQ(call(name, {Value::from_i32(4096), Value::from_i32(4200)}), (0x2a7cu << 16) + 0x2a) << name;
    ASSERT_FALSE(f.call("store8", {Value::from_i32(4200), Value::from_i32(255)}, r));
    EXPECT_EQ(call(name, {Value::from_i32(4096), Value::from_i32(4200)}), (0x2affu << 16) + 0x2a) << name;
    vm::Trap t = f.call(name, {Value::from_i32(65534), Value::from_i32(4200)}, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << name;
    EXPECT_EQ(f.trap_opcode(t), 0x2f) << name << ": i32.load16_u";
  }
  // Code units at 5000: (1, 3), (2, 5), (0, 7): the opargs' sum, the flag
  // byte at 5006 0. With the one at 5008 (255) no opcode is 0 and the loop runs off the end.
  for (const char* name : {"py_decode_loop", "py_decode_shift_first"}) {
    EXPECT_EQ(call(name, {Value::from_i32(5000), Value::from_i32(5006)}), 15u) << name;
    vm::Trap t = f.call(name, {Value::from_i32(5000), Value::from_i32(5008)}, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds) << name;
    EXPECT_EQ(f.trap_opcode(t), 0x2f) << name << ": i32.load16_u at the end";
  }
  {
    vm::Trap t = f.call("py_decode_shift_first", {Value::from_i32(5000), Value::from_i32(65536)}, r);
    EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
    EXPECT_EQ(f.trap_opcode(t), 0x2d) << "the second load, i32.load8_u";
  }
  // The loops' counts are those the unfused build (1efc4db) gives the same
  // module.
  const std::vector<CountCase> cases = {
      {"py_decode_loop", {Value::from_i32(5000), Value::from_i32(5006)}, 72, vm::TrapCode::None},
      {"py_decode_loop",
       {Value::from_i32(5000), Value::from_i32(5008)},
       756703,
       vm::TrapCode::MemoryOutOfBounds},
      {"py_decode_loop", {Value::from_i32(65535), Value::from_i32(5006)}, 4, vm::TrapCode::MemoryOutOfBounds},
      {"py_decode_shift_first", {Value::from_i32(5000), Value::from_i32(5006)}, 72, vm::TrapCode::None},
      {"py_decode_shift_first",
       {Value::from_i32(5000), Value::from_i32(5008)},
       756701,
       vm::TrapCode::MemoryOutOfBounds},
      {"py_decode_shift_first",
       {Value::from_i32(65535), Value::from_i32(5006)},
       2,
       vm::TrapCode::MemoryOutOfBounds},
      {"py_decode_shift_first",
       {Value::from_i32(5000), Value::from_i32(65536)},
       8,
       vm::TrapCode::MemoryOutOfBounds},
      {"py_dispatch",
       {Value::from_i32(2)},
       8,
       vm::TrapCode::None},  // get const and const add br_table, const return
      {"py_dispatch", {Value::from_i32(0)}, 7, vm::TrapCode::None},
      {"py_head", {Value::from_i32(2)}, 31, vm::TrapCode::None},   // as the unfused build counts
      {"py_head", {Value::from_i32(1)}, 16, vm::TrapCode::None},   // ..., the block's const
      {"py_head7", {Value::from_i32(2)}, 49, vm::TrapCode::None},  // 2 x (14 + 6) + 3 + 6
      {"py_head7", {Value::from_i32(1)}, 26, vm::TrapCode::None},  // 14 + 6 + 6
      {"py_decode", {Value::from_i32(4096), Value::from_i32(4200)}, 16, vm::TrapCode::None},
      {"py_decode", {Value::from_i32(65534), Value::from_i32(4200)}, 4, vm::TrapCode::MemoryOutOfBounds},
      {"py_decode_label", {Value::from_i32(4096), Value::from_i32(4200)}, 16, vm::TrapCode::None},
      {"py_decode_label",
       {Value::from_i32(65534), Value::from_i32(4200)},
       4,
       vm::TrapCode::MemoryOutOfBounds},
  };
  expect_counts(cases);
  profiler::RunOptions with_fuel;
  with_fuel.fuel = 1000000;  // the runs off the end take 756,703
  expect_counts(cases, with_fuel, " (fuel)");
}

// Counted with probes (LoadOptions::probe_dispatch), the probe.counted
// before the loop head's switch.counted runs the switch too, without a
// dispatch, and the chain and copies before the probe run with it
// (vm/counted_ops.def). Results, and every instruction's count, node by
// node, are those of counted code without probes (no sink: the probes move
// no count).
TEST(PythonShapes, CountedProbeRunsTheSwitchAfterIt) {
  struct Run {
    std::vector<uint32_t> results;
    std::vector<vm::Profiling::InstructionCount> counts;
  };
  auto run = [](bool probes, const char* name, const std::vector<uint32_t>& inputs,
                std::vector<uint32_t>* code) {
    vm::LoadOptions lo;
    lo.count_instructions = true;
    if (probes) lo.probe_dispatch = [](const vm::Module&, uint32_t) { return 4u; };
    auto m = vm::load_module(read_bytes(path()), lo);
    EXPECT_TRUE(m) << m.error().to_string();
    Run out;
    if (!m) return out;
    vm::Store store;
    auto i = store.instantiate(m.value(), {});
    EXPECT_TRUE(i);
    if (!i) return out;
    vm::Profiling p;
    p.count_instructions = true;
    store.thread()->profiling = &p;
    for (uint32_t x : inputs) {
      std::vector<Value> r, args = {Value::from_i32(x)};
      vm::Trap t = store.invoke(i.value()->exported_func(name), args, r);
      EXPECT_FALSE(t) << name << " " << x << ": " << t.message;
      out.results.push_back(r.empty() ? 0xBADu : r.at(0).i32);
    }
    out.counts = p.instruction_counts();
    if (code) *code = i.value()->exported_func(name)->code->code;
    return out;
  };
  auto count_of = [](const std::vector<uint32_t>& c, vm::IOp op) {
    return std::count(c.begin(), c.end(), static_cast<uint32_t>(op));
  };
  const std::vector<uint32_t> inputs = {1, 0x102, 3, 0, 2};
  std::vector<uint32_t> code;
  Run with = run(true, "py_head", inputs, &code), without = run(false, "py_head", inputs, nullptr);
  EXPECT_EQ(count_of(code, vm::IOp::ProbeCounted), 1);
  EXPECT_EQ(count_of(code, vm::IOp::SwitchCounted), 1);
  EXPECT_EQ(count_of(code, vm::IOp::Copy3AndAddProbeCounted), 1);
  EXPECT_EQ(count_of(code, vm::IOp::I32AndAddProbeCounted), 1) << "whole after the copies";
  EXPECT_EQ(with.results, (std::vector<uint32_t>{11, 103, 103, 13, 103}));
  EXPECT_EQ(with.results, without.results);
  ASSERT_FALSE(with.counts.empty());
  EXPECT_TRUE(with.counts == without.counts) << "instruction for instruction";
  // Seven copies (copy4+copy3+...), and the chain alone.
  with = run(true, "py_head7", inputs, &code), without = run(false, "py_head7", inputs, nullptr);
  EXPECT_EQ(count_of(code, vm::IOp::Copy7AndAddProbeCounted), 1);
  EXPECT_EQ(count_of(code, vm::IOp::Copy3AndAddProbeCounted), 1);
  EXPECT_EQ(count_of(code, vm::IOp::ProbeCounted), 1);
  EXPECT_EQ(with.results, (std::vector<uint32_t>{18, 106, 106, 13, 106}));
  EXPECT_EQ(with.results, without.results);
  EXPECT_TRUE(with.counts == without.counts) << "py_head7, instruction for instruction";
  with = run(true, "py_dispatch", inputs, &code), without = run(false, "py_dispatch", inputs, nullptr);
  EXPECT_EQ(count_of(code, vm::IOp::I32AndAddProbeCounted), 1);
  EXPECT_EQ(with.results, (std::vector<uint32_t>{10, 11, 12, 13, 11}));
  EXPECT_EQ(with.results, without.results);
  EXPECT_TRUE(with.counts == without.counts) << "py_dispatch, instruction for instruction";
}

}  // namespace
}  // namespace wzvm
