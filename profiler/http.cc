#include "profiler/http.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <mutex>

namespace wzvm::profiler {

namespace {

// The directory of the running binary: the plugin is installed beside it.
std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::unique_ptr<HttpServer> make_http_server(std::string& why) {
  static std::once_flag once;
  static MakeHttpServerFn* make = nullptr;
  static std::string load_error;
  std::call_once(once, [] {
    // Beside the binary in a build tree; installed, in the library
    // directory's wzvm/ (WZVM_PLUGIN_RELDIR: relative to the binary's, set
    // by CMake from the install layout).
    std::string path = exe_dir() + "/" + kHttpPluginFile;
#ifdef WZVM_PLUGIN_RELDIR
    if (access(path.c_str(), F_OK) != 0) {
      const std::string installed = exe_dir() + "/" WZVM_PLUGIN_RELDIR "/" + kHttpPluginFile;
      if (access(installed.c_str(), F_OK) != 0) {
        load_error = "cannot load the HTTP server plugin: neither " + path + " nor " + installed + " exists";
        return;
      }
      path = installed;
    }
#endif
    // Never dlclose'd: its server threads and libraries' destructors must
    // not outlive their code.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      load_error = "cannot load the HTTP server plugin: " + std::string(dlerror());
      return;
    }
    make = reinterpret_cast<MakeHttpServerFn*>(dlsym(lib, kHttpPluginEntry));
    if (!make) load_error = path + ": no " + kHttpPluginEntry + " in it (a plugin from another build?)";
  });
  if (!make) {
    why = load_error;
    return nullptr;
  }
  return std::unique_ptr<HttpServer>(make());
}

}  // namespace wzvm::profiler
