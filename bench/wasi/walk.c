// WASI directory benchmark guest: walks DIR recursively (opendir/readdir/
// fstatat, i.e. fd_readdir, path_open, path_filestat_get) and prints the
// number of directories, files and file bytes.
// Usage: walk DIR
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static long long dirs, files, bytes;

static void walk(const char* path) {
  DIR* d = opendir(path);
  if (!d) { perror(path); return; }
  ++dirs;
  struct dirent* e;
  char child[4096];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(child, sizeof child, "%s/%s", path, e->d_name);
    struct stat st;
    if (lstat(child, &st) != 0) { perror(child); continue; }
    if (S_ISDIR(st.st_mode)) walk(child);
    else { ++files; bytes += st.st_size; }
  }
  closedir(d);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  walk(argv[1]);
  printf("%lld dirs, %lld files, %lld bytes\n", dirs, files, bytes);
  return 0;
}
