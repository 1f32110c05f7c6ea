// WASI I/O benchmark guest: copies SRC to DST through fd_read/fd_write with a
// BUF-byte buffer (default 64 KiB) and prints the byte count.
// Usage: copy SRC DST [BUF]
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  size_t size = argc > 3 ? (size_t)atol(argv[3]) : 65536;
  char* buf = malloc(size);
  int in = open(argv[1], O_RDONLY), out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!buf || in < 0 || out < 0) { perror("copy"); return 1; }
  long long total = 0;
  for (;;) {
    ssize_t n = read(in, buf, size);
    if (n < 0) { perror("read"); return 1; }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buf + done, n - done);
      if (w < 0) { perror("write"); return 1; }
      done += w;
    }
    total += n;
  }
  close(in);
  close(out);
  printf("%lld\n", total);
  return 0;
}
