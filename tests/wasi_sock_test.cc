// WASI sockets end to end: `wzvm --listen` / `--fd` hand a listening socket
// to testdata/wasi/echo.c (a TCP echo server on wasi-libc's accept/recv/send)
// or testdata/wasi/upcase_server.rs (Rust std's TcpListener), and this file
// is their client. Nothing here can hang: ports are chosen by the
// kernel (port 0, read back), every wait is a poll() with a deadline, and a
// wzvm still running at the deadline is killed and reported.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "tests/scratch_dir.h"

extern char** environ;

namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Generous: a loaded 2-core CI machine is slow, but a hang must still end.
constexpr auto kDeadline = std::chrono::seconds(60);

std::string echo_wasm() { return std::string(WZVM_TESTDATA_DIR) + "/wasi/echo.wasm"; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int remaining_ms(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

// A TCP listener on 127.0.0.1, port chosen by the kernel.
int loopback_listener(uint16_t& port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 8) != 0) return -1;
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// `wzvm ARGS...` in the background: stdout to a file, stderr to a pipe read
// line by line; `give` maps test fds to fd numbers in the child.
class Wzvm {
 public:
  Wzvm(const std::vector<std::string>& args, const std::vector<std::pair<int, int>>& give = {}) {
    char tmpl[] = "/tmp/wzvm_sock_XXXXXX";
    int out = mkostemp(tmpl, O_CLOEXEC);  // the child gets it as fd 1 only
    out_path_ = tmpl;
    int err[2];
    if (out < 0 || pipe2(err, O_CLOEXEC) != 0) return;
    err_ = err[0];
    std::vector<char*> argv{const_cast<char*>(WZVM_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out, 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    for (auto [from, to] : give) posix_spawn_file_actions_adddup2(&fa, from, to);  // dup2 clears CLOEXEC
    if (posix_spawn(&pid_, WZVM_BINARY, &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(out);
    close(err[1]);
  }
  ~Wzvm() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (err_ >= 0) close(err_);
    unlink(out_path_.c_str());
  }
  bool started() const { return pid_ > 0; }

  // The next line wzvm or the guest writes to stderr ("" at EOF or the deadline).
  std::string stderr_line(Clock::time_point deadline) {
    for (;;) {
      if (size_t nl = err_buf_.find('\n'); nl != std::string::npos) {
        std::string line = err_buf_.substr(0, nl);
        err_buf_.erase(0, nl + 1);
        err_all_ += line + "\n";
        return line;
      }
      pollfd p{err_, POLLIN, 0};
      if (poll(&p, 1, remaining_ms(deadline)) <= 0) return "";
      char buf[512];
      ssize_t n = read(err_, buf, sizeof buf);
      if (n <= 0) return "";
      err_buf_.append(buf, n);
    }
  }

  // The exit status, or -1 (after SIGKILL) if wzvm is still running at the deadline.
  int wait(Clock::time_point deadline) {
    for (;;) {
      int st;
      pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        // Whatever is left on stderr, for messages.
        for (std::string l; !(l = stderr_line(Clock::now() + std::chrono::seconds(1))).empty();) {
        }
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      if (Clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::string out() const { return slurp(out_path_); }
  const std::string& err() const { return err_all_; }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  std::string out_path_, err_buf_, err_all_;
};

// Connects to 127.0.0.1:port, sends `data`, shuts down its side and reads
// until the server closes, all non-blocking under one deadline (the server
// echoes while we still send, so neither side may wait for the other to finish).
bool echo_round_trip(uint16_t port, const std::string& data, std::string& got, Clock::time_point deadline,
                     std::string& why) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    why = std::string("connect: ") + strerror(errno);
    close(fd);
    return false;
  }
  size_t sent = 0;
  bool shut = false;
  got.clear();
  for (;;) {
    if (sent == data.size() && !shut) {
      shutdown(fd, SHUT_WR);
      shut = true;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (shut ? 0 : POLLOUT)), 0};
    int r = poll(&p, 1, remaining_ms(deadline));
    if (r <= 0) {
      why = "timed out after sending " + std::to_string(sent) + " and receiving " +
            std::to_string(got.size()) + " bytes";
      break;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0) {
        close(fd);
        return true;
      }
      if (n < 0 && errno != EAGAIN) {
        why = std::string("recv: ") + strerror(errno);
        break;
      }
      if (n > 0) got.append(buf, n);
    }
    if (!shut && (p.revents & POLLOUT)) {
      ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) {
        why = std::string("send: ") + strerror(errno);
        break;
      }
      if (n > 0) sent += n;
    }
  }
  close(fd);
  return false;
}

// 1 MiB that is not periodic in any small buffer size.
std::string big_payload() {
  std::string s(1 << 20, '\0');
  uint32_t x = 12345;
  for (char& c : s) c = static_cast<char>((x = x * 1103515245 + 12345) >> 24);
  return s;
}

TEST(WasiSocketsCli, ListenOnPortZeroEchoes) {
  auto deadline = Clock::now() + kDeadline;
  Wzvm w({"--listen", "127.0.0.1:0", echo_wasm(), "2"});
  ASSERT_TRUE(w.started());
  std::string line = w.stderr_line(deadline);
  // "wzvm: listening on 127.0.0.1:PORT (guest fd 3)"
  unsigned port = 0;
  ASSERT_EQ(sscanf(line.c_str(), "wzvm: listening on 127.0.0.1:%u (guest fd 3)", &port), 1) << line;
  ASSERT_GT(port, 0u);
  std::string got, why;
  EXPECT_TRUE(echo_round_trip(port, "hello\nworld\n", got, deadline, why)) << why;
  EXPECT_EQ(got, "hello\nworld\n");
  const std::string big = big_payload();
  EXPECT_TRUE(echo_round_trip(port, big, got, deadline, why)) << why;
  EXPECT_EQ(got.size(), big.size());
  EXPECT_TRUE(got == big) << "the 1 MiB echo differs";
  int status = w.wait(deadline);
  ASSERT_NE(status, -1) << "wzvm did not exit; stderr: " << w.err();
  EXPECT_EQ(status, 0) << w.err();
  EXPECT_EQ(w.out(), "fd 3: socket_stream accept\nconnection 1: 12 bytes\nconnection 2: 1048576 bytes\n");
}

// --fd hands over a socket the caller made (systemd-style socket activation);
// --dir, --listen and --fd share fds 3, 4, ... in command-line order.
TEST(WasiSocketsCli, FdAndOrderWithDirs) {
  auto deadline = Clock::now() + kDeadline;
  uint16_t port = 0;
  int lis = loopback_listener(port);
  ASSERT_GE(lis, 0);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const std::string d1 = wzvm::test::scratch_dir("wzvm_sock_dir_"),
                    d2 = wzvm::test::scratch_dir("wzvm_sock_dir_");
  ASSERT_TRUE(!d1.empty() && !d2.empty());
  // In the child, the listener is fd 10 and the socketpair end fd 11.
  Wzvm w({"--dir", d1 + "::/a", "--fd", "10", "--listen", "127.0.0.1:0", "--fd", "11", "--dir", d2 + "::/b",
          echo_wasm(), "1"},
         {{lis, 10}, {pair[0], 11}});
  ASSERT_TRUE(w.started());
  close(lis);  // wzvm has its own copy now
  close(pair[0]);
  std::string line = w.stderr_line(deadline);
  EXPECT_THAT(line, ::testing::MatchesRegex("wzvm: listening on 127\\.0\\.0\\.1:[0-9]+ \\(guest fd 5\\)"));
  std::string got, why;
  EXPECT_TRUE(echo_round_trip(port, "through --fd\n", got, deadline, why)) << why;
  EXPECT_EQ(got, "through --fd\n");
  int status = w.wait(deadline);
  ASSERT_NE(status, -1) << "wzvm did not exit; stderr: " << w.err();
  EXPECT_EQ(status, 0) << w.err();
  EXPECT_EQ(w.out(),
            "fd 3: directory /a\nfd 4: socket_stream accept\nfd 5: socket_stream accept\n"
            "fd 6: socket_stream connected\nfd 7: directory /b\nconnection 1: 13 bytes\n");
  close(pair[1]);
}

// The same through Rust std's TcpListener/TcpStream (sock_accept, fd_read, fd_write).
TEST(WasiSocketsCli, RustStdServer) {
  const std::string wasm = std::string(WZVM_TESTDATA_DIR) + "/wasi/upcase_server.wasm";
  if (access(wasm.c_str(), R_OK) != 0)
    GTEST_SKIP() << "no upcase_server.wasm (install rustc libstd-rust-dev-wasm32)";
  auto deadline = Clock::now() + kDeadline;
  Wzvm w({"--listen", "127.0.0.1:0", wasm});
  ASSERT_TRUE(w.started());
  std::string line = w.stderr_line(deadline);
  unsigned port = 0;
  ASSERT_EQ(sscanf(line.c_str(), "wzvm: listening on 127.0.0.1:%u (guest fd 3)", &port), 1) << line;
  std::string got, why;
  EXPECT_TRUE(echo_round_trip(port, "hello\nw\xc3\xb6rld\n", got, deadline, why)) << why;
  EXPECT_EQ(got, "HELLO\nW\xc3\x96RLD\n");  // ö -> Ö
  int status = w.wait(deadline);
  ASSERT_NE(status, -1) << "wzvm did not exit; stderr: " << w.err();
  EXPECT_EQ(status, 0) << w.err();
  EXPECT_EQ(w.out(), "served 2 lines\n");
}

TEST(WasiSocketsCli, BadListenAndFdFlags) {
  auto deadline = Clock::now() + kDeadline;
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string err;
  };
  uint16_t port = 0;
  int taken = loopback_listener(port);  // a port something already listens on
  ASSERT_GE(taken, 0);
  // (No case for a name that does not resolve: that would wait on DNS, which a
  // CI machine may not have.)
  const std::vector<Case> cases = {
      {{"--listen", "8080"}, 2, "expected HOST:PORT"},
      {{"--listen", "::1:80"}, 2, "expected HOST:PORT"},
      {{"--listen", "127.0.0.1:65536"}, 2, "port must be a number from 0 to 65535"},
      {{"--listen", "127.0.0.1:http"}, 2, "port must be a number"},
      {{"--listen", "127.0.0.1:" + std::to_string(port)}, 1, "Address already in use"},
      {{"--fd", "1000"}, 1, "--fd 1000: not an open file descriptor"},
      {{"--fd", "x"}, 2, "--fd"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back(echo_wasm());
    Wzvm w(args);
    ASSERT_TRUE(w.started());
    int status = w.wait(deadline);
    EXPECT_EQ(status, c.status) << c.args[1] << ": " << w.err();
    EXPECT_THAT(w.err(), HasSubstr(c.err)) << c.args[1];
    EXPECT_EQ(w.out(), "") << c.args[1];  // the guest never ran
  }
  close(taken);
  // Without any socket the guest says so (its own error, its own exit status).
  Wzvm w({echo_wasm()});
  EXPECT_EQ(w.wait(deadline), 2);
  EXPECT_THAT(w.err(), HasSubstr("echo: no listening socket"));
}

}  // namespace
