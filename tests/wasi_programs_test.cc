// Real command-line programs built by real toolchains, run through the `wzvm`
// command and, when node is installed, through node's WASI (node:wasi): both
// must print exactly the output worked out by hand below, exit with the same
// status and leave the same files.
//   testdata/wasi/kvdb.rs  a key-value database shell (Rust std, /usr/bin/rustc)
//   testdata/wasi/calc.cc  a scripting-language interpreter (C++20, libc++)

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/scratch_dir.h"

namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string program(const std::string& name) { return std::string(WZVM_TESTDATA_DIR) + "/wasi/" + name; }

std::string temp_dir() { return wzvm::test::scratch_dir("wzvm_prog_"); }

// Built piecewise: GCC 12 warns (-Wrestrict, a false positive) on "lit" + std::string here.
std::string quote(const std::string& s) {
  std::string q(1, '\'');
  q += s;
  q += '\'';
  return q;
}

bool have_node() { return std::system("command -v node >/dev/null 2>&1") == 0; }

enum class Runtime { Wzvm, Node };

struct ProgramRun {
  int status = -1;
  std::string out, err;
};

// `RUNTIME [--dir H::G | --env K=V]... MODULE ARGS...` with stdin from `input`.
// Both runtimes take the same flags (bench/wasi/run-node-wasi.mjs mirrors wzvm's).
ProgramRun run(Runtime rt, const std::vector<std::string>& flags, const std::string& module,
               const std::vector<std::string>& args, const std::string& input = "") {
  std::string dir = temp_dir();
  std::ofstream(dir + "/stdin") << input;
  // A bound on a runaway guest: a failed test, not a stuck suite.
  std::string cmd = "timeout -k 5 300 ";
  if (rt == Runtime::Wzvm) {
    cmd += quote(WZVM_BINARY);
  } else {
    cmd += "node --no-warnings ";
    cmd += quote(std::string(WZVM_SOURCE_DIR) + "/bench/wasi/run-node-wasi.mjs");
  }
  for (const std::string& f : flags) (cmd += ' ') += quote(f);
  (cmd += ' ') += quote(module);
  for (const std::string& a : args) (cmd += ' ') += quote(a);
  (cmd += " <") += quote(dir + "/stdin");
  (cmd += " >") += quote(dir + "/out");
  (cmd += " 2>") += quote(dir + "/err");
  int rc = std::system(cmd.c_str());
  ProgramRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  fs::remove_all(dir);
  return r;
}

class RealPrograms : public ::testing::TestWithParam<Runtime> {
 protected:
  void SetUp() override {
    if (GetParam() == Runtime::Node && !have_node())
      GTEST_SKIP() << "node not installed: no comparison with node:wasi";
  }
};
INSTANTIATE_TEST_SUITE_P(Runtimes, RealPrograms, ::testing::Values(Runtime::Wzvm, Runtime::Node),
                         [](const auto& info) { return info.param == Runtime::Wzvm ? "Wzvm" : "NodeWasi"; });

// ---- kvdb (Rust) ------------------------------------------------------------------

constexpr const char* kSession1 = R"(# session 1: a script file in the preopen
set name wzvm
set greeting  hello,   world
get greeting
incr counter
incr counter 41
get counter
incr name
incr counter x
begin
set name changed
del greeting
begin
set inner 1
commit
get name
count
rollback
get name
get greeting
get inner
begin
set tx committed
set g2 two
commit
keys
keys g
keys zz
count
bogus
set onlykey
commit
save
stats
)";

// Worked out by hand: the nested commit folds "inner" into the outer
// transaction, so the outer rollback removes it again.
constexpr const char* kSession1Out = R"(OK
OK
hello,   world
(integer) 1
(integer) 42
42
ERR value is not an integer
ERR 'x' is not an integer
OK (depth 1)
OK
(integer) 1
OK (depth 2)
OK
OK
changed
(integer) 3
OK
wzvm
hello,   world
(nil)
OK (depth 1)
OK
OK
OK
counter
g2
greeting
name
tx
g2
greeting
(empty)
(integer) 5
ERR unknown command 'bogus'
ERR 'set' needs 2 arguments
ERR no transaction
OK (5 keys, 65 bytes)
begin=3 bogus=1 commit=3 count=2 del=1 get=6 incr=4 keys=3 rollback=1 save=1 set=7 stats=1
)";

// A second process, commands on stdin, the database named by $KVDB_PATH: it
// must find what the first one saved. The open transaction is discarded at
// the end; the other changes are saved.
constexpr const char* kSession2 = "get tx\ndel counter\nset path a\\b\tc\nbegin\nset name temp\n";
constexpr const char* kSession2Out =
    "committed\n(integer) 1\nOK\nOK (depth 1)\nOK\nopen transaction discarded\nsaved 5 keys\n";
constexpr const char* kDbAfter =
    "g2\ttwo\ngreeting\thello,   world\nname\twzvm\npath\ta\\\\b\\tc\ntx\tcommitted\n";

