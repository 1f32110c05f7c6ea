// fd_* and path_* (https://github.com/WebAssembly/WASI/blob/main/legacy/preview1/docs.md).
// Every path goes through the Sandbox (wasi/sandbox.h); every guest buffer
// through GuestMemory::check before the host reads or writes it.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wasi/wasi.h"

namespace wzvm::wasi {

namespace {

uint8_t filetype_of(mode_t m) {
  if (S_ISREG(m)) return filetype::regular_file;
  if (S_ISDIR(m)) return filetype::directory;
  if (S_ISLNK(m)) return filetype::symbolic_link;
  if (S_ISCHR(m)) return filetype::character_device;
  if (S_ISBLK(m)) return filetype::block_device;
  if (S_ISSOCK(m)) return filetype::socket_stream;
  return filetype::unknown;
}

uint64_t ns(const timespec& ts) { return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec); }

// filestat layout: wasi/types.h.
Errno store_filestat(const GuestMemory& mem, uint32_t ptr, const struct stat& st) {
  if (!mem.check(ptr, layout::filestat_size)) return Errno::efault;
  uint8_t rec[layout::filestat_size] = {};
  auto put64 = [&](size_t off, uint64_t v) { std::memcpy(rec + off, &v, 8); };
  put64(0, st.st_dev);
  put64(8, st.st_ino);
  rec[16] = filetype_of(st.st_mode);
  put64(24, st.st_nlink);
  put64(32, st.st_size);
  put64(40, ns(st.st_atim));
  put64(48, ns(st.st_mtim));
  put64(56, ns(st.st_ctim));
  std::memcpy(mem.raw(ptr), rec, sizeof rec);
  return Errno::success;
}

Errno from_errno() { return from_host_errno(errno); }

uint8_t dirent_type(unsigned char d_type) {
  switch (d_type) {
    case DT_REG:
      return filetype::regular_file;
    case DT_DIR:
      return filetype::directory;
    case DT_LNK:
      return filetype::symbolic_link;
    case DT_CHR:
      return filetype::character_device;
    case DT_BLK:
      return filetype::block_device;
    case DT_SOCK:
      return filetype::socket_stream;
    default:
      return filetype::unknown;
  }
}

}  // namespace

// ---- helpers ----------------------------------------------------------------

// Host iovecs for the guest's (c)iovec array; each buffer checked. The total
// is capped at UINT32_MAX so the count written back to the guest (a u32) is
// exact, even when buffers overlap.
Errno Wasi::iovecs(const GuestMemory& mem, uint32_t iovs, uint32_t n, std::vector<struct iovec>& out) {
  if (!mem.check(iovs, uint64_t(n) * layout::iovec_size)) return Errno::efault;
  if (n > IOV_MAX) n = IOV_MAX;  // a short transfer, as POSIX allows
  out.clear();
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t buf = 0, len = 0;
    mem.load(iovs + uint64_t(i) * 8, buf);
    mem.load(iovs + uint64_t(i) * 8 + 4, len);
    if (!mem.check(buf, len)) return Errno::efault;
    uint64_t take = std::min<uint64_t>(len, UINT32_MAX - total);
    if (take == 0) continue;
    out.push_back({mem.raw(buf), static_cast<size_t>(take)});
    total += take;
  }
  return Errno::success;
}

Errno Wasi::path_of(Call& c, uint32_t ptr, uint32_t len, std::string& out) {
  if (!c.mem.string(ptr, len, out)) return Errno::efault;
  return Errno::success;
}

// ---- fd_* ---------------------------------------------------------------------

Errno Wasi::fd_advise(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_advise, f); e != Errno::success) return e;
  static constexpr int kAdvice[] = {POSIX_FADV_NORMAL,   POSIX_FADV_SEQUENTIAL, POSIX_FADV_RANDOM,
                                    POSIX_FADV_WILLNEED, POSIX_FADV_DONTNEED,   POSIX_FADV_NOREUSE};
  uint32_t advice = c.u32(3);
  if (advice > 5) return Errno::einval;
  if (c.u64(1) > INT64_MAX || c.u64(2) > INT64_MAX) return Errno::einval;
  if (f->type == filetype::directory) return Errno::ebadf;
  int r = posix_fadvise(f->host, static_cast<off_t>(c.u64(1)), static_cast<off_t>(c.u64(2)), kAdvice[advice]);
  return from_host_errno(r);
}

