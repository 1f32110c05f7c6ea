/* What wasi-libc lacks and SQLite's unix VFS calls (bench only): WASI files
   have no owner or mode to change, and the guest is not root (so SQLite
   never tries to give a new journal the database's owner). */
#include <sys/types.h>
int fchmod(int fd, mode_t mode) { return 0; }
int fchown(int fd, uid_t owner, gid_t group) { return 0; }
uid_t geteuid(void) { return 1000; }
