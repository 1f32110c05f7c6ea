#!/usr/bin/env bash
# Builds CPython 3.11 for wasm32-wasi from Debian's own source package
# (apt-get source python3.11), with Debian's clang-14 / wasi-libc only, and
# installs it into OUTDIR:
#
#   OUTDIR/python.wasm              the interpreter, with DWARF (-g)
#   OUTDIR/lib/python3.11/          the standard library the guest imports
#   OUTDIR/src, OUTDIR/build        work files; kept, because python.wasm's
#                                   DWARF points at the sources in OUTDIR/src
#   OUTDIR/.build-cpython.stamp     what was built; a rerun that finds it
#                                   matching does nothing
#
# Run the result under wzvm with the stdlib preopened, e.g.
#   wzvm --dir OUTDIR/lib::/lib --env PYTHONHOME=/ OUTDIR/python.wasm -c 'print(1)'
# or, without PYTHONHOME, at the compiled-in prefix /usr/local:
#   wzvm --dir OUTDIR/lib::/usr/local/lib OUTDIR/python.wasm -c 'print(1)'
#
# Usage: bash scripts/build-cpython.sh OUTDIR
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi

die() { echo "build-cpython: $*" >&2; exit 1; }

mkdir -p "$1"
OUTDIR=$(cd "$1" && pwd)
SRCPKG=python3.11
PYVER=3.11
# The build python runs freeze/deepfreeze and writes _sysconfigdata, so it
# must be the same 3.11 as the sources: Debian's, never a pyenv/PATH one.
BUILD_PYTHON=/usr/bin/python3.11
STAMP="$OUTDIR/.build-cpython.stamp"

# The deb-src line apt-get source needs: the twin of this machine's own
# `deb` entry for the release, so the hint names whatever mirror is in use.
debsrc_line() {
  local codename uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' 2>/dev/null \
        | awk -v r="$codename" '$2 == r {print $1; exit}')
  echo "deb-src ${uri:-<the URI of your deb line>} $codename main"
}

# --- which source version apt would give us -----------------------------
# --print-uris reads only the local package lists, so this is quick and
# offline; the .dsc name carries the exact version (epoch-less).
uris=$(apt-get source --print-uris "$SRCPKG" 2>/dev/null || true)
DSC=$(printf '%s\n' "$uris" | awk '$2 ~ /\.dsc$/ {print $2; exit}')
if [ -z "$DSC" ]; then
  if [ -f "$STAMP" ] && [ -f "$OUTDIR/python.wasm" ]; then
    # No deb-src here (or stale lists): we cannot tell if there is a newer
    # source, but what was built before is still usable.
    echo "build-cpython: cannot query the $SRCPKG source package; keeping $(head -n1 "$STAMP") in $OUTDIR" >&2
    exit 0
  fi
  die "apt-get source $SRCPKG finds no source package: apt has no deb-src entry.
  Add this line to /etc/apt/sources.list (scripts/install-deps.sh adds the same
  entry as /etc/apt/sources.list.d/wzvm-sources.sources), then run apt-get update:
    $(debsrc_line)"