TEST_P(RealPrograms, KvdbShellPersistsAcrossRuns) {
  const std::string wasm = program("kvdb.wasm");
  if (!fs::exists(wasm)) GTEST_SKIP() << "no kvdb.wasm (install rustc libstd-rust-dev-wasm32)";
  std::string dir = temp_dir();
  std::ofstream(dir + "/s1.txt") << kSession1;
  ProgramRun r = run(GetParam(), {"--dir", dir + "::/data"}, wasm, {"--db", "/data/kv.db", "/data/s1.txt"});
  EXPECT_EQ(r.status, 1) << r.err;  // some commands failed, on purpose
  EXPECT_EQ(r.out, kSession1Out);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(slurp(dir + "/kv.db"),
            "counter\t42\ng2\ttwo\ngreeting\thello,   world\nname\twzvm\ntx\tcommitted\n");
  EXPECT_FALSE(fs::exists(dir + "/kv.db.tmp"));  // written aside, then renamed over

  r = run(GetParam(), {"--dir", dir + "::/data", "--env", "KVDB_PATH=/data/kv.db"}, wasm, {}, kSession2);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, kSession2Out);
  EXPECT_EQ(slurp(dir + "/kv.db"), kDbAfter);

  // A damaged database is reported with its line, and nothing is overwritten.
  std::ofstream(dir + "/kv.db", std::ios::app) << "no tab here\n";
  r = run(GetParam(), {"--dir", dir + "::/data"}, wasm, {"--db", "/data/kv.db"}, "set x 1\n");
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.err, "kvdb: /data/kv.db:6: malformed entry\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(slurp(dir + "/kv.db"), std::string(kDbAfter) + "no tab here\n");
  fs::remove_all(dir);
}

// ---- calc (C++) -------------------------------------------------------------------

constexpr const char* kCalcScript = R"(# Functions, recursion, loops, strings.
fn fib(n) {
  if n < 2 { return n; }
  return fib(n - 1) + fib(n - 2);
}
fn gcd(a, b) {
  while b != 0 { let t = b; b = a % b; a = t; }
  return a;
}
fn is_prime(n) {
  if n < 2 { return 0; }
  let d = 2;
  while d * d <= n {
    if n % d == 0 { return 0; }
    d = d + 1;
  }
  return 1;
}
fn repeat(s, n) {
  let out = "";
  while n > 0 { out = out + s; n = n - 1; }
  return out;
}
print "fib(20) =", fib(20);
print "gcd(1071, 462) =", gcd(1071, 462);
let primes = "";
let count = 0;
let i = 0;
while i < 50 {
  if is_prime(i) { primes = primes + " " + str(i); count = count + 1; }
  i = i + 1;
}
print "primes below 50:" + primes;
print "count:", count, "len:", len(primes);
print repeat("ab", 3), -7 / 2, -7 % 2, 2 * 3 + 4 * 5 - (1 + 1) * 3;
print "a" < "b", "b" <= "a", 1 == 1 && !(2 > 3), 0 || "";
if count > 20 { print "many"; } else if count > 10 { print "some"; } else { print "few"; }
print "args:", nargs(), arg(0) + "!", "HOME=" + env("HOME");
exit count;
)";

// By hand: 15 primes below 50, 4 of one digit (" d", 2 chars) and 11 of two
// (3 chars): 41 characters; division truncates toward zero, as in C.
constexpr const char* kCalcOut = R"(fib(20) = 6765
gcd(1071, 462) = 21
primes below 50: 2 3 5 7 11 13 17 19 23 29 31 37 41 43 47
count: 15 len: 41
ababab -3 -1 20
1 0 1 0
some
args: 2 hello! HOME=/home/guest
)";

TEST_P(RealPrograms, CalcInterpreterRunsScripts) {
  const std::string wasm = program("calc.wasm");
  if (!fs::exists(wasm))
    GTEST_SKIP() << "no calc.wasm (install libc++-14-dev-wasm32 libc++abi-14-dev-wasm32)";
  std::string dir = temp_dir();
  std::ofstream(dir + "/prog.calc") << kCalcScript;
  std::ofstream(dir + "/syntax.calc") << "let x = 1;\nprint x +;\n";
  std::ofstream(dir + "/div.calc") << "fn f(n) { return 10 / n; }\nprint f(5);\nprint f(0);\n";
  std::ofstream(dir + "/deep.calc") << "fn f(n) { return f(n + 1); }\nprint f(0);\n";
  std::ofstream(dir + "/depth.calc")
      << "fn f(n) { if n == 0 { return 0; } return 1 + f(n - 1); }\nprint f(999);\n";
  const std::vector<std::string> flags = {"--dir", dir + "::/s", "--env", "HOME=/home/guest"};

  ProgramRun r = run(GetParam(), flags, wasm, {"/s/prog.calc", "hello", "world"});
  EXPECT_EQ(r.status, 15) << r.err;  // exit count;
  EXPECT_EQ(r.out, kCalcOut);
  EXPECT_EQ(r.err, "");

  r = run(GetParam(), flags, wasm, {"/s/syntax.calc"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "/s/syntax.calc:2:10: expected an expression, found ';'\n");

  r = run(GetParam(), flags, wasm, {"/s/div.calc"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "2\n");
  EXPECT_EQ(r.err, "/s/div.calc:1:21: division by zero\n");

  // The interpreter's own limit, not a wasm stack overflow.
  r = run(GetParam(), flags, wasm, {"/s/deep.calc"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "/s/deep.calc:1:18: recursion too deep\n");
  r = run(GetParam(), flags, wasm, {"/s/depth.calc"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "999\n");

  // Outside the preopen nothing is found.
  r = run(GetParam(), flags, wasm, {"/etc/hostname"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("calc: /etc/hostname: "));
  fs::remove_all(dir);
}

}  // namespace
