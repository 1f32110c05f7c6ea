// Go programs profiled as Go (profiler/golang.h): names, files and lines from
// Go's pclntab, inlined calls as frames of their own, checked through
// `go tool pprof` against what the sources say.

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli_fixture.h"

namespace wzvm {
namespace {

using cli_test::Output;
using cli_test::testdata;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

class GoProfile : public cli_test::CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    if (!std::filesystem::exists(testdata("go/determinism.wasm")))
      GTEST_SKIP() << "Go test programs not built (install golang-1.23-go from bookworm-backports)";
  }
  // The instructions profile of testdata/go/NAME.go, deterministic.
  std::string profile(const std::string& name) {
    Output r = wzvm("--deterministic --profile=instructions --profile-out p.pb.gz '" + testdata("go/" + name + ".wasm") +
                    "'");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("note:"))) << "a Go module needs no DWARF note, nor a fallback";
    return "p.pb.gz";
  }
};

TEST_F(GoProfile, FunctionsHaveGoNamesFilesAndLines) {
  std::string p = profile("determinism");
  std::string top = pprof("-top -nodecount=400 " + p);
  // Go's names, not the name section's (`fmt.__pp_.doPrintf`, `runtime_internal_math.Mul64`).
  EXPECT_THAT(top, HasSubstr(" main.worker\n"));
  EXPECT_THAT(top, HasSubstr(" main.main.func1\n"));
  EXPECT_THAT(top, HasSubstr(" fmt.(*pp).doPrintf\n"));
  EXPECT_THAT(top, HasSubstr(" runtime/internal/math.Mul64\n"));
  EXPECT_THAT(top, Not(HasSubstr("__pp_")));
  // Inlined calls are frames of their own, as pprof shows them for native Go.
  EXPECT_THAT(top, ContainsRegex(" runtime\\.[a-zA-Z]+ \\(inline\\)\n"));

  // worker (testdata/go/determinism.go, lines 14-21): the loop header, the
  // modulo test, the sleep and the send execute; the closing braces of the
  // if and of the loop are no code of their own.
  std::string list = pprof("-list '^main.worker$' " + p);
  EXPECT_THAT(list, HasSubstr("ROUTINE ======================== main.worker in " + std::string(WZVM_SOURCE_DIR) +
                              "/testdata/go/determinism.go"));
  for (const char* line : {"15:\tfor j := range jobs {", "16:\t\tif j%10 == 0 {", "17:\t\t\ttime.Sleep(time.Millisecond)",
                           "19:\t\tresults <- [3]int{j, j*j%97 + 1, id}"})
    EXPECT_THAT(list, ContainsRegex("[0-9]+ +[0-9]+ +" + std::string(line).substr(0, 3))) << line;
  EXPECT_THAT(list, ContainsRegex("\\. +\\. +18:\t\t\\}"));
  EXPECT_THAT(list, ContainsRegex("\\. +\\. +20:\t\\}"));
}

}  // namespace
}  // namespace wzvm