Errno Wasi::fd_allocate(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_allocate, f); e != Errno::success) return e;
  uint64_t off = c.u64(1), len = c.u64(2);
  if (off > INT64_MAX || len > INT64_MAX || off + len > INT64_MAX) return Errno::efbig;
  int r = posix_fallocate(f->host, static_cast<off_t>(off), static_cast<off_t>(len));
  return from_host_errno(r);
}

Errno Wasi::fd_close(Call& c) {
  auto it = fds_.find(c.u32(0));
  if (it == fds_.end()) return Errno::ebadf;
  int r = it->second.owned ? ::close(it->second.host) : 0;
  fds_.erase(it);
  // The fd is gone even when close reports an error (Linux semantics).
  return r == 0 || errno == EINTR ? Errno::success : from_errno();
}

Errno Wasi::fd_datasync(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_datasync, f); e != Errno::success) return e;
  return fdatasync(f->host) == 0 ? Errno::success : from_errno();
}

Errno Wasi::fd_sync(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_sync, f); e != Errno::success) return e;
  return fsync(f->host) == 0 ? Errno::success : from_errno();
}

Errno Wasi::fd_fdstat_get(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), 0, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(1), layout::fdstat_size)) return Errno::efault;
  int fl = fcntl(f->host, F_GETFL);
  if (fl < 0) return from_errno();
  uint16_t flags = 0;
  if (fl & O_APPEND) flags |= fdflags::append;
  if (fl & O_NONBLOCK) flags |= fdflags::nonblock;
  if ((fl & O_SYNC) == O_SYNC) flags |= fdflags::sync | fdflags::rsync;  // Linux: O_RSYNC == O_SYNC
  else if (fl & O_DSYNC) flags |= fdflags::dsync;
  uint8_t rec[layout::fdstat_size] = {};
  rec[0] = f->type;
  std::memcpy(rec + 2, &flags, 2);
  std::memcpy(rec + 8, &f->base, 8);
  std::memcpy(rec + 16, &f->inheriting, 8);
  std::memcpy(c.mem.raw(c.u32(1)), rec, sizeof rec);
  return Errno::success;
}

Errno Wasi::fd_fdstat_set_flags(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_fdstat_set_flags, f); e != Errno::success) return e;
  uint32_t flags = c.u32(1);
  if (flags & ~uint32_t(fdflags::all)) return Errno::einval;
  // Linux changes only O_APPEND and O_NONBLOCK on an open file (fcntl(2)).
  if (flags & (fdflags::dsync | fdflags::rsync | fdflags::sync)) return Errno::enotsup;
  int fl = fcntl(f->host, F_GETFL);
  if (fl < 0) return from_errno();
  fl &= ~(O_APPEND | O_NONBLOCK);
  if (flags & fdflags::append) fl |= O_APPEND;
  if (flags & fdflags::nonblock) fl |= O_NONBLOCK;
  return fcntl(f->host, F_SETFL, fl) == 0 ? Errno::success : from_errno();
}

Errno Wasi::fd_fdstat_set_rights(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), 0, f); e != Errno::success) return e;
  uint64_t base = c.u64(1), inheriting = c.u64(2);
  // Rights only ever shrink.
  if ((base & ~f->base) || (inheriting & ~f->inheriting)) return Errno::enotcapable;
  f->base = base;
  f->inheriting = inheriting;
  return Errno::success;
}

Errno Wasi::fd_filestat_get(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_filestat_get, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(1), layout::filestat_size)) return Errno::efault;
  struct stat st;
  if (fstat(f->host, &st) != 0) return from_errno();
  return store_filestat(c.mem, c.u32(1), st);
}

Errno Wasi::fd_filestat_set_size(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_filestat_set_size, f); e != Errno::success) return e;
  if (c.u64(1) > INT64_MAX) return Errno::efbig;
  return ftruncate(f->host, static_cast<off_t>(c.u64(1))) == 0 ? Errno::success : from_errno();
}