fi
VERSION=${DSC#"${SRCPKG}_"}
VERSION=${VERSION%.dsc}

# The stamp also holds a hash of this script's code (comment lines left out),
# so a change of recipe (flags, patches, install layout) rebuilds even when
# Debian's version is the same, and editing a comment does not.
want_stamp="$SRCPKG $VERSION
script-sha256 $(grep -v '^[[:space:]]*#' "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want_stamp" ] \
   && [ -f "$OUTDIR/python.wasm" ] && [ -f "$OUTDIR/lib/python$PYVER/os.py" ]; then
  echo "build-cpython: $SRCPKG $VERSION already built in $OUTDIR (python.wasm, lib/python$PYVER)"
  exit 0
fi

# --- tools: name the Debian package of whatever is missing ---------------
missing=()
need() { [ -e "$1" ] || missing+=("$2"); }
need /usr/bin/clang-14 clang-14
need /usr/bin/wasm-ld-14 lld-14
need /usr/bin/llvm-ar-14 llvm-14
need /usr/bin/llvm-ranlib-14 llvm-14
need /usr/include/wasm32-wasi/stdio.h wasi-libc
need /usr/lib/wasm32-wasi/libc.a wasi-libc
need /usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi/libclang_rt.builtins-wasm32.a libclang-rt-14-dev-wasm32
need "$BUILD_PYTHON" python3.11
need /usr/bin/dpkg-source dpkg-dev
need /usr/bin/make make
need /usr/bin/patch patch
if [ ${#missing[@]} -gt 0 ]; then
  die "missing tools; install with: apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
fi

start=$SECONDS
rm -f "$STAMP"
rm -rf "$OUTDIR/build" "$OUTDIR/lib" "$OUTDIR/python.wasm" "$OUTDIR/sysroot"

# --- source ---------------------------------------------------------------
# apt-get source reuses archives already in OUTDIR/src, so only the unpacked
# tree is thrown away; unpacking (dpkg-source -x) applies Debian's patches.
mkdir -p "$OUTDIR/src"
cd "$OUTDIR/src"
rm -rf "$OUTDIR/src/$SRCPKG"-*/
# Old versions' archives would only pile up.
find . -maxdepth 1 -type f -name "${SRCPKG}_*" ! -name "${SRCPKG}_${VERSION}.*" \
  ! -name "${SRCPKG}_${VERSION%%-*}.orig.*" -delete
if ! apt-get source -q "$SRCPKG=$VERSION" >apt-get-source.log 2>&1; then
  cat apt-get-source.log >&2
  die "apt-get source $SRCPKG=$VERSION failed (see above). It needs dpkg-dev and this deb-src line
  in /etc/apt/sources.list (then apt-get update):
    $(debsrc_line)"
fi
SRC=$(find "$OUTDIR/src" -mindepth 1 -maxdepth 1 -type d -name "$SRCPKG-*" | head -n1)
[ -n "$SRC" ] && [ -f "$SRC/configure" ] || die "no unpacked source in $OUTDIR/src"

# Debian patches that do not fit this build, reverted:
# - sysconfigdata-name.diff renames _sysconfigdata_<abi>_<MACHDEP>_<multiarch>
#   to _sysconfigdata_<abi>_<multiarch> in Lib/sysconfig.py and configure.ac.
#   Debian regenerates configure (autoreconf); we use the shipped configure,
#   so the build still writes the upstream name while the patched
#   sysconfig.py would look for the Debian one and `import sysconfig` users
#   (site, sysconfig.get_paths) would fail in the guest.
for p in sysconfigdata-name.diff; do
  patch -R -p1 -s -d "$SRC" <"$SRC/debian/patches/$p" || die "cannot unapply Debian patch $p"
done

# --- configure & build ----------------------------------------------------
# The native triple has to come from config.guess before CC points at clang
# for wasm32; configure would otherwise guess the build machine from CC.
BUILD_TRIPLE=$("$SRC/config.guess")

# Debian's clang-14 searches /usr/local/include and /usr/include after the
# wasi-libc headers for wasm32-wasi, so configure would find host-only
# headers (zlib.h, linux/*.h, ...) and compile against them. A sysroot that
# holds only wasi-libc keeps the build to wasm32 headers and libraries.
SYSROOT="$OUTDIR/sysroot"
mkdir -p "$SYSROOT/include" "$SYSROOT/lib"
ln -sfn /usr/include/wasm32-wasi "$SYSROOT/include/wasm32-wasi"
ln -sfn /usr/lib/wasm32-wasi "$SYSROOT/lib/wasm32-wasi"

mkdir -p "$OUTDIR/build"
cd "$OUTDIR/build"
# config.site-wasm32-wasi answers the checks a cross build cannot run and
# turns off what WASI lacks. llvm-ar is needed because GNU ar cannot index
# wasm objects, and wasm-ld refuses an archive without an index.
# PKG_CONFIG_LIBDIR at a directory that does not exist hides the host's .pc
# files, so no host library (libffi, sqlite, ...) gets linked in.
echo "build-cpython: configuring $SRCPKG $VERSION for wasm32-wasi in $OUTDIR/build" >&2
CONFIG_SITE="$SRC/Tools/wasm/config.site-wasm32-wasi" \
CC="clang-14 --target=wasm32-wasi --sysroot=$SYSROOT" \
CPP="clang-14 --target=wasm32-wasi --sysroot=$SYSROOT -E" \
CXX="clang++-14 --target=wasm32-wasi --sysroot=$SYSROOT" \
AR=llvm-ar-14 RANLIB=llvm-ranlib-14 \
CFLAGS="-g -O2" \
PKG_CONFIG_PATH="" PKG_CONFIG_LIBDIR="$OUTDIR/no-pkgconfig" \
PYTHON_FOR_REGEN="$BUILD_PYTHON" \
  "$SRC/configure" \
    --host=wasm32-unknown-wasi --build="$BUILD_TRIPLE" \
    --with-build-python="$BUILD_PYTHON" \
    >configure.log 2>&1 || { tail -n 40 configure.log >&2; die "configure failed; see $OUTDIR/build/configure.log"; }

echo "build-cpython: building (make -j$(nproc)), log in $OUTDIR/build/make.log" >&2
make -j"$(nproc)" >make.log 2>&1 || { tail -n 40 make.log >&2; die "make failed; see $OUTDIR/build/make.log"; }
[ -f python.wasm ] || die "make finished but left no python.wasm"

# --- install ----------------------------------------------------------------
# Not `make install`: it byte-compiles the whole stdlib three times and lays
# it out the Debian way (dist-packages, symlinks). The guest needs only the
# sources of Lib/ plus the generated _sysconfigdata, under the prefix-relative
# path getpath.c looks for (lib/python3.11/os.py).
LIBDEST="$OUTDIR/lib/python$PYVER"
mkdir -p "$LIBDEST"
cp -a "$SRC/Lib/." "$LIBDEST/"
# The regression test suite (Lib/test) is more than half of Lib/ and nothing
# here runs it; it stays available in OUTDIR/src/*/Lib/test.
rm -rf "$LIBDEST/test"
find "$LIBDEST" -name __pycache__ -prune -exec rm -rf {} +
pybuilddir=$(cat pybuilddir.txt)
cp "$pybuilddir"/_sysconfigdata_*.py "$LIBDEST/"
# Everything is linked in statically, but getpath.c takes exec_prefix from
# lib-dynload's presence and warns at every start when it is missing.
mkdir -p "$LIBDEST/lib-dynload"
# Startup modules are frozen into python.wasm, but everything else would be
# compiled from source by the guest on every run (PYTHONDONTWRITEBYTECODE, or
# a read-only lib): ~1 s of interpreted compiling for `import json, re`,
# which would swamp profiles of short programs. The build python is the same
# 3.11 (same magic number and compiler), and the guest checks each .pyc
# against its source's mtime and size as usual. The excluded files are
# deliberately invalid Python (test data), as in upstream's `make install`.
"$BUILD_PYTHON" -I -m compileall -q -j0 \
  -x 'bad_coding|badsyntax|site-packages|lib2to3/tests/data' "$LIBDEST" >compileall.log 2>&1 \
  || { tail -n 20 compileall.log >&2; die "byte-compiling the stdlib failed; see $OUTDIR/build/compileall.log"; }
cp python.wasm "$OUTDIR/python.wasm"

printf '%s\n' "$want_stamp" >"$STAMP"
size=$(du -h "$OUTDIR/python.wasm" | cut -f1)
echo "build-cpython: built CPython $PYVER from Debian $SRCPKG $VERSION in $((SECONDS - start))s: $OUTDIR/python.wasm ($size), stdlib in $OUTDIR/lib/python$PYVER"
