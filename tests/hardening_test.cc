// Hostile and malformed modules through the `wzvm` command (issue 9): each one
// gives exactly one error line naming the file and the byte offset, or the
// limit it hit, and the documented exit status; never a crash or a hang.
// Modules are raw bytes, with their WAT in a comment, written to temp files.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "cli_fixture.h"
#include "wasm_bytes.h"

namespace {

using namespace wzvm::wasm_bytes;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using wzvm::cli_test::Output;

std::string write_module(const std::string& name, const Bytes& b) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return path;
}

// No test here reads stdin: a guest that tried would get end of file.
Output wzvm(const std::string& args) {
  return wzvm::cli_test::run_wzvm(::testing::TempDir(), args + " </dev/null");
}

// One malformed module: exit 1, nothing on stdout, exactly `line` on stderr.
void expect_error(const Bytes& module, const std::string& expected_after_path) {
  std::string path = write_module("hard.wasm", module);
  Output r = wzvm("--invoke f '" + path + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "wzvm: error: " + path + ": " + expected_after_path + "\n");
}

// (module (memory 1)
//   (func (export "grow") (param i32) (result i32) local.get 0 memory.grow))
Bytes grow_module(uint8_t initial_pages = 1) {
  return header() + section(1, {0x01, 0x60, 0x01, 0x7F, 0x01, 0x7F}) + section(3, {0x01, 0x00}) +
         section(5, {0x01, 0x00, initial_pages}) + section(7, Bytes{0x01} + str("grow") + Bytes{0x00, 0x00}) +
         section(10, {0x01, 0x06, 0x00, 0x20, 0x00, 0x40, 0x00, 0x0B});
}

// (module (func $d (export "d") (param i32) (result i32)
//   (if (result i32) (local.get 0)
//     (then (call $d (i32.sub (local.get 0) (i32.const 1))))
//     (else (i32.const 0)))))
// d(n) is n + 1 nested calls deep.
Bytes depth_module() {
  return header() + section(1, {0x01, 0x60, 0x01, 0x7F, 0x01, 0x7F}) + section(3, {0x01, 0x00}) +
         section(7, Bytes{0x01} + str("d") + Bytes{0x00, 0x00}) +
         section(10, {0x01, 0x11, 0x00, 0x20, 0x00, 0x04, 0x7F, 0x20, 0x00, 0x41, 0x01, 0x6B, 0x10, 0x00,
                      0x05, 0x41, 0x00, 0x0B, 0x0B});
}

// --- Malformed modules: one line with the byte offset --------------------------

TEST(HardeningCli, TruncatedFiles) {
  expect_error({0x00, 0x61, 0x73, 0x6D, 0x01}, "unexpected end (offset 0x5)");
  // The code section's declared size runs past the end of the file.
  Bytes full = grow_module();
  expect_error(Bytes(full.begin(), full.end() - 3), "length out of bounds (offset 0x25)");
  // Every proper prefix: one error line, status 1. The line has the offset,
  // unless the prefix ends at a section boundary and so is a valid module
  // (without the export).
  for (size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE(n);
    std::string path =
        write_module("prefix.wasm", Bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(n)));
    Output r = wzvm("--invoke grow '" + path + "' 0");
    EXPECT_EQ(r.status, 1);
    EXPECT_THAT(r.err,
                MatchesRegex("wzvm: error: [^\n]*: ([^\n]*offset 0x[0-9a-f]+\\)|export grow not found)\n"));
  }
}

TEST(HardeningCli, OverlongLeb128) {
  // (memory 2) with its minimum in six bytes.
  expect_error(header() + section(5, {0x01, 0x00, 0x82, 0x80, 0x80, 0x80, 0x80, 0x00}),
               "integer representation too long (section memory, offset 0x11)");
  // Five bytes whose last one has bits a u32 cannot hold.
  expect_error(header() + section(5, {0x01, 0x00, 0x82, 0x80, 0x80, 0x80, 0x70}),
               "integer too large (section memory, offset 0x11)");
}

TEST(HardeningCli, HugeDeclaredCounts) {
  // 2^32-1 types in a one-byte remainder: refused before anything is allocated.
  expect_error(header() + section(1, uleb(0xFFFFFFFF) + Bytes{0x00}),
               "unexpected end of section or function (section type, offset 0xf)");
  // 1,000,001 functions: more than the cap, although the bytes are there.
  expect_error(
      header() + section(1, {0x01, 0x60, 0x00, 0x00}) + section(3, uleb(1'000'001) + Bytes(1'000'001, 0x00)),
      "too many functions (section function, offset 0x15)");
}

TEST(HardeningCli, InvalidUtf8) {
  // (import "\c0\80" "f" (func)): an overlong encoding of U+0000.
  expect_error(header() + section(1, {0x01, 0x60, 0x00, 0x00}) +
                   section(2, Bytes{0x01} + str("\xC0\x80") + str("f") + Bytes{0x00, 0x00}),
               "malformed UTF-8 encoding (section import, offset 0x14)");
}

