// The `wzvm` command end to end: runs the built binary on programs from
// testdata/ and checks stdout, stderr and the exit status. Also unit tests of
// the argument parser and result formatter (cli/values.h).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cli/values.h"
#include "cli_fixture.h"

namespace wzvm::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using vm::ValType;
using vm::Value;

using CliRun = cli_test::Output;
using cli_test::testdata;

CliRun wzvm(const std::string& args) { return cli_test::run_wzvm(::testing::TempDir(), args); }

std::string invoke(const std::string& func, const std::string& args = "") {
  return "--invoke " + func + " '" + testdata("cli.wasm") + "' " + args;
}

TEST(Cli, Version) {
  CliRun r = wzvm("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "wzvm 0.1.0\n");
}

TEST(Cli, Help) {
  CliRun r = wzvm("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("--invoke"));
}

TEST(Cli, UsageErrors) {
  EXPECT_EQ(wzvm("").status, 2);
  EXPECT_EQ(wzvm("--no-such-flag x.wasm").status, 2);
  EXPECT_EQ(wzvm("--invoke").status, 2);
}

TEST(Cli, InvokePrintsResults) {
  CliRun r = wzvm(invoke("add", "2 40"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "42\n");
  EXPECT_EQ(r.err, "");

  EXPECT_EQ(wzvm(invoke("add", "0x7fffffff 1")).out, "-2147483648\n");  // i32 printed signed
  EXPECT_EQ(wzvm(invoke("add", "-5 2")).out, "-3\n");
  EXPECT_EQ(wzvm(invoke("add", "4294967295 0")).out, "-1\n");
  EXPECT_EQ(wzvm(invoke("neg_i64", "-9223372036854775807")).out, "9223372036854775807\n");
  EXPECT_EQ(wzvm(invoke("neg_i64", "1")).out, "-1\n");
  EXPECT_EQ(wzvm(invoke("id_f32", "0.1")).out, "0.1\n");
  EXPECT_EQ(wzvm(invoke("id_f64", "0.1")).out, "0.1\n");
  EXPECT_EQ(wzvm(invoke("id_f64", "-inf")).out, "-inf\n");
  EXPECT_EQ(wzvm(invoke("id_f64", "nan:0x1")).out, "nan:0x1\n");
  EXPECT_EQ(wzvm(invoke("id_f32", "-nan")).out, "-nan\n");
  EXPECT_EQ(wzvm(invoke("id_f64", "0x1.8p1")).out, "3\n");
  EXPECT_EQ(wzvm(invoke("pair")).out, "-1\n0.1\n");
  EXPECT_EQ(wzvm(invoke("nulls")).out, "null\nnull\n");
  EXPECT_EQ(wzvm(invoke("none")).out, "");
}

TEST(Cli, BadArguments) {
  CliRun r = wzvm(invoke("add", "1"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, StartsWith("wzvm: error: "));
  EXPECT_THAT(r.err, HasSubstr("takes 2 arguments, got 1"));

  r = wzvm(invoke("add", "1 x"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("'x' is not a valid i32"));

  r = wzvm(invoke("add", "1 4294967296"));
  EXPECT_EQ(r.status, 1);

  r = wzvm(invoke("no_such_export"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("export no_such_export not found"));

  r = wzvm(invoke("mem"));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("not a function"));
}

TEST(Cli, TrapExits134WithBacktrace) {
  CliRun r = wzvm(invoke("trap"));
  EXPECT_EQ(r.status, 134);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith("wzvm: trap: integer divide by zero\n"));
  EXPECT_THAT(r.err, HasSubstr("  at 0: inner (offset 0x"));
  EXPECT_THAT(r.err, HasSubstr("  at 1: outer (offset 0x"));
  EXPECT_THAT(r.err, HasSubstr("  at 2: trap (offset 0x"));

  r = wzvm(invoke("unreachable"));
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, StartsWith("wzvm: trap: unreachable"));
}

TEST(Cli, DeepRecursionTrapsInsteadOfCrashing) {
  CliRun r = wzvm(invoke("recurse"));
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, StartsWith("wzvm: trap: call stack exhausted"));
  EXPECT_THAT(r.err, HasSubstr("frames omitted"));
  EXPECT_LT(std::count(r.err.begin(), r.err.end(), '\n'), 30);
}

TEST(Cli, MalformedModule) {
  std::string path = ::testing::TempDir() + "wzvm_cli_malformed.wasm";
  {
    std::ofstream f(path, std::ios::binary);
    f << std::string("\0asm\x02\0\0\0", 8);  // wrong version
  }
  CliRun r = wzvm("--invoke f '" + path + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, StartsWith("wzvm: error: " + path + ": "));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;

  r = wzvm("--invoke f /no/such/file.wasm");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, StartsWith("wzvm: error: /no/such/file.wasm: "));
}

TEST(Cli, UnknownImport) {
  CliRun r = wzvm(std::string("--invoke f '") + testdata("cli_import.wasm") + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("unknown import env.host_fn"));
}

TEST(Cli, RunsStartWithoutInvoke) {
  CliRun r = wzvm(std::string("'") + testdata("cli_start.wasm") + "' guest-arg --guest-flag");
  EXPECT_EQ(r.status, 0) << r.err;
  // A module without _start: an error that says what to do.
  r = wzvm(std::string("'") + testdata("cli.wasm") + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("_start"));
}

TEST(Cli, Example) {
  CliRun r = wzvm(std::string("--invoke fib '") + testdata("example.wasm") + "' 20");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "6765\n");
  EXPECT_EQ(wzvm(std::string("--invoke count_primes '") + testdata("example.wasm") + "' 1000").out, "168\n");
  EXPECT_EQ(wzvm(std::string("--invoke gcd '") + testdata("example.wasm") + "' 1071 -462").out, "21\n");
  EXPECT_EQ(wzvm(std::string("--invoke sqrt_newton '") + testdata("example.wasm") + "' 2").out,
            "1.414213562373095\n");  // Newton lands one ulp below sqrt(2); node agrees
}

