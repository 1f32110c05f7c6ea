#pragma once
// Fresh directories for tests that hand a host directory to a guest
// (preopens, redirected stdio), removed with their contents when the test
// binary exits. Their lifetime is the binary's rather than a scope's because
// guests, child processes and fixtures keep using the path after the call
// that made it; each binary otherwise left one directory behind per test
// under the temp dir, thousands after a few hundred runs.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace wzvm::test {

class ScratchDirs {
 public:
  static ScratchDirs& get() {
    static ScratchDirs dirs;
    return dirs;
  }
  // A new empty directory under the test temp dir, named prefix + a unique
  // suffix; "" (and a test failure) when it cannot be made.
  std::string make(const std::string& prefix) {
    std::string tmpl = ::testing::TempDir() + prefix + "XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      ADD_FAILURE() << "cannot make a directory like " << tmpl;
      return "";
    }
    std::lock_guard<std::mutex> lock(mu_);
    made_.push_back(tmpl);
    return tmpl;
  }
  ~ScratchDirs() {
    // A forked child that exits normally (a death test in gtest's "fast"
    // style) runs this too: only the process that made them removes them.
    if (getpid() != owner_) return;
    for (const std::string& d : made_) {
      std::error_code ec;  // a directory a test removed itself is fine
      std::filesystem::remove_all(d, ec);
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::string> made_;
  const pid_t owner_ = getpid();
};

inline std::string scratch_dir(const std::string& prefix) { return ScratchDirs::get().make(prefix); }

}  // namespace wzvm::test