// --- Limits a host sets ------------------------------------------------------------

TEST(HardeningCli, MaxMemoryStopsGrowth) {
  std::string path = write_module("grow.wasm", grow_module());
  // 128 KiB = 2 pages: from 1 page, growing by 1 works, by 2 does not.
  EXPECT_EQ(wzvm("--max-memory 128K --invoke grow '" + path + "' 1").out, "1\n");
  Output r = wzvm("--max-memory 131072 --invoke grow '" + path + "' 2");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "-1\n");
  // Not a whole page: rounded down (200000 bytes = 3 pages and a bit).
  EXPECT_EQ(wzvm("--max-memory 200000 --invoke grow '" + path + "' 2").out, "1\n");
  EXPECT_EQ(wzvm("--max-memory 200000 --invoke grow '" + path + "' 3").out, "-1\n");
  // Without the flag, 4 GiB.
  EXPECT_EQ(wzvm("--invoke grow '" + path + "' 100").out, "1\n");
}

TEST(HardeningCli, MaxMemoryRefusesInitialSize) {
  std::string path = write_module("big.wasm", grow_module(4));
  Output r = wzvm("--max-memory 128K --invoke grow '" + path + "' 0");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "wzvm: error: " + path +
                       ": memory 0: initial size of 4 pages exceeds the limit of 2 pages (131072 bytes) "
                       "(section memory)\n");
  EXPECT_EQ(wzvm("--max-memory 256K --invoke grow '" + path + "' 0").out, "4\n");
}

TEST(HardeningCli, MaxStackDepth) {
  std::string path = write_module("depth.wasm", depth_module());
  // d(99) needs 100 frames: allowed at --max-stack-depth 100; d(100) is one too many.
  EXPECT_EQ(wzvm("--max-stack-depth 100 --invoke d '" + path + "' 99").out, "0\n");
  Output r = wzvm("--max-stack-depth 100 --invoke d '" + path + "' 100");
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, ::testing::StartsWith("wzvm: trap: call stack exhausted\n"));
  EXPECT_THAT(r.err, HasSubstr("frames omitted"));
  // The default (20000) allows more.
  EXPECT_EQ(wzvm("--invoke d '" + path + "' 5000").out, "0\n");
}

TEST(HardeningCli, TableSizeLimit) {
  // (table 20000000 funcref): valid wasm, but 160 MB for one table.
  std::string path =
      write_module("table.wasm", header() + section(4, Bytes{0x01, 0x70, 0x00} + uleb(20'000'000)));
  Output r = wzvm("--invoke f '" + path + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(
      r.err,
      "wzvm: error: " + path +
          ": table 0: initial size of 20000000 entries exceeds the limit of 10000000 (section table)\n");
}

TEST(HardeningCli, ModuleSizeLimit) {
  // /dev/zero never ends: wzvm stops reading at the limit.
  Output r = wzvm("--max-module-size 1K /dev/zero");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "wzvm: error: /dev/zero: module larger than the limit of 1024 bytes (--max-module-size)\n");
}

TEST(HardeningCli, BadLimitValues) {
  for (const char* flags : {"--max-memory 12Q", "--max-memory 5G", "--max-memory ''", "--max-stack-depth 0",
                            "--max-stack-depth 2000000", "--max-module-size -1", "--fuel -3", "--fuel 1e6",
                            "--fuel ''", "--fuel 99999999999999999999", "--timeout 0", "--timeout 5x",
                            "--timeout -1s", "--timeout 1.2.3s", "--timeout 400d"}) {
    SCOPED_TRACE(flags);
    Output r = wzvm(std::string(flags) + " x.wasm");
    EXPECT_EQ(r.status, 2);
    EXPECT_THAT(r.err, ::testing::StartsWith("wzvm: usage error: "));
  }
}

// --- Fuel and timeout (testdata/limits.wat) -----------------------------------------

