// The sandbox under a check-vs-use race: while a host thread keeps swapping a
// directory inside the preopen with a symlink that leads outside (one atomic
// renameat2(RENAME_EXCHANGE) per swap), lookups through that name must reach
// the inside file or be refused, and never read the outside one. Run against
// the resolver API directly (both resolvers, open and the parent-fd + name
// split the entry operations use) and through a guest (testdata/wasi/race.c).
// A third race moves a directory out of the sandbox while a lookup is inside
// it and about to climb back with `..`. Each test also checks that both
// outcomes happened, so the race was real.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "tests/scratch_dir.h"
#include "vm/module.h"
#include "vm/runtime.h"
#include "wasi/sandbox.h"
#include "wasi/wasi.h"

namespace wzvm::wasi {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string read_fd(int fd) {
  char buf[16] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::string(buf, n) : std::string();
}

// ROOT/outside/f = "SECRET"; ROOT/sb/dir/f = "inside"; ROOT/sb/swap is a
// symlink to the outside directory (relative or absolute). swap() exchanges
// sb/dir and sb/swap atomically, so "dir" is one or the other at every instant.
struct RaceTree {
  std::string root, sb;
  int sb_fd = -1;
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper;

  explicit RaceTree(bool absolute_link) {
    root = test::scratch_dir("wzvm_race_");
    sb = root + "/sb";
    fs::create_directories(root + "/outside");
    fs::create_directories(sb + "/dir");
    std::ofstream(root + "/outside/f") << "SECRET";
    std::ofstream(sb + "/dir/f") << "inside";
    std::ofstream(sb + "/file") << "inside";
    fs::create_symlink(absolute_link ? root + "/outside" : "../outside", sb + "/swap");
    fs::create_symlink(absolute_link ? root + "/outside/f" : "../outside/f", sb + "/fswap");
    sb_fd = open(sb.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    swapper = std::thread([this] {
      while (!stop.load(std::memory_order_relaxed)) {
        // A directory and a final file name, each swapped with a link out.
        if (renameat2(sb_fd, "dir", sb_fd, "swap", RENAME_EXCHANGE) == 0) swaps.fetch_add(1);
        renameat2(sb_fd, "file", sb_fd, "fswap", RENAME_EXCHANGE);
      }
    });
  }
  ~RaceTree() {
    stop = true;
    swapper.join();
    close(sb_fd);
    fs::remove_all(root);
  }
};

// The race window of a check-then-use bug is a few instructions wide: a
// userspace walk that checked a name with fstatat and then opened it following
// links read the outside file about once in 3,000 lookups here. Hence many
// lookups, not just "both outcomes seen".
struct Outcomes {
  long inside = 0, secret = 0, refused = 0, other = 0;
  long lookups() const { return inside + secret + refused + other; }
  bool enough() const { return inside >= 200 && refused >= 200 && lookups() >= 30000; }
};

void classify(int fd, Outcomes& o) {
  std::string s = read_fd(fd);
  if (s == "inside") ++o.inside;
  else if (s == "SECRET") ++o.secret;
  else ++o.other;
}

// Loops `body` until both outcomes were seen often enough, or 60 s pass.
template <typename F>
Outcomes race(F body) {
  Outcomes o;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!o.enough() && Clock::now() < deadline) body(o);
  return o;
}

class RaceResolvers : public ::testing::TestWithParam<std::tuple<Resolver, bool>> {};
INSTANTIATE_TEST_SUITE_P(Both, RaceResolvers,
                         ::testing::Combine(::testing::Values(Resolver::Kernel, Resolver::Userspace),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == Resolver::Kernel ? "Kernel"
                                                                                          : "Userspace") +
                                  (std::get<1>(info.param) ? "AbsoluteLink" : "RelativeLink");
                         });

// Sandbox::open through a directory that is being swapped (middle component).
TEST_P(RaceResolvers, OpenThroughSwappedDirectory) {
  RaceTree t(std::get<1>(GetParam()));
  Sandbox sandbox(std::get<0>(GetParam()));
  Outcomes o = race([&](Outcomes& o) {
    Errno err;
    int fd = sandbox.open(t.sb_fd, "dir/f", O_RDONLY, 0, /*follow=*/true, err);
    if (fd >= 0) {
      classify(fd, o);
      close(fd);
    } else if (err == Errno::enotcapable) {
      ++o.refused;
    } else {
      ++o.other;  // e.g. ENOENT while a swap is in flight
    }
  });
  EXPECT_EQ(o.secret, 0) << "an open reached the file outside the sandbox";
  EXPECT_TRUE(o.enough()) << "the race never ran: inside " << o.inside << ", refused " << o.refused
                          << ", other " << o.other << ", swaps " << t.swaps.load();
}

// The last name itself is swapped with a link out, and the guest asked to follow.
TEST_P(RaceResolvers, OpenSwappedFinalName) {
  RaceTree t(std::get<1>(GetParam()));
  Sandbox sandbox(std::get<0>(GetParam()));
  Outcomes o = race([&](Outcomes& o) {
    Errno err;
    int fd = sandbox.open(t.sb_fd, "file", O_RDONLY, 0, /*follow=*/true, err);
    if (fd >= 0) {
      classify(fd, o);
      close(fd);
    } else if (err == Errno::enotcapable) {
      ++o.refused;
    } else {
      ++o.other;
    }
  });
  EXPECT_EQ(o.secret, 0) << "an open reached the file outside the sandbox";
  EXPECT_TRUE(o.enough()) << "the race never ran: inside " << o.inside << ", refused " << o.refused
                          << ", other " << o.other;
}

