#!/usr/bin/env bash
# The two commands of the README quick start:
#   bash scripts/dev.sh demo   install deps, build (Release, build/), run the bundled example
#                              and show the top functions of a CPU profile of it
#   bash scripts/dev.sh test   install deps, build, build CPython for wasm (build/cpython,
#                              cached), run every test (unit tests + spec suite), then the
#                              same tests in the sanitizer build (WZVM_ASAN=0 skips it)
#   bash scripts/dev.sh asan   the sanitizer build alone: clang-14, ASan + UBSan, switch
#                              dispatch, into build-asan/, and its ctest
# BUILD_DIR overrides build/, ASAN_BUILD_DIR build-asan/. The sanitizer build roughly
# doubles `test`'s time on 2 cores, well inside CI's budget.
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

# CPython for wasm32-wasi, for the Python tests: built once into the Release
# build tree (a few minutes; a rerun with it up to date takes a second) and
# shared with the sanitizer build, whose tests find it through
# WZVM_CPYTHON_DIR.
cpython() {
  bash scripts/build-cpython.sh "$BUILD_DIR/cpython"
}

# Debian's binaryen for the differential fuzz test (ctest fuzz-binaryen),
# unpacked into the Release build tree, not installed (scripts/fetch-binaryen.sh
# says why), and shared with the sanitizer build. Without it that test skips.
binaryen() {
  bash scripts/fetch-binaryen.sh "$BUILD_DIR/tools/binaryen" >/dev/null ||
    echo "dev.sh: binaryen not unpacked; ctest fuzz-binaryen will skip" >&2
}

run_tests() {
  build
  cpython
  # The VM rebuilt with a profile of training runs (CPython and the C suite,
  # so after both are built); nothing to do when the sources did not change.
  bash scripts/pgo.sh "$BUILD_DIR"
  binaryen
  (cd "$BUILD_DIR" && ctest --output-on-failure --parallel "$JOBS")
  if [ "${WZVM_ASAN:-1}" != 0 ]; then run_asan; fi
}

# The whole test suite again under AddressSanitizer + UndefinedBehaviorSanitizer
# (issue 9). Switch dispatch: computed goto hides handler boundaries from the
# sanitizers' reports. -O1 keeps the build and the interpreter fast enough for
# CI; benchmarks are left out. Any report fails the test that triggered it
# (halt_on_error, no UBSan recovery). -mllvm -disable-cgp: clang-14's
# CodeGenPrepare is superlinear in the size of a function, and the switch-
# dispatch loop is one function of thousands of blocks per instantiation:
# vm/interp.cc alone took 23 minutes (37 in CI beside another compile), 8.5
# without that pass, which only shapes code for the instruction selector; about
# 12 now that the loops that do not count skip the counted-only handlers;
# it grew to 31 again, and the counting loop now compiles in a unit of its
# own (vm/interp_counted.cc): 17 and 15 minutes side by side
# (docs/RATIONALE.md, Hardening).
run_asan() {
  local dir=${ASAN_BUILD_DIR:-build-asan}
  local san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  local opt="-O1 -g -mllvm -disable-cgp"
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Asan \
    -DCMAKE_C_FLAGS_ASAN="$opt $san" -DCMAKE_CXX_FLAGS_ASAN="$opt $san" \
    -DCMAKE_EXE_LINKER_FLAGS_ASAN="$san" -DCMAKE_SHARED_LINKER_FLAGS_ASAN="$san" \
    -DWZVM_SWITCH_DISPATCH=ON -DWZVM_BUILD_BENCH=OFF \
    -DWZVM_CPYTHON_DIR="$(mkdir -p "$BUILD_DIR" && cd "$BUILD_DIR" && pwd)/cpython" \
    -DWZVM_BINARYEN_DIR="$(cd "$BUILD_DIR" && pwd)/tools/binaryen"
  cmake --build "$dir" --parallel "$JOBS"
  (cd "$dir" && ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure --parallel "$JOBS")
}

case "${1:-}" in
  demo) demo ;;
  test) run_tests ;;
  asan) bash scripts/install-deps.sh && run_asan ;;
  *)
    echo "usage: bash scripts/dev.sh demo|test|asan" >&2
    exit 2
    ;;
esac
