#!/usr/bin/env bash
# Profile-guided build of the VM: bash scripts/pgo.sh [BUILD_DIR]
#
# Builds an instrumented wzvm in BUILD_DIR/pgo/gen, runs it on the training
# set below, and rebuilds BUILD_DIR with the profile (WZVM_PGO_USE, see
# vm/CMakeLists.txt). GCC lays the interpreter out by what the training ran:
# hot handlers together, rare ones apart (docs/RATIONALE.md, "The
# interpreter is built with a profile"). `dev.sh test` calls it after the
# build and CPython; it does nothing when BUILD_DIR already uses a profile
# of the same sources, and leaves the build without one (saying why) when it
# cannot train, so it never fails a build that works.
#
# Training set: CPython (BUILD_DIR/cpython, scripts/build-cpython.sh) running
# scripts/pgo/train.py, scripts/pgo/train.go built for wasip1 by the newest
# Go of 1.21 or later installed (Go's own code shapes: resume tables, the
# stack pointer global, i64 arithmetic, interfaces, its collector), each
# plain and with --profile=instructions (the counting loop), and the C suite
# (bench/suite, built into BUILD_DIR/bench/suite).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(mkdir -p "${1:-build}" && cd "${1:-build}" && pwd)
JOBS=$(nproc 2>/dev/null || echo 2)

say() { echo "pgo.sh: $*" >&2; }
cached() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt" 2>/dev/null || true; }

# GCC builds only (the flags are GCC's), Release builds only.
compiler=$(cached CMAKE_CXX_COMPILER)
# The instrumented build compiles as the tree does (e.g. -march): a profile
# of other code would not match the tree's run<> and be dropped.
flags=$(cached CMAKE_CXX_FLAGS)
if [ -z "$compiler" ] || ! "$compiler" --version 2>/dev/null | grep -q "Free Software Foundation"; then
  say "no GCC build in $BUILD: skipped"
  exit 0
fi
[ "$(cached CMAKE_BUILD_TYPE)" = Release ] || { say "$BUILD is not a Release build: skipped"; exit 0; }

PY=$BUILD/cpython
python_ok=0
[ -f "$PY/python.wasm" ] && [ -d "$PY/lib" ] && python_ok=1
GO=
for v in 1.23 1.22 1.21; do [ -x /usr/lib/go-$v/bin/go ] && { GO=/usr/lib/go-$v/bin/go; break; }; done
suite=("$BUILD"/bench/suite/*.wasm)
[ -e "${suite[0]}" ] || suite=()
if [ "$python_ok" = 0 ] && [ ${#suite[@]} = 0 ]; then
  say "nothing to train on (no $PY/python.wasm, no $BUILD/bench/suite): the VM is built without a profile"
  exit 0
fi

# What the profile depends on: the VM's sources, the training set, the
# compiler. The profile's directory is named by it, so a new profile changes
# the VM's flags and ninja recompiles what uses it.
key=$({
  find vm -type f | LC_ALL=C sort | xargs cat
  cat scripts/pgo.sh scripts/pgo/*
  "$compiler" --version
  echo "$flags"
  echo "$python_ok ${#suite[@]}"
  [ -z "$GO" ] || "$GO" version 2>/dev/null || true
} | sha256sum | cut -c1-12)
PROF=$BUILD/pgo/profile-$key
if [ "$(cached WZVM_PGO_USE)" = "$PROF" ] && [ -d "$PROF" ]; then
  cmake --build "$BUILD" --parallel "$JOBS"
  exit 0
fi

# The build as it is without a profile, after saying why.
without_profile() {
  say "$1: the VM is built without a profile"
  rm -rf "$PROF"
  cmake -S . -B "$BUILD" -DWZVM_PGO_USE= >/dev/null
  cmake --build "$BUILD" --parallel "$JOBS"
  exit 0
}

GEN=$BUILD/pgo/gen
rm -rf "$BUILD"/pgo/profile-*
mkdir -p "$BUILD/pgo"
say "building the instrumented VM in $GEN"
cmake -S . -B "$GEN" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$compiler" \
  -DCMAKE_CXX_FLAGS="$flags" \
  -DWZVM_BUILD_TESTS=OFF -DWZVM_BUILD_BENCH=OFF -DWZVM_PGO_USE= -DWZVM_PGO_GENERATE="$PROF" >"$BUILD/pgo/gen.log" 2>&1 &&
  cmake --build "$GEN" --parallel "$JOBS" --target wzvm >>"$BUILD/pgo/gen.log" 2>&1 ||
  without_profile "the instrumented build failed (see $BUILD/pgo/gen.log)"

# train.go for wasip1 (the std library's wasip1 build is shared with the Go
# test programs' cache); without it the profile trains on the rest.
go_ok=0
if [ -z "$GO" ]; then
  say "no Go 1.21+ (golang-1.23-go from bookworm-backports): training without Go"
elif env GOOS=wasip1 GOARCH=wasm GOCACHE="$BUILD/go/cache" GOPATH="$BUILD/go/path" GOPROXY=off \
  GOTOOLCHAIN=local GOFLAGS= GO111MODULE=off "$GO" build -o "$BUILD/pgo/train-go.wasm" scripts/pgo/train.go \
  >"$BUILD/pgo/go.log" 2>&1; then
  go_ok=1
  rm -f "$BUILD/pgo/go.log"
else
  say "scripts/pgo/train.go did not build (see $BUILD/pgo/go.log): training without Go"
fi

train() {
  local w=$GEN/wzvm out=$BUILD/pgo/train.out
  if [ "$python_ok" = 1 ]; then
    local py=(--dir "$PY/lib::/lib" --dir "scripts/pgo::/src" --env PYTHONHOME=/ --env PYTHONDONTWRITEBYTECODE=1
      "$PY/python.wasm" /src/train.py)
    "$w" "${py[@]}" >"$out" || return 1
    "$w" --profile=instructions --profile-out "$BUILD/pgo/train.pb.gz" "${py[@]}" >"$out" 2>/dev/null || return 1
  fi
  if [ "$go_ok" = 1 ]; then
    "$w" "$BUILD/pgo/train-go.wasm" >"$out" || return 1
    "$w" --profile=instructions --profile-out "$BUILD/pgo/train.pb.gz" "$BUILD/pgo/train-go.wasm" >"$out" 2>/dev/null ||
      return 1
  fi
  local p
  for p in "${suite[@]}"; do "$w" "$p" >"$out" || return 1; done
}
say "training ($([ "$python_ok" = 1 ] && echo "CPython, ")$([ "$go_ok" = 1 ] && echo "Go, ")${#suite[@]} C suite programs)"
train || without_profile "a training run failed"
rm -f "$BUILD/pgo/train.out" "$BUILD/pgo/train.pb.gz" "$BUILD/pgo/train-go.wasm" "$BUILD/pgo/gen.log"
say "rebuilding $BUILD with the profile $PROF"
cmake -S . -B "$BUILD" -DWZVM_PGO_USE="$PROF" >/dev/null
cmake --build "$BUILD" --parallel "$JOBS"
