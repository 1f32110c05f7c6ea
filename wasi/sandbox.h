#pragma once
// Resolving guest paths beneath a directory fd: the WASI sandbox.
//
// Every path_* function names a directory fd and a relative path. Nothing the
// guest names may resolve outside that directory: not through `..`, absolute
// paths, absolute symlinks, relative symlinks that climb out, or loops. Two
// resolvers enforce it:
//  - Kernel: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS. The
//    kernel checks every step atomically, so renames racing the lookup cannot
//    move it outside (it fails with EXDEV/EAGAIN instead).
//  - Userspace, when openat2 is missing (ENOSYS, kernels < 5.6): a walk one
//    component at a time with openat(O_NOFOLLOW), reading symlinks with
//    readlinkat and splicing their targets in, keeping a stack of directory
//    fds so that `..` pops one and never climbs above the start. Each step
//    holds an fd, so a directory renamed mid-walk cannot redirect it outside.
// Operations that act on a directory entry (unlink, mkdir, rename, link,
// symlink, readlink, set_times) get a Target: a parent directory fd opened
// beneath, and one plain name in it, which they pass to the *at(2) call with
// symlink-following off. The kernel then never follows anything the sandbox
// has not checked.

#include <sys/types.h>

#include <string>
#include <string_view>

#include "wasi/types.h"

namespace wzvm::wasi {

enum class Resolver : uint8_t {
  Auto,       // openat2, or the userspace walk when the kernel lacks it
  Kernel,     // openat2 only
  Userspace,  // the userspace walk only (tests run the escape suite under both)
};

// An owned host fd.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// A guest path split for an entry operation.
struct Target {
  UniqueFd parent;        // directory, opened beneath the guest's fd
  std::string name;       // one component: no '/', never "." or ".." unless `dot`
  bool dot = false;       // the path ends in "." or ".." (names a directory, not an entry)
  bool must_dir = false;  // the path had trailing slashes
};

class Sandbox {
 public:
  explicit Sandbox(Resolver r = Resolver::Auto) : resolver_(r) {}

  // open(2) `path` beneath `dirfd` with `flags` (O_CLOEXEC is added; O_NOFOLLOW
  // unless `follow`). Returns the fd, or -1 with `err` set.
  int open(int dirfd, std::string_view path, int flags, mode_t mode, bool follow, Errno& err) const;

  // Split `path` into a parent opened beneath `dirfd` and a last name. With
  // `follow`, a symlink at the last name is resolved (beneath) first, so the
  // returned name is not a symlink at the time of the check; callers still
  // pass AT_SYMLINK_NOFOLLOW so a later swap can only hit the link itself.
  Errno resolve(int dirfd, std::string_view path, bool follow, Target& out) const;

  Resolver resolver() const { return resolver_; }

 private:
  int open_kernel(int dirfd, const std::string& path, int flags, mode_t mode, Errno& err) const;
  int open_walk(int dirfd, const std::string& path, int flags, mode_t mode, bool follow, Errno& err) const;
  Resolver resolver_;
};

// Checks shared by both resolvers: empty -> enoent, NUL -> einval, absolute -> enotcapable.
Errno check_guest_path(std::string_view path);

}  // namespace wzvm::wasi
