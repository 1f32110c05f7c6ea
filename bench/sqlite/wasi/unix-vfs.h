/* What SQLite 3.40's unix VFS (os_unix.c) names and wasi-libc lacks:
   build-programs.sh includes this before sqlite3.c for wasm32-wasi (bench
   only). The lock constants only have to compile: sqlbench opens its
   database with the "unix-none" VFS, which takes no locks (and wasi-libc's
   fcntl would refuse them). */
#include <fcntl.h>
#include <sys/types.h>
#define F_RDLCK 0
#define F_WRLCK 1
#define F_UNLCK 2
#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
int fchmod(int fd, mode_t mode);
int fchown(int fd, uid_t owner, gid_t group);
uid_t geteuid(void);
