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
  # profiler: pprof files are protobuf (protoc at build time) + gzip; the tests
  # and the demo read them with `go tool pprof`
  protobuf-compiler libprotobuf-dev golang-go
  # source-level profiles: DWARF (libdwarf) and demangling (libiberty); the
  # DWARF test programs also use the C++ and Rust toolchains above
  libdwarf-dev libiberty-dev
  # viewers: the live /debug/pprof/ endpoint is served by cpp-httplib (found
  # with pkg-config); the HTML flame graph test opens the page in headless
  # Chromium; the live endpoint tests fetch with curl
  libcpp-httplib-dev pkg-config chromium curl
  # hardening: libFuzzer and the ASan/UBSan runtimes of clang-14 (fuzz/, build-asan/)
  libclang-rt-14-dev
  # benchmarks: node is a peer runtime of bench/suite.sh (node:wasi), callgrind
  # (valgrind) counts the host instructions the suite's README records
  nodejs valgrind
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: apt-get not found; install these packages by hand: ${missing[*]}" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: not root and no sudo; missing packages: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
