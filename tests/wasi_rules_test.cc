// WASI preview1 rules that the WASI testsuite (ctest's wasi-testsuite) checks,
// one test per rule, each calling the host functions directly on a Wasi whose
// preopen "/" is a fresh host directory, under both sandbox resolvers. The
// host side is then inspected to see what the call really did.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/scratch_dir.h"
#include "wasi/wasi.h"

namespace wzvm::wasi {
namespace {

vm::Value i32(uint32_t v) { return vm::Value::from_i32(v); }
vm::Value i64(uint64_t v) { return vm::Value::from_i64(v); }

constexpr uint32_t kRoot = 3;  // the preopen "/"

class WasiRules : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    root_ = test::scratch_dir("wzvm_rules_");
    ASSERT_FALSE(root_.empty());
    Config cfg;
    cfg.preopens = {Preopen::dir(root_, "/")};
    cfg.resolver = GetParam();
    extra(cfg);
    auto w = Wasi::create(cfg);
    ASSERT_TRUE(w) << w.error().message;
    wasi_ = std::move(*w);
    mem_.assign(1 << 16, 0);
  }
  virtual void extra(Config&) {}

  // Copies `s` into guest memory; returns its address (its length is s.size()).
  uint32_t put(std::string_view s) {
    uint32_t at = next_;
    std::memcpy(mem_.data() + at, s.data(), s.size());
    next_ += static_cast<uint32_t>(s.size() + 7) & ~7u;
    return at;
  }
  uint32_t scratch() { return put(std::string(64, '\0')); }
  template <class T>
  T load(uint32_t at) const {
    T v;
    std::memcpy(&v, mem_.data() + at, sizeof v);
    return v;
  }

  Errno call(Errno (Wasi::*fn)(Call&), std::vector<vm::Value> args) {
    Call c{GuestMemory(mem_.data(), mem_.size()), args, std::nullopt, nullptr, {}};
    return (wasi_.get()->*fn)(c);
  }

  // path_open(dirfd, 0, path, oflags, base, inheriting, 0): the new fd, or the errno.
  Errno open(uint32_t dir, std::string_view path, uint32_t oflags, uint64_t base, uint64_t inheriting,
             uint32_t& fd) {
    uint32_t p = put(path), out = scratch();
    Errno e = call(&Wasi::path_open, {i32(dir), i32(0), i32(p), i32(uint32_t(path.size())), i32(oflags),
                                      i64(base), i64(inheriting), i32(0), i32(out)});
    fd = load<uint32_t>(out);
    return e;
  }
  // fd_fdstat_get: filetype, rights base, rights inheriting.
  void fdstat(uint32_t fd, uint8_t& type, uint64_t& base, uint64_t& inheriting) {
    uint32_t out = scratch();
    ASSERT_EQ(call(&Wasi::fd_fdstat_get, {i32(fd), i32(out)}), Errno::success);
    type = mem_[out];
    base = load<uint64_t>(out + 8);
    inheriting = load<uint64_t>(out + 16);
  }
  Errno link(std::string_view from, std::string_view to) {
    uint32_t f = put(from), t = put(to);
    return call(&Wasi::path_link, {i32(kRoot), i32(0), i32(f), i32(uint32_t(from.size())), i32(kRoot), i32(t),
                                   i32(uint32_t(to.size()))});
  }
  Errno symlink(std::string_view target, std::string_view name) {
    uint32_t t = put(target), n = put(name);
    return call(&Wasi::path_symlink,
                {i32(t), i32(uint32_t(target.size())), i32(kRoot), i32(n), i32(uint32_t(name.size()))});
  }

  bool host_exists(const std::string& name) const {
    struct stat st;
    return lstat((root_ + "/" + name).c_str(), &st) == 0;
  }
  void host_file(const std::string& name) { std::ofstream(root_ + "/" + name) << "data"; }

