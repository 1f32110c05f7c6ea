// Sandbox escape attempts, made with raw WASI calls on the preopened fd 3 (so
// no libc path logic stands between the guest and the runtime). Each line
// prints an attempt and the errno it got; tests/wasi_test.cc builds the host
// tree this expects, checks every line, and then checks on the host that
// nothing outside the preopen was read, created, changed or removed.
//
// Host tree (ROOT is a temp dir; fd 3 = ROOT/sandbox):
//   ROOT/outside/secret.txt      "SECRET"
//   ROOT/sandbox/file.txt        "inside"
//   ROOT/sandbox/sub/            directory
//   ROOT/sandbox/abs      -> ROOT/outside            (absolute symlink)
//   ROOT/sandbox/abs_file -> ROOT/outside/secret.txt
//   ROOT/sandbox/abs_new  -> ROOT/outside/created    (dangling, absolute)
//   ROOT/sandbox/up       -> ../outside              (climbs out)
//   ROOT/sandbox/up_file  -> ../outside/secret.txt
//   ROOT/sandbox/up_new   -> ../outside/created      (dangling, climbs out)
//   ROOT/sandbox/sub/deep -> ../../outside
//   ROOT/sandbox/loop1 -> loop2, loop2 -> loop1, self -> self
//   ROOT/sandbox/ok_link -> sub/../file.txt          (stays inside)
#include <stdio.h>
#include <string.h>
#include <wasi/api.h>

static const char* name(__wasi_errno_t e) {
  switch (e) {
    case 0: return "ok";
    case __WASI_ERRNO_NOTCAPABLE: return "ENOTCAPABLE";
    case __WASI_ERRNO_LOOP: return "ELOOP";
    case __WASI_ERRNO_NOENT: return "ENOENT";
    case __WASI_ERRNO_PERM: return "EPERM";
    case __WASI_ERRNO_EXIST: return "EEXIST";
    case __WASI_ERRNO_NOTDIR: return "ENOTDIR";
    case __WASI_ERRNO_INVAL: return "EINVAL";
    case __WASI_ERRNO_XDEV: return "EXDEV";
    default: {
      static char buf[16];
      snprintf(buf, sizeof buf, "errno %u", e);
      return buf;
    }
  }
}

static const __wasi_rights_t R = __WASI_RIGHTS_FD_READ | __WASI_RIGHTS_FD_WRITE;
static const __wasi_lookupflags_t FOLLOW = __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW;

static void open_(const char* path, __wasi_lookupflags_t lf, __wasi_oflags_t of) {
  __wasi_fd_t fd = 0;
  // Directories are opened for reading only (write access to one is EISDIR).
  __wasi_rights_t rights = of & __WASI_OFLAGS_DIRECTORY ? __WASI_RIGHTS_FD_READDIR : R;
  __wasi_errno_t e = __wasi_path_open(3, lf, path, of, rights, 0, 0, &fd);
  printf("open%s%s %s: %s\n", lf ? "" : " nofollow", of & __WASI_OFLAGS_CREAT ? " creat" : of & __WASI_OFLAGS_TRUNC ? " trunc" : "",
         path, name(e));
  if (e == 0) (void)__wasi_fd_close(fd);
}

