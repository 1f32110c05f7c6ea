// A long-running guest for the live /debug/pprof/heap and /allocs endpoints
// (tests/viewers_test.cc). `hold` keeps 100 blocks of 1000 bytes for the
// whole run; then, by the first argument:
//   spin [ROUNDS]  `churn` allocates and frees a 64-byte block ROUNDS times
//                  (default: about forever), so requests land in guest code;
//   block          reads stdin until EOF, so requests land while the guest
//                  is blocked inside a host call.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void* volatile keep[100];
static void* volatile last;  // stops clang from eliding the malloc/free pairs

__attribute__((noinline)) static void hold(void) {
  for (int i = 0; i < 100; ++i) keep[i] = malloc(1000);
}

__attribute__((noinline)) static unsigned churn(long rounds) {
  unsigned sum = 0;
  for (long i = 0; i < rounds; ++i) {
    last = malloc(64);
    sum += (unsigned)(size_t)last & 0xF0;
    free(last);
  }
  return sum;
}

int main(int argc, char** argv) {
  hold();
  if (argc > 1 && strcmp(argv[1], "block") == 0) {
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {
    }
    return 0;
  }
  long rounds = argc > 2 ? atol(argv[2]) : 2000000000L;
  printf("%u\n", churn(rounds));
  return 0;
}