std::string limits_wasm() { return std::string(WZVM_TESTDATA_DIR) + "/limits.wasm"; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(HardeningCli, FuelIsExact) {
  // count(1000) runs 9 * 1000 + 5 = 9005 instructions (worked out in limits.wat).
  const std::string run = " --invoke count '" + limits_wasm() + "' 1000";
  Output enough = wzvm("--fuel 9005" + run);
  EXPECT_EQ(enough.status, 0) << enough.err;
  EXPECT_EQ(enough.out, "1000\n");
  Output short_by_one = wzvm("--fuel 9004" + run);
  EXPECT_EQ(short_by_one.status, 134);
  EXPECT_EQ(short_by_one.out, "");
  EXPECT_THAT(short_by_one.err, ::testing::StartsWith("wzvm: trap: all fuel consumed\n  at 0: count"));
  // The same counters as --profile=instructions: fuel and profile agree.
  std::string prof = ::testing::TempDir() + "fuel_instr.pb.gz";
  Output both =
      wzvm("--fuel 9005 --profile=instructions --profile-summary --profile-out '" + prof + "'" + run);
  EXPECT_EQ(both.status, 0) << both.err;
  EXPECT_THAT(both.err, HasSubstr("instructions/count: total 9005\n"));
  EXPECT_EQ(wzvm("--fuel 9004 --profile=instructions --profile-out '" + prof + "'" + run).status, 134);
  // Without fuel (the other lowering: CountInstr, not CountFuel) the count is the same.
  Output counted = wzvm("--profile=instructions --profile-summary --profile-out '" + prof + "'" + run);
  EXPECT_THAT(counted.err, HasSubstr("instructions/count: total 9005\n"));
  // Zero fuel: not even the first instruction runs.
  EXPECT_EQ(wzvm("--fuel 0" + run).status, 134);
}

TEST(HardeningCli, FuelStopsAnEndlessLoop) {
  Output r = wzvm("--fuel 1000000 --invoke spin '" + limits_wasm() + "'");
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, ::testing::StartsWith("wzvm: trap: all fuel consumed\n  at 0: spin"));
}

TEST(HardeningCli, TimeoutStopsAnEndlessLoop) {
  auto t0 = std::chrono::steady_clock::now();
  Output r = wzvm("--timeout 200ms --invoke spin '" + limits_wasm() + "'");
  EXPECT_EQ(r.status, 134);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, ::testing::StartsWith("wzvm: trap: interrupted\n  at 0: spin"));
  // A hang guard, not a speed claim: without the watchdog this never returns.
  EXPECT_LT(seconds_since(t0), 60.0);
  EXPECT_GE(seconds_since(t0), 0.2);
}

TEST(HardeningCli, TimeoutStopsEveryKindOfBackEdgeInEveryLoop) {
  // Every kind of backward jump lowering makes (testdata/limits.wat): the
  // profiling loops once polled only on back-edge ops, and now stop before
  // any instruction once asked (vm/interp.cc, poll_sample); a loop that no
  // request could stop would run forever here. The plain run uses the
  // sampling loop too (--timeout needs its safe points); the other two
  // modes add the CPU sampler and the counting loop.
  std::string prof = ::testing::TempDir() + "timeout_backedge.pb.gz";
  for (std::string mode : {"", "--profile=cpu", "--profile=instructions"}) {
    if (!mode.empty()) mode += " --profile-out '" + prof + "' ";
    for (const char* f : {"spin_br_if", "spin_br_if_eqz", "spin_br_if_lt", "spin_br_table", "spin_nested"}) {
      auto t0 = std::chrono::steady_clock::now();
      Output r = wzvm("--timeout 100ms " + mode + "--invoke " + f + " '" + limits_wasm() + "' 1");
      EXPECT_EQ(r.status, 134) << mode << f << "\n" << r.err;
      EXPECT_THAT(r.err, ::testing::StartsWith(std::string("wzvm: trap: interrupted\n  at 0: ") + f)) << mode;
      EXPECT_LT(seconds_since(t0), 60.0) << mode << f;
    }
  }
}

TEST(HardeningCli, TimeoutLeavesShortRunsAlone) {
  // The run ends long before the timeout, and wzvm does not wait for it.
  auto t0 = std::chrono::steady_clock::now();
  Output r = wzvm("--timeout 1h --invoke count '" + limits_wasm() + "' 100000");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "100000\n");
  EXPECT_LT(seconds_since(t0), 600.0);
}

TEST(HardeningCli, LimitsStopAStartFunction) {
  const std::string start = "'" + std::string(WZVM_TESTDATA_DIR) + "/limits_start.wasm'";
  Output t = wzvm("--timeout 100ms --invoke f " + start);
  EXPECT_EQ(t.status, 134);
  EXPECT_THAT(t.err, HasSubstr("interrupted"));
  Output f = wzvm("--fuel 5000 --invoke f " + start);
  EXPECT_EQ(f.status, 134);
  EXPECT_THAT(f.err, HasSubstr("all fuel consumed"));
}

TEST(HardeningCli, TimeoutStillWritesTheProfile) {
  // The profile of an interrupted run is written: the interrupt is a trap like any other.
  std::string prof = ::testing::TempDir() + "timeout_cpu.pb.gz";
  std::remove(prof.c_str());
  Output r = wzvm("--timeout 300ms --profile=cpu --profile-out '" + prof + "' --invoke spin '" +
                  limits_wasm() + "'");
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, HasSubstr("cpu profile written to " + prof));
  // wzvm report parses it back: the samples are in `spin`.
  Output rep = wzvm("report '" + prof + "'");
  EXPECT_EQ(rep.status, 0) << rep.err;
  EXPECT_THAT(rep.out, HasSubstr("spin"));
}

}  // namespace