int main(int argc, char** argv) {
  const char* root = argc > 1 ? argv[1] : "/nonexistent";
  char abs_path[512];
  snprintf(abs_path, sizeof abs_path, "%s/outside/secret.txt", root);

  // Sanity: the sandbox works inside.
  open_("file.txt", FOLLOW, 0);
  open_("sub/../file.txt", FOLLOW, 0);
  open_("ok_link", FOLLOW, 0);
  open_(".", FOLLOW, __WASI_OFLAGS_DIRECTORY);

  // `..` chains and absolute paths.
  open_("..", FOLLOW, __WASI_OFLAGS_DIRECTORY);
  open_("../outside/secret.txt", FOLLOW, 0);
  open_("sub/../../outside/secret.txt", FOLLOW, 0);
  open_("sub/../sub/../../outside/secret.txt", FOLLOW, 0);
  open_(abs_path, FOLLOW, 0);
  // Absolute symlinks, climbing symlinks, in the middle and at the end.
  open_("abs/secret.txt", FOLLOW, 0);
  open_("abs_file", FOLLOW, 0);
  open_("up/secret.txt", FOLLOW, 0);
  open_("up_file", FOLLOW, 0);
  open_("up", FOLLOW, __WASI_OFLAGS_DIRECTORY);
  open_("sub/deep/secret.txt", FOLLOW, 0);
  // Creating or truncating through them.
  open_("abs_new", FOLLOW, __WASI_OFLAGS_CREAT);
  open_("up_new", FOLLOW, __WASI_OFLAGS_CREAT);
  open_("up/created", FOLLOW, __WASI_OFLAGS_CREAT);
  open_("up_file", FOLLOW, __WASI_OFLAGS_TRUNC);
  // Loops.
  open_("loop1", FOLLOW, 0);
  open_("self", FOLLOW, 0);
  open_("loop1/x", FOLLOW, 0);
  // Without follow, a final symlink is not followed (ELOOP), never escaped through.
  open_("up_file", 0, 0);

  __wasi_filestat_t st;
  printf("stat follow up_file: %s\n", name(__wasi_path_filestat_get(3, FOLLOW, "up_file", &st)));
  printf("stat follow abs: %s\n", name(__wasi_path_filestat_get(3, FOLLOW, "abs", &st)));
  printf("stat nofollow up_file: %s\n", name(__wasi_path_filestat_get(3, 0, "up_file", &st)));
  printf("stat ..: %s\n", name(__wasi_path_filestat_get(3, 0, "..", &st)));
  printf("stat sub/deep/secret.txt: %s\n", name(__wasi_path_filestat_get(3, 0, "sub/deep/secret.txt", &st)));
  printf("set_times follow up_file: %s\n",
         name(__wasi_path_filestat_set_times(3, FOLLOW, "up_file", 1, 1, __WASI_FSTFLAGS_MTIM | __WASI_FSTFLAGS_ATIM)));
  printf("set_times ../outside/secret.txt: %s\n",
         name(__wasi_path_filestat_set_times(3, 0, "../outside/secret.txt", 1, 1, __WASI_FSTFLAGS_MTIM)));
  printf("mkdir ../made: %s\n", name(__wasi_path_create_directory(3, "../made")));
  printf("mkdir up/made: %s\n", name(__wasi_path_create_directory(3, "up/made")));
  printf("unlink ../outside/secret.txt: %s\n", name(__wasi_path_unlink_file(3, "../outside/secret.txt")));
  printf("unlink up/secret.txt: %s\n", name(__wasi_path_unlink_file(3, "up/secret.txt")));
  printf("rmdir ../outside: %s\n", name(__wasi_path_remove_directory(3, "../outside")));
  printf("rename file.txt -> ../outside/moved: %s\n", name(__wasi_path_rename(3, "file.txt", 3, "../outside/moved")));
  printf("rename up/secret.txt -> stolen: %s\n", name(__wasi_path_rename(3, "up/secret.txt", 3, "stolen")));
  printf("link up/secret.txt -> stolen: %s\n", name(__wasi_path_link(3, 0, "up/secret.txt", 3, "stolen")));
  printf("link follow up_file -> stolen: %s\n", name(__wasi_path_link(3, FOLLOW, "up_file", 3, "stolen")));
  printf("link follow abs_file -> stolen: %s\n", name(__wasi_path_link(3, FOLLOW, "abs_file", 3, "stolen")));
  printf("link ../outside/secret.txt -> stolen: %s\n",
         name(__wasi_path_link(3, 0, "../outside/secret.txt", 3, "stolen")));
  printf("link file.txt -> ../outside/planted: %s\n", name(__wasi_path_link(3, 0, "file.txt", 3, "../outside/planted")));
  printf("symlink x -> ../outside/planted: %s\n", name(__wasi_path_symlink("x", 3, "../outside/planted")));
  printf("symlink x -> up/planted: %s\n", name(__wasi_path_symlink("x", 3, "up/planted")));
  char buf[64];
  __wasi_size_t n;
  printf("readlink ../outside/x: %s\n", name(__wasi_path_readlink(3, "../outside/x", (uint8_t*)buf, sizeof buf, &n)));
  printf("readlink up/x: %s\n", name(__wasi_path_readlink(3, "up/x", (uint8_t*)buf, sizeof buf, &n)));
  return 0;
}
