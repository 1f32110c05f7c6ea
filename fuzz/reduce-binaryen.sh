#!/usr/bin/env bash
# Reduces a module on which wzvm diverges from binaryen (or V8) to a small
# one that still diverges, with binaryen's wasm-reduce; the test it gives
# wasm-reduce is `wzvm-fuzz-binaryen --check` (exit 1: still diverges).
#
# Usage: bash fuzz/reduce-binaryen.sh DIVERGENCE.wasm OUT.wasm [--v8]
#   WZVM_FUZZ_BINARYEN  the driver (default: build/fuzz/wzvm-fuzz-binaryen)
# Then look at it with `wasm-dis OUT.wasm`, and replay it with
# `wzvm-fuzz-binaryen --check OUT.wasm [--v8]`.
set -euo pipefail
in=${1:?usage: reduce-binaryen.sh DIVERGENCE.wasm OUT.wasm [--v8]}
out=${2:?usage: reduce-binaryen.sh DIVERGENCE.wasm OUT.wasm [--v8]}
v8=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
driver=${WZVM_FUZZ_BINARYEN:-$root/build/fuzz/wzvm-fuzz-binaryen}
[ -x "$driver" ] || { echo "reduce-binaryen: no driver at $driver (build the wzvm-fuzz-binaryen target)" >&2; exit 2; }
# binaryen's tools: $WZVM_BINARYEN_BIN, else build/tools/binaryen (scripts/fetch-binaryen.sh), else PATH.
bin=${WZVM_BINARYEN_BIN:-$root/build/tools/binaryen/usr/bin}
[ -x "$bin/wasm-reduce" ] || bin=$(dirname "$(command -v wasm-reduce || echo /nonexistent/wasm-reduce)")
[ -x "$bin/wasm-reduce" ] || { echo "reduce-binaryen: wasm-reduce not found (bash scripts/fetch-binaryen.sh build/tools/binaryen)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if "$driver" --check "$in" $v8 --out "$work/check" 2>/dev/null; then
  echo "reduce-binaryen: $in does not diverge" >&2
  exit 1
fi
cp "$in" "$work/start.wasm"
# The features binaryen's generator was given (fuzz/binaryen.h), not --enable-all:
# wzvm has no GC or typed function references.
features="--enable-sign-ext --enable-threads --enable-mutable-globals --enable-nontrapping-float-to-int
          --enable-bulk-memory --enable-exception-handling --enable-tail-call --enable-multivalue
          --enable-memory64 --enable-extended-const --enable-simd"
(cd "$work" && "$bin/wasm-reduce" start.wasm "--command=$driver --check test.wasm $v8 --out $work/check" \
   -b "$bin" -t test.wasm -w work.wasm --timeout 20 --extra-flags="$(echo $features)" >reduce.log 2>&1) || {
  tail -20 "$work/reduce.log" >&2
  exit 1
}
cp "$work/work.wasm" "$out"
echo "reduce-binaryen: $(stat -c %s "$in") -> $(stat -c %s "$out") bytes: $out"
"$driver" --check "$out" $v8 --out "$work/check" || true
