// Instruction counts as test assertions, against an installed wzvm:
// profiler/testing.h's EXPECT_INSTRUCTIONS on a function's exact count.
//
//   WZVM_EXAMPLE_WASM=path/to/example.wasm WZVM_EXPECT_FIB22=N ./count_test
//
// example.wasm exports fib(n) (testdata/example.c in wzvm's repository); N is
// fib's self count for fib(22) as `wzvm --profile=instructions --profile-text
// --invoke fib example.wasm 22` prints it. A project records such a number
// once and the test fails when the code's cost moves beyond the tolerance.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "profiler/instruction_profile.h"
#include "profiler/testing.h"

using wzvm::profiler::InstructionProfile;
using wzvm::vm::Value;

namespace {

std::string module() {
  const char* p = std::getenv("WZVM_EXAMPLE_WASM");
  return p ? p : "example.wasm";
}

TEST(Counts, FibMatchesTheRecordedCount) {
  const char* recorded = std::getenv("WZVM_EXPECT_FIB22");
  ASSERT_NE(recorded, nullptr) << "set WZVM_EXPECT_FIB22";
  const uint64_t expected = std::strtoull(recorded, nullptr, 10);
  auto p = InstructionProfile::run_and_count_file(module(), "fib", {Value::from_i32(22)});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_INSTRUCTIONS(*p, "fib", expected, 0);                     // exactly
  EXPECT_TOTAL_INSTRUCTIONS(*p, expected, 0);                      // fib is all the run does
  EXPECT_INSTRUCTIONS(*p, "fib", expected + expected / 200, 1.0);  // 0.5% off, 1% allowed
  EXPECT_FALSE(
      wzvm::profiler::testing::instructions_near(*p, "fib", expected + expected / 50, 1.0));  // 2% off
}

}  // namespace
