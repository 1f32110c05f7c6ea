// WASI functions outside the file system, and raw calls that libc does not
// make (bad pointers, rights, readdir cookies, renumber, sockets), one
// subcommand each. Run by tests/wasi_test.cc. Usage: misc COMMAND [ARGS...]
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wasi/api.h>

// proc_raise left wasi-libc's headers; the import still exists in preview1.
__attribute__((import_module("wasi_snapshot_preview1"), import_name("proc_raise")))
uint16_t raw_proc_raise(uint32_t sig);
// wasi-libc's wrapper takes a C string (strlen would trap first on a bad pointer).
__attribute__((import_module("wasi_snapshot_preview1"), import_name("path_open")))
uint16_t raw_path_open(uint32_t fd, uint32_t dirflags, uint32_t path, uint32_t path_len, uint32_t oflags,
                       uint64_t base, uint64_t inheriting, uint32_t fdflags, uint32_t out_fd);

static int failures = 0;
#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) { printf("FAIL line %d: %s\n", __LINE__, #cond); ++failures; } \
  } while (0)

static uint64_t now(__wasi_clockid_t id) {
  __wasi_timestamp_t t = 0;
  (void)__wasi_clock_time_get(id, 1, &t);
  return t;
}

static int cmd_args(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) printf("argv[%d]=%s\n", i, argv[i]);
  extern char** environ;
  for (char** e = environ; *e; ++e) printf("env %s\n", *e);
  return 0;
}

