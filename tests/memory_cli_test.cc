// `wzvm --profile=mem` end to end on real C (wasi-libc's malloc), C++
// (libc++'s operator new) and Rust (std's __rust_alloc) programs from
// testdata/mem/, read with `go tool pprof` as a user would; the exact
// numbers are worked out in the programs' comments. The hooks themselves
// are tested through the C++ API in tests/memory_profile_test.cc.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_fixture.h"

namespace wzvm::profiler {
namespace {

namespace fs = std::filesystem;
using namespace wzvm::cli_test;
using ::testing::HasSubstr;
using ::testing::Not;

class MemCli : public CliFixture {
 protected:
  // `go tool pprof -top` rows: function -> {flat, cum}, as plain numbers of
  // the sample type's unit (-unit=b for bytes).
  std::map<std::string, std::pair<double, double>> top(const std::string& profile, const std::string& index) {
    return pprof_top_rows(pprof("-top -unit=b -nodecount=1000 -sample_index=" + index + " " + profile));
  }
  // The four heap values of `fn` ({alloc_objects, alloc_space, inuse_objects,
  // inuse_space}), flat or cumulative.
  std::vector<double> values(const std::string& profile, const std::string& fn, bool cum = false) {
    std::vector<double> out;
    for (const char* index : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
      auto rows = top(profile, index);
      auto it = rows.find(fn);
      out.push_back(it == rows.end() ? 0 : (cum ? it->second.second : it->second.first));
    }
    return out;
  }
};

using V = std::vector<double>;

TEST_F(MemCli, CProgramExactPerFunction) {
  Output r = wzvm("--profile=mem '" + testdata("mem/heap_c.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  EXPECT_THAT(r.err, HasSubstr("mem profile written to wzvm-mem.pb.gz"));
  const std::string p = "wzvm-mem.pb.gz";
  EXPECT_EQ(values(p, "f"), (V{100, 6400, 50, 3200}));
  EXPECT_EQ(values(p, "g"), (V{1, 1000, 1, 1000}));  // the leak
  EXPECT_EQ(values(p, "grow"), (V{7, 2032, 1, 1024}));
  EXPECT_EQ(values(p, "shrink"), (V{4, 148, 2, 40}));
  EXPECT_EQ(values(p, "zeroed"), (V{1, 240, 0, 0}));  // failed calloc/malloc not counted
  EXPECT_EQ(values(p, "aligned"), (V{2, 224, 2, 224}));
  // inuse_space is the default sample type, as in Go's heap profiles.
  EXPECT_THAT(pprof("-top " + p), HasSubstr("Type: inuse_space"));
  EXPECT_THAT(pprof("-raw " + p), HasSubstr("allocator:[posix_memalign]"));
  // Each allocation's leaf is at the allocator's call: shrink's four
  // samples sit at its four calls (malloc, realloc, malloc, realloc), with
  // main at its call of shrink above them. Offsets from wasm-objdump.
  auto sites = call_sites(testdata("mem/heap_c.wasm"));
  std::vector<std::string> shrink_at;
  for (const RawSample& s : raw_samples(pprof("-raw " + p)))
    if (s.frames.at(0).starts_with("shrink@")) shrink_at.push_back(s.frames[0]);
  std::sort(shrink_at.begin(), shrink_at.end());
  std::vector<std::string> want;
  for (const std::string& c : sites["shrink"]) want.push_back("shrink" + c.substr(c.find('@')));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(want.size(), 4u);
  EXPECT_EQ(shrink_at, want);
  // The leak-checker summary on stderr.
  EXPECT_THAT(r.err,
              HasSubstr("wzvm: memory: 115 allocations, 10044 bytes in total; peak in use 6400 bytes\n"));
  EXPECT_THAT(r.err, HasSubstr("still in use at exit: 56 objects, 5488 bytes\n"));
  EXPECT_THAT(r.err, HasSubstr("3200 bytes in 50 objects from f <- __original_main"));
}

TEST_F(MemCli, CxxNewAndDeleteCountOnce) {
  if (!fs::exists(testdata("mem/heap_cxx.wasm"))) GTEST_SKIP() << "no wasm32 libc++";
  Output r = wzvm("--profile=mem --profile-out cxx.pb.gz '" + testdata("mem/heap_cxx.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  EXPECT_EQ(values("cxx.pb.gz", "nodes()"), (V{30, 720, 20, 480}));
  EXPECT_EQ(values("cxx.pb.gz", "arrays()"), (V{4, 400, 0, 0}));
  EXPECT_EQ(values("cxx.pb.gz", "aligned()"), (V{2, 256, 2, 256}));
  EXPECT_EQ(values("cxx.pb.gz", "vec()"), (V{8, 1020, 0, 0}));
  EXPECT_EQ(values("cxx.pb.gz", "failing()"), (V{0, 0, 0, 0}));
  std::string raw = pprof("-raw cxx.pb.gz");
  EXPECT_THAT(raw, HasSubstr("allocator:[operator new(unsigned long, std::align_val_t)]"));
  EXPECT_THAT(raw, Not(HasSubstr("allocator:[malloc]")));  // operator new's malloc is not counted again
  EXPECT_THAT(r.err, HasSubstr("44 allocations, 2396 bytes in total"));
}

TEST_F(MemCli, RustBoxAndVecCountOnce) {
  if (!fs::exists(testdata("mem/heap_rs.wasm"))) GTEST_SKIP() << "no Rust for wasm32-wasi";
  Output r = wzvm("--profile=mem --profile-out rs.pb.gz '" + testdata("mem/heap_rs.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "10 1000\n");
  // Cumulative: RawVec's growth code may stay out of line.
  EXPECT_EQ(values("rs.pb.gz", "heap::boxes", true), (V{41, 1440, 11, 480}));
  EXPECT_EQ(values("rs.pb.gz", "heap::grow", true), (V{9, 8176, 1, 4096}));
  std::string raw = pprof("-raw rs.pb.gz");
  EXPECT_THAT(raw, HasSubstr("allocator:[__rust_realloc]"));
  EXPECT_THAT(raw, Not(HasSubstr("allocator:[malloc]")));  // __rust_alloc -> malloc counts once
}

TEST_F(MemCli, CombinedWithCpuAndInstructions) {
  Output r = wzvm("--profile=cpu,instructions,mem --profile-out out '" + testdata("mem/heap_c.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"out/wzvm-cpu.pb.gz", "out/wzvm-instructions.pb.gz", "out/wzvm-mem.pb.gz"})
    EXPECT_TRUE(fs::exists(dir_ + "/" + f)) << f;
  EXPECT_EQ(values("out/wzvm-mem.pb.gz", "f"), (V{100, 6400, 50, 3200}));
}

TEST_F(MemCli, SampledProfileAndFlags) {
  Output r = wzvm("--profile=mem --mem-sample-bytes 1024 '" + testdata("mem/heap_c.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sampled about every 1024 bytes allocated; figures are estimates"));
  EXPECT_THAT(pprof("-raw wzvm-mem.pb.gz"), HasSubstr("Period: 1024"));
  Output bad = wzvm("--profile=mem --alloc-fn nope '" + testdata("mem/heap_c.wasm") + "'");
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("expected NAME=malloc|calloc|realloc|free"));
}

TEST_F(MemCli, SaysSoWhenNoAllocatorIsNamed) {
  Output r = wzvm("--profile=mem --invoke loop '" + testdata("prof_counts.wasm") + "' 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no function named like an allocator"));
  EXPECT_THAT(r.err, HasSubstr("nothing still in use at exit"));
}

// memory.grow with no allocator: the profile shows who grew the memory.
TEST_F(MemCli, MemoryGrowWithoutAnAllocator) {
  Output r = wzvm("--profile=mem --invoke run '" + testdata("mem_grow.wasm") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "8\n");
  EXPECT_THAT(r.err, HasSubstr("the memory profile will show memory.grow only"));
  EXPECT_THAT(
      r.err,
      HasSubstr(
          "wzvm: memory: memory.grow 4 times: 64.0 KiB -> 512.0 KiB; most (256.0 KiB) by big <- run\n"));
  auto space = top("wzvm-mem.pb.gz", "grow_space");
  EXPECT_EQ(space["bump"], (std::pair<double, double>{3 * 65536, 3 * 65536}));
  EXPECT_EQ(space["big"], (std::pair<double, double>{4 * 65536, 4 * 65536}));
  EXPECT_EQ(space["run"], (std::pair<double, double>{0, 7 * 65536}));
  EXPECT_EQ(top("wzvm-mem.pb.gz", "grows")["bump"].first, 3);
  // The memory's size after each grow, in order, as a label.
  std::string raw = pprof("-raw wzvm-mem.pb.gz");
  EXPECT_THAT(raw, HasSubstr("grows/count grow_space/bytes"));
  EXPECT_THAT(raw, ::testing::ContainsRegex(
                       "memory_size:\\[131072 bytes\\](.|\n)*memory_size:\\[196608 bytes\\]"
                       "(.|\n)*memory_size:\\[262144 bytes\\](.|\n)*memory_size:\\[524288 bytes\\]"));
  // The heap types stay first, inuse_space the default.
  EXPECT_THAT(pprof("-top wzvm-mem.pb.gz"), HasSubstr("Type: inuse_space"));
}

// A C program: dlmalloc's sbrk grows the memory under malloc.
TEST_F(MemCli, MemoryGrowUnderMalloc) {
  Output r = wzvm("--profile=mem '" + testdata("mem/live_c.wasm") + "' spin 10");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, ::testing::ContainsRegex("memory.grow [0-9]+ times?: .* by sbrk <- "));
  auto space = top("wzvm-mem.pb.gz", "grow_space");
  EXPECT_GT(space["sbrk"].first, 0);
  EXPECT_EQ(space["hold"].second, space["sbrk"].first);  // hold's blocks needed the memory
}

}  // namespace
}  // namespace wzvm::profiler
