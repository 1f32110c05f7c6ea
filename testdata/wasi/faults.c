// Guest of tests/faults_test.cc, which breaks things around a run (stdout,
// the profile's directory, signals, the pprof server) and checks that
// nothing is lost. Usage: faults COMMAND [ARGS...]
//   faults stdout        writes lines to stdout with fd_write (no stdio
//                        buffer) until one fails, then says on stderr which
//                        WASI errno it got, and does some work
//   faults spread ROUNDS [MS]
//                        calls leaves through 32768 distinct call stacks
//                        ROUNDS times, then prints a checksum: an instruction
//                        profile of many stacks (megabytes), slow to write.
//                        With MS, the rounds are spread over at least MS ms
//                        (sleeping between them when ahead): a run that lasts
//                        as long on any machine and computes all along
//   faults sleep MS      prints "sleeping" (flushed, so a test knows the guest
//                        runs), sleeps MS ms in poll_oneoff, prints "done"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wasi/api.h>

#define NOINLINE __attribute__((noinline))

// Five levels of 8 functions: each function of a level calls all 8 of the
// next, so leaves run under 8^5 = 32768 stacks, each with its own call sites.
// The constants differ so no two functions are the same code.
#define LEAF(i)                                                \
  static NOINLINE uint32_t leaf##i(uint32_t x) {               \
    for (uint32_t k = 0; k < (i) % 3 + 2; ++k)                 \
      x = x * 1664525u + 1013904223u + (i);                    \
    return x ^ (x >> ((i) + 3));                               \
  }
#define CALL8(f, x) \
  x = f##0(x); x = f##1(x); x = f##2(x); x = f##3(x); x = f##4(x); x = f##5(x); x = f##6(x); x = f##7(x);
#define LEVEL(name, next, i, op) \
  static NOINLINE uint32_t name##i(uint32_t x) { x op (i) + 1u; CALL8(next, x) return x; }
#define DEFINE8(m, ...) m(__VA_ARGS__ 0) m(__VA_ARGS__ 1) m(__VA_ARGS__ 2) m(__VA_ARGS__ 3) \
                        m(__VA_ARGS__ 4) m(__VA_ARGS__ 5) m(__VA_ARGS__ 6) m(__VA_ARGS__ 7)
#define LEVEL_C(i) LEVEL(c, leaf, i, ^=)
#define LEVEL_B(i) LEVEL(b, c, i, +=)
#define LEVEL_A(i) LEVEL(a, b, i, *=)
#define LEVEL_S(i) LEVEL(s, a, i, -=)

DEFINE8(LEAF, )
DEFINE8(LEVEL_C, )
DEFINE8(LEVEL_B, )
DEFINE8(LEVEL_A, )
DEFINE8(LEVEL_S, )

static uint32_t spread(uint32_t x) {
  CALL8(s, x)
  return x;
}

static int cmd_stdout(void) {
  static const char line[] = "line\n";
  for (int i = 0; i < 100000; ++i) {
    __wasi_ciovec_t iov = {(const uint8_t*)line, sizeof line - 1};
    __wasi_size_t n = 0;
    __wasi_errno_t e = __wasi_fd_write(1, &iov, 1, &n);
    if (e != 0) {
      // Work after the failure, so the profiles have something in them.
      uint32_t sum = spread((uint32_t)i);
      fprintf(stderr, "fd_write: errno %d after %d writes (%u)\n", e, i, (unsigned)(sum & 1));
      return 0;
    }
  }
  fprintf(stderr, "fd_write: no error in 100000 writes\n");
  return 1;
}

static uint64_t now_ns(void) {
  __wasi_timestamp_t t = 0;
  (void)__wasi_clock_time_get(__WASI_CLOCKID_MONOTONIC, 1, &t);
  return t;
}

static void sleep_ns(uint64_t ns) {
  __wasi_subscription_t sub;
  memset(&sub, 0, sizeof sub);
  sub.u.tag = __WASI_EVENTTYPE_CLOCK;
  sub.u.u.clock.id = __WASI_CLOCKID_MONOTONIC;
  sub.u.u.clock.timeout = ns;
  __wasi_event_t ev;
  __wasi_size_t n = 0;
  (void)__wasi_poll_oneoff(&sub, &ev, 1, &n);
}

static int cmd_spread(int rounds, int ms) {
  const uint64_t start = now_ns();
  uint32_t x = 1;
  for (int r = 0; r < rounds; ++r) {
    x = spread(x);
    uint64_t due = start + (uint64_t)ms * 1000000u * (uint64_t)(r + 1) / (uint64_t)rounds, t = now_ns();
    if (ms > 0 && t < due) sleep_ns(due - t);
  }
  printf("%u\n", (unsigned)x);
  return 0;
}

static int cmd_sleep(int ms) {
  printf("sleeping\n");
  fflush(stdout);
  sleep_ns((uint64_t)ms * 1000000u);
  printf("done\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && !strcmp(argv[1], "stdout")) return cmd_stdout();
  if (argc >= 3 && !strcmp(argv[1], "spread")) return cmd_spread(atoi(argv[2]), argc >= 4 ? atoi(argv[3]) : 0);
  if (argc >= 3 && !strcmp(argv[1], "sleep")) return cmd_sleep(atoi(argv[2]));
  fprintf(stderr, "usage: faults stdout | faults spread ROUNDS [MS] | faults sleep MS\n");
  return 2;
}
