#!/usr/bin/env bash
# Installs the Debian 12 packages wzvm needs to build, test and benchmark,
# with apt-get only. Idempotent: does nothing (not even `apt-get update`) when
# everything is already installed. Run as root, or with sudo available.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build g++ git ca-certificates python3
  # wasm32 test programs: C compiled by clang-14, .wat by wabt
  clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32 wabt
  # WASI test programs in C++ (libc++ for wasm32) and Rust (/usr/bin/rustc + wasm32-wasi std)
  libc++-14-dev-wasm32 libc++abi-14-dev-wasm32 rustc libstd-rust-dev-wasm32
  # libraries
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  # profiler: pprof files are protobuf (protoc at build time) + gzip (written
  # with libdeflate, read with zlib); the tests and the demo read them with
  # `go tool pprof`
  protobuf-compiler libprotobuf-dev libdeflate-dev golang-go
  # source-level profiles: DWARF (libdwarf) and demangling (libiberty); the
  # DWARF test programs also use the C++ and Rust toolchains above
  libdwarf-dev libiberty-dev
  # viewers: the live /debug/pprof/ endpoint is served by cpp-httplib (found
  # with pkg-config); the HTML flame graph test opens the page in headless
  # Chromium; the live endpoint tests fetch with curl
  libcpp-httplib-dev pkg-config chromium curl
  # hardening: libFuzzer and the ASan/UBSan runtimes of clang-14 (fuzz/, build-asan/)
  libclang-rt-14-dev
  # the house style, checked by ctest `format` (scripts/format.sh)
  clang-format-14
  # benchmarks: node is a peer runtime of bench/suite.sh (node:wasi), callgrind
  # (valgrind) counts the host instructions the suite's README records
  nodejs valgrind
  # Go programs for wasip1 (testdata/go/): Go 1.21 or later, which Debian 12
  # has only in bookworm-backports (golang-go stays 1.19, for `go tool pprof`)
  golang-1.21-go golang-1.22-go golang-1.23-go
  # CPython for wasm32-wasi, built from Debian's python3.11 source package by
  # scripts/build-cpython.sh: apt-get source (dpkg-dev), the build python,
  # and llvm-ar/llvm-ranlib (GNU ar cannot index wasm objects for wasm-ld)
  dpkg-dev python3.11 llvm-14
  # the real-programs bench's C programs, built from Debian's sources by
  # bench/build-programs.sh (apt-get source, as above): SQLite's amalgamation
  # (sqlite3.c) is made by Tcl scripts
  tcl
  # instruction counts in CI: `wzvm report --format=benchmark-json` is tested
  # by Google Benchmark's own compare.py, which needs SciPy (Debian's python3)
  libbenchmark-tools python3-scipy
)

# Debian suites beyond bookworm's main that the packages above need:
# bookworm-backports (Go), and source packages (deb-src) for the programs
# built for wasm from Debian's sources (scripts/build-cpython.sh). Each is
# added as a sources file of its own, only when no entry has it yet.
has_source() {  # TYPE SUITE: is there an apt entry of that type for that suite?
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && grep -Eqs "^[[:space:]]*$1[[:space:]].*[[:space:]]$2([[:space:]]|$)" "$f" && return 0
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: a stanza whose Types has TYPE and whose Suites has SUITE.
    awk -v t="$1" -v s="$2" 'BEGIN { RS = ""; found = 0 }
      { types = 0; suites = 0
        n = split($0, lines, "\n")
        for (i = 1; i <= n; i++) {
          if (lines[i] ~ "^Types:" && (" " lines[i] " ") ~ (" " t " ")) types = 1
          if (lines[i] ~ "^Suites:" && (" " lines[i] " ") ~ (" " s " ")) suites = 1
        }
        if (types && suites && $0 !~ /Enabled: *no/) found = 1 }
      END { exit found ? 0 : 1 }' "$f" && return 0
  done
  return 1
}
add_source() {  # TYPE SUITE FILE
  echo "install-deps: adding Debian's $2 ($1) as /etc/apt/sources.list.d/$3" >&2
  printf 'Types: %s\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$1" "$2" | "${SUDO[@]}" tee "/etc/apt/sources.list.d/$3" >/dev/null
}
ensure_sources() {
  local added=1
  has_source deb bookworm-backports || { add_source deb bookworm-backports wzvm-backports.sources; added=0; }
  has_source deb-src bookworm || { add_source deb-src bookworm wzvm-sources.sources; added=0; }
  return $added
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

SUDO=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO=(sudo); fi

if [ ${#missing[@]} -eq 0 ]; then
  # Everything installed; the source entries may still be missing (a machine
  # set up before they were needed): add them, and read them in.
  if command -v apt-get >/dev/null 2>&1 && ensure_sources; then
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  fi
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: apt-get not found; install these packages by hand: ${missing[*]}" >&2
  exit 1
fi

if [ "$(id -u)" -ne 0 ] && [ ${#SUDO[@]} -eq 0 ]; then
  echo "install-deps: not root and no sudo; missing packages: ${missing[*]}" >&2
  exit 1
fi
ensure_sources || true

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
