// The HTTP server plugin (profiler/http.h) on Debian's cpp-httplib: built as
// wzvm-http.so, loaded by wzvm only for --pprof-addr.
//
// cpp-httplib 0.11 bounds neither what a client may send nor how long it may
// take: a header line is read whole into memory before its length is checked
// (one client sending a 200 MB line grew wzvm by 260 MB), a client that sends
// a byte every few seconds holds a worker for ever, and stop() waits for
// every connection, so such a client also kept wzvm from exiting after the
// guest was done (tests/faults_test.cc). So each connection is served here
// (process_and_close_socket, overridden) through a stream of our own that
// reads at most kMaxRequestBytes within kRequestTime, the number of open
// connections is capped, and stopping cuts requests still arriving.

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <thread>

#include "profiler/http.h"

namespace wzvm::profiler {
namespace {

using Clock = std::chrono::steady_clock;

// A GET request is a line and a few headers: cpp-httplib refuses a request
// line or a header line over 8 KiB anyway. Bodies (POST) are never wanted.
constexpr size_t kMaxRequestBytes = 64 * 1024;
// The whole request, from the moment a worker takes the connection up.
constexpr auto kRequestTime = std::chrono::seconds(5);
// Each write of the response must make progress within this.
constexpr int kWriteTimeoutMs = 5000;
// Workers, and connections accepted but not yet closed (served or waiting
// for a worker): past that, 503 at once. Bounds memory and file descriptors,
// which the guest needs too.
constexpr size_t kWorkers = 16;
constexpr int kMaxConnections = 64;
// When the guest is done: time left to responses still being written.
constexpr auto kStopGrace = std::chrono::seconds(2);

// Set on the listening thread while it refuses a connection (Queue::enqueue).
thread_local bool t_refuse = false;

// A connection's socket with those bounds; otherwise what httplib's own
// SocketStream does (a read buffer, poll before each recv and send).
class BoundedStream final : public httplib::Stream {
 public:
  explicit BoundedStream(int fd) : fd_(fd), deadline_(Clock::now() + kRequestTime) {}

  bool is_readable() const override { return wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == len_) {
      // Past the budget or the deadline the request reads as broken:
      // httplib answers 400 (or nothing, if the request line is not whole).
      if (total_ >= kMaxRequestBytes || !is_readable()) return -1;
      ssize_t n = ::recv(fd_, buf_, std::min(sizeof buf_, kMaxRequestBytes - total_), 0);
      if (n <= 0) return n == 0 ? 0 : -1;
      total_ += static_cast<size_t>(n);
      off_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    return n < 0 ? -1 : n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  bool wait(short events) const {
    for (;;) {
      int ms = kWriteTimeoutMs;
      if (events == POLLIN) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
        if (left <= 0) return false;
        ms = static_cast<int>(left);
      }
      pollfd p{fd_, events, 0};
      int r = ::poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      return r > 0;  // POLLHUP, POLLERR too: the recv or send then says what
    }
  }
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    char text[INET6_ADDRSTRLEN] = "";
    if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
      inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  int fd_;
  Clock::time_point deadline_;
  size_t total_ = 0, off_ = 0, len_ = 0;
  char buf_[4096];
};

class BoundedServer final : public httplib::Server {
 public:
  BoundedServer() {
    new_task_queue = [this] { return new Queue(*this); };
    // One request per connection (profiler/http.h says why).
    set_keep_alive_max_count(1);
    set_payload_max_length(kMaxRequestBytes);
  }

  // Cuts the requests still arriving and stops listening (httplib then closes
  // the connections still waiting for a worker unserved), gives responses
  // being written kStopGrace, then cuts those too.
  void stop_serving() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (int fd : open_) ::shutdown(fd, SHUT_RD);
    }
    stop();
    std::unique_lock lock(mu_);
    if (!closed_.wait_for(lock, kStopGrace, [this] { return open_.empty(); }))
      for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
  }

 private:
  // httplib's thread pool, with the cap on connections in front of it.
  class Queue final : public httplib::TaskQueue {
   public:
    explicit Queue(BoundedServer& server) : server_(server), pool_(kWorkers) {}
    void enqueue(std::function<void()> fn) override {
      if (server_.connections_.fetch_add(1) >= kMaxConnections) {
        // `fn` is process_and_close_socket(sock): run here, it only refuses.
        t_refuse = true;
        fn();
        t_refuse = false;
        return;
      }
      pool_.enqueue(std::move(fn));
    }
    void shutdown() override { pool_.shutdown(); }

   private:
    BoundedServer& server_;
    httplib::ThreadPool pool_;
  };

  // Overrides httplib's (private, virtual): the one place a connection is
  // served, on a worker (or refused, on the listening thread).
  bool process_and_close_socket(socket_t sock) override {
    bool served = false;
    if (t_refuse) {
      static constexpr char k503[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::send(sock, k503, sizeof k503 - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    } else if (enter(sock)) {
      BoundedStream strm(sock);
      bool connection_closed = false;
      served = process_request(strm, /*close_connection=*/true, connection_closed, nullptr);
      leave(sock);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    connections_.fetch_sub(1);
    return served;
  }

  // The set of connections being served, so stop_serving() can cut them;
  // a socket leaves it before it is closed, so its number is never reused
  // while in the set.
  bool enter(int fd) {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    open_.insert(fd);
    return true;
  }
  void leave(int fd) {
    std::lock_guard lock(mu_);
    open_.erase(fd);
    if (open_.empty()) closed_.notify_all();
  }

  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::condition_variable closed_;
  std::set<int> open_;
  bool stopping_ = false;
};

class HttplibServer final : public HttpServer {
 public:
  ~HttplibServer() override { stop(); }

  void get(const std::string& pattern, Handler handler) override {
    server_.Get(pattern, [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      HttpRequest in;
      for (const auto& m : req.matches) in.matches.push_back(m.str());
      in.params.insert(req.params.begin(), req.params.end());
      HttpResponse out;
      // cpp-httplib 0.11 catches nothing: an exception out of a handler
      // (building a profile while the host is out of memory) would leave
      // its worker thread and terminate wzvm with the guest still running.
      try {
        handler(in, out);
      } catch (const std::bad_alloc&) {
        out = HttpResponse{503, "out of host memory\n", "text/plain", {}};
      }
      res.status = out.status;
      for (const auto& [k, v] : out.headers) res.set_header(k, v);
      res.set_content(out.body, out.content_type);
    });
  }

  int bind(const std::string& host, int port) override {
    if (port == 0) return server_.bind_to_any_port(host);
    return server_.bind_to_port(host, port) ? port : -1;
  }

  void serve() override {
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() only stops a server that is already running: wait until it is,
    // so that a guest finishing at once cannot leave the thread listening.
    for (int i = 0; i < 5000 && !server_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  void stop() override {
    server_.stop_serving();
    if (thread_.joinable()) thread_.join();
  }

 private:
  BoundedServer server_;
  std::thread thread_;
};

}  // namespace
}  // namespace wzvm::profiler

extern "C" __attribute__((visibility("default"))) wzvm::profiler::HttpServer* wzvm_make_http_server() {
  return new wzvm::profiler::HttplibServer();
}