// futimens/utimensat with WASI's fstflags: a time is set, set to now, or left alone.
Errno Wasi::set_times(int fd, const char* name, int at_flags, uint64_t atim, uint64_t mtim, uint32_t flags) {
  if (flags & ~uint32_t(0xF)) return Errno::einval;
  if ((flags & fstflags::atim) && (flags & fstflags::atim_now)) return Errno::einval;
  if ((flags & fstflags::mtim) && (flags & fstflags::mtim_now)) return Errno::einval;
  auto spec = [](uint64_t t, bool set, bool now) {
    timespec ts{0, UTIME_OMIT};
    if (now) ts.tv_nsec = UTIME_NOW;
    else if (set) ts = timespec{static_cast<time_t>(t / 1000000000ull), static_cast<long>(t % 1000000000ull)};
    return ts;
  };
  timespec ts[2] = {spec(atim, flags & fstflags::atim, flags & fstflags::atim_now),
                    spec(mtim, flags & fstflags::mtim, flags & fstflags::mtim_now)};
  int r = name ? utimensat(fd, name, ts, at_flags) : futimens(fd, ts);
  return r == 0 ? Errno::success : from_errno();
}

Errno Wasi::fd_filestat_set_times(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_filestat_set_times, f); e != Errno::success) return e;
  return set_times(f->host, nullptr, 0, c.u64(1), c.u64(2), c.u32(3));
}

Errno Wasi::fd_pread(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_read | rights::fd_seek, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(4), 4)) return Errno::efault;
  if (c.u64(3) > INT64_MAX) return Errno::einval;
  std::vector<struct iovec> iov;
  if (Errno e = iovecs(c.mem, c.u32(1), c.u32(2), iov); e != Errno::success) return e;
  ssize_t n = preadv(f->host, iov.data(), static_cast<int>(iov.size()), static_cast<off_t>(c.u64(3)));
  if (n < 0) return from_errno();
  c.mem.store<uint32_t>(c.u32(4), static_cast<uint32_t>(n));
  return Errno::success;
}

Errno Wasi::fd_pwrite(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_write | rights::fd_seek, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(4), 4)) return Errno::efault;
  if (c.u64(3) > INT64_MAX) return Errno::einval;
  std::vector<struct iovec> iov;
  if (Errno e = iovecs(c.mem, c.u32(1), c.u32(2), iov); e != Errno::success) return e;
  ssize_t n = pwritev(f->host, iov.data(), static_cast<int>(iov.size()), static_cast<off_t>(c.u64(3)));
  if (n < 0) return from_errno();
  c.mem.store<uint32_t>(c.u32(4), static_cast<uint32_t>(n));
  return Errno::success;
}

Errno Wasi::fd_read(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_read, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(3), 4)) return Errno::efault;
  std::vector<struct iovec> iov;
  if (Errno e = iovecs(c.mem, c.u32(1), c.u32(2), iov); e != Errno::success) return e;
  ssize_t n;
  do n = readv(f->host, iov.data(), static_cast<int>(iov.size()));
  while (n < 0 && errno == EINTR);
  if (n < 0) return from_errno();
  c.mem.store<uint32_t>(c.u32(3), static_cast<uint32_t>(n));
  return Errno::success;
}

Errno Wasi::fd_write(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_write, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(3), 4)) return Errno::efault;
  std::vector<struct iovec> iov;
  if (Errno e = iovecs(c.mem, c.u32(1), c.u32(2), iov); e != Errno::success) return e;
  ssize_t n;
  do n = writev(f->host, iov.data(), static_cast<int>(iov.size()));
  while (n < 0 && errno == EINTR);
  if (n < 0) return from_errno();
  c.mem.store<uint32_t>(c.u32(3), static_cast<uint32_t>(n));
  return Errno::success;
}

Errno Wasi::fd_prestat_get(Call& c) {
  auto it = fds_.find(c.u32(0));
  // wasi-libc probes fds 3, 4, ... until EBADF: anything not a preopen is EBADF.
  if (it == fds_.end() || !it->second.preopen) return Errno::ebadf;
  if (!c.mem.check(c.u32(1), layout::prestat_size)) return Errno::efault;
  c.mem.store<uint32_t>(c.u32(1), 0);  // tag 0 = dir, and padding
  c.mem.store<uint32_t>(c.u32(1) + 4ull, static_cast<uint32_t>(it->second.preopen->size()));
  return Errno::success;
}

