/* What wasi-libc lacks and Lua's os and io libraries call: they fail as on
   a system without a shell or temporary files (bench only). */
#include <stdio.h>
FILE *tmpfile(void) { return NULL; }
int system(const char *cmd) { return cmd ? -1 : 0; }
