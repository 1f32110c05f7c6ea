// Replays every input in tests/regress/ through the bodies of all five fuzz
// targets (fuzz/targets.h): each fuzzing finding is checked in there once
// minimized, with a line in tests/regress/README.md saying what it found and
// where it was fixed. Run under the sanitizer build too (build-asan/), where
// a memory error in the replay is a test failure.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(WZVM_SOURCE_DIR) / "tests" / "regress"))
    if (e.path().extension() == ".wasm") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Regress, FuzzFindingsStayFixed) {
  auto files = inputs();
  ASSERT_FALSE(files.empty()) << "no inputs in tests/regress/";
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    std::ifstream in(f, std::ios::binary);
    std::vector<uint8_t> b(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(wzvm::fuzz::check_decode(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_validate(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_instantiate(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_execute(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_differential(b.data(), b.size()), "");
  }
}

}  // namespace
