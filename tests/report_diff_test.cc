// Instruction counts as a CI gate: `wzvm report --diff BASE NEW` with
// --fail-above and --function, `--format=benchmark-json` read by Google
// Benchmark's own compare.py, and the GoogleTest assertions of
// profiler/testing.h.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "profiler/instruction_profile.h"
#include "profiler/testing.h"
#include "tests/cli_fixture.h"

namespace wzvm {
namespace {

using cli_test::CliFixture;
using cli_test::Output;
using cli_test::testdata;

class ReportDiff : public CliFixture {
 protected:
  // An instruction profile of the example's `demo N` (fib(N), then
  // count_primes, gcd and sqrt_newton on inputs that grow with N) written to
  // `name`; returns its total, and its self counts in `counts`.
  uint64_t profile(const std::string& name, int n, std::map<std::string, uint64_t>* counts = nullptr) {
    Output r = wzvm("--profile=instructions --profile-out " + name + " --invoke demo '" +
                    testdata("example.wasm") + "' " + std::to_string(n));
    EXPECT_EQ(r.status, 0) << r.err;
    auto p = profiler::InstructionProfile::run_and_count_file(
        testdata("example.wasm"), "demo", {vm::Value::from_i32(static_cast<uint32_t>(n))});
    EXPECT_TRUE(p) << p.error().to_string();
    if (p && counts) *counts = p->counts();
    return p ? p->total() : 0;
  }
  // `wzvm ARGS`, its stdout written to `file` in the test's directory.
  void wzvm_to(const std::string& args, const std::string& file) {
    Output r = wzvm(args);
    ASSERT_EQ(r.status, 0) << r.err;
    std::ofstream(path(file)) << r.out;
  }
};

TEST_F(ReportDiff, TotalsAndFunctionsThatChanged) {
  std::map<std::string, uint64_t> cb, cn;
  const uint64_t base = profile("base.pb.gz", 10, &cb), now = profile("new.pb.gz", 12, &cn);
  ASSERT_GT(now, base);
  Output r = wzvm("report --diff base.pb.gz new.pb.gz");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Sample type: instructions/count"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Total: " + std::to_string(base) + " -> " + std::to_string(now) + "  +" +
                       std::to_string(now - base)),
            std::string::npos)
      << r.out;
  // Every function's self counts, base then new, exactly as counted; the
  // largest change (count_primes') first, the smallest (fib's) last.
  std::string previous_row;
  size_t last = 0;
  for (const std::string fn : {"count_primes", "gcd", "sqrt_newton", "demo", "fib"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex(" +([0-9]+) +([0-9]+) +\\+([0-9]+) .*  " + fn + "\n")))
        << fn << "\n"
        << r.out;
    EXPECT_EQ(m[1].str(), std::to_string(cb.at(fn))) << fn;
    EXPECT_EQ(m[2].str(), std::to_string(cn.at(fn))) << fn;
    EXPECT_GT(static_cast<size_t>(m.position(0)), last) << fn << " out of order:\n" << r.out;
    last = static_cast<size_t>(m.position(0));
  }
  // The same profile twice: nothing changed, and a gate of 0% passes.
  r = wzvm("report --diff base.pb.gz base.pb.gz --fail-above 0");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("No function changed."), std::string::npos) << r.out;
}

TEST_F(ReportDiff, GateFailsWhenTheTotalOrANamedFunctionGrew) {
  const uint64_t base = profile("base.pb.gz", 10), now = profile("new.pb.gz", 12);
  const double grew = 100.0 * static_cast<double>(now - base) / static_cast<double>(base);
  // Above the growth: passes; below it: fails, naming the total.
  Output r = wzvm("report --diff base.pb.gz new.pb.gz --fail-above " + std::to_string(grew + 1));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = wzvm("report --diff base.pb.gz new.pb.gz --fail-above " + std::to_string(grew - 1));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL  total"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("total grew"), std::string::npos) << r.err;
  // A function gated on its own: fib (cumulative) grew 2.6x, so 100% fails
  // where the total (+21%) passes.
  r = wzvm("report --diff base.pb.gz new.pb.gz --fail-above 100 --function fib");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL  fib (cumulative)"), std::string::npos) << r.out;
  // A shrink never fails; a function in neither profile does (a typo must not pass).
  r = wzvm("report --diff new.pb.gz base.pb.gz --fail-above 0 --function fib");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = wzvm("report --diff base.pb.gz new.pb.gz --fail-above 1000 --function no_such_function");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("no_such_function: in neither profile"), std::string::npos) << r.out;
  // Usage: --fail-above needs --diff; --diff needs two files.
  EXPECT_EQ(wzvm("report base.pb.gz --fail-above 5").status, 2);
  EXPECT_EQ(wzvm("report --diff base.pb.gz").status, 2);
  r = wzvm("report --diff base.pb.gz missing.pb.gz");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("missing.pb.gz"), std::string::npos) << r.err;
}

