#include "profiler/output.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

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

namespace {

// Error messages name `path`, the file asked for: the temporary's name is
// ours, and it is gone again when the error is reported.
std::string cannot_write(const std::string& path, int err) {
  return "cannot write " + path + ": " + std::strerror(err);
}

// Creates the temporary file `path` will be renamed from: in the same
// directory, so rename(2) cannot cross file systems; pid + counter keeps
// concurrent writers apart; O_EXCL refuses leftovers.
int open_temporary(const std::string& path, std::string& tmp, std::string& why) {
  static std::atomic<unsigned> counter{0};
  std::string dir, base = path;
  if (auto slash = path.rfind('/'); slash != std::string::npos) {
    dir = path.substr(0, slash + 1);
    base = path.substr(slash + 1);
  }
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = dir + "." + base + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
    fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) why = cannot_write(path, errno);
  return fd;
}

bool write_all(int fd, std::string_view data, const std::string& path, std::string& why) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = cannot_write(path, n < 0 ? errno : EIO);
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// Closes `fd` and renames `tmp` to `path`; on any error removes `tmp`.
bool close_and_rename(int fd, const std::string& tmp, const std::string& path, std::string& why) {
  if (close(fd) != 0) {
    why = cannot_write(path, errno);
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    why = cannot_write(path, errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

bool write_file_atomic(const std::string& path, std::string_view data, std::string& why) {
  std::string tmp;
  const int fd = open_temporary(path, tmp, why);
  if (fd < 0) return false;
  if (!write_all(fd, data, path, why)) {
    close(fd);
    unlink(tmp.c_str());
    return false;
  }
  return close_and_rename(fd, tmp, path, why);
}

GzipFileWriter::GzipFileWriter(std::string path) : path_(std::move(path)) {
  fd_ = open_temporary(path_, tmp_, why_);
  if (fd_ < 0) return;
  auto zs = std::make_unique<z_stream>();
  std::memset(zs.get(), 0, sizeof(z_stream));
  // gzip()'s parameters, so the bytes are the same.
  if (deflateInit2(zs.get(), Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    why_ = "zlib: deflateInit2 failed";
    return;
  }
  zs_ = std::move(zs);
  out_.resize(size_t{1} << 18);
}

GzipFileWriter::~GzipFileWriter() {
  if (zs_) deflateEnd(zs_.get());
  if (fd_ >= 0) {
    close(fd_);
    unlink(tmp_.c_str());
  }
}

bool GzipFileWriter::deflate_out(int flush) {
  for (;;) {
    zs_->next_out = reinterpret_cast<Bytef*>(out_.data());
    zs_->avail_out = static_cast<uInt>(out_.size());
    const int rc = deflate(zs_.get(), flush);
    if (rc == Z_STREAM_ERROR) {
      why_ = "zlib: deflate failed (" + std::to_string(rc) + ")";
      return false;
    }
    const size_t n = out_.size() - zs_->avail_out;
    if (n > 0 && !write_all(fd_, std::string_view(out_.data(), n), path_, why_)) return false;
    if (flush == Z_FINISH ? rc == Z_STREAM_END : zs_->avail_in == 0 && zs_->avail_out > 0) return true;
    if (flush == Z_FINISH && rc != Z_OK && rc != Z_BUF_ERROR) {
      why_ = "zlib: deflate failed (" + std::to_string(rc) + ")";
      return false;
    }
  }
}

void GzipFileWriter::write(std::string_view data) {
  if (!zs_ || !why_.empty()) return;
  // avail_in is 32-bit: at most 1 GiB at a time.
  while (!data.empty()) {
    const size_t n = std::min(data.size(), size_t{1} << 30);
    zs_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    zs_->avail_in = static_cast<uInt>(n);
    if (!deflate_out(Z_NO_FLUSH)) return;
    data.remove_prefix(n);
  }
}

bool GzipFileWriter::finish(std::string& why) {
  if (zs_ && why_.empty()) {
    zs_->next_in = nullptr;
    zs_->avail_in = 0;
    deflate_out(Z_FINISH);
  }
  if (!why_.empty()) {  // the constructor's errors too
    why = why_;
    return false;
  }
  deflateEnd(zs_.get());
  zs_.reset();
  const int fd = fd_;
  fd_ = -1;
  return close_and_rename(fd, tmp_, path_, why);
}

}  // namespace wzvm::profiler
