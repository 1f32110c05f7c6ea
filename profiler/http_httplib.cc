// The HTTP server plugin (profiler/http.h) on Debian's cpp-httplib: built as
// wzvm-http.so, loaded by wzvm only for --pprof-addr.

#include <httplib.h>

#include <chrono>
#include <thread>

#include "profiler/http.h"

namespace wzvm::profiler {
namespace {

class HttplibServer final : public HttpServer {
 public:
  HttplibServer() { server_.set_keep_alive_max_count(1); }
  ~HttplibServer() override { stop(); }

  void get(const std::string& pattern, Handler handler) override {
    server_.Get(pattern, [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      HttpRequest in;
      for (const auto& m : req.matches) in.matches.push_back(m.str());
      in.params.insert(req.params.begin(), req.params.end());
      HttpResponse out;
      handler(in, out);
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
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  void stop() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  httplib::Server server_;
  std::thread thread_;
};

}  // namespace
}  // namespace wzvm::profiler

extern "C" __attribute__((visibility("default"))) wzvm::profiler::HttpServer* wzvm_make_http_server() {
  return new wzvm::profiler::HttplibServer();
}
