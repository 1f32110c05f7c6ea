#pragma once
// What the end-to-end tests of the `wzvm` command share: a fresh working
// directory per test, running shell commands (wzvm, `go tool pprof`) in it
// with their output captured, and reading pprof's text back as numbers.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
// and stderr (through files named after this process and call, so neither
// two test binaries sharing a directory nor two threads of one test mix
// their output or remove each other's files).
inline Output run_shell(const std::string& dir, const std::string& cmd) {
  static std::atomic<uint64_t> calls{0};
  std::string tag = dir + "/.wzvm-test-" + std::to_string(getpid()) + "-" + std::to_string(calls++);
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

  // The call instructions of a module as wabt's `wasm-objdump -d` reads
  // them: caller -> "callee@0xOFFSET" in order (module byte offsets, what
  // pprof Locations of callers must hold). Functions need names (name
  // section) to be found by them.
  std::map<std::string, std::vector<std::string>> call_sites(const std::string& wasm) {
    Output r = sh("wasm-objdump -d '" + wasm + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    std::map<std::string, std::vector<std::string>> out;
    std::istringstream in(r.out);
    std::string line, func;
    std::regex head(R"(^[0-9a-f]+ func\[\d+\] <(.+)>:$)"), call(R"(^ 0*([0-9a-f]+):.*\| +call \d+ <(.+)>$)");
    for (std::smatch m; std::getline(in, line);) {
      if (std::regex_match(line, m, head)) func = m[1];
      else if (std::regex_match(line, m, call)) out[func].push_back(m[2].str() + "@0x" + m[1].str());
    }
    return out;
  }

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

// The samples of `go tool pprof -raw` with their stacks as
// "function@0xADDRESS" (host functions have address 0), leaf first: what a
// Location's address is, which -top and -traces do not show.
struct RawSample {
  std::vector<int64_t> values;
  std::vector<std::string> frames;
};
inline std::vector<RawSample> raw_samples(const std::string& raw) {
  std::map<std::string, std::string> locations;  // id -> function@address
  std::regex loc(R"(^ +(\d+): 0x([0-9a-f]+) (?:M=\d+ )?(\S+) .*$)");
  std::regex sample(R"(^ +([-\d ]+): ([\d ]+?) *$)");
  std::istringstream in(raw);
  std::string line, section;
  std::vector<std::pair<std::string, std::string>> rows;  // values, ids
  for (std::smatch m; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ') section = line;
    else if (section == "Locations" && std::regex_match(line, m, loc))
      locations[m[1]] = m[3].str() + "@0x" + m[2].str();
    else if (section != "Locations" && section != "Mappings" && std::regex_match(line, m, sample))
      rows.emplace_back(m[1], m[2]);
  }
  std::vector<RawSample> out;
  for (const auto& [values, ids] : rows) {
    RawSample s;
    std::istringstream v(values), i(ids);
    for (int64_t x; v >> x;) s.values.push_back(x);
    for (std::string id; i >> id;) s.frames.push_back(locations.count(id) ? locations[id] : "?" + id);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace wzvm::cli_test
