// What a WASI program can learn from outside without being told: the time,
// randomness, how long a sleep lasts, the order of a directory listing.
// tests/deterministic_test.cc runs it with and without --deterministic.
//
//   determinism [DIR]   prints the values below; with DIR, also the names in
//                       DIR in the order readdir returns them
//
// rand() is seeded from the realtime clock's nanoseconds, as programs do, and
// drives a loop whose length depends on it, so its instruction counts change
// with the time unless the time is virtual. It also allocates blocks of
// rand()-dependent sizes (the memory profile's test).
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  struct timespec real, mono0, mono1, res;
  clock_gettime(CLOCK_REALTIME, &real);
  srand((unsigned)(real.tv_sec ^ real.tv_nsec));
  unsigned long sum = 0;
  int n = 1000 + rand() % 1000;
  for (int i = 0; i < n; ++i) sum += (unsigned long)(rand() % 7);
  void* blocks[8];
  for (int i = 0; i < 8; ++i) blocks[i] = malloc(16 + (size_t)(rand() % 4096));
  for (int i = 0; i < 8; ++i) free(blocks[i]);

  clock_gettime(CLOCK_MONOTONIC, &mono0);
  usleep(250000);
  clock_gettime(CLOCK_MONOTONIC, &mono1);
  clock_getres(CLOCK_MONOTONIC, &res);
  long long slept = (long long)(mono1.tv_sec - mono0.tv_sec) * 1000000000LL + (mono1.tv_nsec - mono0.tv_nsec);

  unsigned char bytes[16];
  if (getentropy(bytes, sizeof bytes) != 0) return 1;

  printf("realtime %lld.%09ld\n", (long long)real.tv_sec, real.tv_nsec);
  printf("loop %d sum %lu\n", n, sum);
  printf("slept %lld\n", slept);
  printf("resolution %ld\n", res.tv_nsec);
  printf("random");
  for (int i = 0; i < 16; ++i) printf(" %02x", bytes[i]);
  printf("\n");
  if (argc > 1) {
    DIR* d = opendir(argv[1]);
    if (!d) return 2;
    printf("entries");
    for (struct dirent* e; (e = readdir(d));)
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) printf(" %s", e->d_name);
    printf("\n");
    closedir(d);
  }
  return 0;
}