Errno Wasi::fd_prestat_dir_name(Call& c) {
  auto it = fds_.find(c.u32(0));
  if (it == fds_.end() || !it->second.preopen) return Errno::ebadf;
  const std::string& name = *it->second.preopen;
  if (c.u32(2) < name.size()) return Errno::enametoolong;
  if (!c.mem.check(c.u32(1), name.size())) return Errno::efault;
  std::memcpy(c.mem.raw(c.u32(1)), name.data(), name.size());  // not NUL-terminated (witx)
  return Errno::success;
}

// Reads the whole directory into the fd's cache; cookies are indices into it,
// so a guest can resume a listing, or restart it at cookie 0, and never sees
// an entry twice.
Errno Wasi::read_dir(Fd& f) {
  int dup = fcntl(f.host, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return from_errno();
  DIR* d = fdopendir(dup);
  if (!d) {
    Errno e = from_errno();
    ::close(dup);
    return e;
  }
  rewinddir(d);  // the dup shares the offset with earlier listings
  f.dir_cache.clear();
  errno = 0;
  while (struct dirent* de = readdir(d)) {
    uint8_t type = dirent_type(de->d_type);
    if (de->d_type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(f.host, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) type = filetype_of(st.st_mode);
    }
    f.dir_cache.push_back({static_cast<uint64_t>(de->d_ino), type, de->d_name});
  }
  Errno e = errno ? from_errno() : Errno::success;
  closedir(d);
  // The order readdir gives depends on the file system (its hash seeds,
  // when the entries were made): a deterministic run lists by name.
  if (det_)
    std::sort(f.dir_cache.begin(), f.dir_cache.end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return e;
}

Errno Wasi::fd_readdir(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_readdir, f); e != Errno::success) return e;
  if (f->type != filetype::directory) return Errno::enotdir;
  uint32_t buf = c.u32(1), len = c.u32(2), used_ptr = c.u32(4);
  uint64_t cookie = c.u64(3);
  if (!c.mem.check(buf, len) || !c.mem.check(used_ptr, 4)) return Errno::efault;
  if (cookie == 0 || f->dir_cache.empty()) {
    if (Errno e = read_dir(*f); e != Errno::success) return e;
  }
  // Entries are packed header + name; the last one is cut at the buffer's
  // end, which tells the guest (bufused == buf_len) to call again.
  uint64_t used = 0;
  for (uint64_t i = cookie; i < f->dir_cache.size() && used < len; ++i) {
    const DirEntry& d = f->dir_cache[i];
    uint8_t head[layout::dirent_size] = {};
    uint64_t next = i + 1;
    uint32_t namlen = static_cast<uint32_t>(d.name.size());
    std::memcpy(head, &next, 8);
    std::memcpy(head + 8, &d.ino, 8);
    std::memcpy(head + 16, &namlen, 4);
    head[20] = d.type;
    uint64_t n = std::min<uint64_t>(sizeof head, len - used);
    std::memcpy(c.mem.raw(buf + used), head, n);
    used += n;
    n = std::min<uint64_t>(namlen, len - used);
    std::memcpy(c.mem.raw(buf + used), d.name.data(), n);
    used += n;
  }
  c.mem.store<uint32_t>(used_ptr, static_cast<uint32_t>(used));
  return Errno::success;
}

Errno Wasi::fd_renumber(Call& c) {
  uint32_t from = c.u32(0), to = c.u32(1);
  auto src = fds_.find(from), dst = fds_.find(to);
  if (src == fds_.end() || dst == fds_.end()) return Errno::ebadf;
  if (from == to) return Errno::success;
  if (dst->second.owned) ::close(dst->second.host);
  dst->second = std::move(src->second);
  fds_.erase(src);
  return Errno::success;
}

Errno Wasi::fd_seek(Call& c) {
  uint32_t wh = c.u32(2);
  // fd_tell is enough for a seek that does not move.
  uint64_t need = (wh == whence::cur && c.u64(1) == 0) ? rights::fd_tell : rights::fd_seek;
  Fd* f;
  if (Errno e = get(c.u32(0), need, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(3), 8)) return Errno::efault;
  int how;
  switch (wh) {
    case whence::set:
      how = SEEK_SET;
      break;
    case whence::cur:
      how = SEEK_CUR;
      break;
    case whence::end:
      how = SEEK_END;
      break;
    default:
      return Errno::einval;
  }
  off_t r = lseek(f->host, static_cast<off_t>(c.u64(1)), how);
  if (r < 0) return from_errno();
  c.mem.store<uint64_t>(c.u32(3), static_cast<uint64_t>(r));
  return Errno::success;
}

