#pragma once
// A small HTTP server interface for the live pprof endpoint (profiler/live.h).
//
// The server itself (profiler/http_httplib.cc, on cpp-httplib) is a plugin,
// wzvm-http.so beside the wzvm binary, loaded with dlopen only when
// --pprof-addr asks for it. Why: Debian's cpp-httplib is a shared library
// built with OpenSSL and brotli, all bound at load time (BIND_NOW), and
// OpenSSL initializes itself in a constructor. Linked into wzvm, that was
// about three quarters of the start-up of every run (callgrind: 14.0M
// instructions for a hello-world, 10M+ of them resolving those libraries'
// symbols and running OpenSSL's init), for a feature few runs use.
//
// Only standard-library types cross the boundary; both sides are built by
// the same compiler against the same libstdc++ in one build.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wzvm::profiler {

struct HttpRequest {
  std::vector<std::string> matches;                // [0] the path, then the route pattern's groups
  std::multimap<std::string, std::string> params;  // the query string, decoded

  bool has(const std::string& name) const { return params.count(name) != 0; }
  std::string param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string body, content_type;
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
  virtual ~HttpServer() = default;
  // GET requests whose whole path matches `pattern` (an ECMAScript regex);
  // the first route registered that matches wins.
  virtual void get(const std::string& pattern, Handler handler) = 0;
  // Binds HOST:PORT (port 0: any free port). The port bound, or -1.
  virtual int bind(const std::string& host, int port) = 0;
  // Serves on a thread of its own; returns once the server accepts requests.
  // One request per connection: a keep-alive connection would hold a worker
  // (and wzvm's exit) for the keep-alive timeout after the guest is done.
  virtual void serve() = 0;
  // Stops listening and waits for requests in progress.
  virtual void stop() = 0;
};

// Loads the plugin (once per process; it is never unloaded) and makes a
// server. Null with `why` naming the file when the plugin cannot be loaded.
std::unique_ptr<HttpServer> make_http_server(std::string& why);

// The plugin's one entry point (extern "C": looked up by name).
using MakeHttpServerFn = HttpServer*();
inline constexpr const char* kHttpPluginEntry = "wzvm_make_http_server";
inline constexpr const char* kHttpPluginFile = "wzvm-http.so";

}  // namespace wzvm::profiler
