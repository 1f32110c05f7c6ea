#!/usr/bin/env bash
# Overhead of the memory profiler: bench/wasi/mallocs.c (a ring of live
# blocks, one malloc and one free per round, plus realloc-grown buffers) run
# by wzvm with profiling off and with --profile=mem (every allocation
# recorded, and sampled with --mem-sample-bytes 524288), in two variants:
# "bare" does almost nothing with each block (the worst case: the hooks'
# share is as large as it gets), "fill" writes every byte of each block.
#
#   bash bench/mem-overhead.sh [--runs N] [--rounds R] [--build DIR]
#
# Prints the fastest of N runs (default 5) of each, in user+system CPU
# seconds, and the ratio to off; the profile is written inside each run.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=build
RUNS=5
ROUNDS=2000000
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --build) BUILD=$2; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mem-overhead.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
WZVM=$BUILD/wzvm
GUEST=$BUILD/bench/wasi/mallocs.wasm
for f in "$WZVM" "$GUEST"; do
  [ -e "$f" ] || { echo "mem-overhead.sh: $f missing: build first (cmake --build $BUILD)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The fastest of RUNS runs (CPU seconds), least disturbed by other load.
best() {
  local best="" t
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -o "$tmp/time" -f "%U %S" "$@" >/dev/null 2>&1
    t=$(awk '{ print $1 + $2 }' "$tmp/time")
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
  done
  echo "$best"
}

printf '| variant | off (s) | mem (s) | mem sampled 512 KiB (s) | mem/off | sampled/off |\n'
printf '|---|---|---|---|---|---|\n'
for variant in bare fill; do
  fill=0; [ $variant = fill ] && fill=1
  off=$(best "$WZVM" "$GUEST" "$ROUNDS" $fill)
  mem=$(best "$WZVM" --profile=mem --profile-out "$tmp/m.pb.gz" "$GUEST" "$ROUNDS" $fill)
  smp=$(best "$WZVM" --profile=mem --mem-sample-bytes 524288 --profile-out "$tmp/s.pb.gz" "$GUEST" "$ROUNDS" $fill)
  awk -v v=$variant -v o="$off" -v m="$mem" -v s="$smp" \
    'BEGIN { printf "| %s | %.3f | %.3f | %.3f | %.2f | %.2f |\n", v, o, m, s, m / o, s / o }'
done