Errno Wasi::fd_tell(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), rights::fd_tell, f); e != Errno::success) return e;
  if (!c.mem.check(c.u32(1), 8)) return Errno::efault;
  off_t r = lseek(f->host, 0, SEEK_CUR);
  if (r < 0) return from_errno();
  c.mem.store<uint64_t>(c.u32(1), static_cast<uint64_t>(r));
  return Errno::success;
}

// ---- path_* -------------------------------------------------------------------
//
// Each resolves its path with the Sandbox, then calls an *at(2) function on
// (parent fd, one name) with symlink-following off.

namespace {

// An entry operation needs a name: "." and ".." name directories that cannot
// be created, removed, renamed or linked from here.
Errno dot_error(bool creating) { return creating ? Errno::eexist : Errno::einval; }

// A path ending in '/' must name a directory.
Errno check_must_dir(const Target& t) {
  if (!t.must_dir) return Errno::success;
  struct stat st;
  if (fstatat(t.parent.get(), t.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return Errno::success;  // absent: the op says
  return S_ISDIR(st.st_mode) ? Errno::success : Errno::enotdir;
}

}  // namespace

Errno Wasi::path_create_directory(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(0), rights::path_create_directory, d); e != Errno::success) return e;
  std::string path;
  if (Errno e = path_of(c, c.u32(1), c.u32(2), path); e != Errno::success) return e;
  Target t;
  if (Errno e = sandbox_.resolve(d->host, path, false, t); e != Errno::success) return e;
  if (t.dot) return dot_error(true);
  return mkdirat(t.parent.get(), t.name.c_str(), 0777) == 0 ? Errno::success : from_errno();
}

Errno Wasi::path_filestat_get(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(0), rights::path_filestat_get, d); e != Errno::success) return e;
  std::string path;
  if (Errno e = path_of(c, c.u32(2), c.u32(3), path); e != Errno::success) return e;
  if (!c.mem.check(c.u32(4), layout::filestat_size)) return Errno::efault;
  bool follow = c.u32(1) & lookupflags::symlink_follow;
  // An O_PATH fd opened beneath is the object itself (the link itself without follow).
  Errno e;
  UniqueFd fd(sandbox_.open(d->host, path, O_PATH, 0, follow, e));
  if (!fd) return e;
  struct stat st;
  if (fstatat(fd.get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) return from_errno();
  return store_filestat(c.mem, c.u32(4), st);
}

Errno Wasi::path_filestat_set_times(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(0), rights::path_filestat_set_times, d); e != Errno::success) return e;
  std::string path;
  if (Errno e = path_of(c, c.u32(2), c.u32(3), path); e != Errno::success) return e;
  bool follow = c.u32(1) & lookupflags::symlink_follow;
  Target t;
  if (Errno e = sandbox_.resolve(d->host, path, follow, t); e != Errno::success) return e;
  if (t.dot) {
    // "dir/.." names a directory: open it (beneath) and set its times.
    Errno e;
    UniqueFd fd(sandbox_.open(d->host, path, O_RDONLY | O_DIRECTORY, 0, true, e));
    if (!fd) return e;
    return set_times(fd.get(), nullptr, 0, c.u64(4), c.u64(5), c.u32(6));
  }
  if (Errno e = check_must_dir(t); e != Errno::success) return e;
  return set_times(t.parent.get(), t.name.c_str(), AT_SYMLINK_NOFOLLOW, c.u64(4), c.u64(5), c.u32(6));
}

