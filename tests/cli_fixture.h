#pragma once
// What the end-to-end tests of the `wzvm` command share: a fresh working
// directory per test, running shell commands (wzvm, `go tool pprof`) in it
// with their output captured, and reading pprof's text back as numbers.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace wzvm::cli_test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A program built by testdata/CMakeLists.txt.
inline std::string testdata(const std::string& name) { return std::string(WZVM_TESTDATA_DIR) + "/" + name; }

struct Output {
  int status = -1;  // exit status, -1 if killed by a signal
  std::string out, err;
};

// Runs the shell command line `cmd` in directory `dir`, capturing its stdout
// and stderr (through files named after this process, so two test binaries
// sharing a directory do not mix their output).
inline Output run_shell(const std::string& dir, const std::string& cmd) {
  std::string tag = dir + "/.wzvm-test-" + std::to_string(getpid());
  std::string out = tag + ".out", err = tag + ".err";
  int rc = std::system(("cd '" + dir + "' && " + cmd + " >'" + out + "' 2>'" + err + "'").c_str());
  Output r{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// `wzvm ARGS` (arguments already quoted for the shell), run in `dir`.
inline Output run_wzvm(const std::string& dir, const std::string& args) {
  return run_shell(dir, std::string("'") + WZVM_BINARY + "' " + args);
}

class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/wzvm-cli-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `cmd` (a shell command line) in the test's directory.
  Output sh(const std::string& cmd) { return run_shell(dir_, cmd); }
  Output wzvm(const std::string& args) { return run_wzvm(dir_, args); }
  // `go tool pprof ARGS`; HOME and GOCACHE point into the test directory so
  // the go command never needs the user's.
  std::string pprof(const std::string& args) {
    Output r = sh("HOME='" + dir_ + "' GOCACHE='" + dir_ + "/.gocache' go tool pprof " + args);
    EXPECT_EQ(r.status, 0) << "go tool pprof " << args << ":\n" << r.err;
    return r.out;
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

// The rows of `go tool pprof -top` text: name -> {flat, cum}, as the numbers
// printed ("1000.07ms" -> 1000.07: pass -unit to fix the unit).
inline std::map<std::string, std::pair<double, double>> pprof_top_rows(const std::string& top) {
  std::map<std::string, std::pair<double, double>> out;
  std::istringstream in(top);
  std::string line;
  bool rows = false;
  while (std::getline(in, line)) {
    if (line.find("flat%") != std::string::npos) {
      rows = true;
      continue;
    }
    if (!rows) continue;
    std::istringstream f(line);
    std::string flat, flat_pct, sum_pct, cum, cum_pct, name;
    f >> flat >> flat_pct >> sum_pct >> cum >> cum_pct;
    std::getline(f >> std::ws, name);
    out[name] = {std::strtod(flat.c_str(), nullptr), std::strtod(cum.c_str(), nullptr)};
  }
  return out;
}

}  // namespace wzvm::cli_test