// cli/values.h directly.

std::string fmt(ValType t, const char* text) {
  auto v = parse_value(t, text);
  return v ? format_value(*v) : "<invalid>";
}

TEST(CliValues, Integers) {
  EXPECT_EQ(fmt(ValType::I32, "0"), "0");
  EXPECT_EQ(fmt(ValType::I32, "-2147483648"), "-2147483648");
  EXPECT_EQ(fmt(ValType::I32, "-2147483649"), "<invalid>");
  EXPECT_EQ(fmt(ValType::I32, "0xffffffff"), "-1");
  EXPECT_EQ(fmt(ValType::I32, "0x100000000"), "<invalid>");
  EXPECT_EQ(fmt(ValType::I32, "12a"), "<invalid>");
  EXPECT_EQ(fmt(ValType::I32, ""), "<invalid>");
  EXPECT_EQ(fmt(ValType::I64, "18446744073709551615"), "-1");
  EXPECT_EQ(fmt(ValType::I64, "-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(fmt(ValType::I64, "0x8000000000000000"), "-9223372036854775808");
}

TEST(CliValues, Floats) {
  EXPECT_EQ(fmt(ValType::F32, "0.1"), "0.1");
  EXPECT_EQ(fmt(ValType::F32, "16777217"), "16777216");
  EXPECT_EQ(fmt(ValType::F64, "1e300"), "1e+300");
  EXPECT_EQ(fmt(ValType::F64, "-0"), "-0");
  EXPECT_EQ(fmt(ValType::F64, "inf"), "inf");
  EXPECT_EQ(fmt(ValType::F32, "-inf"), "-inf");
  EXPECT_EQ(fmt(ValType::F32, "nan"), "nan");
  EXPECT_EQ(fmt(ValType::F64, "-nan"), "-nan");
  EXPECT_EQ(fmt(ValType::F32, "nan:0x400000"), "nan");  // the canonical payload
  EXPECT_EQ(fmt(ValType::F32, "nan:0x1"), "nan:0x1");
  EXPECT_EQ(fmt(ValType::F32, "-nan:0x7fffff"), "-nan:0x7fffff");
  EXPECT_EQ(fmt(ValType::F32, "nan:0x800000"), "<invalid>");
  EXPECT_EQ(fmt(ValType::F64, "0x1p-1074"), "5e-324");
  EXPECT_EQ(fmt(ValType::F64, "-0x1.8p1"), "-3");
  EXPECT_EQ(fmt(ValType::F64, "nan(1)"), "<invalid>");
  EXPECT_EQ(fmt(ValType::F64, "1.5x"), "<invalid>");
  // Shortest round trip: every printed double parses back to the same bits.
  for (double d : {0.1, 1.0 / 3, 6.02214076e23, 2.2250738585072014e-308, 123456789.0}) {
    auto v = parse_value(ValType::F64, format_value(Value::from_f64_bits(std::bit_cast<uint64_t>(d))));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->f64, d);
  }
}

TEST(CliValues, VectorsAndRefs) {
  EXPECT_EQ(fmt(ValType::V128, "0x1"), "0x00000000000000000000000000000001");
  EXPECT_EQ(fmt(ValType::V128, "0xff000000000000000000000000000000"), "0xff000000000000000000000000000000");
  EXPECT_EQ(fmt(ValType::FuncRef, "null"), "null");
  EXPECT_EQ(fmt(ValType::FuncRef, "1"), "<invalid>");
  EXPECT_EQ(fmt(ValType::ExternRef, "7"), "ref");
}

}  // namespace
}  // namespace wzvm::cli

namespace wzvm::cli {
namespace {

// Proposal flags (vm/features.def): on by default, --disable-NAME refuses a
// module that uses one, --enable-all turns them back on, and an unknown
// proposal is a usage error.
std::string quoted(const std::string& path) {
  std::string q = "'";
  q.append(path).append("'");
  return q;
}

TEST(CliProposals, EnableDisableFlags) {
  const std::string m = quoted(testdata("proposals_features.wasm"));
  // Its import env.host_inc is not WASI: it links nowhere, so the module gets
  // as far as linking only when its proposals are allowed.
  CliRun r = wzvm("--invoke count_down " + m + " 5");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("unknown import env.host_inc")) << r.err;
  r = wzvm("--disable-tail-call --invoke count_down " + m + " 5");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("illegal opcode")) << r.err;
  r = wzvm("--disable-multi-memory --invoke count_down " + m + " 5");
  EXPECT_THAT(r.err, HasSubstr("multiple memories")) << r.err;
  r = wzvm("--enable-all --disable-tail-call --invoke count_down " + m + " 5");
  EXPECT_THAT(r.err, HasSubstr("illegal opcode")) << r.err;

  const std::string eh = quoted(testdata("proposals_eh.wasm"));
  r = wzvm("--invoke f " + eh + " 7");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "107\n");
  r = wzvm("--invoke uncaught " + eh);
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, HasSubstr("wzvm: trap: uncaught exception")) << r.err;
  r = wzvm("--disable-exception-handling --invoke f " + eh + " 7");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("malformed section id")) << r.err;

  r = wzvm("--enable-threads --invoke f " + eh + " 7");
  EXPECT_EQ(r.status, 0) << r.err;
  r = wzvm("--enable-nosuch --invoke f " + eh + " 7");
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(wzvm("--help").out, HasSubstr("--enable-tail-call"));
}

}  // namespace
}  // namespace wzvm::cli