Errno Wasi::path_link(Call& c) {
  Fd *od, *nd;
  if (Errno e = get(c.u32(0), rights::path_link_source, od); e != Errno::success) return e;
  if (Errno e = get(c.u32(4), rights::path_link_target, nd); e != Errno::success) return e;
  std::string old_path, new_path;
  if (Errno e = path_of(c, c.u32(2), c.u32(3), old_path); e != Errno::success) return e;
  if (Errno e = path_of(c, c.u32(5), c.u32(6), new_path); e != Errno::success) return e;
  // The source is resolved beneath its fd like any other path (a link to
  // something outside cannot be made); following a final symlink is done by
  // the sandbox, never by linkat's AT_SYMLINK_FOLLOW.
  Target from, to;
  if (Errno e = sandbox_.resolve(od->host, old_path, c.u32(1) & lookupflags::symlink_follow, from);
      e != Errno::success)
    return e;
  if (Errno e = sandbox_.resolve(nd->host, new_path, false, to); e != Errno::success) return e;
  if (from.dot) return Errno::eperm;  // hard links to directories
  if (to.dot) return dot_error(true);
  // A trailing slash names a directory, which a hard link never is: on the
  // source, a file is ENOTDIR (a directory is EPERM from linkat); on the new
  // name, an existing entry is EEXIST and a free one ENOENT (nothing can be
  // created there), where Linux's linkat would drop the slash and succeed.
  if (Errno e = check_must_dir(from); e != Errno::success) return e;
  if (to.must_dir) {
    struct stat st;
    return fstatat(to.parent.get(), to.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 ? Errno::eexist
                                                                                    : Errno::enoent;
  }
  if (linkat(from.parent.get(), from.name.c_str(), to.parent.get(), to.name.c_str(), 0) != 0)
    return from_errno();
  return Errno::success;
}

Errno Wasi::path_open(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(0), rights::path_open, d); e != Errno::success) return e;
  if (d->type != filetype::directory) return Errno::enotdir;
  std::string path;
  if (Errno e = path_of(c, c.u32(2), c.u32(3), path); e != Errno::success) return e;
  uint32_t dirflags = c.u32(1), of = c.u32(4), fdf = c.u32(7), out_ptr = c.u32(8);
  uint64_t base = c.u64(5), inheriting = c.u64(6);
  if ((of & ~uint32_t(oflags::all)) || (fdf & ~uint32_t(fdflags::all))) return Errno::einval;
  if (!c.mem.check(out_ptr, 4)) return Errno::efault;
  if ((of & oflags::creat) && !(d->base & rights::path_create_file)) return Errno::enotcapable;
  if ((of & oflags::trunc) && !(d->base & rights::path_filestat_set_size)) return Errno::enotcapable;
  // Rights asked beyond what the directory hands down are dropped, not refused:
  // wasi-libc and other toolchains ask for "everything" and mask by fdstat.
  base &= d->inheriting;
  inheriting &= d->inheriting;

  // The access mode comes from the rights that need it on Linux. fd_datasync
  // and fd_sync do not (fdatasync works on a read-only fd), so a directory
  // reopened with its own rights, which include them, is not EISDIR; asking
  // to write to a directory (fd_write, also with oflags::directory) is
  // EISDIR, as open(2) says.
  constexpr uint64_t kRead = rights::fd_read | rights::fd_readdir;
  constexpr uint64_t kWrite = rights::fd_write | rights::fd_allocate | rights::fd_filestat_set_size;
  bool rd = base & kRead, wr = base & kWrite;
  int flags = (rd && wr) ? O_RDWR : wr ? O_WRONLY : O_RDONLY;
  if (of & oflags::creat) flags |= O_CREAT;
  if (of & oflags::directory) flags |= O_DIRECTORY;
  if (of & oflags::excl) flags |= O_EXCL;
  if (of & oflags::trunc) flags |= O_TRUNC;
  if (fdf & fdflags::append) flags |= O_APPEND;
  if (fdf & fdflags::dsync) flags |= O_DSYNC;
  if (fdf & fdflags::nonblock) flags |= O_NONBLOCK;
  if (fdf & (fdflags::rsync | fdflags::sync)) flags |= O_SYNC;
  flags |= O_NOCTTY;
  Errno e;
  int fd = sandbox_.open(d->host, path, flags, 0666, dirflags & lookupflags::symlink_follow, e);
  if (fd < 0) return e;
  Fd nf = describe(fd, true);
  // The new fd has what was asked, as far as its kind allows.
  nf.base &= base;
  nf.inheriting = nf.type == filetype::directory ? inheriting : 0;
  c.mem.store<uint32_t>(out_ptr, insert(std::move(nf)));
  return Errno::success;
}

