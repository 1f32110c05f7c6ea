// Faults around a run that must lose nothing (issue 28), driven through the
// built wzvm as a user meets them: the profile's directory full, read-only or
// removed while the guest runs, a file size limit, the guest's stdout a pipe
// nobody reads or closed, SIGTERM while the guest waits in a host call and
// while the profiles are being written, and the live /debug/pprof/ server
// under hostile clients. Each test checks what is left on disk (no partial
// file, the earlier profile intact), what is said (one error naming the
// file) and the exit status. The guest is testdata/wasi/faults.c.
//
// Full and read-only directories are small tmpfs mounts (mount(2) needs
// root, or CAP_SYS_ADMIN): root ignores permission bits, so a mode of 0555
// would not stop its writes. Without the privilege those tests skip, saying
// so; the file size limit (ulimit -f) and the rest need none.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/cli_fixture.h"
#include "tests/pprof_read.h"

extern char** environ;

namespace wzvm::cli_test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

const std::string kFaults = testdata("wasi/faults.wasm");

// wzvm started in the background: its pid (for signals and /proc) while it
// runs, its exit afterwards. Killed at the end of the test if still running.
class Child {
 public:
  struct Stdio {
    std::string out, err;          // files in the working directory ("" = /dev/null)
    int out_fd = -1;               // stdout is this fd instead (e.g. a pipe)
    bool close_out = false;        // stdout is closed
    std::vector<std::string> env;  // NAME=VALUE set for the child (on top of this process's environment)
  };
  // stdout and stderr to the files `out` and `err`.
  Child(const std::string& dir, const std::vector<std::string>& args, const std::string& out,
        const std::string& err)
      : Child(dir, args, [&] {
          Stdio io;
          io.out = out;
          io.err = err;
          return io;
        }()) {}
  Child(const std::string& dir, const std::vector<std::string>& args, const Stdio& io) {
    std::vector<std::string> argv_s = {WZVM_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (io.close_out) posix_spawn_file_actions_addclose(&fa, 1);
    else if (io.out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, io.out_fd, 1);
    else
      posix_spawn_file_actions_addopen(&fa, 1, io.out.empty() ? "/dev/null" : io.out.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, io.err.empty() ? "/dev/null" : io.err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> env_s = io.env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      bool replaced = false;
      for (const std::string& set : io.env)
        replaced |= kv.substr(0, kv.find('=') + 1) == set.substr(0, set.find('=') + 1);
      if (!replaced) env_s.push_back(kv);
    }
    std::vector<char*> envp;
    for (std::string& kv : env_s) envp.push_back(kv.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, WZVM_BINARY, &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() {
    if (running()) kill(pid_, SIGKILL);
    wait(milliseconds(10000));
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !done_; }
  // True once it has exited (or was killed), waiting at most `limit`.
  bool wait(milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (running()) {
      int st = 0;
      pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        done_ = true;
        exit_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        signal_ = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        end_ = Clock::now();
        break;
      }
      if (r < 0 || Clock::now() > end) return false;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return done_;
  }
  int exit_status() const { return exit_; }  // -1 if killed by a signal
  int signal() const { return signal_; }
  Clock::time_point ended() const { return end_; }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  int exit_ = -1, signal_ = 0;
  Clock::time_point end_;
};

// Waits until `file` contains `text` (e.g. the guest's "sleeping", printed
// before it blocks), for at most `limit`.
bool wait_for_text(const std::string& file, const std::string& text, milliseconds limit) {
  for (auto end = Clock::now() + limit; Clock::now() < end; std::this_thread::sleep_for(milliseconds(5)))
    if (slurp(file).find(text) != std::string::npos) return true;
  return false;
}

// Waits until process `pid`'s main thread sleeps (state S in
// /proc/PID/stat): the guest, once it printed "sleeping", is in its
// poll_oneoff. Seeing the text alone left a window before the call (the
// wasi-libc functions between are lowered on their first call), in which a
// signal stopped the guest before it made the call.
bool wait_main_thread_sleeps(pid_t pid, milliseconds limit) {
  for (auto end = Clock::now() + limit; Clock::now() < end; std::this_thread::sleep_for(milliseconds(1))) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t name_end = stat.rfind(')');  // the command name may hold spaces
    if (name_end != std::string::npos && name_end + 2 < stat.size() && stat[name_end + 2] == 'S') return true;
  }
  return false;
}

// Waits until wzvm has blocked SIGTERM (SignalStop::block() in
// cli/main.cc, before the guest starts): from then on the signal stops the
// guest and the profiles are written; before, it kills wzvm as it would any
// process starting up.
bool wait_sigterm_blocked(pid_t pid, milliseconds limit) {
  for (auto end = Clock::now() + limit; Clock::now() < end; std::this_thread::sleep_for(milliseconds(1))) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("SigBlk:") && (std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1) & 1))
        return true;
  }
  return false;
}

