// A TCP echo server over the sockets wzvm preopens (--listen, --fd): lists
// the fds it was given (so tests see their order), then accepts CONNECTIONS
// connections (argv[1], default 1) one after another on the first listening
// socket and sends back every byte it receives until the peer shuts down its
// side. Uses wasi-libc's accept/recv/send/shutdown, as a real server would.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wasi/api.h>

static const char* type_name(__wasi_filetype_t t) {
  switch (t) {
    case __WASI_FILETYPE_DIRECTORY:
      return "directory";
    case __WASI_FILETYPE_REGULAR_FILE:
      return "file";
    case __WASI_FILETYPE_SOCKET_STREAM:
      return "socket_stream";
    case __WASI_FILETYPE_SOCKET_DGRAM:
      return "socket_dgram";
    case __WASI_FILETYPE_CHARACTER_DEVICE:
      return "character_device";
    default:
      return "other";
  }
}

int main(int argc, char** argv) {
  int connections = argc > 1 ? atoi(argv[1]) : 1;
  int listener = -1;
  for (int fd = 3;; ++fd) {
    __wasi_fdstat_t st;
    if (__wasi_fd_fdstat_get(fd, &st) != 0) break;
    printf("fd %d: %s", fd, type_name(st.fs_filetype));
    __wasi_prestat_t pre;
    if (__wasi_fd_prestat_get(fd, &pre) == 0) {
      char name[256] = {0};
      if (pre.u.dir.pr_name_len < sizeof name &&
          __wasi_fd_prestat_dir_name(fd, (uint8_t*)name, pre.u.dir.pr_name_len) == 0)
        printf(" %s", name);
    }
    // A listening socket is one that may accept; a connection has no such right.
    int can_accept = (st.fs_rights_base & __WASI_RIGHTS_SOCK_ACCEPT) != 0;
    if (st.fs_filetype == __WASI_FILETYPE_SOCKET_STREAM) printf(can_accept ? " accept" : " connected");
    printf("\n");
    if (listener < 0 && st.fs_filetype == __WASI_FILETYPE_SOCKET_STREAM && can_accept) listener = fd;
  }
  if (listener < 0) {
    fprintf(stderr, "echo: no listening socket (use --listen HOST:PORT)\n");
    return 2;
  }
  fflush(stdout);
  for (int i = 0; i < connections; ++i) {
    int conn = accept(listener, NULL, NULL);
    if (conn < 0) {
      perror("echo: accept");
      return 1;
    }
    long total = 0;
    char buf[4096];
    for (;;) {
      ssize_t n = recv(conn, buf, sizeof buf, 0);
      if (n < 0) {
        perror("echo: recv");
        return 1;
      }
      if (n == 0) break;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = send(conn, buf + off, n - off, 0);
        if (w < 0) {
          perror("echo: send");
          return 1;
        }
        off += w;
      }
      total += n;
    }
    shutdown(conn, SHUT_WR);
    close(conn);
    printf("connection %d: %ld bytes\n", i + 1, total);
    fflush(stdout);
  }
  return 0;
}
