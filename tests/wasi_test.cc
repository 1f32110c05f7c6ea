// WASI preview1: the function table, guest-memory bounds, and the C programs
// of testdata/wasi/ run in-process (so both sandbox resolvers can be chosen)
// and through the `wzvm` command (flags, exit statuses).

#include "wasi/wasi.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tests/scratch_dir.h"
#include "vm/module.h"
#include "vm/runtime.h"
#include "wasi/guest_memory.h"

namespace wzvm::wasi {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string program(const std::string& name) { return std::string(WZVM_TESTDATA_DIR) + "/wasi/" + name; }

// A fresh empty directory, removed when the binary exits.
std::string temp_dir() { return test::scratch_dir("wzvm_wasi_"); }

struct GuestRun {
  int exit = -1;    // proc_exit code, 0 when _start returned, -1 on a trap or error
  std::string out;  // stdout and stderr together
  std::string trap;
};

// Runs testdata/wasi/NAME.wasm's _start with `cfg` (args[0] is added);
// `input` is on stdin through a pipe whose writer stays open during the run.
GuestRun run_guest(const std::string& name, std::vector<std::string> args, Config cfg = {},
                   const std::string& input = "") {
  GuestRun r;
  std::string path = program(name + ".wasm");
  std::string bytes_s = slurp(path);
  auto loaded = vm::load_module(std::vector<uint8_t>(bytes_s.begin(), bytes_s.end()));
  if (!loaded) {
    r.trap = "load: " + loaded.error().to_string();
    return r;
  }
  std::string out_path = temp_dir() + "/stdout";
  int out = open(out_path.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0644);
  int in[2];
  EXPECT_EQ(pipe2(in, O_CLOEXEC), 0);
  EXPECT_EQ(write(in[1], input.data(), input.size()), ssize_t(input.size()));
  cfg.args.insert(cfg.args.begin(), name + ".wasm");
  cfg.args.insert(cfg.args.end(), args.begin(), args.end());
  cfg.stdin_fd = in[0];
  cfg.stdout_fd = cfg.stderr_fd = out;
  {
    auto w = Wasi::create(cfg);
    if (!w) {
      r.trap = "create: " + w.error().message;
    } else {
      vm::Store store;
      auto imports = (*w)->imports_for(store, **loaded);
      auto inst = imports ? store.instantiate(*loaded, *imports) : vm::Result<vm::Instance*>(imports.error());
      if (!inst) {
        r.trap = "link: " + inst.error().to_string();
      } else {
        std::vector<vm::Value> results;
        vm::Trap t = store.invoke((*inst)->exported_func("_start"), {}, results);
        if (!t) r.exit = 0;
        else if (t.code == vm::TrapCode::Exit) r.exit = t.exit_code;
        else r.trap = t.message;
      }
    }
  }
  close(in[0]);
  close(in[1]);
  close(out);
  r.out = slurp(out_path);
  return r;
}

// ---- the table ------------------------------------------------------------------

TEST(WasiTable, AllFortySixFunctionsOnceEach) {
  std::set<std::string> names;
  for (const FunctionInfo& f : functions()) names.insert(f.name);
  EXPECT_EQ(functions().size(), 46u);
  EXPECT_EQ(names.size(), 46u);
  EXPECT_TRUE(names.count("fd_readdir") && names.count("poll_oneoff") && names.count("sock_shutdown"));
}

TEST(WasiTable, ReadmeListsEveryFunction) {
  std::string readme = slurp(std::string(WZVM_SOURCE_DIR) + "/README.md");
  size_t section = readme.find("## WASI");
  ASSERT_NE(section, std::string::npos) << "README.md has no '## WASI' section";
  for (const FunctionInfo& f : functions())
    EXPECT_NE(readme.find(std::string("`") + f.name + "`", section), std::string::npos)
        << "README's WASI list lacks " << f.name;
}

// Signatures match what wasi-libc's programs import (the link would fail otherwise).
TEST(WasiTable, LinksWasiLibcPrograms) {
  for (const char* p : {"fs", "misc", "escape"}) {
    std::string bytes = slurp(program(std::string(p) + ".wasm"));
    auto m = vm::load_module(std::vector<uint8_t>(bytes.begin(), bytes.end()));
    ASSERT_TRUE(m) << p;
    auto w = Wasi::create({});
    ASSERT_TRUE(w);
    vm::Store store;
    auto imports = (*w)->imports_for(store, **m);
    EXPECT_TRUE(imports) << p << ": " << imports.error().message;
  }
}

TEST(WasiTable, UnknownAndMistypedImportsAreLinkErrors) {
  auto m = std::make_unique<vm::Module>();
  m->types.push_back(vm::FuncType{{vm::ValType::I32}, {}});
  vm::Import imp;
  imp.module = kModuleName;
  imp.field = "fd_write";  // wrong type: (i32) -> ()
  imp.func_type = 0;
  m->imports.push_back(imp);
  auto w = Wasi::create({});
  ASSERT_TRUE(w);
  vm::Store store;
  auto r = (*w)->imports_for(store, *m);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("incompatible import type for wasi_snapshot_preview1.fd_write"));
  m->imports[0].field = "no_such_function";
  r = (*w)->imports_for(store, *m);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "unknown import wasi_snapshot_preview1.no_such_function");
  m->imports[0].module = "env";
  r = (*w)->imports_for(store, *m);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "unknown import env.no_such_function");
}