// The mount namespace of this test process, made its own once (so that a
// mount left behind by a crashed test dies with the process); when that is
// refused (a process with threads cannot), mounts are made where the test
// runs and each test unmounts its own.
void private_mounts() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (unshare(CLONE_NEWNS) == 0) mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  });
}

// A tmpfs on `dir` for one test: `options` as mount -o takes them
// (size=256k). error() says why not, e.g. without the privilege.
class Tmpfs {
 public:
  Tmpfs(const std::string& dir, const std::string& options) : options_(options) {
    private_mounts();
    fs::create_directories(dir);
    if (mount("wzvm-faults", dir.c_str(), "tmpfs", 0, options.c_str()) == 0) dir_ = dir;
    else error_ = "mount -t tmpfs " + dir + ": " + std::strerror(errno);
  }
  ~Tmpfs() {
    if (!dir_.empty()) umount2(dir_.c_str(), MNT_DETACH);
  }
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;
  const std::string& error() const { return error_; }
  // Remounted read-only or read-write: a file system that refuses writes
  // even from root (EROFS).
  bool read_only(bool ro) {
    return mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT | (ro ? MS_RDONLY : 0), options_.c_str()) == 0;
  }

 private:
  std::string dir_, options_, error_;
};

// Fills the file system holding `dir` to the last byte (a file that grows
// until ENOSPC).
void fill(const std::string& dir) {
  int fd = open((dir + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  static const char block[4096] = {};
  while (write(fd, block, sizeof block) > 0) {
  }
  while (write(fd, block, 1) > 0) {
  }
  EXPECT_EQ(errno, ENOSPC);
  close(fd);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Instructions in a profile written by wzvm (its one sample type), or -1
// when it is not a whole gzipped pprof message.
int64_t pprof_total(const std::string& bytes) {
  std::string raw;
  if (!test::try_gunzip(bytes, raw)) return -1;
  perftools::profiles::Profile p;
  if (!p.ParseFromString(raw) || p.sample_type_size() != 1) return -1;
  int64_t total = 0;
  for (const auto& s : p.sample()) total += s.value(0);
  return total;
}

// The sum of a folded file's counts, or -1 unless every line is "STACK N\n".
int64_t folded_total(const std::string& text) {
  if (text.empty() || text.back() != '\n') return -1;
  std::istringstream in(text);
  int64_t total = 0;
  for (std::string line; std::getline(in, line);) {
    auto space = line.rfind(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find_first_not_of("0123456789", space + 1) != std::string::npos)
      return -1;
    total += std::stoll(line.substr(space + 1));
  }
  return total;
}

class Faults : public CliFixture {};

// ---- The profile's directory: full, over a file size limit, read-only, removed ----

// A full file system: the write fails with ENOSPC, wzvm says so in one line
// naming the file and exits 1 (the guest itself succeeded, and its output
// is all there), and the profile an earlier run left at that path is the
// same bytes. A guest that fails keeps its own status.
TEST_F(Faults, FullDirectoryKeepsTheEarlierProfile) {
  Tmpfs tmpfs(path("full"), "size=256k");
  if (!tmpfs.error().empty()) GTEST_SKIP() << tmpfs.error() << " (needs root or CAP_SYS_ADMIN)";
  ASSERT_EQ(wzvm("--profile=instructions --profile-out full/p.pb.gz --invoke tree '" +
                 testdata("prof_counts.wasm") + "'")
                .status,
            0);
  const std::string before = slurp(path("full/p.pb.gz"));
  ASSERT_GT(pprof_total(before), 0);
  fill(path("full"));

  Output r = wzvm("--profile=instructions --profile-out full/p.pb.gz " + kFaults + " spread 2");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "2336105561\n");
  EXPECT_EQ(r.err,
            "wzvm: error: cannot write the instructions profile: cannot write full/p.pb.gz: No space left on "
            "device\n");
  EXPECT_EQ(slurp(path("full/p.pb.gz")), before);
  EXPECT_EQ(entries(path("full")), (std::vector<std::string>{"filler", "p.pb.gz"}));

  // Two profiles into the directory: one line for each, and the guest's own
  // exit status (3, from proc_exit) wins over the write error's 1.
  r = wzvm("--profile=cpu,instructions --profile-out full --invoke work_then_exit '" +
           testdata("prof_wasi.wasm") + "' 1000");
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(
      r.err,
      "wzvm: error: cannot write the cpu profile: cannot write full/wzvm-cpu.pb.gz: No space left on device\n"
      "wzvm: error: cannot write the instructions profile: cannot write full/wzvm-instructions.pb.gz: No "
      "space left on device\n");
  EXPECT_EQ(entries(path("full")), (std::vector<std::string>{"filler", "p.pb.gz"}));
}

// `ulimit -f`: past the limit a write fails with EFBIG, which wzvm reports
// like any write error, where SIGXFSZ would kill it halfway through the
// temporary file. Needs no privilege.
TEST_F(Faults, FileSizeLimitIsAWriteErrorNotAKill) {
  ASSERT_EQ(wzvm("--profile=instructions --profile-out p.pb.gz " + kFaults + " spread 1").status, 0);
  const std::string before = slurp(path("p.pb.gz"));
  // 64 blocks of 1 KiB: the guest's output and wzvm's messages fit, a
  // profile of a megabyte does not.
  Output r = sh("ulimit -f 64 && '" + std::string(WZVM_BINARY) +
                "' --profile=instructions --profile-out p.pb.gz " + kFaults + " spread 2");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "2336105561\n");
  EXPECT_EQ(r.err,
            "wzvm: error: cannot write the instructions profile: cannot write p.pb.gz: File too large\n");
  EXPECT_TRUE(slurp(path("p.pb.gz")) == before) << "the earlier profile changed";
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"p.pb.gz"});
}

