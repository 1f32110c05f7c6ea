// Source-level profiles end to end: runs the built wzvm with --profile on the
// DWARF test programs (testdata/dwarf/) and reads the profiles with the real
// client, `go tool pprof` (-lines, -list, -raw), as a user would. Lines are
// those the test sources mark in their comments.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_fixture.h"

namespace wzvm::profiler {
namespace {

namespace fs = std::filesystem;
using namespace wzvm::cli_test;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

std::string program(const std::string& name) { return std::string(WZVM_TESTDATA_DIR) + "/dwarf/" + name; }
std::string source(const std::string& name) {
  return std::string(WZVM_SOURCE_DIR) + "/testdata/dwarf/" + name;
}

class SourceProfile : public CliFixture {
 protected:
  // Profiles `prog` (with `args`) into the test directory; returns wzvm's stderr.
  std::string run(const std::string& kinds, const std::string& prog, const std::string& args) {
    Output r = wzvm("--profile=" + kinds + " --profile-out=. '" + prog + "' " + args);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.err;
  }
};

// `go tool pprof -list` of a CPU profile: flat time (ns) per source line,
// from rows like "   20.83ms    41.30ms     20:  for (...)" ("." is none).
std::map<int, double> list_flat_ns(const std::string& list) {
  std::map<int, double> out;
  std::istringstream in(list);
  std::string line;
  std::regex row(R"(^ *(\.|([0-9.]+)(s|ms|us|ns)) +\S+ +(\d+):)");
  for (std::smatch m; std::getline(in, line);) {
    if (!std::regex_search(line, m, row)) continue;
    double v = 0;
    if (m[2].matched) {
      const std::string unit = m[3];
      v = std::stod(m[2]) * (unit == "s" ? 1e9 : unit == "ms" ? 1e6 : unit == "us" ? 1e3 : 1);
    }
    out[std::stoi(m[4])] += v;
  }
  return out;
}

#define SKIP_UNLESS_BUILT(path) \
  if (!fs::exists(path)) GTEST_SKIP() << path << " not built (toolchain missing)"

TEST_F(SourceProfile, CpuProfileHasLinesAndInlinedFramesInnermostFirst) {
  SKIP_UNLESS_BUILT(program("inline.wasm"));
  // ~0.2 s of work split between hash() and the inlined sum_squares(), at
  // 1 kHz: the line shares below are counts of samples (the default 100 Hz
  // gives a dozen).
  std::string err = run("cpu --cpu-hz 1000", program("inline.wasm"), "60000");
  EXPECT_THAT(err, Not(HasSubstr("wzvm: note:")));  // built with -g: no note
  const std::string c = source("inline.c");

  // A sample is taken before whichever instruction is next when the timer
  // fires, so its line is the one running: hash's loop is lines 20-21;
  // sum_squares's (inlined into work at line 39) is line 32.
  std::string lines = pprof("-lines -top wzvm-cpu.pb.gz");
  EXPECT_THAT(lines, HasSubstr("hash " + c + ":21"));
  EXPECT_THAT(lines, HasSubstr("sum_squares " + c + ":32 (inline)"));
  EXPECT_THAT(lines, HasSubstr("work " + c + ":39"));

  // The inlined location lists sum_squares first, then work at the call.
  std::string raw = pprof("-raw wzvm-cpu.pb.gz");
  EXPECT_THAT(raw, ContainsRegex("sum_squares " + c + ":32 s=30\n +work " + c + ":39 s=36\n"));

  // Callers are at their call's line: hash's samples are under work at
  // line 40 (its call of hash), under main at line 51 (its call of work).
  EXPECT_THAT(pprof("-traces -lines wzvm-cpu.pb.gz"),
              ContainsRegex("hash " + c + ":21\n +work " + c + ":40\n +main " + c + ":51\n"));
  EXPECT_THAT(raw, ContainsRegex("inline\\.wasm +\\[FN\\]\\[FL\\]\\[LN\\]\\[IN\\]"));

  // -list shows the source with the time at hash's loop: nearly all of
  // hash's own time is on its lines 20-21, little on its return (line 22,
  // once per call) or entry.
  std::string list = pprof("-list '^hash$' wzvm-cpu.pb.gz");
  EXPECT_THAT(list, HasSubstr("ROUTINE ======================== hash in " + c));
  EXPECT_THAT(list, ContainsRegex("[0-9.]+[mu]?s +[0-9.]+[mu]?s +21:    h = mix\\(h, p\\[i\\]\\);"));
  std::map<int, double> flat = list_flat_ns(list);
  double all = 0;
  for (const auto& [line, ns] : flat) all += ns;
  EXPECT_GT(flat[21], flat[22]) << list;
  EXPECT_GE(flat[20] + flat[21], 0.8 * all) << list;
}

// `go tool pprof -lines -top`: flat and cum per "function file:line" (inlined
// frames keep pprof's " (inline)" suffix in the key).
std::map<std::string, std::pair<int64_t, int64_t>> per_line(const std::string& top) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  std::istringstream in(top);
  std::string line;
  std::regex row(R"(^ *(\d+) +[0-9.]+% +[0-9.]+% +(\d+) +[0-9.]+% +(.+)$)");
  for (std::smatch m; std::getline(in, line);)
    if (std::regex_match(line, m, row)) out[m[3]] = {std::stoll(m[1]), std::stoll(m[2])};
  return out;
}

// Instruction counts are exact per instruction, so per line. What the source
// says without reading the compiler's output: a line inside a loop that runs
// n times (or in a function called n times) executes a fixed number of wasm
// instructions per iteration, so its count is affine in n: c(n) = a*n + b with
// a > 0. Three runs check exactly that, line by line, and -list puts the
// counts on those lines.
TEST_F(SourceProfile, InstructionsProfileCountsEveryLine) {
  SKIP_UNLESS_BUILT(program("geometry.wasm"));
  const std::string cc = source("geometry.cc");
  std::vector<std::map<std::string, std::pair<int64_t, int64_t>>> runs;
  for (const char* n : {"100", "200", "300"}) {
    run("instructions", program("geometry.wasm"), n);
    runs.push_back(per_line(pprof("-lines -top -nodecount=1000 wzvm-instructions.pb.gz")));
  }
  // The loop body (lines 36-39), dot's one line inlined into both norm2s
  // (17), and norm2(int)'s call of it (23, cumulative: its instructions are
  // dot's).
  for (const std::string& key : std::vector<std::string>{
           "main " + cc + ":36", "main " + cc + ":37", "main " + cc + ":38", "main " + cc + ":39",
           "geo::Vec<int>::dot(geo::Vec<int> const&) const " + cc + ":17 (inline)",
           "geo::Vec<double>::dot(geo::Vec<double> const&) const " + cc + ":17 (inline)"}) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(runs[0].count(key) && runs[1].count(key) && runs[2].count(key));
    int64_t c1 = runs[0][key].first, c2 = runs[1][key].first, c3 = runs[2][key].first;
    EXPECT_GT(c2, c1);
    EXPECT_EQ(c3 - c2, c2 - c1);  // exactly affine in n
  }
  // dot is called once per iteration through a noinline norm2: its count is
  // exactly a multiple of n, and all of norm2's work is dot's.
  const std::string dot = "geo::Vec<int>::dot(geo::Vec<int> const&) const " + cc + ":17 (inline)";
  EXPECT_EQ(runs[0][dot].first % 100, 0);
  EXPECT_EQ(runs[2][dot].first, 3 * runs[0][dot].first);
  EXPECT_EQ(runs[0]["geo::norm2(geo::Vec<int> const&) " + cc + ":23"].second, runs[0][dot].first);
  // Line 41 (the printf after the loop) runs once: the same count every
  // time. Its cumulative count has printf's instructions too (main's frame
  // is at the call), which depend on the numbers printed.
  const std::string after = "main " + cc + ":41";
  if (runs[0].count(after)) {
    EXPECT_EQ(runs[0][after].first, runs[2][after].first);
    EXPECT_GT(runs[0][after].second, runs[0][after].first);
  }
  // Callers are at their call's line: main's lines 38 and 39 (the calls of
  // the two norm2s) carry, cumulatively, each norm2's instructions, and
  // nothing of the other's.
  for (const auto& [line, callee] : std::vector<std::pair<std::string, std::string>>{
           {"38", "geo::norm2(geo::Vec<int> const&)"}, {"39", "geo::norm2(geo::Vec<double> const&)"}}) {
    SCOPED_TRACE(line);
    auto by_func = pprof_top_rows(pprof("-top -nodecount=1000 wzvm-instructions.pb.gz"));
    ASSERT_TRUE(by_func.count(callee));
    const auto& at = runs[2]["main " + cc + ":" + line];
    EXPECT_EQ(at.second - at.first, static_cast<int64_t>(by_func[callee].second));
  }