static int cmd_clocks(void) {
  __wasi_timestamp_t res;
  for (__wasi_clockid_t id = 0; id < 4; ++id) {
    EXPECT(__wasi_clock_res_get(id, &res) == 0);
    EXPECT(res > 0 && res <= 1000000000ull);
  }
  EXPECT(__wasi_clock_res_get(4, &res) == __WASI_ERRNO_INVAL);
  __wasi_timestamp_t t;
  EXPECT(__wasi_clock_time_get(9, 1, &t) == __WASI_ERRNO_INVAL);
  EXPECT(now(__WASI_CLOCKID_REALTIME) > 1600000000ull * 1000000000ull);  // after 2020
  uint64_t m1 = now(__WASI_CLOCKID_MONOTONIC);
  volatile uint64_t spin = 0;
  uint64_t c1 = now(__WASI_CLOCKID_PROCESS_CPUTIME_ID), t1 = now(__WASI_CLOCKID_THREAD_CPUTIME_ID);
  for (int i = 0; i < 2000000; ++i) spin += i;
  EXPECT(spin > 0);
  EXPECT(now(__WASI_CLOCKID_MONOTONIC) > m1);
  EXPECT(now(__WASI_CLOCKID_PROCESS_CPUTIME_ID) > c1);
  EXPECT(now(__WASI_CLOCKID_THREAD_CPUTIME_ID) > t1);
  // The libc view of the same clocks.
  struct timespec ts;
  EXPECT(clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
  EXPECT(time(NULL) > 1600000000);
  printf("clocks ok\n");
  return failures;
}

static int cmd_random(void) {
  uint8_t a[64] = {0}, b[64] = {0};
  EXPECT(__wasi_random_get(a, sizeof a) == 0);
  EXPECT(__wasi_random_get(b, sizeof b) == 0);
  EXPECT(memcmp(a, b, sizeof a) != 0);
  EXPECT(__wasi_random_get((uint8_t*)0xFFFFFFF0u, 64) == __WASI_ERRNO_FAULT);
  printf("random ok\n");
  return failures;
}

static int cmd_sleep(void) {
  // Relative clock: wasi-libc's nanosleep.
  uint64_t t0 = now(__WASI_CLOCKID_MONOTONIC);
  struct timespec req = {0, 20 * 1000000};
  EXPECT(nanosleep(&req, NULL) == 0);
  uint64_t t1 = now(__WASI_CLOCKID_MONOTONIC);
  EXPECT(t1 - t0 >= 20000000ull);
  // Absolute realtime deadline, and two clocks at once: the earlier fires, alone.
  __wasi_subscription_t subs[2];
  memset(subs, 0, sizeof subs);
  subs[0].userdata = 7;
  subs[0].u.tag = __WASI_EVENTTYPE_CLOCK;
  subs[0].u.u.clock.id = __WASI_CLOCKID_REALTIME;
  subs[0].u.u.clock.timeout = now(__WASI_CLOCKID_REALTIME) + 10000000;
  subs[0].u.u.clock.flags = __WASI_SUBCLOCKFLAGS_SUBSCRIPTION_CLOCK_ABSTIME;
  subs[1].userdata = 8;
  subs[1].u.tag = __WASI_EVENTTYPE_CLOCK;
  subs[1].u.u.clock.id = __WASI_CLOCKID_MONOTONIC;
  subs[1].u.u.clock.timeout = 5000000000ull;
  __wasi_event_t ev[2];
  __wasi_size_t n = 0;
  t0 = now(__WASI_CLOCKID_MONOTONIC);
  EXPECT(__wasi_poll_oneoff(subs, ev, 2, &n) == 0);
  t1 = now(__WASI_CLOCKID_MONOTONIC);
  EXPECT(n == 1 && ev[0].userdata == 7 && ev[0].type == __WASI_EVENTTYPE_CLOCK && ev[0].error == 0);
  EXPECT(t1 - t0 >= 5000000ull && t1 - t0 < 2000000000ull);
  EXPECT(__wasi_poll_oneoff(subs, ev, 0, &n) == __WASI_ERRNO_INVAL);
  EXPECT(__wasi_sched_yield() == 0);
  printf("sleep ok\n");
  return failures;
}

// stdin is a pipe holding "abc" whose writer stays open; fd 99 does not exist.
static int cmd_poll(void) {
  __wasi_subscription_t subs[4];
  memset(subs, 0, sizeof subs);
  subs[0].userdata = 1;
  subs[0].u.tag = __WASI_EVENTTYPE_FD_READ;
  subs[0].u.u.fd_read.file_descriptor = 0;
  subs[1].userdata = 2;
  subs[1].u.tag = __WASI_EVENTTYPE_FD_WRITE;
  subs[1].u.u.fd_write.file_descriptor = 1;
  subs[2].userdata = 3;
  subs[2].u.tag = __WASI_EVENTTYPE_FD_READ;
  subs[2].u.u.fd_read.file_descriptor = 99;
  subs[3].userdata = 4;
  subs[3].u.tag = __WASI_EVENTTYPE_CLOCK;
  subs[3].u.u.clock.id = __WASI_CLOCKID_MONOTONIC;
  subs[3].u.u.clock.timeout = 5000000000ull;
  __wasi_event_t ev[4];
  __wasi_size_t n = 0;
  EXPECT(__wasi_poll_oneoff(subs, ev, 4, &n) == 0);
  int seen_read = 0, seen_write = 0, seen_bad = 0;
  for (__wasi_size_t i = 0; i < n; ++i) {
    if (ev[i].userdata == 1) { seen_read = 1; EXPECT(ev[i].type == __WASI_EVENTTYPE_FD_READ); EXPECT(ev[i].fd_readwrite.nbytes == 3); }
    if (ev[i].userdata == 2) { seen_write = 1; EXPECT(ev[i].error == 0); }
    if (ev[i].userdata == 3) { seen_bad = 1; EXPECT(ev[i].error == __WASI_ERRNO_BADF); }
    EXPECT(ev[i].userdata != 4);  // the clock is 5 s away
  }
  EXPECT(seen_read && seen_write && seen_bad);
  // Drain stdin; then a read subscription waits and the clock fires instead.
  char buf[8];
  EXPECT(read(0, buf, sizeof buf) == 3);
  subs[3].u.u.clock.timeout = 10000000;
  __wasi_subscription_t two[2] = {subs[0], subs[3]};
  n = 0;
  EXPECT(__wasi_poll_oneoff(two, ev, 2, &n) == 0);
  EXPECT(n == 1 && ev[0].userdata == 4 && ev[0].type == __WASI_EVENTTYPE_CLOCK);
  printf("poll ok\n");
  return failures;
}

// A directory preopened as fd 3.
static int cmd_fds(void) {
  __wasi_prestat_t ps;
  EXPECT(__wasi_fd_prestat_get(3, &ps) == 0 && ps.tag == __WASI_PREOPENTYPE_DIR);
  char name[64] = {0};
  EXPECT(__wasi_fd_prestat_dir_name(3, (uint8_t*)name, ps.u.dir.pr_name_len) == 0);
  printf("preopen 3: %s\n", name);
  EXPECT(__wasi_fd_prestat_dir_name(3, (uint8_t*)name, 0) == __WASI_ERRNO_NAMETOOLONG);
  EXPECT(__wasi_fd_prestat_get(0, &ps) == __WASI_ERRNO_BADF);
  EXPECT(__wasi_fd_prestat_get(4, &ps) == __WASI_ERRNO_BADF);

  __wasi_fdstat_t st;
  EXPECT(__wasi_fd_fdstat_get(3, &st) == 0 && st.fs_filetype == __WASI_FILETYPE_DIRECTORY);
  // Rights: a file opened with everything, then narrowed; rights never grow back.
  __wasi_fd_t fd;
  EXPECT(__wasi_path_open(3, 0, "r.txt", __WASI_OFLAGS_CREAT | __WASI_OFLAGS_TRUNC, ~0ull, ~0ull, 0, &fd) == 0);
  EXPECT(__wasi_fd_fdstat_get(fd, &st) == 0 && st.fs_filetype == __WASI_FILETYPE_REGULAR_FILE);
  EXPECT(st.fs_rights_base & __WASI_RIGHTS_FD_WRITE);
  EXPECT(!(st.fs_rights_base & __WASI_RIGHTS_PATH_OPEN));  // file rights only
  __wasi_ciovec_t iov = {(const uint8_t*)"data", 4};
  __wasi_size_t n;
  EXPECT(__wasi_fd_write(fd, &iov, 1, &n) == 0 && n == 4);
  EXPECT(__wasi_fd_fdstat_set_rights(fd, st.fs_rights_base & ~__WASI_RIGHTS_FD_WRITE, 0) == 0);
  EXPECT(__wasi_fd_write(fd, &iov, 1, &n) == __WASI_ERRNO_NOTCAPABLE);
  EXPECT(__wasi_fd_fdstat_set_rights(fd, st.fs_rights_base, 0) == __WASI_ERRNO_NOTCAPABLE);
  // Renumber: fd moves onto an open number; the old number is gone.
  __wasi_fd_t other;
  EXPECT(__wasi_path_open(3, 0, "r.txt", 0, __WASI_RIGHTS_FD_READ, 0, 0, &other) == 0);
  EXPECT(__wasi_fd_renumber(fd, other) == 0);
  __wasi_filesize_t pos = 0;
  EXPECT(__wasi_fd_tell(other, &pos) == 0 && pos == 4);  // it is the written-to file's description
  EXPECT(__wasi_fd_close(fd) == __WASI_ERRNO_BADF);
  EXPECT(__wasi_fd_renumber(other, 77) == __WASI_ERRNO_BADF);
  EXPECT(__wasi_fd_renumber(77, other) == __WASI_ERRNO_BADF);
  EXPECT(__wasi_fd_close(other) == 0);
  // Seeking a pipe or tty is refused by rights or by the host; a bad whence is EINVAL.
  EXPECT(__wasi_path_open(3, 0, "r.txt", 0, __WASI_RIGHTS_FD_SEEK | __WASI_RIGHTS_FD_READ | __WASI_RIGHTS_FD_ADVISE, 0, 0, &fd) == 0);
  EXPECT(__wasi_fd_seek(fd, 0, 3, &pos) == __WASI_ERRNO_INVAL);
  EXPECT(__wasi_fd_seek(fd, -1, __WASI_WHENCE_SET, &pos) == __WASI_ERRNO_INVAL);
  EXPECT(__wasi_fd_seek(fd, 0, __WASI_WHENCE_END, &pos) == 0 && pos == 4);
  EXPECT(__wasi_fd_advise(fd, 0, 4, 9) == __WASI_ERRNO_INVAL);
  EXPECT(__wasi_fd_close(fd) == 0);
  EXPECT(__wasi_path_unlink_file(3, "r.txt") == 0);

  // fd_readdir with a buffer too small for even one entry: cookies resume,
  // every name comes exactly once.
  for (int i = 0; i < 20; ++i) {
    char nm[16];
    snprintf(nm, sizeof nm, "entry%02d", i);
    EXPECT(__wasi_path_open(3, 0, nm, __WASI_OFLAGS_CREAT, __WASI_RIGHTS_FD_WRITE, 0, 0, &fd) == 0);
    (void)__wasi_fd_close(fd);
  }
  EXPECT(__wasi_path_open(3, 0, ".", __WASI_OFLAGS_DIRECTORY, __WASI_RIGHTS_FD_READDIR, 0, 0, &fd) == 0);
  int seen[20] = {0}, total = 0;
  __wasi_dircookie_t cookie = 0;
  uint8_t buf[300];
  for (int round = 0; round < 1000; ++round) {
    __wasi_size_t used = 0;
    EXPECT(__wasi_fd_readdir(fd, buf, sizeof buf, cookie, &used) == 0);
    size_t off = 0;
    int complete = 0;
    while (off + sizeof(__wasi_dirent_t) <= used) {
      __wasi_dirent_t d;
      memcpy(&d, buf + off, sizeof d);
      if (off + sizeof d + d.d_namlen > used) break;  // cut: ask again from its cookie
      char nm[64] = {0};
      memcpy(nm, buf + off + sizeof d, d.d_namlen < 63 ? d.d_namlen : 63);
      int k;
      if (sscanf(nm, "entry%d", &k) == 1 && k >= 0 && k < 20) {
        seen[k]++;
        EXPECT(d.d_type == __WASI_FILETYPE_REGULAR_FILE);
      }
      ++total;
      cookie = d.d_next;
      off += sizeof d + d.d_namlen;
      ++complete;
    }
    if (used < sizeof buf) break;
    EXPECT(complete > 0);
  }
  for (int i = 0; i < 20; ++i) EXPECT(seen[i] == 1);
  EXPECT(total == 22);  // with "." and ".."
  // Restarting from cookie 0 lists again.
  __wasi_size_t used = 0;
  EXPECT(__wasi_fd_readdir(fd, buf, sizeof buf, 0, &used) == 0 && used > 0);
  EXPECT(__wasi_fd_readdir(fd, buf, sizeof buf, 1000, &used) == 0 && used == 0);
  (void)__wasi_fd_close(fd);
  for (int i = 0; i < 20; ++i) {
    char nm[16];
    snprintf(nm, sizeof nm, "entry%02d", i);
    EXPECT(__wasi_path_unlink_file(3, nm) == 0);
  }
  printf("fds ok\n");
  return failures;
}

// Bad guest pointers are EFAULT, and the host writes nothing.
static int cmd_efault(void) {
  const uint32_t far = 0xFFFFFFF0u;  // beyond any memory this program has
  __wasi_ciovec_t bad_buf = {(const uint8_t*)far, 32};
  __wasi_size_t n = 12345;
  EXPECT(__wasi_fd_write(1, &bad_buf, 1, &n) == __WASI_ERRNO_FAULT);
  EXPECT(n == 12345);
  EXPECT(__wasi_fd_write(1, (const __wasi_ciovec_t*)far, 1, &n) == __WASI_ERRNO_FAULT);
  __wasi_ciovec_t ok = {(const uint8_t*)"x", 1};
  EXPECT(__wasi_fd_write(1, &ok, 1, (__wasi_size_t*)far) == __WASI_ERRNO_FAULT);
  // A length that wraps a 32-bit sum.
  __wasi_iovec_t wrap = {(uint8_t*)16, 0xFFFFFFF8u};
  EXPECT(__wasi_fd_read(0, &wrap, 1, &n) == __WASI_ERRNO_FAULT);
  EXPECT(__wasi_args_sizes_get((__wasi_size_t*)far, &n) == __WASI_ERRNO_FAULT);
  EXPECT(__wasi_args_get((uint8_t**)far, (uint8_t*)far) == __WASI_ERRNO_FAULT);
  EXPECT(__wasi_clock_time_get(0, 1, (__wasi_timestamp_t*)(far + 12)) == __WASI_ERRNO_FAULT);
  __wasi_fd_t fd;
  EXPECT(raw_path_open(3, 0, far, 64, 0, 0, 0, 0, (uint32_t)&fd) == __WASI_ERRNO_FAULT);
  EXPECT(raw_path_open(3, 0, (uint32_t)"x", 1, 0, 0, 0, 0, far + 14) == __WASI_ERRNO_FAULT);
  __wasi_event_t ev;
  EXPECT(__wasi_poll_oneoff((const __wasi_subscription_t*)16, &ev, 0x10000000u, &n) == __WASI_ERRNO_FAULT);
  uint8_t buf[8];
  EXPECT(__wasi_fd_readdir(3, (uint8_t*)far, 64, 0, &n) == __WASI_ERRNO_FAULT);
  EXPECT(__wasi_random_get(buf, 0) == 0);
  printf("efault ok\n");
  return failures;
}

static int cmd_errors(void) {
  EXPECT(raw_proc_raise(6) == __WASI_ERRNO_NOSYS);
  EXPECT(__wasi_fd_close(100) == __WASI_ERRNO_BADF);
  __wasi_fdstat_t st;
  EXPECT(__wasi_fd_fdstat_get(100, &st) == __WASI_ERRNO_BADF);
  // Sockets: no socket here. fd 0 is a pipe or file: not a socket.
  __wasi_fd_t fd;
  EXPECT(__wasi_sock_accept(100, 0, &fd) == __WASI_ERRNO_BADF);
  EXPECT(__wasi_sock_shutdown(100, __WASI_SDFLAGS_WR) == __WASI_ERRNO_BADF);
  printf("errors ok\n");
  return failures;
}

// fd 3 is a connected stream socket whose peer already sent "pong".
static int cmd_sock(void) {
  __wasi_ciovec_t out = {(const uint8_t*)"ping", 4};
  __wasi_size_t n = 0;
  EXPECT(__wasi_sock_send(3, &out, 1, 0, &n) == 0 && n == 4);
  char buf[16] = {0};
  __wasi_iovec_t in = {(uint8_t*)buf, 2};
  __wasi_roflags_t ro = 9;
  EXPECT(__wasi_sock_recv(3, &in, 1, __WASI_RIFLAGS_RECV_PEEK, &n, &ro) == 0 && n == 2 && ro == 0);
  in.buf_len = sizeof buf - 1;
  EXPECT(__wasi_sock_recv(3, &in, 1, 0, &n, &ro) == 0 && n == 4);
  EXPECT(strcmp(buf, "pong") == 0);
  EXPECT(__wasi_sock_shutdown(3, __WASI_SDFLAGS_WR) == 0);
  EXPECT(__wasi_sock_shutdown(3, 0) == __WASI_ERRNO_INVAL);
  // fd 4 is a listening socket with one connection waiting, which sent "hi".
  __wasi_fd_t conn;
  // Only a listening socket has the right to accept.
  EXPECT(__wasi_sock_accept(3, 0, &conn) == __WASI_ERRNO_NOTCAPABLE);
  EXPECT(__wasi_sock_accept(4, 0, &conn) == 0);
  in.buf_len = 2;  // WAITALL waits for the whole buffer: exactly what the peer sent
  memset(buf, 0, sizeof buf);
  EXPECT(__wasi_sock_recv(conn, &in, 1, __WASI_RIFLAGS_RECV_WAITALL, &n, &ro) == 0 && n == 2);
  EXPECT(strcmp(buf, "hi") == 0);
  EXPECT(__wasi_fd_close(conn) == 0);
  printf("sock ok\n");
  return failures;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* cmd = argv[1];
  if (!strcmp(cmd, "args")) return cmd_args(argc, argv);
  if (!strcmp(cmd, "clocks")) return cmd_clocks();
  if (!strcmp(cmd, "random")) return cmd_random();
  if (!strcmp(cmd, "sleep")) return cmd_sleep();
  if (!strcmp(cmd, "poll")) return cmd_poll();
  if (!strcmp(cmd, "fds")) return cmd_fds();
  if (!strcmp(cmd, "efault")) return cmd_efault();
  if (!strcmp(cmd, "errors")) return cmd_errors();
  if (!strcmp(cmd, "sock")) return cmd_sock();
  if (!strcmp(cmd, "exit")) { printf("exiting\n"); fflush(stdout); __wasi_proc_exit(atoi(argv[2])); }
  if (!strcmp(cmd, "trap")) __builtin_trap();
  return 2;
}
