#!/usr/bin/env bash
# The two commands of the README quick start:
#   bash scripts/dev.sh demo   install deps, build (Release, build/), run the bundled example
#                              and show the top functions of a CPU profile of it
#   bash scripts/dev.sh test   install deps, build, run every test (unit tests + spec suite)
# BUILD_DIR overrides build/.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
JOBS=$(nproc 2>/dev/null || echo 2)

build() {
  bash scripts/install-deps.sh
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD_DIR" --parallel "$JOBS"
}

demo() {
  build
  local ex="$BUILD_DIR/testdata/example.wasm"
  echo
  echo "== testdata/example.c, compiled to $ex by clang-14, run by $BUILD_DIR/wzvm"
  local cmd
  for cmd in "fib $ex 30" "count_primes $ex 1000000" "gcd $ex 1071 462" "sqrt_newton $ex 2"; do
    echo "\$ $BUILD_DIR/wzvm --invoke $cmd"
    # shellcheck disable=SC2086
    "$BUILD_DIR/wzvm" --invoke $cmd
  done
  # The reason wzvm exists: a profile of the example (all four functions,
  # called by its `demo` export), written as pprof and shown as text.
  local prof="$BUILD_DIR/demo-cpu.pb.gz"
  echo
  echo "== a CPU profile of the example"
  echo "\$ $BUILD_DIR/wzvm --profile=cpu --profile-out $prof --invoke demo $ex 30"
  "$BUILD_DIR/wzvm" --profile=cpu --profile-out "$prof" --invoke demo "$ex" 30
  echo "\$ go tool pprof -top $prof"
  go tool pprof -top "$prof"
}

run_tests() {
  build
  cd "$BUILD_DIR"
  ctest --output-on-failure --parallel "$JOBS"
}

case "${1:-}" in
  demo) demo ;;
  test) run_tests ;;
  *)
    echo "usage: bash scripts/dev.sh demo|test" >&2
    exit 2
    ;;
esac