TEST(WasiTable, MissingPreopenIsAnError) {
  Config cfg;
  cfg.preopens.push_back(Preopen::dir("/nonexistent/wzvm-dir", "/x"));
  auto w = Wasi::create(cfg);
  ASSERT_FALSE(w);
  EXPECT_THAT(w.error().message, HasSubstr("/nonexistent/wzvm-dir"));
}

// ---- guest memory ----------------------------------------------------------------

TEST(GuestMemory, ChecksInSixtyFourBits) {
  vm::MemoryType type;
  type.limits.min = 1;
  vm::MemInst mem(type);
  ASSERT_TRUE(mem.ok());
  GuestMemory g(&mem);
  EXPECT_TRUE(g.check(0, 65536));
  EXPECT_TRUE(g.check(65536, 0));
  EXPECT_FALSE(g.check(65536, 1));
  EXPECT_FALSE(g.check(65535, 2));
  EXPECT_FALSE(g.check(0xFFFFFFFFu, 2));             // would wrap in 32 bits
  EXPECT_FALSE(g.check(16, 0xFFFFFFFFFFFFFFF8ull));  // would wrap in 64 bits
  uint32_t v = 0;
  EXPECT_FALSE(g.load(65533, v));
  EXPECT_TRUE(g.store<uint32_t>(65532, 7));
  EXPECT_FALSE(GuestMemory(nullptr).check(0, 0));  // no memory: nothing is addressable
}

// ---- programs --------------------------------------------------------------------

class WasiResolvers : public ::testing::TestWithParam<Resolver> {};
INSTANTIATE_TEST_SUITE_P(Both, WasiResolvers, ::testing::Values(Resolver::Kernel, Resolver::Userspace),
                         [](const auto& info) {
                           return info.param == Resolver::Kernel ? "Kernel" : "Userspace";
                         });

// The same C program, natively and under wzvm, prints the same thing.
TEST_P(WasiResolvers, FileSystemMatchesNative) {
  std::string native_dir = temp_dir(), guest_dir = temp_dir();
  std::string native_out = temp_dir() + "/out";  // not in native_dir, which the program lists
  std::string cmd = "'" + program("fs.native") + "' '" + native_dir + "' > '" + native_out + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(native_out);
  Config cfg;
  cfg.preopens.push_back(Preopen::dir(guest_dir, "/data"));
  cfg.resolver = GetParam();
  GuestRun r = run_guest("fs", {"/data"}, cfg);
  EXPECT_EQ(r.trap, "");
  EXPECT_EQ(r.exit, 0);
  std::string expected = slurp(native_out);
  EXPECT_THAT(expected, HasSubstr("nlink after link: 2"));  // the comparison is not vacuous
  EXPECT_EQ(r.out, expected);
}

