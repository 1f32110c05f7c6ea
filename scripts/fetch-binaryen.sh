#!/usr/bin/env bash
# Debian's binaryen (the differential fuzzing's generator and second engine,
# fuzz/README.md), unpacked into DIR instead of installed: clang-14 runs any
# `wasm-opt` it finds in its own directory or PATH on every wasm32 link at
# -O1 and above, so an installed binaryen would rewrite every test program
# (and binaryen 108's wasm-opt aborts on some DWARF 5 ones). Once: a DIR
# that has usr/bin/wasm-opt is kept.
#
#   bash scripts/fetch-binaryen.sh DIR     (dev.sh test: build/tools/binaryen)
set -euo pipefail
dir=${1:?usage: fetch-binaryen.sh DIR}
[ -x "$dir/usr/bin/wasm-opt" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download -q binaryen >download.log 2>&1); then
  echo "fetch-binaryen: apt-get download binaryen failed: $(tail -n 1 "$tmp/download.log")" >&2
  exit 1
fi
mkdir -p "$dir"
dpkg -x "$tmp"/binaryen_*.deb "$dir"
"$dir/usr/bin/wasm-opt" --version
