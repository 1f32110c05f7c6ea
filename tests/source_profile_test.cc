// Source-level profiles end to end: runs the built wzvm with --profile on the
// DWARF test programs (testdata/dwarf/) and reads the profiles with the real
// client, `go tool pprof` (-lines, -list, -raw), as a user would. Lines are
// those the test sources mark in their comments.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace wzvm::profiler {
namespace {

namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string program(const std::string& name) { return std::string(WZVM_TESTDATA_DIR) + "/dwarf/" + name; }
std::string source(const std::string& name) { return std::string(WZVM_SOURCE_DIR) + "/testdata/dwarf/" + name; }

class SourceProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/wzvm-srcprof-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }

  struct Output {
    int status = -1;
    std::string out, err;
  };
  Output sh(const std::string& cmd) {
    std::string out = dir_ + "/.out", err = dir_ + "/.err";
    int rc = std::system(("cd '" + dir_ + "' && " + cmd + " >'" + out + "' 2>'" + err + "'").c_str());
    Output r{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
    fs::remove(out);
    fs::remove(err);
    return r;
  }
  // Profiles `prog` (with `args`) into the test directory; returns wzvm's stderr.
  std::string run(const std::string& kinds, const std::string& prog, const std::string& args) {
    Output r = sh(std::string("'") + WZVM_BINARY + "' --profile=" + kinds + " --profile-out=. '" + prog + "' " + args);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.err;
  }
  std::string pprof(const std::string& args) {
    Output r = sh("HOME='" + dir_ + "' GOCACHE='" + dir_ + "/.gocache' go tool pprof " + args);
    EXPECT_EQ(r.status, 0) << "go tool pprof " << args << ":\n" << r.err;
    return r.out;
  }
  std::string dir_;
};

#define SKIP_UNLESS_BUILT(path) \
  if (!fs::exists(path)) GTEST_SKIP() << path << " not built (toolchain missing)"

TEST_F(SourceProfile, CpuProfileHasLinesAndInlinedFramesInnermostFirst) {
  SKIP_UNLESS_BUILT(program("inline.wasm"));
  // ~0.2 s of work split between hash() and the inlined sum_squares().
  std::string err = run("cpu", program("inline.wasm"), "60000");
  EXPECT_THAT(err, Not(HasSubstr("wzvm: note:")));  // built with -g: no note
  const std::string c = source("inline.c");

  // Samples are taken at safe points (function entries, loop back-edges),
  // so a sample's line is that of the loop it is in: hash's loop is line
  // 20; sum_squares's (inlined into work at line 39) is line 32.
  std::string lines = pprof("-lines -top wzvm-cpu.pb.gz");
  EXPECT_THAT(lines, HasSubstr("hash " + c + ":20"));
  EXPECT_THAT(lines, HasSubstr("sum_squares " + c + ":32 (inline)"));
  EXPECT_THAT(lines, HasSubstr("work " + c + ":39"));

  // The inlined location lists sum_squares first, then work at the call.
  std::string raw = pprof("-raw wzvm-cpu.pb.gz");
  EXPECT_THAT(raw, ContainsRegex("sum_squares " + c + ":32 s=30\n +work " + c + ":39 s=36\n"));
  EXPECT_THAT(raw, ContainsRegex("inline\\.wasm +\\[FN\\]\\[FL\\]\\[LN\\]\\[IN\\]"));

  // -list shows the source with the time at hash's loop.
  std::string list = pprof("-list '^hash$' wzvm-cpu.pb.gz");
  EXPECT_THAT(list, HasSubstr("ROUTINE ======================== hash in " + c));
  EXPECT_THAT(list, ContainsRegex("[0-9.]+m?s +[0-9.]+m?s +20:  for \\(int i = 0; i < n; \\+\\+i\\)"));
  EXPECT_THAT(list, ContainsRegex("\\. +\\. +22:  return h;"));
}

TEST_F(SourceProfile, InstructionsProfileListsFunctionsAtTheirLines) {
  SKIP_UNLESS_BUILT(program("geometry.wasm"));
  run("instructions", program("geometry.wasm"), "100");
  const std::string cc = source("geometry.cc");
  // Instruction counts are per function (per call-tree node), so each
  // function's count sits at its first line: the overloads of norm2 are told
  // apart by their demangled names and lines 22 and 25.
  std::string lines = pprof("-lines -top wzvm-instructions.pb.gz");
  EXPECT_THAT(lines, HasSubstr("geo::norm2(geo::Vec<int> const&) " + cc + ":22"));
  EXPECT_THAT(lines, HasSubstr("geo::norm2(geo::Vec<double> const&) " + cc + ":25"));
  EXPECT_THAT(lines, HasSubstr("main " + cc + ":31"));
  std::string list = pprof("-list 'norm2.*int' wzvm-instructions.pb.gz");
  EXPECT_THAT(list, HasSubstr("ROUTINE ======================== geo::norm2(geo::Vec<int> const&) in " + cc));
  EXPECT_THAT(list, ContainsRegex("[0-9]+ +[0-9]+ +22:__attribute__\\(\\(noinline\\)\\) int norm2"));
}

TEST_F(SourceProfile, RustNamesDemangledWithLines) {
  SKIP_UNLESS_BUILT(program("hashing-v0.wasm"));
  run("instructions", program("hashing-v0.wasm"), "3000");
  const std::string rs = source("hashing.rs");
  std::string lines = pprof("-lines -top wzvm-instructions.pb.gz");
  EXPECT_THAT(lines, HasSubstr("hashing::fnv::hash " + rs + ":16"));
  EXPECT_THAT(lines, HasSubstr("hashing::main " + rs + ":25"));
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