  std::string list = pprof("-list 'norm2.*int' wzvm-instructions.pb.gz");
  EXPECT_THAT(list, HasSubstr("ROUTINE ======================== geo::norm2(geo::Vec<int> const&) in " + cc));
  EXPECT_THAT(list,
              ContainsRegex("\\. +" + std::to_string(runs[2][dot].first) + " +23:  return v.dot\\(v\\);"));
  EXPECT_THAT(list, ContainsRegex("\\. +\\. +22:__attribute__"));
  std::string main_list = pprof("-list '^main$' wzvm-instructions.pb.gz");
  EXPECT_THAT(main_list, ContainsRegex(std::to_string(runs[2]["main " + cc + ":36"].first) +
                                       " +[0-9]+ +36:    geo::Vec<int> v"));
}

TEST_F(SourceProfile, RustNamesDemangledWithLines) {
  SKIP_UNLESS_BUILT(program("hashing-v0.wasm"));
  const std::string rs = source("hashing.rs");
  std::vector<std::map<std::string, std::pair<int64_t, int64_t>>> runs;
  for (const char* n : {"1000", "2000", "3000"}) {
    run("instructions", program("hashing-v0.wasm"), n);
    runs.push_back(per_line(pprof("-lines -top -nodecount=1000 wzvm-instructions.pb.gz")));
  }
  // step (line 11) is inlined into hash's loop at line 19 and runs once per
  // element: exactly affine in n, and hash's line 19 carries it cumulatively.
  const std::string step = "hashing::step " + rs + ":11 (inline)";
  const std::string call = "hashing::fnv::hash " + rs + ":19";
  for (const std::string& key : {step, call}) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(runs[0].count(key) && runs[1].count(key) && runs[2].count(key));
  }
  int64_t c1 = runs[0][step].first, c2 = runs[1][step].first, c3 = runs[2][step].first;
  EXPECT_GT(c2, c1);
  EXPECT_EQ(c3 - c2, c2 - c1);
  for (const auto& r : runs) EXPECT_GE(r.at(call).second, r.at(step).first);
  EXPECT_THAT(pprof("-lines -top wzvm-instructions.pb.gz"), HasSubstr("hashing::main " + rs + ":"));
}

TEST_F(SourceProfile, WithoutDebugInfoFunctionLevelAndANote) {
  SKIP_UNLESS_BUILT(program("inline-nodebug.wasm"));
  std::string err = run("instructions", program("inline-nodebug.wasm"), "100");
  EXPECT_THAT(err, HasSubstr("wzvm: note: " + program("inline-nodebug.wasm") + " has no DWARF line info"));
  EXPECT_THAT(err, HasSubstr("-g"));
  std::string top = pprof("-top wzvm-instructions.pb.gz");
  EXPECT_THAT(top, HasSubstr(" hash\n"));
  EXPECT_THAT(top, HasSubstr(" work\n"));
}

}  // namespace
}  // namespace wzvm::profiler
