// Bodies the VM knows (vm/known_bodies.def): Go's math/bits.Mul64 runs as
// one op at its direct calls in plain code, leaving what the body leaves;
// the body itself runs where the op's fast path does not apply (a resume
// point other than 0, an access out of bounds) and in counted code; a body
// one byte away from a known one is not taken for it.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "profiler/instruction_profile.h"
#include "tests/cli_fixture.h"
#include "vm/code.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/runtime.h"

namespace wzvm {
namespace {

using vm::Value;

std::string path() { return cli_test::testdata("known_bodies.wasm"); }

std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The function named `name` (name section), or UINT32_MAX.
uint32_t func_named(const vm::Module& m, const std::string& name) {
  for (uint32_t f = 0; f < m.func_type_indices.size(); ++f)
    if (m.function_name(f) == name) return f;
  return UINT32_MAX;
}

struct Product {
  uint64_t hi, lo;
};
Product mul128(uint64_t x, uint64_t y) {
  const unsigned __int128 p = static_cast<unsigned __int128>(x) * y;
  return {static_cast<uint64_t>(p >> 64), static_cast<uint64_t>(p)};
}

const std::vector<std::pair<uint64_t, uint64_t>> kFactors = {
    {0, 0},
    {1, 1},
    {~0ull, ~0ull},
    {~0ull, 2},
    {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull},
    {0xffffffffull, 0x100000001ull},
    {0x8000000000000000ull, 3},
    {123456789, 987654321},
};

struct Fixture {
  std::shared_ptr<const vm::Module> module;
  vm::Store store;
  vm::Instance* inst = nullptr;
  explicit Fixture(const vm::LoadOptions& options = {}, vm::StoreLimits limits = {}) : store(limits) {
    auto m = vm::load_module(read_bytes(path()), options);
    EXPECT_TRUE(m) << m.error().to_string();
    module = m.value();
    auto i = store.instantiate(module, {});
    EXPECT_TRUE(i);
    inst = i.value();
  }
  vm::Trap call(const char* name, std::vector<Value> args, std::vector<Value>& results) {
    return store.invoke(inst->exported_func(name), args, results);
  }
  size_t ops(const char* name, vm::IOp op) const {
    const std::vector<uint32_t>& c = inst->exported_func(name)->code->code;
    return static_cast<size_t>(std::count(c.begin(), c.end(), static_cast<uint32_t>(op)));
  }
  uint32_t sp() {
    std::vector<Value> r;
    EXPECT_FALSE(call("sp_get", {}, r));
    return r.at(0).i32;
  }
};

TEST(KnownBodies, GoMul64IsKnownByItsBytes) {
  Fixture f;
  const vm::Module& m = *f.module;
  EXPECT_EQ(m.known_body(func_named(m, "mul64")), vm::KnownBody::GoMul64);
  EXPECT_EQ(m.known_body(func_named(m, "mul64_other")), vm::KnownBody::None) << "one constant differs";
  for (const char* other : {"sp_set", "sp_get", "mul", "mul_other"})
    EXPECT_EQ(m.known_body(func_named(m, other)), vm::KnownBody::None) << other;
  // The op stands at the call in plain code only.
  EXPECT_EQ(f.ops("mul", vm::IOp::GoMul64), 1u);
  EXPECT_EQ(f.ops("mul_other", vm::IOp::GoMul64), 0u);
  vm::LoadOptions counted;
  counted.count_instructions = true;
  Fixture c(counted);
  EXPECT_EQ(c.ops("mul", vm::IOp::GoMul64), 0u);
}

// The op leaves what the body leaves: both halves on Go's stack, the stack
// pointer popped, 0 returned; and counted code, which runs the body, agrees.
TEST(KnownBodies, GoMul64LeavesWhatItsBodyLeaves) {
  Fixture f;
  const uint32_t sp = f.sp();
  for (auto [x, y] : kFactors) {
    std::vector<Value> r;
    ASSERT_FALSE(f.call("mul", {Value::from_i64(x), Value::from_i64(y), Value::from_i32(0)}, r))
        << x << " " << y;
    const Product want = mul128(x, y);
    EXPECT_EQ(r.at(0).i64, want.hi) << x << " * " << y;
    EXPECT_EQ(r.at(1).i64, want.lo) << x << " * " << y;
    EXPECT_EQ(r.at(2).i32, 0u);
    EXPECT_EQ(r.at(3).i32, sp) << "the return address popped";
    auto p = profiler::InstructionProfile::run_and_count_file(
        path(), "mul", {Value::from_i64(x), Value::from_i64(y), Value::from_i32(0)});
    ASSERT_TRUE(p) << p.error().to_string();
    ASSERT_EQ(p->results().size(), 4u);
    EXPECT_EQ(p->results()[0].i64, want.hi) << "counted";
    EXPECT_EQ(p->results()[1].i64, want.lo) << "counted";
    EXPECT_GT(p->count("mul64"), 50u) << "counted code runs the body";
  }
  // No frame: with room for the caller's frame alone, the op runs where a
  // call of the body (a resume point the op leaves to it) has no room.
  vm::StoreLimits one_frame;
  one_frame.max_call_depth = 1;
  Fixture shallow({}, one_frame);
  std::vector<Value> out;
  ASSERT_FALSE(shallow.call("mul", {Value::from_i64(6), Value::from_i64(7), Value::from_i32(0)}, out));
  EXPECT_EQ(out.at(1).i64, 42u);
  EXPECT_EQ(shallow.call("mul", {Value::from_i64(6), Value::from_i64(7), Value::from_i32(1)}, out).code,
            vm::TrapCode::StackExhausted);
  // A body one constant away is run as written (its high half differs).
  std::vector<Value> r;
  ASSERT_FALSE(f.call("mul_other", {Value::from_i64(~0ull), Value::from_i64(~0ull)}, r));
  EXPECT_NE(r.at(0).i64, mul128(~0ull, ~0ull).hi);
  auto p = profiler::InstructionProfile::run_and_count_file(path(), "mul_other",
                                                            {Value::from_i64(~0ull), Value::from_i64(~0ull)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->results()[0].i64, r.at(0).i64);
}

// Where the op does not run the body, the call after it does, with the
// body's own outcome: `unreachable` for a resume point other than 0, the
// trap of the first store past the memory's end. The last stack pointer
// whose five words fit runs the op.
TEST(KnownBodies, TheBodyRunsWhereTheOpDoesNot) {
  Fixture f;
  const vm::Module& m = *f.module;
  const uint32_t body = func_named(m, "mul64");
  std::vector<Value> r;
  vm::Trap t = f.call("mul", {Value::from_i64(3), Value::from_i64(5), Value::from_i32(1)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::Unreachable);
  ASSERT_FALSE(t.backtrace.empty());
  EXPECT_EQ(t.backtrace[0].func_index, body);

  // Go's caller stores x and y at its sp and pushes the return address:
  // the body's sp is the caller's minus 8, its results at +24 and +32.
  auto at_end = [&](uint32_t body_sp) {
    std::vector<Value> none;
    EXPECT_FALSE(f.call("sp_set", {Value::from_i32(body_sp + 8)}, none));
    return f.call("mul", {Value::from_i64(~0ull), Value::from_i64(7), Value::from_i32(0)}, r);
  };
  t = at_end(65536 - 40);
  ASSERT_FALSE(t) << "the last five words of the memory";
  EXPECT_EQ(r.at(0).i64, mul128(~0ull, 7).hi);
  EXPECT_EQ(r.at(1).i64, mul128(~0ull, 7).lo);
  t = at_end(65536 - 32);  // x and y in bounds, the low half's store past the end
  EXPECT_EQ(t.code, vm::TrapCode::MemoryOutOfBounds);
  ASSERT_FALSE(t.backtrace.empty());
  EXPECT_EQ(t.backtrace[0].func_index, body);
  ASSERT_GE(t.backtrace[0].offset, 0);
  EXPECT_EQ(m.bytes.at(static_cast<size_t>(t.backtrace[0].offset)), 0x37) << "at an i64.store";
}

// mulAddWWW_g's row has holes (the calls' indices, the return addresses
// it pushes): a body with other values there is known, one calling a
// function that is not Mul64 is not.
TEST(KnownBodies, GoMulAddWWWIsKnownButForItsHoles) {
  Fixture f;
  const vm::Module& m = *f.module;
  const vm::KnownBodyMatch known = m.known_match(func_named(m, "mul_add_www"));
  EXPECT_EQ(known.kind, vm::KnownBody::GoMulAddWWW);
  EXPECT_EQ(known.constant, 1111111111111u) << "the return address it pushes before Mul64";
  EXPECT_EQ(m.known_body(func_named(m, "mul_add_www_other")), vm::KnownBody::None) << "it calls mul64_other";
  EXPECT_EQ(f.ops("maw", vm::IOp::GoMulAddWWW), 1u);
  EXPECT_EQ(f.ops("maw_other", vm::IOp::GoMulAddWWW), 0u);
}

// z1<<64 + z0 = x*y + c, the stack as the body leaves it (scratch words
// below its frame included), plain (one op) and counted (the bodies).
TEST(KnownBodies, GoMulAddWWWLeavesWhatItsBodyLeaves) {
  Fixture f;
  const uint32_t sp = f.sp();
  for (auto [x, y] : kFactors)
    for (uint64_t c : {uint64_t{0}, uint64_t{1}, uint64_t{~0ull}, uint64_t{0x8000000000000000ull}}) {
      const std::vector<Value> args = {Value::from_i64(x), Value::from_i64(y), Value::from_i64(c),
                                       Value::from_i32(0)};
      std::vector<Value> r;
      ASSERT_FALSE(f.call("maw", args, r));
      const unsigned __int128 want = static_cast<unsigned __int128>(x) * y + c;
      EXPECT_EQ(r.at(0).i64, static_cast<uint64_t>(want >> 64)) << x << " * " << y << " + " << c;
      EXPECT_EQ(r.at(1).i64, static_cast<uint64_t>(want)) << x << " * " << y << " + " << c;
      EXPECT_EQ(r.at(2).i32, 0u);
      EXPECT_EQ(r.at(3).i32, sp);
      const Product p = mul128(x, y);
      EXPECT_EQ(r.at(4).i64, 1111111111111u);
      EXPECT_EQ(r.at(5).i64, x);
      EXPECT_EQ(r.at(6).i64, y);
      EXPECT_EQ(r.at(7).i64, p.hi);
      EXPECT_EQ(r.at(8).i64, p.lo);
      auto counted = profiler::InstructionProfile::run_and_count_file(path(), "maw", args);
      ASSERT_TRUE(counted) << counted.error().to_string();
      ASSERT_EQ(counted->results().size(), r.size());
      for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(counted->results()[i].i64, r[i].i64) << "result " << i;
      EXPECT_GT(counted->count("mul_add_www"), 40u);
    }
  EXPECT_EQ(f.sp(), sp);
}

// The body runs where the op does not: a stack at its guard calls morestack
// (which here counts and unwinds), and a resume point past the table's
// targets reaches `unreachable`.
TEST(KnownBodies, GoMulAddWWWsBodyRunsWhereTheOpDoesNot) {
  Fixture f;
  std::vector<Value> r, none;
  const uint32_t sp = f.sp();
  ASSERT_FALSE(f.call("guard_set", {Value::from_i32(sp - 8)}, none));  // the body's sp0: at the guard
  ASSERT_FALSE(
      f.call("maw", {Value::from_i64(2), Value::from_i64(3), Value::from_i64(4), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(2).i32, 1u) << "unwinding from morestack";
  ASSERT_FALSE(f.call("morestack_calls", {}, r));
  EXPECT_EQ(r.at(0).i32, 1u);
  ASSERT_FALSE(f.call("guard_set", {Value::from_i32(sp - 9)}, none));  // just below it: the op
  ASSERT_FALSE(f.call("sp_set", {Value::from_i32(sp)}, none));
  ASSERT_FALSE(
      f.call("maw", {Value::from_i64(2), Value::from_i64(3), Value::from_i64(4), Value::from_i32(0)}, r));
  EXPECT_EQ(r.at(1).i64, 10u);
  ASSERT_FALSE(f.call("morestack_calls", {}, r));
  EXPECT_EQ(r.at(0).i32, 1u) << "no second call";
  vm::Trap t =
      f.call("maw", {Value::from_i64(2), Value::from_i64(3), Value::from_i64(4), Value::from_i32(10)}, r);
  EXPECT_EQ(t.code, vm::TrapCode::Unreachable);
  ASSERT_FALSE(t.backtrace.empty());
  EXPECT_EQ(t.backtrace[0].func_index, func_named(*f.module, "mul_add_www"));
}

// addMulVVW_g's and mulAddVWW_g's rows: a {MulAddWWW} hole, whose callee's
// return address the match keeps too.
TEST(KnownBodies, GoSliceLoopsAreKnown) {
  Fixture f;
  const vm::Module& m = *f.module;
  const vm::KnownBodyMatch known = m.known_match(func_named(m, "add_mul_vvw"));
  EXPECT_EQ(known.kind, vm::KnownBody::GoAddMulVVW);
  EXPECT_EQ(known.constant, 2222222222222u);
  EXPECT_EQ(known.callee_constant, 1111111111111u);
  EXPECT_EQ(f.ops("amv", vm::IOp::GoAddMulVVW), 1u);
  const vm::KnownBodyMatch vww = m.known_match(func_named(m, "mul_add_vww"));
  EXPECT_EQ(vww.kind, vm::KnownBody::GoMulAddVWW);
  EXPECT_EQ(vww.constant, 3333333333333u);
  EXPECT_EQ(vww.callee_constant, 1111111111111u);
  EXPECT_EQ(f.ops("mav", vm::IOp::GoMulAddVWW), 1u);
}

// math/big's two slice loops, each called through the test's export
// `guard_set_and_<name>` (the goroutine's stack guard set, then z and x
// filled from a seed and the loop called as Go calls it, with the loop's
// word arguments after the slices): plain (one op where it applies, the
// body where it does not) and counted (the bodies) must leave the same c,
// result, stack pointer, z and stack words (hashed), for empty, short and
// unequal slices, slices that overlap each other (the body's order: x[i] and
// z[i] read, z[i] written), slices over the stack, a stack at a guard and
// slices past the memory's end. `callee_below`: how far below the loop's
// sp0 its callee mulAddWWW_g's sp0 is, whose stack check the op makes too.
void expect_slice_loop(const std::string& name, std::vector<Value> words, uint32_t callee_below) {
  struct Case {
    const char* what;
    uint32_t zp;
    int64_t lenz;
    uint32_t xp;
    int64_t lenx;
    uint32_t guard;  // the goroutine's stack guard (0: far below)
    bool op_runs;
  };
  Fixture probe;
  const uint32_t sp = probe.sp(), sp0 = sp - 8;  // the export pushes the return address
  const std::vector<Case> cases = {
      {"empty z", 8192, 0, 16384, 5, 0, true},
      {"negative length", 8192, -3, 16384, 5, 0, true},
      {"one word", 8192, 1, 16384, 1, 0, true},
      {"shorter x", 8192, 9, 16384, 4, 0, true},
      {"shorter z", 8192, 4, 16384, 9, 0, true},
      {"long", 8192, 500, 16384, 500, 0, true},
      {"z is x", 8192, 40, 8192, 40, 0, true},
      {"x one word past z", 8192, 40, 8200, 40, 0, true},
      {"z one word past x", 8200, 40, 8192, 40, 0, true},
      {"z over the stack", sp0 - 200, 40, 16384, 40, 0, false},
      {"x over the arguments", 16384, 4, sp0 + 16, 4, 0, false},
      {"at the callee's guard", 8192, 4, 16384, 4, sp0 - callee_below, false},
      {"at its own guard", 8192, 4, 16384, 4, sp0, false},
      {"past the memory", 65536 - 64, 9, 16384, 9, 0, false},
  };
  const std::string entry = "guard_set_and_" + name;
  auto args_of = [&](const Case& c, uint64_t y) {
    std::vector<Value> a = {Value::from_i32(c.guard), Value::from_i32(c.zp),   Value::from_i64(c.lenz),
                            Value::from_i32(c.xp),    Value::from_i64(c.lenx), Value::from_i64(y)};
    a.insert(a.end(), words.begin(), words.end());
    a.push_back(Value::from_i64(42));  // the seed
    a.push_back(Value::from_i32(0));   // the resume point
    return a;
  };
  for (const Case& c : cases) {
    for (uint64_t y : {uint64_t{0}, uint64_t{3}, uint64_t{~0ull}, uint64_t{0x9e3779b97f4a7c15ull}}) {
      const std::vector<Value> args = args_of(c, y);
      Fixture f;
      std::vector<Value> r;
      const vm::Trap t = f.call(entry.c_str(), args, r);
      auto counted = profiler::InstructionProfile::run_and_count_file(path(), entry, args);
      ASSERT_TRUE(counted) << counted.error().to_string();
      EXPECT_EQ(counted->trap().code, t.code) << name << ": " << c.what;
      if (t) continue;
      ASSERT_EQ(counted->results().size(), r.size()) << c.what;
      for (size_t i = 0; i < r.size(); ++i)
        EXPECT_EQ(counted->results()[i].i64, r[i].i64)
            << name << ": " << c.what << ", y " << y << ", result " << i;
      if (c.guard == 0) EXPECT_EQ(r.at(2).i32, sp) << c.what << ": its frame and return address popped";
      std::vector<Value> calls;
      ASSERT_FALSE(f.call("morestack_calls", {}, calls));
      if (c.op_runs) {
        EXPECT_EQ(r.at(1).i32, 0u) << c.what;
        EXPECT_EQ(calls.at(0).i32, 0u) << c.what;
      }
    }
  }
  // The op ran where the cases say: with room for the export's two frames
  // alone, a call of the body exhausts the stack (the slices past the
  // memory's end trap in the filling, before it).
  vm::StoreLimits two_frames;
  two_frames.max_call_depth = 2;
  for (const Case& c : cases) {
    Fixture shallow({}, two_frames);
    std::vector<Value> r;
    const vm::Trap t = shallow.call(entry.c_str(), args_of(c, 3), r);
    EXPECT_EQ(t.code, c.op_runs                                  ? vm::TrapCode::None
                      : std::string(c.what) == "past the memory" ? vm::TrapCode::MemoryOutOfBounds
                                                                 : vm::TrapCode::StackExhausted)
        << name << ": " << c.what;
  }
  // At the callee's guard the body unwinds from morestack (its result 1),
  // which the op, checking that guard too, left to it.
  Fixture f;
  std::vector<Value> r;
  ASSERT_FALSE(f.call(entry.c_str(), args_of(cases.at(11), 3), r));
  EXPECT_EQ(r.at(1).i32, 1u);
  ASSERT_FALSE(f.call("morestack_calls", {}, r));
  EXPECT_EQ(r.at(0).i32, 1u);
}

// c = z += x*y (addMulVVW_g)
TEST(KnownBodies, GoAddMulVVWLeavesWhatItsBodyLeaves) { expect_slice_loop("amv", {}, 72); }

// c = z = x*y + r (mulAddVWW_g), with r of each kind
TEST(KnownBodies, GoMulAddVWWLeavesWhatItsBodyLeaves) {
  for (uint64_t r : {uint64_t{0}, uint64_t{5}, uint64_t{~0ull}})
    expect_slice_loop("mav", {Value::from_i64(r)}, 64);
}

// Every Go installed compiles math/bits.Mul64 (and the runtime's copy), and
// every Go from 1.22 math/big's mulAddWWW_g, to a body the VM knows; the
// products are right, plain and counted.
class KnownBodiesGo : public cli_test::CliFixture {};

TEST_F(KnownBodiesGo, EveryGoInstalledHasAKnownMul64) {
  // mul64.go's sums, computed here.
  uint64_t x = 0x9e3779b97f4a7c15ull, y = 1, sum_hi = 0, sum_lo = 0;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    y = y * 6364136223846793005ull + 1442695040888963407ull;
    const Product p = mul128(x, y);
    sum_hi += p.hi;
    sum_lo ^= p.lo;
  }
  // and the big product's own check, and its length: 2000 log2(3) + 1500 log2(7) bits
  const std::string want = std::to_string(sum_hi) + " " + std::to_string(sum_lo) + "\ntrue 7381\n";
  int built = 0;
  for (const char* v : {"1.21", "1.22", "1.23"}) {
    const std::string wasm = cli_test::testdata(std::string("go/mul64-go") + v + ".wasm");
    if (!std::filesystem::exists(wasm)) continue;
    ++built;
    auto m = vm::load_module(read_bytes(wasm));
    ASSERT_TRUE(m) << m.error().to_string();
    for (const char* name : {"math_bits.Mul64", "runtime_internal_math.Mul64"})
      EXPECT_EQ(m.value()->known_body(func_named(*m.value(), name)), vm::KnownBody::GoMul64)
          << "Go " << v << "'s " << name << ": add its body to vm/known_bodies.def";
    // math/big's rows are Go 1.22's and later (1.21's registers differ)
    if (std::string(v) != "1.21")
      for (auto [name, kind] : {std::pair{"math_big.mulAddWWW_g", vm::KnownBody::GoMulAddWWW},
                                std::pair{"math_big.addMulVVW_g", vm::KnownBody::GoAddMulVVW},
                                std::pair{"math_big.mulAddVWW_g", vm::KnownBody::GoMulAddVWW}})
        EXPECT_EQ(m.value()->known_body(func_named(*m.value(), name)), kind)
            << "Go " << v << "'s " << name << ": add its body to vm/known_bodies.def";
    cli_test::Output plain = wzvm("'" + wasm + "'");
    EXPECT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.out, want) << "Go " << v;
    cli_test::Output counted = wzvm("--profile=instructions --profile-out p.pb.gz '" + wasm + "'");
    EXPECT_EQ(counted.status, 0) << counted.err;
    EXPECT_EQ(counted.out, want) << "Go " << v << ", counted";
  }
  if (built == 0) GTEST_SKIP() << "no Go installed (golang-1.23-go from bookworm-backports)";
}

// wasi-libc's memcpy, memmove, memset, memcmp and strlen, and its allocator's
// dlmalloc and dlfree, in a program built here against Debian's wasi-libc
// (testdata/wasi/strings.c), are bodies the VM knows; plain code runs them
// as an op at their entry, counted code all but memmove as a counted op
// after the entry's count (their translations, counting their blocks).
class KnownBodiesLibc : public cli_test::CliFixture {
 protected:
  // wzvm ARGS with and without --no-known-bodies: the same output, status
  // and stderr but for the profile's name, and byte-identical profiles.
  void expect_as_bodies(const std::string& args, const std::string& profile_flags) {
    SCOPED_TRACE(profile_flags + " " + args);
    cli_test::Output ops = wzvm(profile_flags + " --profile-out ops.pb.gz " + args);
    cli_test::Output bodies =
        wzvm("--no-known-bodies " + profile_flags + " --profile-out bodies.pb.gz " + args);
    EXPECT_EQ(ops.status, bodies.status);
    EXPECT_EQ(ops.out, bodies.out);
    if (!profile_flags.empty())
      EXPECT_TRUE(cli_test::slurp(path("ops.pb.gz")) == cli_test::slurp(path("bodies.pb.gz")))
          << "profiles differ";
  }
};

const std::pair<const char*, vm::KnownBody> kLibc[] = {
    {"dlfree", vm::KnownBody::LibcDlfree}, {"dlmalloc", vm::KnownBody::LibcDlmalloc},
    {"memcpy", vm::KnownBody::LibcMemcpy}, {"memmove", vm::KnownBody::LibcMemmove},
    {"memset", vm::KnownBody::LibcMemset}, {"memcmp", vm::KnownBody::LibcMemcmp},
    {"strlen", vm::KnownBody::LibcStrlen}};
const vm::IOp kLibcOps[] = {vm::IOp::LibcDlfree,  vm::IOp::LibcDlmalloc, vm::IOp::LibcMemcpy,
                            vm::IOp::LibcMemmove, vm::IOp::LibcMemset,   vm::IOp::LibcMemcmp,
                            vm::IOp::LibcStrlen};
// In counted code (none for memmove, which calls memcpy: the body's).
const vm::IOp kLibcCountedOps[] = {
    vm::IOp::LibcDlfreeCounted, vm::IOp::LibcDlmallocCounted, vm::IOp::LibcMemcpyCounted, vm::IOp::Count,
    vm::IOp::LibcMemsetCounted, vm::IOp::LibcMemcmpCounted,   vm::IOp::LibcStrlenCounted};

TEST_F(KnownBodiesLibc, WasiLibcStringFunctionsAreKnownByTheirBytes) {
  const std::string wasm = cli_test::testdata("wasi/strings.wasm");
  for (bool counted : {false, true}) {
    vm::LoadOptions options;
    options.count_instructions = counted;
    auto m = vm::load_module(read_bytes(wasm), options);
    ASSERT_TRUE(m) << m.error().to_string();
    const vm::Module& mod = *m.value();
    for (size_t k = 0; k < std::size(kLibc); ++k) {
      const auto [name, kind] = kLibc[k];
      const uint32_t f = func_named(mod, name);
      ASSERT_NE(f, UINT32_MAX) << name;
      EXPECT_EQ(mod.known_body(f), kind)
          << "Debian's wasi-libc " << name << ": add its body to vm/known_bodies.def";
      const std::vector<uint32_t>& code = mod.code[f - mod.num_imported_funcs].code;
      ASSERT_GT(code.size(), 3u) << name;
      // The op at the entry; in counted code after the entry's count.
      if (!counted) EXPECT_EQ(code[0], static_cast<uint32_t>(kLibcOps[k])) << name;
      else if (kLibcCountedOps[k] != vm::IOp::Count)
        EXPECT_EQ(code[3], static_cast<uint32_t>(kLibcCountedOps[k])) << name << ", counted";
      else
        EXPECT_EQ(
            std::find(std::begin(kLibcCountedOps), std::end(kLibcCountedOps), static_cast<vm::IOp>(code[3])),
            std::end(kLibcCountedOps))
            << name << ", counted";
    }
    EXPECT_EQ(mod.known_body(func_named(mod, "main")), vm::KnownBody::None);
    // G, the allocator's state, is the same address in both rows' holes
    const vm::KnownBodyMatch dlfree = mod.known_match(func_named(mod, "dlfree"));
    const vm::KnownBodyMatch dlmalloc = mod.known_match(func_named(mod, "dlmalloc"));
    EXPECT_EQ(dlfree.constant, dlmalloc.constant);
    EXPECT_GT(dlfree.constant, 1024u);
  }
}

// A body one byte away from its row is not taken for it, nor one whose G
// holes disagree.
TEST_F(KnownBodiesLibc, AnAllocatorOneByteAwayIsNotKnown) {
  std::vector<uint8_t> bytes = read_bytes(cli_test::testdata("wasi/strings.wasm"));
  auto m = vm::load_module(bytes);
  ASSERT_TRUE(m) << m.error().to_string();
  const vm::Module& mod = *m.value();
  const uint32_t f = func_named(mod, "dlfree");
  const vm::Function& fn = mod.functions[f - mod.num_imported_funcs];
  // dlfree's first access with an offset reads least_addr at G+16; make it
  // G+20 or G+12 (a valid body still), so that its G disagrees with the others'
  const std::vector<uint8_t> want = {0x28, 0x02};  // i32.load align=2
  size_t at = 0;
  for (size_t i = fn.body_offset; i + 2 < fn.body_end; ++i)
    if (bytes[i] == want[0] && bytes[i + 1] == want[1] && bytes[i + 2] != 0) {
      at = i + 2;
      break;
    }
  ASSERT_NE(at, 0u);
  ASSERT_EQ(bytes[at] & 0x7f, (mod.known_match(f).constant + 16) & 0x7f) << "the row's first G hole";
  bytes[at] = static_cast<uint8_t>((bytes[at] & 0x7f) <= 0x7b ? bytes[at] + 4 : bytes[at] - 4);
  auto changed = vm::load_module(bytes);
  ASSERT_TRUE(changed) << changed.error().to_string();
  EXPECT_EQ(changed.value()->known_body(f), vm::KnownBody::None);
  EXPECT_EQ(changed.value()->known_body(func_named(mod, "dlmalloc")), vm::KnownBody::LibcDlmalloc);
}

// The ops leave what the bodies leave: 40,000 calls with every alignment,
// overlapping ranges and ranges ending at memory's last byte hash the same
// plain and counted as with --no-known-bodies (the bodies), and counted runs
// count what the bodies count, byte for byte; where a range leaves memory,
// the op leaves the call to its body, which traps where it always did.
TEST_F(KnownBodiesLibc, WasiLibcStringFunctionsLeaveWhatTheirBodiesLeave) {
  const std::string wasm = "'" + cli_test::testdata("wasi/strings.wasm") + "'";
  cli_test::Output plain = wzvm(wasm);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(std::count(plain.out.begin(), plain.out.end(), '\n'), 78) << plain.out;
  expect_as_bodies(wasm, "");
  expect_as_bodies(wasm, "--profile=instructions");
  for (const char* what : {"strlen", "memcpy", "memset", "memcmp"}) {
    const std::string mode = std::string(what) + "-end";
    cli_test::Output p = wzvm(wasm + " " + mode),
                     c = wzvm("--profile=instructions --profile-out q.pb.gz " + wasm + " " + mode);
    EXPECT_NE(p.status, 0) << mode;
    EXPECT_EQ(p.status, c.status) << mode;
    EXPECT_EQ(p.out, "") << mode;
    EXPECT_NE(p.err.find("out of bounds memory access\n  at 0: " + std::string(what) + " "),
              std::string::npos)
        << mode << ": " << p.err;
    EXPECT_NE(c.err.find("out of bounds memory access\n  at 0: " + std::string(what) + " "),
              std::string::npos)
        << mode << ", counted: " << c.err;
    expect_as_bodies(wasm + " " + mode, "--profile=instructions");
  }
}

// The allocator's translation leaves what its bodies leave: 60,000 mallocs,
// callocs, reallocs and frees of every size class, every returned address
// and the heap's bytes hashed, plain and counted (translated) as with
// --no-known-bodies, counting alike; a free the translation cannot finish
// (its chunk runs out of memory) is the body's, with its trap in dlfree.
TEST_F(KnownBodiesLibc, WasiLibcAllocatorLeavesWhatItsBodiesLeave) {
  const std::string wasm = "'" + cli_test::testdata("wasi/allocs.wasm") + "'";
  cli_test::Output plain = wzvm(wasm);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(std::count(plain.out.begin(), plain.out.end(), '\n'), 61) << plain.out;
  expect_as_bodies(wasm, "");
  expect_as_bodies(wasm, "--profile=instructions");
  expect_as_bodies(wasm + " corrupt", "--profile=instructions");
  cli_test::Output p = wzvm(wasm + " corrupt"),
                   c = wzvm("--profile=instructions --profile-out q.pb.gz " + wasm + " corrupt");
  EXPECT_NE(p.status, 0);
  EXPECT_EQ(p.status, c.status);
  EXPECT_EQ(p.out, "");
  EXPECT_NE(p.err.find("out of bounds memory access\n  at 0: dlfree "), std::string::npos) << p.err;
  EXPECT_NE(c.err.find("out of bounds memory access\n  at 0: dlfree "), std::string::npos) << c.err;
}

}  // namespace
}  // namespace wzvm