// What escape.c must see: every attempt out of the sandbox refused.
constexpr const char* kEscapeExpected = R"(open file.txt: ok
open sub/../file.txt: ok
open ok_link: ok
open .: ok
open ..: ENOTCAPABLE
open ../outside/secret.txt: ENOTCAPABLE
open sub/../../outside/secret.txt: ENOTCAPABLE
open sub/../sub/../../outside/secret.txt: ENOTCAPABLE
open ROOT/outside/secret.txt: ENOTCAPABLE
open abs/secret.txt: ENOTCAPABLE
open abs_file: ENOTCAPABLE
open up/secret.txt: ENOTCAPABLE
open up_file: ENOTCAPABLE
open up: ENOTCAPABLE
open sub/deep/secret.txt: ENOTCAPABLE
open creat abs_new: ENOTCAPABLE
open creat up_new: ENOTCAPABLE
open creat up/created: ENOTCAPABLE
open trunc up_file: ENOTCAPABLE
open loop1: ELOOP
open self: ELOOP
open loop1/x: ELOOP
open nofollow up_file: ELOOP
stat follow up_file: ENOTCAPABLE
stat follow abs: ENOTCAPABLE
stat nofollow up_file: ok
stat ..: ENOTCAPABLE
stat sub/deep/secret.txt: ENOTCAPABLE
set_times follow up_file: ENOTCAPABLE
set_times ../outside/secret.txt: ENOTCAPABLE
mkdir ../made: ENOTCAPABLE
mkdir up/made: ENOTCAPABLE
unlink ../outside/secret.txt: ENOTCAPABLE
unlink up/secret.txt: ENOTCAPABLE
rmdir ../outside: ENOTCAPABLE
rename file.txt -> ../outside/moved: ENOTCAPABLE
rename up/secret.txt -> stolen: ENOTCAPABLE
link up/secret.txt -> stolen: ENOTCAPABLE
link follow up_file -> stolen: ENOTCAPABLE
link follow abs_file -> stolen: ENOTCAPABLE
link ../outside/secret.txt -> stolen: ENOTCAPABLE
link file.txt -> ../outside/planted: ENOTCAPABLE
symlink x -> ../outside/planted: ENOTCAPABLE
symlink x -> up/planted: ENOTCAPABLE
readlink ../outside/x: ENOTCAPABLE
readlink up/x: ENOTCAPABLE
)";

TEST_P(WasiResolvers, SandboxEscapesAreRefused) {
  std::string root = temp_dir();
  std::string out = root + "/outside", sb = root + "/sandbox";
  fs::create_directories(out);
  fs::create_directories(sb + "/sub");
  std::ofstream(out + "/secret.txt") << "SECRET";
  std::ofstream(sb + "/file.txt") << "inside";
  fs::create_symlink(out, sb + "/abs");
  fs::create_symlink(out + "/secret.txt", sb + "/abs_file");
  fs::create_symlink(out + "/created", sb + "/abs_new");
  fs::create_symlink("../outside", sb + "/up");
  fs::create_symlink("../outside/secret.txt", sb + "/up_file");
  fs::create_symlink("../outside/created", sb + "/up_new");
  fs::create_symlink("../../outside", sb + "/sub/deep");
  fs::create_symlink("loop2", sb + "/loop1");
  fs::create_symlink("loop1", sb + "/loop2");
  fs::create_symlink("self", sb + "/self");
  fs::create_symlink("sub/../file.txt", sb + "/ok_link");
  const auto secret_time = fs::last_write_time(out + "/secret.txt");

  Config cfg;
  cfg.preopens.push_back(Preopen::dir(sb, "/sandbox"));
  cfg.resolver = GetParam();
  GuestRun r = run_guest("escape", {root}, cfg);
  EXPECT_EQ(r.trap, "");
  EXPECT_EQ(r.exit, 0);
  std::string expected = kEscapeExpected;
  expected.replace(expected.find("ROOT"), 4, root);
  EXPECT_EQ(r.out, expected);

  // And on the host: nothing outside was touched, nothing was smuggled in.
  std::vector<std::string> outside;
  for (const auto& e : fs::directory_iterator(out)) outside.push_back(e.path().filename());
  EXPECT_EQ(outside, std::vector<std::string>{"secret.txt"});
  EXPECT_EQ(slurp(out + "/secret.txt"), "SECRET");
  EXPECT_EQ(fs::last_write_time(out + "/secret.txt"), secret_time);
  EXPECT_FALSE(fs::exists(root + "/made"));
  for (const char* n : {"stolen", "made", "planted", "created"}) EXPECT_FALSE(fs::exists(sb + "/" + n)) << n;
  EXPECT_EQ(slurp(sb + "/file.txt"), "inside");
}