// Entry operations: resolve() gives a parent fd and a name, used later with
// following off; a swap between the two steps must not lead outside either.
TEST_P(RaceResolvers, ResolveThenUseParent) {
  RaceTree t(std::get<1>(GetParam()));
  Sandbox sandbox(std::get<0>(GetParam()));
  Outcomes o = race([&](Outcomes& o) {
    Target target;
    Errno err = sandbox.resolve(t.sb_fd, "dir/f", /*follow=*/true, target);
    if (err == Errno::enotcapable) {
      ++o.refused;
      return;
    }
    if (err != Errno::success) {
      ++o.other;
      return;
    }
    // What path_filestat_get, path_unlink_file and friends do with a Target.
    int fd = openat(target.parent.get(), target.name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      ++o.other;
      return;
    }
    classify(fd, o);
    close(fd);
  });
  EXPECT_EQ(o.secret, 0) << "a resolved parent lay outside the sandbox";
  EXPECT_TRUE(o.enough()) << "the race never ran: inside " << o.inside << ", refused " << o.refused
                          << ", other " << o.other;
}

// The `..` race: the lookup enters sb/dir/inner/a/b/c, a host thread moves
// inner out of the sandbox (to ROOT/outside/inner), and the lookup's `..`s then
// climb from there: "dir/inner/a/b/c/../../../../../file" would end at
// ROOT/file ("SECRET") instead of sb/file ("inside"). openat2 notices the
// rename and fails; the userspace walk pops its own stack of directory fds and
// never asks the kernel for `..`. (The deep path widens the window: a walk
// that counted depth and followed the kernel's `..` escaped in about 1% of
// the lookups here, against a few in 100,000 with "dir/inner/../../file".)
TEST(SandboxRace, DotDotAfterDirectoryMovedOut) {
  for (Resolver resolver : {Resolver::Kernel, Resolver::Userspace}) {
    const std::string root = test::scratch_dir("wzvm_race_"), sb = root + "/sb";
    fs::create_directories(sb + "/dir/inner/a/b/c");
    fs::create_directories(root + "/outside");
    std::ofstream(root + "/file") << "SECRET";
    std::ofstream(sb + "/file") << "inside";
    int sb_fd = open(sb.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int dir_fd = open((sb + "/dir").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int out_fd = open((root + "/outside").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_TRUE(sb_fd >= 0 && dir_fd >= 0 && out_fd >= 0);
    std::atomic<bool> stop{false};
    std::thread mover([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        renameat(dir_fd, "inner", out_fd, "inner");
        renameat(out_fd, "inner", dir_fd, "inner");
      }
    });
    Sandbox sandbox(resolver);
    Outcomes o;
    long missing = 0;  // inner was outside when the lookup came by: ENOENT
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!(o.inside >= 200 && missing >= 200 && o.lookups() >= 30000) && Clock::now() < deadline) {
      Errno err;
      int fd = sandbox.open(sb_fd, "dir/inner/a/b/c/../../../../../file", O_RDONLY, 0, /*follow=*/false, err);
      if (fd >= 0) {
        classify(fd, o);
        close(fd);
      } else {
        ++o.other;
        if (err == Errno::enoent) ++missing;
      }
    }
    stop = true;
    mover.join();
    close(sb_fd);
    close(dir_fd);
    close(out_fd);
    fs::remove_all(root);
    const char* name = resolver == Resolver::Kernel ? "kernel" : "userspace";
    EXPECT_EQ(o.secret, 0) << name << ": a `..` climbed out of the sandbox";
    EXPECT_GE(o.inside, 200) << name;
    EXPECT_GE(missing, 200) << name << ": the mover never ran";
  }
}

// The same through a guest: wasi-libc's open() -> path_open, host thread swapping.
TEST(WasiRace, GuestNeverReadsOutside) {
  for (Resolver resolver : {Resolver::Kernel, Resolver::Userspace}) {
    RaceTree t(/*absolute_link=*/false);
    std::string bytes = slurp(std::string(WZVM_TESTDATA_DIR) + "/wasi/race.wasm");
    auto m = vm::load_module(std::vector<uint8_t>(bytes.begin(), bytes.end()));
    ASSERT_TRUE(m);
    char out_path[] = "/tmp/wzvm_race_out_XXXXXX";
    int out = mkstemp(out_path);
    ASSERT_GE(out, 0);
    Config cfg;
    cfg.args = {"race.wasm", "/sb/dir/f"};
    cfg.preopens.push_back(Preopen::dir(t.sb, "/sb"));
    cfg.stdin_fd = -1;
    cfg.stdout_fd = cfg.stderr_fd = out;
    cfg.resolver = resolver;
    auto w = Wasi::create(cfg);
    ASSERT_TRUE(w);
    vm::Store store;
    auto imports = (*w)->imports_for(store, **m);
    ASSERT_TRUE(imports);
    auto inst = store.instantiate(*m, *imports);
    ASSERT_TRUE(inst);
    std::vector<vm::Value> results;
    vm::Trap trap = store.invoke((*inst)->exported_func("_start"), {}, results);
    close(out);
    std::string text = slurp(out_path);
    unlink(out_path);
    const char* name = resolver == Resolver::Kernel ? "kernel" : "userspace";
    EXPECT_TRUE(!trap || (trap.code == vm::TrapCode::Exit && trap.exit_code == 0))
        << name << ": " << trap.message << text;
    EXPECT_THAT(text, ::testing::StartsWith("inside=many secret=0 refused=many\n")) << name;
  }
}

}  // namespace
}  // namespace wzvm::wasi