  std::string root_;
  std::unique_ptr<Wasi> wasi_;
  std::vector<uint8_t> mem_;
  uint32_t next_ = 64;
};

INSTANTIATE_TEST_SUITE_P(Resolvers, WasiRules, ::testing::Values(Resolver::Kernel, Resolver::Userspace),
                         [](const auto& info) {
                           return info.param == Resolver::Kernel ? "Kernel" : "Userspace";
                         });

// path_open's access mode comes from the rights that need one: fd_write,
// fd_allocate and fd_filestat_set_size ask for write access; fd_datasync and
// fd_sync do not (fdatasync works on a read-only fd on Linux). So a directory
// reopened with the rights fdstat reports for it (they include fd_datasync)
// is a directory fd, as Rust's std and the testsuite's helpers do it; asking
// to write to a directory stays EISDIR, also with oflags::directory.
// (testsuite: every Rust test's root_directory(), path_open_preopen)
TEST_P(WasiRules, PathOpenOfADirectoryWithItsOwnRightsIsNotIsdir) {
  uint8_t type;
  uint64_t base, inheriting;
  fdstat(kRoot, type, base, inheriting);
  ASSERT_EQ(type, filetype::directory);
  ASSERT_TRUE(base & rights::fd_datasync) << "the rule is about rights a directory has";

  uint32_t fd = 0;
  EXPECT_EQ(open(kRoot, ".", 0, base, inheriting, fd), Errno::success);
  uint8_t t2;
  uint64_t b2, i2;
  fdstat(fd, t2, b2, i2);
  EXPECT_EQ(t2, filetype::directory);
  EXPECT_EQ(b2, base & rights::directory);

  EXPECT_EQ(open(kRoot, ".", oflags::directory, base, inheriting, fd), Errno::success);
  EXPECT_EQ(open(kRoot, ".", oflags::directory, 0, 0, fd), Errno::success);
  EXPECT_EQ(open(kRoot, ".", oflags::directory, rights::fd_read, 0, fd), Errno::success);
  EXPECT_EQ(open(kRoot, ".", oflags::directory, rights::fd_read | rights::fd_write, 0, fd), Errno::eisdir);
  EXPECT_EQ(open(kRoot, ".", 0, rights::fd_write, 0, fd), Errno::eisdir);

  // A file opened with fd_datasync alone is read-only: the write right is not there.
  host_file("f");
  ASSERT_EQ(open(kRoot, "f", 0, rights::fd_datasync | rights::fd_read, 0, fd), Errno::success);
  EXPECT_EQ(call(&Wasi::fd_datasync, {i32(fd)}), Errno::success);
  uint32_t iov = scratch(), n = scratch();
  EXPECT_EQ(call(&Wasi::fd_write, {i32(fd), i32(iov), i32(0), i32(n)}), Errno::enotcapable);
}

// sock_accept, sock_recv, sock_send and sock_shutdown on an fd that is not a
// socket are ENOTSOCK, as shutdown(2) and friends say, not ENOTCAPABLE from
// the rights check (a file never holds the sock_* rights). An fd that does
// not exist stays EBADF. (testsuite: c/sock_shutdown-not_sock)
TEST_P(WasiRules, SockCallsOnAFileAreEnotsock) {
  host_file("f");
  uint32_t fd = 0;
  ASSERT_EQ(open(kRoot, "f", 0, rights::fd_read | rights::fd_write, 0, fd), Errno::success);
  uint32_t iov = scratch(), out = scratch(), flags = scratch();
  for (uint32_t f : {fd, uint32_t(kRoot)}) {
    EXPECT_EQ(call(&Wasi::sock_shutdown, {i32(f), i32(sdflags::rd)}), Errno::enotsock);
    EXPECT_EQ(call(&Wasi::sock_accept, {i32(f), i32(0), i32(out)}), Errno::enotsock);
    EXPECT_EQ(call(&Wasi::sock_recv, {i32(f), i32(iov), i32(0), i32(0), i32(out), i32(flags)}),
              Errno::enotsock);
    EXPECT_EQ(call(&Wasi::sock_send, {i32(f), i32(iov), i32(0), i32(0), i32(out)}), Errno::enotsock);
  }
  EXPECT_EQ(call(&Wasi::sock_shutdown, {i32(77), i32(sdflags::rd)}), Errno::ebadf);
}

