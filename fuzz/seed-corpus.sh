#!/usr/bin/env bash
# Builds the fuzzers' seed corpus from the spec suite's modules (not committed:
# it is tens of MB). Usage:
#   bash fuzz/seed-corpus.sh OUT_DIR [SPEC_CORE_DIR]
# SPEC_CORE_DIR holds wast2json output (*.wasm); default build/spec/core, which
# ctest's spec-core fills. Without it, converts ../shared/wasm-testsuite (or
# $WZVM_SPEC_TESTSUITE) into a temporary directory with the suite's convert.sh.
# Modules above 64 KiB are left out (the fuzzers run with -max_len=65536), and
# identical files are kept once.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: seed-corpus.sh OUT_DIR [SPEC_CORE_DIR]}
src=${2:-build/spec/core}
tmp=""
if ! compgen -G "$src/*.wasm" >/dev/null; then
  suite=${WZVM_SPEC_TESTSUITE:-../shared/wasm-testsuite}
  [ -f "$suite/convert.sh" ] || { echo "seed-corpus.sh: no $src/*.wasm and no $suite/convert.sh" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  bash "$suite/convert.sh" "$tmp" "$suite" >/dev/null
  src=$tmp/core
fi
mkdir -p "$out"
n=0
for f in "$src"/*.wasm; do
  [ "$(stat -c %s "$f")" -le 65536 ] || continue
  # Named by content: duplicates (the suite repeats many modules) collapse.
  cp "$f" "$out/$(sha1sum "$f" | cut -c1-40)"
  n=$((n + 1))
done
echo "seed-corpus.sh: $(ls "$out" | wc -l) modules in $out (from $n files in $src)"