// A read-only file system: found before the guest runs (nothing is run, so
// nothing is lost), and, when the directory turns read-only during the run,
// at the write, with the earlier profile kept.
TEST_F(Faults, ReadOnlyDirectoryKeepsTheEarlierProfile) {
  Tmpfs tmpfs(path("ro"), "size=4m");
  if (!tmpfs.error().empty()) GTEST_SKIP() << tmpfs.error() << " (needs root or CAP_SYS_ADMIN)";
  ASSERT_EQ(wzvm("--profile=cpu --profile-out ro/p.pb.gz " + kFaults + " spread 1").status, 0);
  const std::string before = slurp(path("ro/p.pb.gz"));
  ASSERT_TRUE(tmpfs.read_only(true));

  Output r = wzvm("--profile=cpu --profile-out ro/p.pb.gz " + kFaults + " spread 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "wzvm: error: --profile-out ro/p.pb.gz: cannot write in directory ro: Read-only file system\n");
  EXPECT_EQ(slurp(path("ro/p.pb.gz")), before);

  ASSERT_TRUE(tmpfs.read_only(false));
  Child c(dir_, {"--profile=cpu", "--profile-out", "ro/p.pb.gz", kFaults, "sleep", "1000"}, path("out"),
          path("err"));
  ASSERT_TRUE(wait_for_text(path("out"), "sleeping", milliseconds(10000))) << slurp(path("err"));
  ASSERT_TRUE(tmpfs.read_only(true));
  ASSERT_TRUE(c.wait(milliseconds(20000)));
  EXPECT_EQ(c.exit_status(), 1);
  EXPECT_EQ(slurp(path("out")), "sleeping\ndone\n");
  EXPECT_EQ(slurp(path("err")),
            "wzvm: error: cannot write the cpu profile: cannot write ro/p.pb.gz: Read-only file system\n");
  EXPECT_EQ(slurp(path("ro/p.pb.gz")), before);
  EXPECT_EQ(entries(path("ro")), std::vector<std::string>{"p.pb.gz"});
}

// The output directory removed while the guest sleeps: each profile fails
// with one line naming its file, and nothing is created again.
TEST_F(Faults, DirectoryRemovedDuringTheRun) {
  for (const std::string out : {"gone", "gone/p.pb.gz"}) {
    SCOPED_TRACE(out);
    fs::create_directory(path("gone"));
    const bool dir = out == "gone";
    Child c(dir_,
            {dir ? "--profile=cpu,instructions" : "--profile=cpu", "--profile-out", out, kFaults, "sleep",
             "1000"},
            path("out"), path("err"));
    ASSERT_TRUE(wait_for_text(path("out"), "sleeping", milliseconds(10000))) << slurp(path("err"));
    fs::remove_all(path("gone"));
    ASSERT_TRUE(c.wait(milliseconds(20000)));
    EXPECT_EQ(c.exit_status(), 1);
    EXPECT_EQ(slurp(path("out")), "sleeping\ndone\n");
    EXPECT_EQ(
        slurp(path("err")),
        dir ? "wzvm: error: cannot write the cpu profile: cannot write gone/wzvm-cpu.pb.gz: No such file or "
              "directory\nwzvm: error: cannot write the instructions profile: cannot write "
              "gone/wzvm-instructions.pb.gz: No such file or directory\n"
            : "wzvm: error: cannot write the cpu profile: cannot write gone/p.pb.gz: No such file or "
              "directory\n");
    EXPECT_FALSE(fs::exists(path("gone")));
  }
}

// ---- The guest's stdout ----

// A pipe whose reader has gone: the guest's fd_write gets WASI's EPIPE (64),
// not a SIGPIPE that would kill wzvm, and the profiles are written. A closed
// stdout: EBADF (8).
TEST_F(Faults, BrokenOrClosedStdoutIsAnErrorForTheGuest) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  close(p[0]);
  for (bool closed : {false, true}) {
    SCOPED_TRACE(closed ? "closed" : "broken pipe");
    fs::remove_all(path("prof"));
    Child::Stdio io;
    io.err = path("err");
    if (closed) io.close_out = true;
    else io.out_fd = p[1];
    Child c(dir_, {"--profile=cpu,instructions", "--profile-out", "prof", kFaults, "stdout"}, io);
    ASSERT_TRUE(c.wait(milliseconds(30000)));
    const std::string err = slurp(path("err"));
    EXPECT_EQ(c.exit_status(), 0) << err;
    EXPECT_THAT(err,
                HasSubstr(closed ? "fd_write: errno 8 after 0 writes" : "fd_write: errno 64 after 0 writes"));
    EXPECT_THAT(err, HasSubstr("cpu profile written to prof/wzvm-cpu.pb.gz"));
    EXPECT_GT(pprof_total(slurp(path("prof/wzvm-instructions.pb.gz"))), 100000);
    perftools::profiles::Profile cpu = test::read_profile(path("prof/wzvm-cpu.pb.gz"));
    EXPECT_EQ(cpu.sample_type_size(), 3);
  }
  close(p[1]);
}

