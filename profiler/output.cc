#include "profiler/output.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace wzvm::profiler {

namespace {

// Level 1, as Go's runtime/pprof writes its profiles: the file is written
// inside the profiled run, and an instruction profile is up to hundreds of
// megabytes of protobuf (bench/suite `calls`: 3.8 MB). libdeflate, not zlib:
// at level 1 it took half zlib's time and wrote 6% less on CPython's
// 259 MB instruction profile (0.55 s against 1.08 s, 16.2 MB against
// 17.2 MB; callgrind: 6.3 G -> 3.6 G instructions with its CRC-32 by
// carry-less multiplies); it compresses whole buffers only, hence the
// members of kGzipMember bytes.
constexpr int kLevel = 1;

}  // namespace

// A member's compressed bytes: room for the largest (libdeflate's bound for
// kGzipMember bytes), never zero-filled (a string resized to it was a memset
// of the bound per member, as many bytes as the profile).
struct MemberBuffer {
  explicit MemberBuffer(libdeflate_compressor* c)
      : size(libdeflate_gzip_compress_bound(c, kGzipMember)), bytes(new char[size]) {}
  // piece's gzip member (n > 0: the bound always fits)
  std::string_view compress(libdeflate_compressor* c, std::string_view piece) {
    return {bytes.get(), libdeflate_gzip_compress(c, piece.data(), piece.size(), bytes.get(), size)};
  }
  size_t size;
  std::unique_ptr<char[]> bytes;
};

bool gzip(std::string_view data, std::string& out, std::string& why) {
  out.clear();
  libdeflate_compressor* c = libdeflate_alloc_compressor(kLevel);
  if (!c) {
    why = "libdeflate: cannot allocate a compressor";
    return false;
  }
  MemberBuffer buf(c);
  do {
    const size_t n = std::min(data.size(), kGzipMember);
    out += buf.compress(c, data.substr(0, n));
    data.remove_prefix(n);
  } while (!data.empty());
  libdeflate_free_compressor(c);
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
  c_ = libdeflate_alloc_compressor(kLevel);
  if (!c_) why_ = "libdeflate: cannot allocate a compressor";
  pending_.reserve(kGzipMember);
}

GzipFileWriter::~GzipFileWriter() {
  if (c_) libdeflate_free_compressor(c_);
  if (fd_ >= 0) {
    close(fd_);
    unlink(tmp_.c_str());
  }
}

void GzipFileWriter::member(std::string_view piece) {
  if (!out_) out_ = std::make_unique<MemberBuffer>(c_);
  wrote_ = true;
  write_all(fd_, out_->compress(c_, piece), path_, why_);
}

void GzipFileWriter::write(std::string_view data) {
  if (!c_ || !why_.empty()) return;
  // Whole members straight from `data` when nothing is pending; the rest
  // waits in pending_ for the next write.
  while (!data.empty() && why_.empty()) {
    if (pending_.empty() && data.size() >= kGzipMember) {
      member(data.substr(0, kGzipMember));
      data.remove_prefix(kGzipMember);
      continue;
    }
    const size_t n = std::min(kGzipMember - pending_.size(), data.size());
    pending_.append(data.data(), n);
    data.remove_prefix(n);
    if (pending_.size() == kGzipMember) {
      member(pending_);
      pending_.clear();
    }
  }
}

bool GzipFileWriter::finish(std::string& why) {
  if (c_ && why_.empty() && (!pending_.empty() || !wrote_)) member(pending_);
  if (!why_.empty()) {  // the constructor's errors too
    why = why_;
    return false;
  }
  libdeflate_free_compressor(c_);
  c_ = nullptr;
  const int fd = fd_;
  fd_ = -1;
  return close_and_rename(fd, tmp_, path_, why);
}

}  // namespace wzvm::profiler
