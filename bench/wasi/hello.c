// Hello, world through wasi-libc's stdio: the smallest real WASI command,
// for bench/startup.sh (start-up time of wzvm on it).
#include <stdio.h>

int main(void) {
  puts("hello, world");
  return 0;
}