TEST_F(ReportDiff, BenchmarkJsonIsReadByGoogleBenchmarksCompare) {
  const uint64_t base = profile("base.pb.gz", 10), now = profile("new.pb.gz", 12);
  wzvm_to("report --format=benchmark-json base.pb.gz", "base.json");
  wzvm_to("report --format=benchmark-json new.pb.gz", "new.json");
  auto j = nlohmann::json::parse(cli_test::slurp(path("new.json")));
  EXPECT_EQ(j["context"]["wzvm_sample_type"], "instructions/count");
  bool total = false, fib = false;
  for (const auto& b : j["benchmarks"]) {
    if (b["name"] == "(total)") {
      total = true;
      EXPECT_EQ(b["real_time"].get<uint64_t>(), now);
    }
    if (b["name"] == "fib") fib = b["cum"].get<int64_t>() > 0 && b["cpu_time"] == b["cum"];
  }
  EXPECT_TRUE(total && fib) << j.dump(2);

  const std::string compare = "/usr/share/benchmark/compare.py";
  if (!std::ifstream(compare))
    GTEST_SKIP() << compare << " not found: install libbenchmark-tools python3-scipy";
  // Debian's python3, where python3-scipy (compare.py needs it) is installed.
  Output r = sh("/usr/bin/python3 " + compare + " benchmarks base.json new.json");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // compare.py's row: name, time change, cpu change as fractions, then the values.
  const double want = (static_cast<double>(now) - static_cast<double>(base)) / static_cast<double>(base);
  std::istringstream in(r.out);
  std::string line;
  bool seen = false;
  while (std::getline(in, line)) {
    std::string plain = std::regex_replace(line, std::regex("\x1b\\[[0-9;]*m"), "");
    std::istringstream f(plain);
    std::string name;
    double time_change = 0, cpu_change = 0;
    if (!(f >> name >> time_change >> cpu_change) || name != "(total)") continue;
    EXPECT_NEAR(cpu_change, want, 0.0001) << plain;
    seen = true;
  }
  EXPECT_TRUE(seen) << r.out;
}

TEST(InstructionAssertions, PassWithinToleranceAndExplainFailures) {
  auto p = profiler::InstructionProfile::run_and_count_file(testdata("example.wasm"), "fib",
                                                            {vm::Value::from_i32(10)});
  ASSERT_TRUE(p) << p.error().to_string();
  const uint64_t fib = p->count("fib");
  ASSERT_GT(fib, 0u);
  EXPECT_INSTRUCTIONS(*p, "fib", fib, 0);
  EXPECT_INSTRUCTIONS(*p, "fib", fib + fib / 100, 1.5);
  EXPECT_TOTAL_INSTRUCTIONS(*p, p->total(), 0);
  // Outside the tolerance: a failure saying by how much, with the top functions.
  ::testing::AssertionResult r = profiler::testing::instructions_near(*p, "fib", fib * 2, 10);
  EXPECT_FALSE(r);
  const std::string why = r.message();
  EXPECT_NE(why.find("fib: " + std::to_string(fib) + " instructions, expected " + std::to_string(fib * 2)),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("-50.00%"), std::string::npos) << why;
  EXPECT_NE(why.find("top functions by self count"), std::string::npos) << why;
  r = profiler::testing::instructions_near(*p, "no_such_function", 1, 0);
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("did not run"), std::string::npos);
}

}  // namespace
}  // namespace wzvm