class WasiRulesWithSocket : public WasiRules {
 protected:
  void extra(Config& cfg) override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair_), 0);
    cfg.preopens.push_back(Preopen::host_fd(pair_[0]));  // fd 4, owned by the Wasi
  }
  void TearDown() override { close(pair_[1]); }
  int pair_[2] = {-1, -1};
};
INSTANTIATE_TEST_SUITE_P(Resolvers, WasiRulesWithSocket, ::testing::Values(Resolver::Kernel));

// The ENOTSOCK rule leaves real sockets alone: shutdown works, and a
// connected socket still lacks sock_accept (ENOTCAPABLE, not ENOTSOCK).
TEST_P(WasiRulesWithSocket, SockCallsOnASocketStillWork) {
  uint32_t out = scratch();
  EXPECT_EQ(call(&Wasi::sock_accept, {i32(4), i32(0), i32(out)}), Errno::enotcapable);
  EXPECT_EQ(call(&Wasi::sock_shutdown, {i32(4), i32(sdflags::wr)}), Errno::success);
  char c;
  EXPECT_EQ(read(pair_[1], &c, 1), 0) << "the peer sees end of file after SHUT_WR";
}

// A trailing slash names a directory, and a hard link never is one. On the
// new name: ENOENT when nothing is there (Linux's linkat would drop the slash
// and create "link"), EEXIST when something is; on the source, a file with a
// slash is ENOTDIR. (testsuite: rust/path_link)
TEST_P(WasiRules, PathLinkWithATrailingSlashMakesNoLink) {
  host_file("file");
  EXPECT_EQ(link("file", "link/"), Errno::enoent);
  EXPECT_FALSE(host_exists("link")) << "no link may be created under the slash-less name";
  ASSERT_EQ(mkdir((root_ + "/dir").c_str(), 0755), 0);
  EXPECT_EQ(link("file", "dir/"), Errno::eexist);
  EXPECT_EQ(link("file", "file/"), Errno::eexist);
  EXPECT_EQ(link("file/", "other"), Errno::enotdir);
  EXPECT_FALSE(host_exists("other"));
  EXPECT_EQ(link("dir/", "other"), Errno::eperm);
  EXPECT_EQ(link("file", "link"), Errno::success);
  EXPECT_TRUE(host_exists("link"));
}

// A symlink whose text is absolute can never be followed inside the sandbox,
// so creating one is EPERM (what wasmtime answers; the testsuite requires an
// error). A relative text that climbs out is data and may still be written:
// following it is what the sandbox refuses. (testsuite: rust/symlink_create)
TEST_P(WasiRules, PathSymlinkToAnAbsolutePathIsRefused) {
  EXPECT_EQ(symlink("/", "l1"), Errno::eperm);
  EXPECT_EQ(symlink("/etc/passwd", "l2"), Errno::eperm);
  EXPECT_FALSE(host_exists("l1"));
  EXPECT_FALSE(host_exists("l2"));
  EXPECT_EQ(symlink("../outside", "l3"), Errno::success);
  char buf[64] = {};
  ASSERT_EQ(readlink((root_ + "/l3").c_str(), buf, sizeof buf - 1), 10);
  EXPECT_STREQ(buf, "../outside");
  uint32_t fd = 0;
  EXPECT_EQ(open(kRoot, "l3/x", 0, rights::fd_read, 0, fd), Errno::enotcapable)
      << "following it stays refused";
}

}  // namespace
}  // namespace wzvm::wasi
