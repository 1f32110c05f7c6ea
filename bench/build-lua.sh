#!/usr/bin/env bash
# Lua 5.4 for the real-programs bench (bench/real.sh): the upstream tarball in
# Debian's lua5.4 source package (without Debian's packaging patches, whose
# luaconf.h includes a multiarch header), built twice with clang-14 -O2:
# natively (lua.native) and for wasm32-wasi against Debian's wasi-libc
# (lua.wasm), into OUTDIR, once (a stamp newer than this script skips it).
#
# wasm32-wasi has no setjmp with clang-14, so Lua's error unwinding
# (LUAI_THROW/LUAI_TRY) aborts instead: a script that raises an error, also
# inside pcall, ends the wasm run. The bench scripts raise none. os.execute
# and io.tmpfile, which wasi-libc lacks, fail as on a system without them
# (bench/lua/wasi/).
#
#   bash bench/build-lua.sh OUTDIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bash bench/build-lua.sh OUTDIR" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
[ -x "$OUT/lua.wasm" ] && [ -x "$OUT/lua.native" ] && [ "$OUT/.stamp" -nt "$HERE/build-lua.sh" ] && exit 0
cd "$OUT"
if ! ls lua5.4_*.orig.tar.gz >/dev/null 2>&1; then
  if ! apt-get source -q --download-only lua5.4 >apt-get-source.log 2>&1; then
    echo "build-lua.sh: apt-get source lua5.4 failed: it needs a deb-src entry for Debian's main" >&2
    echo "  (scripts/build-cpython.sh says which line); $(tail -n 1 apt-get-source.log)" >&2
    exit 1
  fi
fi
rm -rf src && mkdir src && tar xzf lua5.4_*.orig.tar.gz -C src --strip-components=1
mapfile -t SRCS < <(ls src/src/*.c | grep -v '/luac\.c$')
clang-14 -O2 -DLUA_USE_POSIX "${SRCS[@]}" -lm -o lua.native
clang-14 --target=wasm32-wasi -O2 -Wno-deprecated-declarations -I"$HERE/lua/wasi" -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_PROCESS_CLOCKS \
  '-DLUAI_THROW(L,c)=abort()' '-DLUAI_TRY(L,c,a)=a' -Dluai_jmpbuf=int \
  '-Dlua_tmpnam(b,e)=e=1' -DLUA_TMPNAMBUFSIZE=32 \
  "${SRCS[@]}" "$HERE/lua/wasi/missing.c" -lwasi-emulated-signal -lwasi-emulated-process-clocks -o lua.wasm
touch .stamp
