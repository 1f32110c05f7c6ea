#!/usr/bin/env bash
# WASI whole-program benchmarks: wzvm against node's WASI (node:wasi).
#
#   bash bench/wasi/compare.sh [--quick] [--runs N] [--build DIR]
#
#   copy   copies a large file through fd_read/fd_write (64 KiB buffer; 256 MiB,
#          --quick 32 MiB)
#   walk   walks a directory tree with fd_readdir + path_filestat_get
#          (20 x 20 directories x 10 files; --quick 5 x 5 x 10)
# Guests: bench/wasi/*.c, built by the normal build into BUILD/bench/wasi/.
# Each runtime runs each program N times (default 5), alternating run by run;
# the table shows median wall times (process start included) and node / wzvm
# (> 1: wzvm is faster). Outputs are checked to agree, and copies to be exact.
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD=build
RUNS=5
QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --runs) RUNS=$2; shift ;;
    --build) BUILD=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
WZVM=$BUILD/wzvm
GUESTS=$BUILD/bench/wasi
for f in "$WZVM" "$GUESTS/copy.wasm" "$GUESTS/walk.wasm"; do
  [ -e "$f" ] || { echo "compare.sh: $f missing: build first (cmake --build $BUILD)" >&2; exit 1; }
done
command -v node >/dev/null || { echo "compare.sh: node not found" >&2; exit 1; }
NODE_RUNNER=bench/wasi/run-node-wasi.mjs

data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
mkdir -p "$data/in" "$data/out" "$data/tree"
if [ $QUICK = 1 ]; then MB=32; FAN=5; else MB=256; FAN=20; fi
head -c $((MB << 20)) /dev/urandom > "$data/in/big.bin"
for i in $(seq $FAN); do
  for j in $(seq $FAN); do
    mkdir -p "$data/tree/d$i/e$j"
    for k in $(seq 10); do printf '%*s' $((k * 10)) x > "$data/tree/d$i/e$j/f$k"; done
  done
done

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run RUNTIME PROGRAM: prints the guest's output; wall time in $elapsed (ns)
run() {
  local rt=$1 prog=$2 args dirs
  case $prog in
    copy) dirs=("$data/in::/in" "$data/out::/out"); args=(/in/big.bin /out/big.bin) ;;
    walk) dirs=("$data/tree::/tree"); args=(/tree) ;;
  esac
  local flags=()
  for d in "${dirs[@]}"; do flags+=(--dir "$d"); done
  rm -f "$data/out/big.bin"
  local t0; t0=$(now)
  if [ "$rt" = wzvm ]; then
    "$WZVM" "${flags[@]}" "$GUESTS/$prog.wasm" "${args[@]}"
  else
    node --no-warnings "$NODE_RUNNER" "${flags[@]}" "$GUESTS/$prog.wasm" "${args[@]}"
  fi
  elapsed=$(( $(now) - t0 ))
  if [ "$prog" = copy ]; then cmp -s "$data/in/big.bin" "$data/out/big.bin" || { echo "copy by $rt is not exact" >&2; exit 1; }; fi
}

printf '%-6s %12s %12s %10s\n' program "wzvm (ms)" "node (ms)" node/wzvm
for prog in copy walk; do
  wz=() nd=() out_wz="" out_nd=""
  for ((r = 0; r < RUNS; ++r)); do
    run wzvm $prog > "$data/o"; wz+=("$elapsed"); out_wz=$(cat "$data/o")
    run node $prog > "$data/o"; nd+=("$elapsed"); out_nd=$(cat "$data/o")
  done
  [ "$out_wz" = "$out_nd" ] || { echo "$prog: outputs differ: wzvm '$out_wz', node '$out_nd'" >&2; exit 1; }
  mw=$(printf '%s\n' "${wz[@]}" | median); mn=$(printf '%s\n' "${nd[@]}" | median)
  printf '%-6s %12.1f %12.1f %10.2f   (%s)\n' $prog "$(echo "$mw / 1000000" | bc -l)" "$(echo "$mn / 1000000" | bc -l)" \
    "$(echo "$mn / $mw" | bc -l)" "$out_wz"
done
