// Deterministic runs (wasi/deterministic.h, `wzvm --deterministic`): the
// virtual clocks and the seeded random stream themselves, then real programs
// that read time and randomness (C's rand() seeded from the clock, Rust's
// HashMap, Go's scheduler, maps and timers) whose instruction profiles must
// be byte-identical across runs with the flag, and are shown to differ
// without it, so the flag is what does the work.

#include "wasi/deterministic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "profiler/instruction_profile.h"
#include "tests/cli_fixture.h"
#include "wasi/wasi.h"

namespace wzvm {
namespace {

using cli_test::Output;
using cli_test::slurp;
using cli_test::testdata;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- the stream and the clocks ------------------------------------------------

// SplitMix64 seeded with 0 starts 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4 (the
// published reference outputs), handed out little-endian.
constexpr char kSeed0Bytes[] = "af cd 1d 7b 39 a8 20 e2 f4 65 b9 a1 6a 9e 78 6e";

std::string hex(const std::vector<uint8_t>& b) {
  std::string s;
  char buf[4];
  for (uint8_t x : b) {
    std::snprintf(buf, sizeof buf, "%s%02x", s.empty() ? "" : " ", x);
    s += buf;
  }
  return s;
}

TEST(DeterministicSource, RandomIsSplitMix64AndIndependentOfHowItIsAskedFor) {
  wasi::Deterministic whole(0), pieces(0), other(1);
  std::vector<uint8_t> a(16), b(16), c(16);
  whole.random_bytes(a.data(), 16);
  pieces.random_bytes(b.data(), 3);
  pieces.random_bytes(b.data() + 3, 0);
  pieces.random_bytes(b.data() + 3, 13);
  other.random_bytes(c.data(), 16);
  EXPECT_EQ(hex(a), kSeed0Bytes);
  EXPECT_EQ(b, a);
  EXPECT_NE(c, a);
}

TEST(DeterministicSource, ClocksAdvanceWithInstructionsAndSkippedSleeps) {
  wasi::Deterministic d(0);
  uint64_t t = 0;
  ASSERT_TRUE(d.now(wasi::clockid::realtime, 0, t));
  EXPECT_EQ(t, wasi::Deterministic::kEpochNs);
  ASSERT_TRUE(d.now(wasi::clockid::monotonic, 1000, t));
  EXPECT_EQ(t, 1000u);
  d.sleep_until(5000, 1000);  // 4 us asleep at 1000 instructions
  d.sleep_until(4000, 1200);  // already past: nothing
  ASSERT_TRUE(d.now(wasi::clockid::monotonic, 1200, t));
  EXPECT_EQ(t, 5200u);
  ASSERT_TRUE(d.now(wasi::clockid::realtime, 1200, t));
  EXPECT_EQ(t, wasi::Deterministic::kEpochNs + 5200);
  ASSERT_TRUE(d.now(wasi::clockid::process_cputime, 1200, t));
  EXPECT_EQ(t, 1200u) << "sleeping uses no CPU time";
  ASSERT_TRUE(d.now(wasi::clockid::thread_cputime, 1200, t));
  EXPECT_EQ(t, 1200u);
  EXPECT_FALSE(d.now(4, 0, t));
}

// ---- through the command ------------------------------------------------------

class DeterministicCli : public cli_test::CliFixture {
 protected:
  // stdout and the --profile=KIND file of `wzvm FLAGS PROGRAM ARGS`, once.
  struct Run {
    Output out;
    std::string profile;
  };
  Run run(const std::string& flags, const std::string& program, const std::string& args = "",
          const std::string& kind = "instructions") {
    std::string file = path("p.pb.gz");
    std::filesystem::remove(file);
    Run r{wzvm(flags + " --profile=" + kind + " --profile-out '" + file + "' '" + program + "' " + args),
          slurp(file)};
    EXPECT_EQ(r.out.status, 0) << r.out.err;
    EXPECT_FALSE(r.profile.empty()) << r.out.err;
    return r;
  }
  // Three runs with --deterministic give the same output and profile byte for
  // byte; three without it do not all agree.
  void expect_deterministic(const std::string& program, const std::string& args = "",
                            const std::string& kind = "instructions", const std::string& flags = "") {
    Run first = run(flags + " --deterministic", program, args, kind);
    for (int i = 0; i < 2; ++i) {
      Run again = run(flags + " --deterministic", program, args, kind);
      EXPECT_EQ(again.out.out, first.out.out) << program;
      EXPECT_TRUE(again.profile == first.profile)
          << program << ": the " << kind << " profile changed between runs";
    }
    std::set<std::string> outputs, profiles;
    for (int i = 0; i < 3; ++i) {
      Run plain = run(flags, program, args, kind);
      outputs.insert(plain.out.out);
      profiles.insert(plain.profile);
    }
    EXPECT_GT(profiles.size(), 1u) << program << ": without --deterministic the " << kind
                                   << " profiles should differ, or this test proves nothing";
  }
};

TEST_F(DeterministicCli, CProgramSeesVirtualTimeSeededRandomnessAndSortedListings) {
  std::filesystem::create_directory(path("d"));
  for (const char* name : {"b", "m", "c", "zz", "a"}) std::ofstream(path("d/") + name) << name;
  std::string prog = "'" + testdata("wasi/determinism.wasm") + "' d";
  Output r = wzvm("--deterministic --dir d " + prog);
  ASSERT_EQ(r.status, 0) << r.err;
  // Realtime starts at 2000-01-01T00:00:00Z, plus the few instructions run before main reads it.
  EXPECT_THAT(r.out, HasSubstr("realtime 946684800.000"));
  // usleep(250000) is skipped, not waited; the clock says 250 ms passed, plus
  // the instructions between the two reads.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("slept (\\d+)"))) << r.out;
  EXPECT_GE(std::stoll(m[1]), 250000000);
  EXPECT_LT(std::stoll(m[1]), 250100000);
  EXPECT_THAT(r.out, HasSubstr("resolution 1\n"));
  EXPECT_THAT(r.out, HasSubstr(std::string("random ") + kSeed0Bytes + "\n"));
  EXPECT_THAT(r.out, HasSubstr("entries a b c m zz\n"));

  Output seeded = wzvm("--deterministic --random-seed 1 --dir d " + prog);
  ASSERT_EQ(seeded.status, 0) << seeded.err;
  EXPECT_THAT(seeded.out, Not(HasSubstr(kSeed0Bytes)));
  EXPECT_EQ(wzvm("--deterministic --random-seed 1 --dir d " + prog).out, seeded.out);

  Output real = wzvm("--dir d " + prog);
  ASSERT_EQ(real.status, 0) << real.err;
  EXPECT_THAT(real.out, Not(HasSubstr("realtime 946684800.")));
  EXPECT_THAT(real.out, Not(HasSubstr(kSeed0Bytes)));
}

TEST_F(DeterministicCli, CRandSeededFromTheClock) {
  expect_deterministic(testdata("wasi/determinism.wasm"));
  // Its allocations depend on rand(): the memory profile too.
  expect_deterministic(testdata("wasi/determinism.wasm"), "", "mem");
}

TEST_F(DeterministicCli, RustHashMap) {
  if (!std::filesystem::exists(testdata("wasi/hashmap.wasm")))
    GTEST_SKIP() << "hashmap.wasm not built (install rustc libstd-rust-dev-wasm32)";
  expect_deterministic(testdata("wasi/hashmap.wasm"));
}

TEST_F(DeterministicCli, GoGoroutinesChannelsTimersAndMaps) {
  if (!std::filesystem::exists(testdata("go/determinism.wasm")))
    GTEST_SKIP() << "go/determinism.wasm not built (install golang-1.23-go from bookworm-backports)";
  expect_deterministic(testdata("go/determinism.wasm"));
  Output r = wzvm("--deterministic '" + testdata("go/determinism.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  // time.After fired, and the timers' sleeps count as time passed.
  EXPECT_THAT(r.out, HasSubstr("jobs 300 sum 14472 first 0 last 299 timeout true\n"));
  EXPECT_THAT(r.out, HasSubstr("elapsed at least 20ms: true\n"));
}

// CPython seeds its string hashes from random_get when PYTHONHASHSEED is not
// set; its time.sleep is a poll_oneoff.
TEST_F(DeterministicCli, CPythonWithoutHashSeed) {
  const std::string py = WZVM_CPYTHON_DIR;
  if (!std::filesystem::exists(py + "/python.wasm"))
    GTEST_SKIP() << "CPython for wasm32-wasi not built: bash scripts/build-cpython.sh " << py;
  const std::string flags = "--dir '" + py + "/lib::/lib' --dir '" + std::string(WZVM_SOURCE_DIR) +
                            "/testdata/python::/src' --env PYTHONHOME=/ --env PYTHONDONTWRITEBYTECODE=1";
  const std::string prog = py + "/python.wasm";
  // The pprof file three times (each takes seconds to write: CPython's
  // profile has hundreds of thousands of stacks), the text counts for the
  // runs without the flag.
  Run first = run(flags + " --deterministic", prog, "/src/hashseed.py");
  EXPECT_THAT(first.out.out, HasSubstr("1000 200 ")) << "1000 words, 200 of them below w2000";
  EXPECT_THAT(first.out.out, HasSubstr(" True\n")) << "time.sleep(0.05) lasted 50 ms of virtual time";
  for (int i = 0; i < 2; ++i) {
    Run again = run(flags + " --deterministic", prog, "/src/hashseed.py");
    EXPECT_EQ(again.out.out, first.out.out);
    EXPECT_TRUE(again.profile == first.profile) << "the instructions profile changed between runs";
  }
  std::set<std::string> counts;
  for (int i = 0; i < 3; ++i) {
    Output plain = wzvm("--profile-text " + flags + " '" + prog + "' /src/hashseed.py");
    EXPECT_EQ(plain.status, 0) << plain.err;
    counts.insert(plain.err);
  }
  EXPECT_GT(counts.size(), 1u)
      << "without --deterministic the counts should differ, or this test proves nothing";
}

// --fuel under --deterministic stops at the same instruction every run: the
// same backtrace, the same counts.
TEST_F(DeterministicCli, FuelTrapsAtTheSameInstructionEveryRun) {
  std::string prog = "'" + testdata("wasi/determinism.wasm") + "'";
  Output full = wzvm("--deterministic --profile-text " + prog);
  ASSERT_EQ(full.status, 0) << full.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(full.err, m, std::regex("(\\d+) total"))) << full.err;
  uint64_t half = std::stoull(m[1]) / 2;
  Output first = wzvm("--deterministic --profile-text --fuel " + std::to_string(half) + " " + prog);
  EXPECT_EQ(first.status, 134);
  EXPECT_THAT(first.err, HasSubstr("all fuel consumed"));
  for (int i = 0; i < 2; ++i) {
    Output again = wzvm("--deterministic --profile-text --fuel " + std::to_string(half) + " " + prog);
    EXPECT_EQ(again.status, 134);
    EXPECT_EQ(again.err, first.err);
    EXPECT_EQ(again.out, first.out);
  }
}

TEST_F(DeterministicCli, CpuProfileWorksAndSaysItIsMeasured) {
  Output r = wzvm("--deterministic --profile=cpu --profile-out cpu.pb.gz '" +
                  testdata("wasi/determinism.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(pprof("-comments cpu.pb.gz"), HasSubstr("measures real CPU time"));
  EXPECT_THAT(pprof("-top cpu.pb.gz"), HasSubstr("Type: cpu"));
}

TEST_F(DeterministicCli, RefusesWhatItCannotMakeDeterministic) {
  std::string prog = "'" + testdata("wasi/determinism.wasm") + "'";
  Output r = wzvm("--deterministic --inherit-env " + prog);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--inherit-env"));
  r = wzvm("--deterministic --listen 127.0.0.1:0 " + prog);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--listen 127.0.0.1:0"));
  r = wzvm("--random-seed 3 " + prog);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--random-seed needs --deterministic"));
  r = wzvm("--deterministic --random-seed x " + prog);
  EXPECT_EQ(r.status, 2);
  r = wzvm("--deterministic '" + testdata("threads_counter.wasm") + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("wasi-threads"));
}

// ---- the C++ API ----------------------------------------------------------------

profiler::InstructionProfile count(const std::string& program, bool deterministic,
                                   profiler::RunOptions options) {
  wasi::Config cfg;
  cfg.args = {program};
  cfg.deterministic = deterministic;
  cfg.stdout_fd = -1;  // its output is not what is tested here
  auto w = wasi::Wasi::create(cfg);
  EXPECT_TRUE(w);
  auto p = profiler::InstructionProfile::run_and_count_file(
      program, "_start", {}, [&](vm::Store& s, const vm::Module& m) { return (*w)->imports_for(s, m); },
      options);
  EXPECT_TRUE(p) << p.error().to_string();
  return std::move(*p);
}

TEST(DeterministicApi, RunAndCountTakesTheOption) {
  std::string prog = testdata("wasi/determinism.wasm");
  auto a = count(prog, true, {.fuel = std::nullopt, .deterministic = true});
  auto b = count(prog, true, {.fuel = std::nullopt, .deterministic = true});
  EXPECT_EQ(a.trap().code, vm::TrapCode::None) << a.trap().message;
  EXPECT_EQ(a.counts(), b.counts());
  EXPECT_GT(a.total(), 0u);
  std::set<uint64_t> plain;
  for (int i = 0; i < 3; ++i) plain.insert(count(prog, false, {}).total());
  EXPECT_GT(plain.size(), 1u);

  // With a budget: the same trap at the same count.
  auto f1 = count(prog, true, {.fuel = a.total() / 2, .deterministic = true});
  auto f2 = count(prog, true, {.fuel = a.total() / 2, .deterministic = true});
  EXPECT_EQ(f1.trap().code, vm::TrapCode::OutOfFuel);
  EXPECT_EQ(f1.total(), f2.total());
  EXPECT_EQ(f1.counts(), f2.counts());
  EXPECT_LE(f1.total(), a.total() / 2);

  // A deterministic Wasi whose code charges no fuel has no clock: the first
  // clock read traps and says what is missing, rather than stopping time.
  auto bad = count(prog, true, {});
  EXPECT_EQ(bad.trap().code, vm::TrapCode::HostError);
  EXPECT_THAT(bad.trap().message, HasSubstr("LoadOptions::fuel"));
}

}  // namespace
}  // namespace wzvm