// ---- SIGTERM ----

// A guest waiting in poll_oneoff when SIGTERM comes: it stops when the call
// returns, at its next safe point (so "done" is never printed), and the
// profile, with the host call in it, is written; status 128 + 15.
TEST_F(Faults, SigtermDuringAHostCallWritesTheProfile) {
  Child c(dir_, {"--profile=cpu", "--profile-out", "p.pb.gz", kFaults, "sleep", "500"}, path("out"),
          path("err"));
  ASSERT_TRUE(wait_for_text(path("out"), "sleeping", milliseconds(10000))) << slurp(path("err"));
  ASSERT_TRUE(wait_main_thread_sleeps(c.pid(), milliseconds(10000)));
  kill(c.pid(), SIGTERM);
  ASSERT_TRUE(c.wait(milliseconds(20000)));
  const std::string err = slurp(path("err"));
  EXPECT_EQ(c.exit_status(), 143) << err;
  EXPECT_EQ(slurp(path("out")), "sleeping\n");
  EXPECT_THAT(err, HasSubstr("SIGTERM: stopping the guest to write the profiles"));
  EXPECT_THAT(err, HasSubstr("cpu profile written to p.pb.gz"));
  perftools::profiles::Profile p = test::read_profile(path("p.pb.gz"));
  bool host_call = false;
  for (const auto& f : p.function())
    if (p.string_table(f.name()) == "wasi_snapshot_preview1.poll_oneoff") host_call = true;
  EXPECT_TRUE(host_call);
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"err", "out", "p.pb.gz"}));
}

