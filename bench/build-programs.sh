#!/usr/bin/env bash
# The C programs of the real-programs bench (bench/real.sh), from Debian's
# source packages, each built twice with clang-14 -O2 from the same source:
# natively and for wasm32-wasi against Debian's wasi-libc, into OUTDIR, once
# (a stamp newer than this script skips a program):
#   lua.native, lua.wasm       Lua 5.4: the upstream tarball in the lua5.4
#                              package (without Debian's packaging patches,
#                              whose luaconf.h includes a multiarch header)
#   zbench.native, zbench.wasm bench/zlib/zbench.c on zlib's own sources
#                              (the zlib package)
#   sqlbench.native,           bench/sqlite/sqlbench.c on SQLite 3.40's
#   sqlbench.wasm              amalgamation, sqlite3.c, made from the upstream
#                              tree in the sqlite3 package by its own
#                              `configure && make sqlite3.c` (which needs
#                              tclsh: Debian's tcl)
#
# wasm32-wasi has no setjmp with clang-14, so Lua's error unwinding
# (LUAI_THROW/LUAI_TRY) aborts instead: a script that raises an error, also
# inside pcall, ends the wasm run. The bench scripts raise none. os.execute
# and io.tmpfile, which wasi-libc lacks, fail as on a system without them
# (bench/lua/wasi/).
#
# SQLite is built with the same options both ways, so both run the same
# engine: no threads and no extension loading (wasi-libc has neither
# pthread.h nor dlfcn.h), no WAL and no memory-mapped I/O (WASI preview1
# cannot map files, let alone share memory), pread/pwrite as its configure
# would pick. wasm32-wasi also gets a getpid stand-in and what the unix VFS
# names but wasi-libc lacks (bench/sqlite/wasi/).
#
#   bash bench/build-programs.sh OUTDIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bash bench/build-programs.sh OUTDIR" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
WASM=(clang-14 --target=wasm32-wasi -O2)

# The upstream tarball of Debian source package $1, unpacked into $2.
unpack() {
  local pkg=$1 dir=$2
  if ! ls "$OUT/${pkg}"_*.orig.tar.* >/dev/null 2>&1; then
    if ! (cd "$OUT" && apt-get source -q --download-only "$pkg" >"apt-get-source-$pkg.log" 2>&1); then
      echo "build-programs.sh: apt-get source $pkg failed: it needs a deb-src entry for Debian's main" >&2
      echo "  (scripts/build-cpython.sh says which line); $(tail -n 1 "$OUT/apt-get-source-$pkg.log")" >&2
      return 1
    fi
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  tar xf "$OUT/${pkg}"_*.orig.tar.* -C "$dir" --strip-components=1
}
# Are program $1's two builds there, newer than this script and than the
# files $2... they are built from?
fresh() {
  local f
  [ -x "$OUT/$1.wasm" ] && [ -x "$OUT/$1.native" ] || return 1
  for f in "$HERE/build-programs.sh" "${@:2}"; do [ "$OUT/.$1.stamp" -nt "$f" ] || return 1; done
}

if ! fresh lua; then
  unpack lua5.4 "$OUT/lua-src"
  mapfile -t SRCS < <(ls "$OUT"/lua-src/src/*.c | grep -v '/luac\.c$')
  clang-14 -O2 -DLUA_USE_POSIX "${SRCS[@]}" -lm -o "$OUT/lua.native"
  "${WASM[@]}" -Wno-deprecated-declarations -I"$HERE/lua/wasi" -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_PROCESS_CLOCKS \
    '-DLUAI_THROW(L,c)=abort()' '-DLUAI_TRY(L,c,a)=a' -Dluai_jmpbuf=int \
    '-Dlua_tmpnam(b,e)=e=1' -DLUA_TMPNAMBUFSIZE=32 \
    "${SRCS[@]}" "$HERE/lua/wasi/missing.c" -lwasi-emulated-signal -lwasi-emulated-process-clocks -o "$OUT/lua.wasm"
  touch "$OUT/.lua.stamp"
fi

if ! fresh zbench; then
  unpack zlib "$OUT/zlib-src"
  ZSRCS=()
  for f in adler32 compress crc32 deflate inflate inffast inftrees trees uncompr zutil; do ZSRCS+=("$OUT/zlib-src/$f.c"); done
  clang-14 -O2 -I"$OUT/zlib-src" "$HERE/zlib/zbench.c" "${ZSRCS[@]}" -o "$OUT/zbench.native"
  "${WASM[@]}" -I"$OUT/zlib-src" "$HERE/zlib/zbench.c" "${ZSRCS[@]}" -o "$OUT/zbench.wasm"
  touch "$OUT/.zbench.stamp"
fi

if ! fresh sqlbench "$HERE"/sqlite/sqlbench.c "$HERE"/sqlite/wasi/*; then
  command -v tclsh >/dev/null || { echo "build-programs.sh: SQLite's amalgamation needs tclsh (Debian's tcl)" >&2; exit 1; }
  unpack sqlite3 "$OUT/sqlite-src"
  if ! (cd "$OUT/sqlite-src" && ./configure --disable-tcl && make TCLSH_CMD=tclsh sqlite3.c) >"$OUT/sqlite-src.log" 2>&1; then
    echo "build-programs.sh: making SQLite's sqlite3.c failed: $(tail -n 3 "$OUT/sqlite-src.log")" >&2
    exit 1
  fi
  SQL=(-DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_WAL -DSQLITE_MAX_MMAP_SIZE=0 -DUSE_PREAD
       -I"$OUT/sqlite-src" "$HERE/sqlite/sqlbench.c" "$OUT/sqlite-src/sqlite3.c")
  clang-14 -O2 "${SQL[@]}" -lm -o "$OUT/sqlbench.native"
  "${WASM[@]}" -D_WASI_EMULATED_GETPID -include "$HERE/sqlite/wasi/unix-vfs.h" "${SQL[@]}" "$HERE/sqlite/wasi/missing.c" \
    -lwasi-emulated-getpid -o "$OUT/sqlbench.wasm"
  touch "$OUT/.sqlbench.stamp"
fi
