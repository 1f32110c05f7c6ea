// wasi-threads end to end: testdata/threads_counter.wat spawns 4 threads
// that contend on shared memory (atomic adds, and plain adds under a
// cmpxchg/wait/notify mutex); exact totals prove the atomics are atomic and
// the waits really block and wake. Then the ways a threaded process ends,
// and the `thread` label of the profiles.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <sstream>
#include <string>

#include "tests/cli_fixture.h"

namespace wzvm::cli_test {
namespace {

using ::testing::HasSubstr;

class ThreadsCli : public CliFixture {};

std::string counter() { return "'" + testdata("threads_counter.wasm") + "'"; }

// The values of label `thread` in `go tool pprof -tags` output.
std::set<std::string> thread_labels(const std::string& tags) {
  std::set<std::string> out;
  std::istringstream in(tags);
  std::string line;
  bool in_thread = false;
  while (std::getline(in, line)) {
    if (line.find("thread:") != std::string::npos) {
      in_thread = true;
      continue;
    }
    if (line.find(':') != std::string::npos && line.find('%') == std::string::npos) in_thread = false;
    auto colon = line.rfind(": ");
    if (in_thread && colon != std::string::npos && line.find('%') != std::string::npos)
      out.insert(line.substr(colon + 2));
  }
  return out;
}

TEST_F(ThreadsCli, ContendingThreadsGetExactTotals) {
  for (int run = 0; run < 3; ++run) {
    Output r = wzvm(counter() + " 20000");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "threads 4 atomic 80000 locked 80000\n");
  }
}

TEST_F(ThreadsCli, ProcExitInAThreadEndsTheProcess) {
  Output r = wzvm("--invoke exit_in_thread " + counter());
  EXPECT_EQ(r.status, 7) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(ThreadsCli, TrapInAThreadEndsTheProcess) {
  Output r = wzvm("--invoke trap_in_thread " + counter());
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, HasSubstr("wzvm: trap: in thread 1: unreachable")) << r.err;
  EXPECT_THAT(r.err, HasSubstr("wasi_thread_start")) << r.err;
}

TEST_F(ThreadsCli, TimeoutStopsAWaitNobodyEnds) {
  auto t0 = std::chrono::steady_clock::now();
  Output r = wzvm("--timeout 200ms --invoke wait_forever " + counter());
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, ::testing::StartsWith("wzvm: trap: interrupted")) << r.err;
  // A hang guard: without waking the wait this never returns.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

TEST_F(ThreadsCli, DisabledThreadsRefuseTheModule) {
  Output r = wzvm("--disable-threads " + counter());
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("wzvm: error:")) << r.err;
}

TEST_F(ThreadsCli, CpuProfileLabelsSamplesWithTheirThread) {
  Output r = wzvm("--profile=cpu --cpu-hz 5000 --profile-out cpu.pb.gz " + counter() + " 400000");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "threads 4 atomic 1600000 locked 1600000\n");
  std::set<std::string> threads = thread_labels(pprof("-tags cpu.pb.gz"));
  // Each of the four workers burns CPU: they all have samples.
  for (const char* t : {"1", "2", "3", "4"}) EXPECT_TRUE(threads.count(t)) << "thread " << t;
  // -raw shows the label on the samples themselves.
  EXPECT_THAT(pprof("-raw cpu.pb.gz"), HasSubstr("thread:["));
  // The workers' code is in the profile under their own entry point.
  EXPECT_THAT(pprof("-top cpu.pb.gz"), HasSubstr("wasi_thread_start"));
}

TEST_F(ThreadsCli, InstructionProfileLabelsEveryThread) {
  Output r = wzvm("--profile=instructions --profile-out ins.pb.gz " + counter() + " 1000");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "threads 4 atomic 4000 locked 4000\n");
  std::set<std::string> threads = thread_labels(pprof("-tags ins.pb.gz"));
  EXPECT_EQ(threads, (std::set<std::string>{"0", "1", "2", "3", "4"}));
  // Counts are per thread and exact: each worker's own loop (`work`, not
  // the lock, whose retries depend on the contention) runs 21 instructions
  // a round plus 4 (the final test and the exit), in every thread alike.
  // (A string label: `^1$` is a regexp, `1` alone pprof reads as a range.)
  for (const char* t : {"1", "2", "3", "4"}) {
    auto rows = pprof_top_rows(pprof(std::string("'-tagfocus=thread=^") + t + "$' -top ins.pb.gz"));
    EXPECT_EQ(rows["work"].first, 21.0 * 1000 + 4) << "thread " << t;
  }
}

// A single-threaded run has no thread label: its profile is what it was.
TEST_F(ThreadsCli, SingleThreadedProfilesHaveNoThreadLabel) {
  Output r = wzvm("--profile=instructions --profile-out ins.pb.gz --invoke f '" +
                  testdata("proposals_eh.wasm") + "' 7");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(pprof("-tags ins.pb.gz"), ::testing::Not(HasSubstr("thread")));
}

}  // namespace
}  // namespace wzvm::cli_test
