#include "profiler/output.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace wzvm::profiler {

bool gzip(std::string_view data, std::string& out, std::string& why) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  // windowBits 15 + 16: a gzip wrapper. zlib writes a minimal header (mtime 0,
  // no name) unless deflateSetHeader is called, which keeps output reproducible.
  // Level 1, as Go's runtime/pprof writes its profiles: the file is written
  // inside the profiled run, and an instruction profile of deep recursion is
  // megabytes of protobuf (bench/suite `calls`: 3.8 MB, 7 ms at level 1 and
  // 92 KB, 19 ms at the default level 6 and 78 KB).
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    why = "zlib: deflateInit2 failed";
    return false;
  }
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    why = "zlib: deflate failed (" + std::to_string(rc) + ")";
    out.clear();
    return false;
  }
  return true;
}

bool write_file_atomic(const std::string& path, std::string_view data, std::string& why) {
  // Same directory as the target, so rename(2) cannot cross file systems.
  // pid + counter keeps concurrent writers apart; O_EXCL refuses leftovers.
  static std::atomic<unsigned> counter{0};
  std::string dir, base = path;
  if (auto slash = path.rfind('/'); slash != std::string::npos) {
    dir = path.substr(0, slash + 1);
    base = path.substr(slash + 1);
  }
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = dir + "." + base + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
    fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  // Errors name `path`, the file asked for: the temporary's name is ours, and
  // it is gone again when the error is reported.
  if (fd < 0) {
    why = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = "cannot write " + path + ": " + std::strerror(n < 0 ? errno : EIO);
      close(fd);
      unlink(tmp.c_str());
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (close(fd) != 0) {
    why = "cannot write " + path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    why = "cannot write " + path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace wzvm::profiler
