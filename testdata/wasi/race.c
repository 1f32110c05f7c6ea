// Check-vs-use race, guest side: opens DIR/f (argv[1], under the preopen)
// over and over while the host swaps DIR between a real directory and a
// symlink that leads outside the preopen. Every open must either reach the
// inside file or be refused; the outside file's content must never be read.
// Stops after enough lookups with both outcomes seen often (the race was
// really run), or after a bound, and prints the counts.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  long inside = 0, secret = 0, refused = 0, other = 0, iterations = 0;
  // Many lookups: a check-then-use bug loses the race only now and then.
  while (iterations < 2000000 && !(iterations >= 60000 && inside >= 200 && refused >= 200)) {
    ++iterations;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
      // ENOTCAPABLE (libc: ENOTCAPABLE) for the symlink; ENOENT while a swap is in flight.
      if (errno == ENOTCAPABLE)
        ++refused;
      else
        ++other;
      continue;
    }
    char buf[16] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0 && strcmp(buf, "inside") == 0)
      ++inside;
    else if (n > 0 && strcmp(buf, "SECRET") == 0)
      ++secret;
    else
      ++other;
  }
  printf("inside=%s secret=%ld refused=%s\n", inside >= 200 ? "many" : "few", secret,
         refused >= 200 ? "many" : "few");
  fprintf(stderr, "iterations=%ld inside=%ld refused=%ld other=%ld\n", iterations, inside, refused, other);
  return secret != 0;
}