Errno Wasi::path_readlink(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(0), rights::path_readlink, d); e != Errno::success) return e;
  std::string path;
  if (Errno e = path_of(c, c.u32(1), c.u32(2), path); e != Errno::success) return e;
  uint32_t buf = c.u32(3), len = c.u32(4), used_ptr = c.u32(5);
  if (!c.mem.check(buf, len) || !c.mem.check(used_ptr, 4)) return Errno::efault;
  Target t;
  if (Errno e = sandbox_.resolve(d->host, path, false, t); e != Errno::success) return e;
  if (t.dot) return Errno::einval;  // a directory, not a link
  // readlinkat truncates silently to the buffer, as WASI's path_readlink does.
  ssize_t n = readlinkat(t.parent.get(), t.name.c_str(), reinterpret_cast<char*>(c.mem.raw(buf)), len);
  if (n < 0) return from_errno();
  c.mem.store<uint32_t>(used_ptr, static_cast<uint32_t>(n));
  return Errno::success;
}

Errno Wasi::path_remove_directory(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(0), rights::path_remove_directory, d); e != Errno::success) return e;
  std::string path;
  if (Errno e = path_of(c, c.u32(1), c.u32(2), path); e != Errno::success) return e;
  Target t;
  if (Errno e = sandbox_.resolve(d->host, path, false, t); e != Errno::success) return e;
  if (t.dot) return t.name == "." ? Errno::einval : Errno::enotempty;  // as rmdir(2)
  return unlinkat(t.parent.get(), t.name.c_str(), AT_REMOVEDIR) == 0 ? Errno::success : from_errno();
}

Errno Wasi::path_rename(Call& c) {
  Fd *od, *nd;
  if (Errno e = get(c.u32(0), rights::path_rename_source, od); e != Errno::success) return e;
  if (Errno e = get(c.u32(3), rights::path_rename_target, nd); e != Errno::success) return e;
  std::string old_path, new_path;
  if (Errno e = path_of(c, c.u32(1), c.u32(2), old_path); e != Errno::success) return e;
  if (Errno e = path_of(c, c.u32(4), c.u32(5), new_path); e != Errno::success) return e;
  Target from, to;
  if (Errno e = sandbox_.resolve(od->host, old_path, false, from); e != Errno::success) return e;
  if (Errno e = sandbox_.resolve(nd->host, new_path, false, to); e != Errno::success) return e;
  if (from.dot || to.dot) return Errno::ebusy;
  if (Errno e = check_must_dir(from); e != Errno::success) return e;
  return renameat(from.parent.get(), from.name.c_str(), to.parent.get(), to.name.c_str()) == 0
             ? Errno::success
             : from_errno();
}

Errno Wasi::path_symlink(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(2), rights::path_symlink, d); e != Errno::success) return e;
  std::string target, path;
  if (Errno e = path_of(c, c.u32(0), c.u32(1), target); e != Errno::success) return e;
  if (Errno e = path_of(c, c.u32(3), c.u32(4), path); e != Errno::success) return e;
  if (target.find('\0') != std::string::npos) return Errno::einval;
  // An absolute target can never be followed inside a sandbox, so creating
  // one is refused (EPERM, as wasmtime's cap-std does; the WASI testsuite's
  // symlink_create requires an error). A relative text that climbs out is
  // data and may be written: following it is what the sandbox refuses.
  if (!target.empty() && target[0] == '/') return Errno::eperm;
  Target t;
  if (Errno e = sandbox_.resolve(d->host, path, false, t); e != Errno::success) return e;
  if (t.dot) return dot_error(true);
  if (t.must_dir) return Errno::enoent;
  return symlinkat(target.c_str(), t.parent.get(), t.name.c_str()) == 0 ? Errno::success : from_errno();
}

Errno Wasi::path_unlink_file(Call& c) {
  Fd* d;
  if (Errno e = get(c.u32(0), rights::path_unlink_file, d); e != Errno::success) return e;
  std::string path;
  if (Errno e = path_of(c, c.u32(1), c.u32(2), path); e != Errno::success) return e;
  Target t;
  if (Errno e = sandbox_.resolve(d->host, path, false, t); e != Errno::success) return e;
  if (t.dot) return Errno::eisdir;
  if (t.must_dir) {
    struct stat st;
    if (fstatat(t.parent.get(), t.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return from_errno();
    return S_ISDIR(st.st_mode) ? Errno::eisdir : Errno::enotdir;
  }
  return unlinkat(t.parent.get(), t.name.c_str(), 0) == 0 ? Errno::success : from_errno();
}

}  // namespace wzvm::wasi
