// File and directory operations through libc, printing what they observe.
// Built twice: to wasm32-wasi (run by wzvm with the directory preopened) and
// natively; tests/wasi_test.cc checks that both print the same thing.
// Usage: fs DIR   (DIR is empty, and writable)
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path_buf[4][512];
static const char* P(int slot, const char* dir, const char* name) {
  snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", dir, name);
  return path_buf[slot];
}

#define CHECK(expr) report(#expr, (expr) >= 0 ? 0 : errno)
// errno names, not strerror(): musl's and glibc's messages differ.
static const char* errname(int e) {
  switch (e) {
    case 0: return "ok";
    case EBADF: return "EBADF";
    case EEXIST: return "EEXIST";
    case ENOENT: return "ENOENT";
    case ENOTEMPTY: return "ENOTEMPTY";
    case EISDIR: return "EISDIR";
    case ENOTDIR: return "ENOTDIR";
    case EINVAL: return "EINVAL";
    case ELOOP: return "ELOOP";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    default: return strerror(e);
  }
}
static void report(const char* what, int err) { printf("%-44s %s\n", what, errname(err)); }

static int cmp(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

static void list(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) { printf("opendir: %s\n", errname(errno)); return; }
  char* names[64]; int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) && n < 64) {
    char t = e->d_type == DT_DIR ? 'd' : e->d_type == DT_REG ? 'f' : e->d_type == DT_LNK ? 'l' : '?';
    names[n] = malloc(strlen(e->d_name) + 3);
    sprintf(names[n++], "%c %s", t, e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof names[0], cmp);  // directory order is the filesystem's
  printf("list:");
  for (int i = 0; i < n; ++i) { printf(" [%s]", names[i]); free(names[i]); }
  printf("\n");
}

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: fs DIR\n"); return 2; }
  const char* dir = argv[1];
  char buf[256];
  struct stat st;

  // Create, write, read back, seek, tell.
  int fd = open(P(0, dir, "a.txt"), O_CREAT | O_RDWR | O_TRUNC, 0644);
  report("open a.txt O_CREAT", fd >= 0 ? 0 : errno);
  CHECK(write(fd, "hello, world\n", 13));
  printf("lseek end: %ld\n", (long)lseek(fd, 0, SEEK_END));
  printf("lseek set 7: %ld\n", (long)lseek(fd, 7, SEEK_SET));
  ssize_t n = read(fd, buf, 5); buf[n > 0 ? n : 0] = 0;
  printf("read after seek: '%s'\n", buf);
  printf("tell: %ld\n", (long)lseek(fd, 0, SEEK_CUR));
  // pread/pwrite do not move the offset.
  CHECK(pwrite(fd, "HELLO", 5, 0));
  n = pread(fd, buf, 12, 0); buf[n > 0 ? n : 0] = 0;
  printf("pread: '%s' tell: %ld\n", buf, (long)lseek(fd, 0, SEEK_CUR));
  CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) == 0 ? 0 : -1);
  CHECK(posix_fallocate(fd, 0, 4096) == 0 ? 0 : -1);
  fstat(fd, &st); printf("size after fallocate: %lld\n", (long long)st.st_size);
  CHECK(ftruncate(fd, 5));
  fstat(fd, &st); printf("size after ftruncate: %lld regular: %d\n", (long long)st.st_size, S_ISREG(st.st_mode));
  CHECK(fsync(fd));
  CHECK(fdatasync(fd));
  // The append flag, set later with fcntl (fd_fdstat_set_flags).
  printf("append before: %d\n", (fcntl(fd, F_GETFL) & O_APPEND) != 0);
  CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND));
  printf("append after: %d\n", (fcntl(fd, F_GETFL) & O_APPEND) != 0);
  lseek(fd, 0, SEEK_SET);
  CHECK(write(fd, "+tail", 5));
  n = pread(fd, buf, sizeof buf - 1, 0); buf[n > 0 ? n : 0] = 0;
  printf("after append: '%s'\n", buf);
  CHECK(close(fd));

  // O_APPEND at open.
  fd = open(P(0, dir, "a.txt"), O_WRONLY | O_APPEND);
  CHECK(write(fd, "!", 1));
  close(fd);
  fd = open(P(0, dir, "a.txt"), O_RDONLY);
  n = read(fd, buf, sizeof buf - 1); buf[n > 0 ? n : 0] = 0;
  printf("content: '%s'\n", buf);
  report("write to O_RDONLY fd", write(fd, "x", 1) < 0 ? errno : 0);
  close(fd);

  // Exclusive create, missing files.
  report("open O_EXCL existing", open(P(0, dir, "a.txt"), O_CREAT | O_EXCL | O_WRONLY, 0644) < 0 ? errno : 0);
  report("open missing", open(P(0, dir, "nope"), O_RDONLY) < 0 ? errno : 0);
  report("stat missing", stat(P(0, dir, "nope"), &st) < 0 ? errno : 0);

  // Directories.
  CHECK(mkdir(P(0, dir, "sub"), 0755));
  report("mkdir existing", mkdir(P(0, dir, "sub"), 0755) < 0 ? errno : 0);
  CHECK(mkdir(P(0, dir, "sub/inner"), 0755));
  fd = open(P(0, dir, "sub/inner/f"), O_CREAT | O_WRONLY, 0644); close(fd);
  report("rmdir non-empty", rmdir(P(0, dir, "sub/inner")) < 0 ? errno : 0);
  report("unlink a directory", unlink(P(0, dir, "sub")) < 0 ? errno : 0);
  report("rmdir a file", rmdir(P(0, dir, "a.txt")) < 0 ? errno : 0);
  report("open file as directory", open(P(0, dir, "a.txt/"), O_RDONLY) < 0 ? errno : 0);
  stat(P(0, dir, "sub"), &st); printf("sub is dir: %d\n", S_ISDIR(st.st_mode));

  // Rename, hard link, symlink, readlink.
  CHECK(rename(P(0, dir, "sub/inner/f"), P(1, dir, "sub/g")));
  report("stat renamed-away", stat(P(0, dir, "sub/inner/f"), &st) < 0 ? errno : 0);
  CHECK(link(P(0, dir, "a.txt"), P(1, dir, "b.txt")));
  stat(P(0, dir, "a.txt"), &st); printf("nlink after link: %ld\n", (long)st.st_nlink);
  CHECK(symlink("a.txt", P(0, dir, "ln")));
  n = readlink(P(0, dir, "ln"), buf, sizeof buf); buf[n > 0 ? n : 0] = 0;
  printf("readlink: '%s'\n", buf);
  n = readlink(P(0, dir, "ln"), buf, 3); buf[n > 0 ? n : 0] = 0;
  printf("readlink truncated: %ld '%s'\n", (long)n, buf);
  report("readlink a file", readlink(P(0, dir, "a.txt"), buf, sizeof buf) < 0 ? errno : 0);
  lstat(P(0, dir, "ln"), &st); printf("lstat ln is link: %d\n", S_ISLNK(st.st_mode));
  stat(P(0, dir, "ln"), &st); printf("stat ln size: %lld\n", (long long)st.st_size);
  fd = open(P(0, dir, "ln"), O_RDONLY | O_NOFOLLOW);
  report("open symlink O_NOFOLLOW", fd < 0 ? errno : 0);
  CHECK(symlink("sub", P(0, dir, "dirlink")));
  fd = open(P(0, dir, "dirlink/g"), O_RDONLY);
  report("open through dir symlink", fd < 0 ? errno : 0);
  close(fd);
  CHECK(symlink("loop2", P(0, dir, "loop1")));
  CHECK(symlink("loop1", P(0, dir, "loop2")));
  report("open symlink loop", open(P(0, dir, "loop1"), O_RDONLY) < 0 ? errno : 0);

  // Times.
  struct timespec ts[2] = {{1000000000, 123456789}, {1500000000, 987654321}};
  CHECK(utimensat(AT_FDCWD, P(0, dir, "a.txt"), ts, 0));
  stat(P(0, dir, "a.txt"), &st);
  printf("times: %lld.%09ld %lld.%09ld\n", (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
         (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  struct timespec omit[2] = {{0, UTIME_OMIT}, {2000000000, 5}};
  CHECK(utimensat(AT_FDCWD, P(0, dir, "ln"), omit, AT_SYMLINK_NOFOLLOW));
  stat(P(0, dir, "a.txt"), &st); printf("target mtime unchanged: %lld\n", (long long)st.st_mtim.tv_sec);
  lstat(P(0, dir, "ln"), &st); printf("link mtime: %lld.%09ld\n", (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  fd = open(P(0, dir, "b.txt"), O_RDWR);
  CHECK(futimens(fd, omit));
  fstat(fd, &st); printf("futimens mtime: %lld\n", (long long)st.st_mtim.tv_sec);
  close(fd);

  list(dir);
  list(P(0, dir, "sub"));

  // Clean up.
  CHECK(unlink(P(0, dir, "ln")));
  CHECK(unlink(P(0, dir, "dirlink")));
  CHECK(unlink(P(0, dir, "loop1")));
  CHECK(unlink(P(0, dir, "loop2")));
  CHECK(unlink(P(0, dir, "b.txt")));
  CHECK(unlink(P(0, dir, "sub/g")));
  CHECK(rmdir(P(0, dir, "sub/inner")));
  CHECK(rmdir(P(0, dir, "sub")));
  CHECK(unlink(P(0, dir, "a.txt")));
  list(dir);
  return 0;
}