// SIGTERM again and again, from while the guest runs to while its profiles
// (megabytes: pprof and folded, over half a second to write) are written.
// The first SIGTERM comes early in the guest's run, later (the guest's
// rounds are spread over at least 1.5 s, so it is still running, most
// likely asleep in poll_oneoff), or once the guest has printed its checksum
// at its end. While it runs, the first stops it (143); at its end, it comes
// too late to change the status (0), or just in time (143). None cuts the
// writing short: each file is the earlier run's, untouched, or a whole new
// profile, and no temporary file is left. (Timed from the start alone, as
// this test once was, a loaded machine could wake the test after an
// unspread guest's 0.1 s were over: no signal reached it.)
TEST_F(Faults, SigtermWhileTheProfilesAreWrittenLeavesNoPartialFile) {
  const std::vector<std::string> flags = {"--profile=instructions", "--profile-format=pprof,folded",
                                          "--profile-out", "o"};
  auto args = [&](const std::vector<std::string>& guest) {
    std::vector<std::string> a = flags;
    a.push_back(kFaults);
    a.insert(a.end(), guest.begin(), guest.end());
    return a;
  };
  {
    Child first(dir_, args({"spread", "1"}), {});
    ASSERT_TRUE(first.wait(milliseconds(60000)));
    ASSERT_EQ(first.exit_status(), 0);
  }
  const std::string old_pb = slurp(path("o/wzvm-instructions.pb.gz")),
                    old_folded = slurp(path("o/wzvm-instructions.folded"));
  ASSERT_GT(pprof_total(old_pb), 0);
  ASSERT_EQ(folded_total(old_folded), pprof_total(old_pb));

  const std::string checksum = "1269249403\n";
  struct Moment {
    const char* name;
    int delay_ms;       // after SIGTERM is blocked
    bool after_output;  // ... or once the guest has printed its checksum
  };
  for (const Moment& m : {Moment{"30 ms into the run", 30, false}, Moment{"500 ms into the run", 500, false},
                          Moment{"at the guest's end", 0, true}}) {
    SCOPED_TRACE(std::string("first SIGTERM ") + m.name);
    // The earlier run's files, as they were.
    std::ofstream(path("o/wzvm-instructions.pb.gz"), std::ios::binary) << old_pb;
    std::ofstream(path("o/wzvm-instructions.folded"), std::ios::binary) << old_folded;
    Child c(dir_, args({"spread", "200", "1500"}), path("out"), path("err"));
    ASSERT_TRUE(wait_sigterm_blocked(c.pid(), milliseconds(10000)));
    if (m.after_output)
      ASSERT_TRUE(wait_for_text(path("out"), checksum, milliseconds(60000))) << slurp(path("err"));
    else std::this_thread::sleep_for(milliseconds(m.delay_ms));
    for (auto end = Clock::now() + milliseconds(60000); !c.wait(milliseconds(40)) && Clock::now() < end;)
      kill(c.pid(), SIGTERM);
    ASSERT_FALSE(c.running());
    const std::string err = slurp(path("err"));
    if (m.after_output) {
      EXPECT_TRUE(c.exit_status() == 0 || c.exit_status() == 143)
          << c.exit_status() << " " << c.signal() << "\n"
          << err;
    } else {
      EXPECT_EQ(c.exit_status(), 143) << c.signal() << "\n" << err;
      EXPECT_EQ(slurp(path("out")), "");
    }
    EXPECT_EQ(entries(path("o")),
              (std::vector<std::string>{"wzvm-instructions.folded", "wzvm-instructions.pb.gz"}))
        << err;
    const std::string pb = slurp(path("o/wzvm-instructions.pb.gz")),
                      folded = slurp(path("o/wzvm-instructions.folded"));
    // wzvm exited by itself: both files are new, whole, and agree.
    EXPECT_TRUE(pb != old_pb && folded != old_folded)
        << "an earlier file was left although wzvm said it wrote it\n"
        << err;
    EXPECT_GT(pprof_total(pb), 0);
    EXPECT_EQ(folded_total(folded), pprof_total(pb));
    EXPECT_THAT(err, HasSubstr("instructions profile written to o/wzvm-instructions.folded"));
    if (c.exit_status() == 0) EXPECT_EQ(slurp(path("out")), checksum);
  }
}