TEST(WasiPrograms, ArgsAndEnvironment) {
  Config cfg;
  cfg.env = {"A=1", "EMPTY=", "B=two words"};
  GuestRun r = run_guest("misc", {"args", "x", "y z", ""}, cfg);
  EXPECT_EQ(r.exit, 0) << r.trap;
  EXPECT_EQ(r.out,
            "argv[0]=misc.wasm\nargv[1]=args\nargv[2]=x\nargv[3]=y z\nargv[4]=\n"
            "env A=1\nenv EMPTY=\nenv B=two words\n");
}

TEST(WasiPrograms, ClocksRandomSleepPollErrors) {
  for (const char* cmd : {"clocks", "random", "sleep", "errors"}) {
    GuestRun r = run_guest("misc", {cmd});
    EXPECT_EQ(r.exit, 0) << cmd << ": " << r.trap << r.out;
    EXPECT_EQ(r.out, std::string(cmd) + " ok\n");
  }
  GuestRun r = run_guest("misc", {"poll"}, {}, "abc");
  EXPECT_EQ(r.exit, 0) << r.trap << r.out;
  EXPECT_EQ(r.out, "poll ok\n");
}

TEST(WasiPrograms, DescriptorsRightsReaddirRenumber) {
  Config cfg;
  std::string dir = temp_dir();
  cfg.preopens.push_back(Preopen::dir(dir, "/work"));
  GuestRun r = run_guest("misc", {"fds"}, cfg);
  EXPECT_EQ(r.exit, 0) << r.trap << r.out;
  EXPECT_EQ(r.out, "preopen 3: /work\nfds ok\n");
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(WasiPrograms, BadPointersAreEfault) {
  Config cfg;
  cfg.preopens.push_back(Preopen::dir(temp_dir(), "/d"));
  GuestRun r = run_guest("misc", {"efault"}, cfg);
  EXPECT_EQ(r.exit, 0) << r.trap << r.out;
  EXPECT_EQ(r.out, "efault ok\n");
}

TEST(WasiPrograms, ProcExitAndTrap) {
  GuestRun r = run_guest("misc", {"exit", "42"});
  EXPECT_EQ(r.exit, 42);
  EXPECT_EQ(r.out, "exiting\n");
  r = run_guest("misc", {"trap"});
  EXPECT_EQ(r.exit, -1);
  EXPECT_EQ(r.trap, "unreachable");
}

// Sockets the host preopens: a connected pair (fd 3) and a listener (fd 4).
// Nothing here may block forever (it once hung on a loaded machine): the port
// is the kernel's choice, the connection is known to be in the accept queue
// before the guest runs, and every socket either side reads has a receive
// timeout (accepted sockets inherit the listener's), so a lost wake-up is a
// failed EXPECT, not a stuck test.
TEST(WasiPrograms, PreopenedSockets) {
  const timeval timeout{30, 0};
  auto limit = [&](int fd) {
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) == 0 &&
           setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) == 0;
  };
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_TRUE(limit(pair[0]) && limit(pair[1]));
  ASSERT_EQ(write(pair[1], "pong", 4), 4);
  int lis = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(limit(lis));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lis, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);  // port 0: any free one
  ASSERT_EQ(listen(lis, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(lis, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(limit(client));
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(write(client, "hi", 2), 2);
  // connect() returns once the client side is established; the server side
  // may still wait for the handshake's last ACK (under load the kernel defers
  // it). Readable listener = accept will not block.
  pollfd p{lis, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 30000), 1) << "the connection never reached the accept queue";

  Config cfg;
  cfg.preopens = {Preopen::host_fd(pair[0]), Preopen::host_fd(lis)};  // owned by the Wasi from here
  GuestRun r = run_guest("misc", {"sock"}, cfg);
  EXPECT_EQ(r.exit, 0) << r.trap << r.out;
  EXPECT_EQ(r.out, "sock ok\n");
  char buf[8] = {0};
  EXPECT_EQ(read(pair[1], buf, sizeof buf), 4);
  EXPECT_STREQ(buf, "ping");
  EXPECT_EQ(read(pair[1], buf, sizeof buf), 0);  // the guest shut down its writing side
  close(pair[1]);
  close(client);
}

// libc++ and Rust std programs, built when their toolchains are installed.
TEST(WasiPrograms, CxxLibcxx) {
  if (!fs::exists(program("cxx.wasm")))
    GTEST_SKIP() << "no cxx.wasm (install libc++-14-dev-wasm32 libc++abi-14-dev-wasm32)";
  Config cfg;
  std::string dir = temp_dir();
  cfg.preopens.push_back(Preopen::dir(dir, "/d"));
  cfg.env = {"GREETING=hi"};
  GuestRun r = run_guest("cxx", {"/d", "b", "a", "b", "c"}, cfg);
  EXPECT_EQ(r.trap, "");
  EXPECT_EQ(r.exit, 3);
  EXPECT_EQ(
      r.out,
      "GREETING=hi\na 1\nb 2\nc 1\ndir: .;..;counts.txt;sub;\ndie in range: 1\nclock ok: 1\nto stderr\n");
  EXPECT_EQ(slurp(dir + "/counts.txt"), "a 1\nb 2\nc 1\n");
}

TEST(WasiPrograms, RustStd) {
  if (!fs::exists(program("rust.wasm")))
    GTEST_SKIP() << "no rust.wasm (install rustc libstd-rust-dev-wasm32)";
  Config cfg;
  std::string dir = temp_dir();
  cfg.preopens.push_back(Preopen::dir(dir, "/d"));
  GuestRun r = run_guest("rust", {"/d"}, cfg);
  EXPECT_EQ(r.trap, "");
  EXPECT_EQ(r.exit, 4);
  EXPECT_EQ(r.out,
            "args: [\"/d\"]\nGREETING=(unset)\n"
            "sizes: {\"f0.txt\": 2, \"f1.txt\": 3, \"f2.txt\": 4, \"y\": -1}\n"
            "f2: \"zzz\\n\"\nrenamed: true\nescape: Err(Uncategorized)\ncleaned: true\n"
            "time sane: true true\nto stderr\n");
  EXPECT_TRUE(fs::is_empty(dir));
}

// ---- the command line ------------------------------------------------------------

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun wzvm(const std::string& args, const std::string& env_prefix = "") {
  std::string dir = temp_dir();
  std::string cmd = env_prefix + " '" + std::string(WZVM_BINARY) + "' " + args + " >'" + dir + "/o' 2>'" +
                    dir + "/e' </dev/null";
  int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(dir + "/o");
  r.err = slurp(dir + "/e");
  return r;
}

TEST(WasiCli, ArgvEnvAndExitStatus) {
  std::string m = program("misc.wasm");
  CliRun r = wzvm("--env A=1 --env B=x=y --env A=3 '" + m + "' args --flag");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "argv[0]=" + m + "\nargv[1]=args\nargv[2]=--flag\nenv B=x=y\nenv A=3\n");
  // The host environment is passed only when asked.
  r = wzvm("'" + m + "' args", "WZVM_TEST_VAR=seen");
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("WZVM_TEST_VAR")));
  r = wzvm("--inherit-env '" + m + "' args", "WZVM_TEST_VAR=seen");
  EXPECT_THAT(r.out, HasSubstr("env WZVM_TEST_VAR=seen\n"));
  r = wzvm("'" + m + "' exit 7");
  EXPECT_EQ(r.status, 7);
  EXPECT_EQ(r.out, "exiting\n");
  r = wzvm("'" + m + "' trap");
  EXPECT_EQ(r.status, 134);
  EXPECT_THAT(r.err, HasSubstr("wzvm: trap: unreachable"));
}

TEST(WasiCli, DirFlagAndErrors) {
  std::string dir = temp_dir();
  CliRun r = wzvm("--dir '" + dir + "::/work' '" + program("misc.wasm") + "' fds");
  EXPECT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_EQ(r.out, "preopen 3: /work\nfds ok\n");
  // Without ::GUEST the guest sees the host path.
  std::ofstream(dir + "/f.txt") << "x";
  r = wzvm("--dir '" + dir + "' '" + program("fs.wasm") + "' '" + dir + "/sub'");
  EXPECT_THAT(r.out, HasSubstr("open a.txt O_CREAT"));
  r = wzvm("--dir /nonexistent/wzvm '" + program("misc.wasm") + "' args");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot open directory /nonexistent/wzvm"));
  r = wzvm("--env NOEQUALS '" + program("misc.wasm") + "' args");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace wzvm::wasi
