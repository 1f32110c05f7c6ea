#include "wasi/sandbox.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <vector>

namespace wzvm::wasi {

namespace {

// Linux's own limit on symlinks followed in one lookup (MAXSYMLINKS).
constexpr int kMaxLinks = 40;

// Set once openat2 has answered ENOSYS, so Auto stops asking.
std::atomic<bool> g_no_openat2{false};

bool read_link(int dirfd, const std::string& name, std::string& target) {
  std::string buf(256, '\0');
  for (;;) {
    ssize_t n = readlinkat(dirfd, name.c_str(), buf.data(), buf.size());
    if (n < 0) return false;
    if (static_cast<size_t>(n) < buf.size()) {
      buf.resize(n);
      target = std::move(buf);
      return true;
    }
    if (buf.size() >= (1u << 20)) return false;
    buf.resize(buf.size() * 2);
  }
}

// "a//b/./c/" -> {a, b, c}: empty and "." components mean nothing.
void push_components_front(std::deque<std::string>& comps, std::string_view path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view c = path.substr(i, j - i);
    if (!c.empty() && c != ".") parts.emplace_back(c);
    i = j + 1;
  }
  comps.insert(comps.begin(), parts.begin(), parts.end());
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Errno check_guest_path(std::string_view path) {
  if (path.empty()) return Errno::enoent;
  if (path.find('\0') != std::string_view::npos) return Errno::einval;
  // Absolute paths name the host's root: never beneath anything.
  if (path.front() == '/') return Errno::enotcapable;
  return Errno::success;
}

int Sandbox::open(int dirfd, std::string_view path, int flags, mode_t mode, bool follow, Errno& err) const {
  err = check_guest_path(path);
  if (err != Errno::success) return -1;
  std::string p(path);
  // A trailing slash asks for a directory and resolves a symlink at the end (POSIX).
  if (p.back() == '/') {
    flags |= O_DIRECTORY;
    follow = true;
  }
  if (resolver_ == Resolver::Userspace || (resolver_ == Resolver::Auto && g_no_openat2.load()))
    return open_walk(dirfd, p, flags, mode, follow, err);
  int fd = open_kernel(dirfd, p, flags | (follow ? 0 : O_NOFOLLOW), mode, err);
  if (fd < 0 && err == Errno::enosys && resolver_ == Resolver::Auto) {
    g_no_openat2.store(true);
    return open_walk(dirfd, p, flags, mode, follow, err);
  }
  return fd;
}

int Sandbox::open_kernel(int dirfd, const std::string& path, int flags, mode_t mode, Errno& err) const {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  // openat2 rejects a mode without O_CREAT/O_TMPFILE (O_TMPFILE contains the O_DIRECTORY bit).
  how.mode = ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  // EAGAIN: a concurrent rename made the kernel unsure the walk stayed
  // beneath; it asks callers to retry.
  for (int attempt = 0; attempt < 16; ++attempt) {
    long fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == EAGAIN || errno == EINTR) continue;
    err = errno == EXDEV ? Errno::enotcapable : from_host_errno(errno);
    return -1;
  }
  err = Errno::eagain;
  return -1;
}

int Sandbox::open_walk(int dirfd, const std::string& path, int flags, mode_t mode, bool follow,
                       Errno& err) const {
  std::vector<UniqueFd> stack;  // directories entered below dirfd; `..` pops one
  auto cur = [&] { return stack.empty() ? dirfd : stack.back().get(); };
  std::deque<std::string> comps;
  push_components_front(comps, path);
  int links = 0;
  // Splices a symlink's target in place of the component just consumed.
  auto follow_link = [&](const std::string& comp) -> bool {
    std::string target;
    if (!read_link(cur(), comp, target)) return false;
    if (++links > kMaxLinks) {
      err = Errno::eloop;
    } else if (target.empty()) {
      err = Errno::enoent;
    } else if (target.front() == '/') {
      err = Errno::enotcapable;  // an absolute link always leaves the sandbox
    } else {
      push_components_front(comps, target);
      err = Errno::success;
    }
    return true;
  };

  for (;;) {
    if (comps.empty()) {
      // The path names the current directory itself ("." or "a/..").
      int fd = openat(cur(), ".", flags | O_CLOEXEC, mode);
      if (fd < 0) err = from_host_errno(errno);
      return fd;
    }
    std::string comp = std::move(comps.front());
    comps.pop_front();
    if (comp == "..") {
      if (stack.empty()) {
        err = Errno::enotcapable;
        return -1;
      }
      stack.pop_back();
      continue;
    }
    if (!comps.empty()) {
      int fd = openat(cur(), comp.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        stack.emplace_back(fd);
        continue;
      }
      int e = errno;
      if ((e == ENOTDIR || e == ELOOP) && follow_link(comp)) {
        if (err != Errno::success) return -1;
        continue;
      }
      err = from_host_errno(e);
      return -1;
    }
    // Last component: the kernel must not follow a symlink here (O_NOFOLLOW);
    // when the guest asked to follow, the link is spliced and walked instead.
    int fd = openat(cur(), comp.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
      int e = errno;
      // O_CREAT|O_EXCL never follows a final symlink (POSIX): its EEXIST stands.
      bool exclusive = (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
      if (follow && !exclusive && (e == ELOOP || e == ENOTDIR) && follow_link(comp)) {
        if (err != Errno::success) return -1;
        continue;
      }
      err = from_host_errno(e);
      return -1;
    }
    if (follow && (flags & O_PATH)) {
      // O_PATH|O_NOFOLLOW opens a symlink itself rather than failing.
      struct stat st;
      if (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
        ::close(fd);
        if (follow_link(comp)) {
          if (err != Errno::success) return -1;
          continue;
        }
        err = Errno::enoent;
        return -1;
      }
    }
    return fd;
  }
}

Errno Sandbox::resolve(int dirfd, std::string_view path, bool follow, Target& out) const {
  Errno e = check_guest_path(path);
  if (e != Errno::success) return e;
  std::string p(path);
  out = Target{};
  for (int links = 0;;) {
    while (p.size() > 1 && p.back() == '/') {
      p.pop_back();
      out.must_dir = true;
    }
    size_t slash = p.rfind('/');
    std::string dir = slash == std::string::npos ? "." : p.substr(0, slash + 1);
    std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
    int fd = open(dirfd, dir, O_PATH | O_DIRECTORY, 0, /*follow=*/true, e);
    if (fd < 0) return e;
    out.parent = UniqueFd(fd);
    out.name = name;
    out.dot = name == "." || name == "..";
    if (out.dot || !follow) return Errno::success;
    std::string target;
    if (!read_link(fd, name, target)) return Errno::success;  // not a symlink (or absent)
    if (++links > kMaxLinks) return Errno::eloop;
    if (target.empty()) return Errno::enoent;
    if (target.front() == '/') return Errno::enotcapable;
    p = (slash == std::string::npos ? std::string() : dir) + target;
  }
}

}  // namespace wzvm::wasi