// ---- The live /debug/pprof/ server ----

// A TCP connection to 127.0.0.1:`port`, or -1.
int connect_local(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The status code of the answer on `fd`; 0 when the connection ends (closed
// or reset) before a status line, kNoAnswer when `limit` passes first.
constexpr int kNoAnswer = -2;
int read_status(int fd, milliseconds limit) {
  timeval tv{static_cast<time_t>(limit.count() / 1000),
             static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[4096];
  ssize_t n = 0;
  while (got.size() < 12 && (n = recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<size_t>(n));
  if (got.size() >= 12 && got.starts_with("HTTP/1.1 ")) return std::atoi(got.c_str() + 9);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? kNoAnswer : 0;
}

// Sends `req` on a new connection and returns the answer's status: 0 as
// read_status, or when the server cut the sending short; -1 when nothing
// listens any more.
int request(int port, const std::string& req, milliseconds limit) {
  int fd = connect_local(port);
  if (fd < 0) return -1;
  int status = send_all(fd, req) ? read_status(fd, limit) : read_status(fd, milliseconds(200));
  close(fd);
  return status;
}

// The peak resident memory of a running process (VmHWM), in KiB; 0 once it is gone.
long vm_hwm_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
  return 0;
}

// VmHWM of `c`, read every 20 ms until it exits: the last value read is
// the peak of nearly the whole run.
class HwmWatch {
 public:
  explicit HwmWatch(Child& c)
      : thread_([this, pid = c.pid()] {
          while (!stop_) {
            if (long v = vm_hwm_kib(pid)) peak_ = std::max(peak_.load(), v);
            std::this_thread::sleep_for(milliseconds(20));
          }
        }) {}
  ~HwmWatch() { stop(); }
  long stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_{0};
  std::thread thread_;
};

// The live server while the guest computes, under clients that misbehave
// every way at once: many at once, slow ones that never finish their
// headers, idle ones, a 1 MB and a 64 MB header line, malformed requests,
// a POST announcing a gigabyte, connections dropped or reset at once. What
// must hold: the guest's output and status are those of a run without the
// server; wzvm exits promptly when the guest is done, though slow clients
// are still connected (stopping cuts them; httplib alone waited for them);
// a slow client is cut after its 5 s (kRequestTime in
// profiler/http_httplib.cc); well-formed requests keep being answered; and
// memory stays bounded: at most 64 connections, each read into memory up to
// 64 KiB (with a string's doubling, 128 KiB), 16 workers' stacks and a
// response each: some 10 MiB, so 32 MiB over the run without the server
// leaves room for malloc's per-thread arenas. Before the bounds, one 200 MB
// header line grew wzvm by 260 MB, and slow clients held its exit for as
// long as they kept sending.
TEST_F(Faults, LivePprofServerUnderHostileClients) {
  // The run without the server goes on at the same time, on the same
  // machine (the load slows both): its output, status and peak memory.
  // The guest lasts 10 s: a slow client is cut 5 s after a worker takes it
  // up, and on a loaded machine the workers take the first ones up late
  // (at 7 s, a cut sometimes came after the guest's last second).
  auto run = [&](const std::string& name, bool server) {
    std::vector<std::string> a = {"--profile=cpu", "--profile-out", name + ".pb.gz", kFaults,
                                  "spread",        "3000",          "10000"};
    if (server) a.insert(a.begin(), {"--pprof-addr", "127.0.0.1:0"});
    Child::Stdio io;
    io.out = path(name + ".out");
    io.err = path(name + ".err");
    // In the sanitizer build, freed memory waits in ASan's quarantine (256
    // MB by default) before it is used again, so the peak would measure the
    // traffic, not what the server holds. (Other builds ignore this.)
    const char* asan = std::getenv("ASAN_OPTIONS");
    io.env = {std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") + "quarantine_size_mb=4"};
    return std::make_unique<Child>(dir_, a, io);
  };
  std::unique_ptr<Child> base = run("base", false), c = run("served", true);
  HwmWatch base_hwm(*base), hwm(*c);
  ASSERT_TRUE(wait_for_text(path("served.err"), "/debug/pprof/ (e.g.", milliseconds(10000)))
      << slurp(path("served.err"));
  std::smatch m;
  const std::string err0 = slurp(path("served.err"));
  ASSERT_TRUE(std::regex_search(err0, m, std::regex("serving pprof at http://127\\.0\\.0\\.1:(\\d+)/")))
      << err0;
  const int port = std::stoi(m[1]);

  std::atomic<bool> stop{false};
  std::mutex mu;
  // When each well-formed request was answered, and how; when each slow
  // connection was made and when the server cut it. Stopping the server
  // when the guest is done cuts what is still open, so what matters is
  // what happened before.
  std::vector<std::pair<Clock::time_point, int>> statuses;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> slow_cuts;
  std::atomic<int> oversized_answered{0}, big_line_mb{0}, malformed_hung{0};
  std::vector<std::thread> clients;
  // However the test ends, the clients stop and are joined.
  struct Join {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Join() {
      stop = true;
      for (std::thread& t : threads)
        if (t.joinable()) t.join();
    }
  } join{stop, clients};
  // Oversized header lines: 1 MB, and one of 64 MB. The server stops reading
  // at 64 KiB, so the sender is cut off long before the end.
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&, i] {
      const size_t mb = i == 0 ? 64 : 1;
      const std::string chunk(1 << 20, 'a');
      for (int round = 0; round < 3 && !stop; ++round) {
        int fd = connect_local(port);
        if (fd < 0) return;
        size_t sent = 0;
        bool ok = send_all(fd, "GET /debug/pprof/ HTTP/1.1\r\nX-Big: ");
        while (ok && sent < mb) {
          ok = send_all(fd, chunk);
          sent += ok;
        }
        if (ok) ok = send_all(fd, "\r\n\r\n");
        int st = read_status(fd, milliseconds(10000));
        if (st == 0 || st == 400 || st == 503) ++oversized_answered;
        if (mb == 64) big_line_mb = std::max<int>(big_line_mb, static_cast<int>(sent));
        close(fd);
      }
    });
  // (a head start, so that they meet free workers)
  std::this_thread::sleep_for(milliseconds(300));
  // Slow: a request line, then a byte of header every 100 ms, never the
  // end; again when the server has cut the connection.
  for (int i = 0; i < 10; ++i)
    clients.emplace_back([&] {
      while (!stop) {
        int fd = connect_local(port);
        if (fd < 0) return;
        const auto t0 = Clock::now();
        bool cut = !send_all(fd, "GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\nX-Slow: ");
        for (pollfd p{fd, POLLIN, 0}; !stop && !cut;) {
          std::this_thread::sleep_for(milliseconds(100));
          cut = poll(&p, 1, 0) == 1 || !send_all(fd, "a");
        }
        // 400: the request was cut at its deadline (503: refused, the
        // server had too many connections then).
        if (!stop && read_status(fd, milliseconds(1000)) == 400) {
          std::lock_guard lock(mu);
          slow_cuts.emplace_back(t0, Clock::now());
        }
        close(fd);
      }
    });
  // Idle: connected, never a byte.
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&] {
      while (!stop) {
        int fd = connect_local(port);
        if (fd < 0) return;
        pollfd p{fd, POLLIN, 0};
        while (!stop && poll(&p, 1, 50) == 0) {
        }
        close(fd);
      }
    });
  // Malformed requests: each gets an error status or a closed connection, never a hang.
  clients.emplace_back([&] {
    const std::vector<std::string> bad = {
        "GARBAGE\r\n\r\n",
        "GET\r\n\r\n",
        std::string("\x00\xff\x16\x03\x01\x02\x00", 7) + "\r\n\r\n",  // binary, a TLS hello's start
        "GET /debug/pprof/ HTTP/9.9\r\n\r\n",
        "GET /" + std::string(100000, 'p') + " HTTP/1.1\r\n\r\n",
        "GET /debug/pprof/ HTTP/1.1\r\n" +
            [] {
              std::string h;
              for (int i = 0; i < 20000; ++i) h += "X-" + std::to_string(i) + ": y\r\n";
              return h;
            }() +
            "\r\n",
        "POST /debug/pprof/ HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n" + std::string(1 << 20, 'b'),
        "GET /debug/pprof/profile?seconds=-1 HTTP/1.1\r\n\r\n",
        "GET /debug/pprof/%zz HTTP/1.1\r\n\r\n",
    };
    for (int round = 0; round < 3 && !stop; ++round)
      for (const std::string& req : bad)
        if (request(port, req, milliseconds(10000)) == kNoAnswer) ++malformed_hung;
  });
  // Connections opened and dropped at once, half of them with a reset.
  clients.emplace_back([&] {
    for (int i = 0; i < 1000 && !stop; ++i) {
      int fd = connect_local(port);
      if (fd < 0) return;
      if (i % 2) {
        linger l{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      }
      close(fd);
    }
  });
  // Many well-formed requests at once, round after round.
  for (int i = 0; i < 24; ++i)
    clients.emplace_back([&, i] {
      static const char* const kPaths[] = {"/debug/pprof/", "/debug/pprof/profile?seconds=0.2&debug=1",
                                           "/debug/pprof/heap", "/debug/pprof/nope"};
      for (int round = 0; round < 4 && !stop; ++round) {
        int st = request(port, std::string("GET ") + kPaths[(i + round) % 4] + " HTTP/1.1\r\nHost: x\r\n\r\n",
                         milliseconds(15000));
        if (st < 0) return;  // the guest is done
        std::lock_guard lock(mu);
        statuses.emplace_back(Clock::now(), st);
      }
    });

  // The guest's checksum is its last output: from then on, wzvm writes the
  // profile, stops the server and exits. Seen here a few ms later: what
  // happened less than a second before is counted as part of the end.
  ASSERT_TRUE(wait_for_text(path("served.out"), "\n", milliseconds(60000)));
  const auto guest_done = Clock::now(), end_began = guest_done - milliseconds(1000);
  const bool exited = c->wait(milliseconds(10000));
  const double exit_after =
      std::chrono::duration<double>((exited ? c->ended() : Clock::now()) - guest_done).count();
  EXPECT_TRUE(exited) << "wzvm still runs " << exit_after << " s after the guest was done";
  if (!exited) {
    kill(c->pid(), SIGKILL);
    c->wait(milliseconds(10000));
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(base->wait(milliseconds(60000)));
  const long peak = hwm.stop(), base_peak = base_hwm.stop();

  EXPECT_EQ(base->exit_status(), 0) << slurp(path("base.err"));
  EXPECT_EQ(c->exit_status(), 0) << slurp(path("served.err"));
  EXPECT_EQ(slurp(path("served.out")), slurp(path("base.out")));
  EXPECT_THAT(slurp(path("base.out")), ::testing::MatchesRegex("[0-9]+\n"));
  EXPECT_GT(test::read_profile(path("served.pb.gz")).sample_size(), 0);
  if (exited) {
    EXPECT_LT(exit_after, 4.0) << "wzvm exited " << exit_after << " s after the guest was done";
  }
  EXPECT_GT(base_peak, 0);
  EXPECT_LT(peak, base_peak + 32 * 1024)
      << "VmHWM " << peak << " KiB under load, " << base_peak << " KiB without the server";
  // The 64 MB line was cut off: the server read 64 KiB of it, and sending
  // stopped when the socket buffers were full and the connection closed.
  EXPECT_LT(big_line_mb.load(), 64);
  EXPECT_EQ(oversized_answered.load(), 12);
  EXPECT_EQ(malformed_hung.load(), 0);
  // Slow clients are cut at their deadline (5 s after a worker took them
  // up), not served for ever.
  int cuts = 0;
  for (const auto& [made, cut] : slow_cuts) {
    if (cut >= end_began) continue;
    ++cuts;
    const double lived = std::chrono::duration<double>(cut - made).count();
    EXPECT_GE(lived, 4.5);
    EXPECT_LT(lived, 10.0);
  }
  EXPECT_GT(cuts, 0) << "no slow client was cut while the guest ran";
  // Every well-formed request got an answer while the guest ran: 200, 404
  // for /nope, 501 for heap (no --profile=mem), 409 for a second CPU window
  // at once, 503 past the connection cap.
  ASSERT_FALSE(statuses.empty());
  int ok = 0;
  for (const auto& [when, st] : statuses) {
    if (when >= end_began) continue;
    EXPECT_TRUE(st == 200 || st == 404 || st == 409 || st == 501 || st == 503) << st;
    ok += st == 200;
  }
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace wzvm::cli_test
