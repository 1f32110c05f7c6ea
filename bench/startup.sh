#!/usr/bin/env bash
# Start-up and instantiation times (issue 10's goals: a hello-world starts in
# under 5 ms; a 20 MB module instantiates in under 200 ms).
#
#   bash bench/startup.sh [--build DIR] [--runs N] [MODULE.wasm...]
#
# - hello: N runs (default 50) of `wzvm build/bench/wasi/hello.wasm`, the
#   whole process (exec, load, instantiate, run, exit); median and min of the
#   wall time, and the median CPU time (user + sys).
# - each MODULE (default: the 20+ MB real programs that testdata/real/run.sh
#   fetches, when they are in its cache): N/5 runs (at least 3) of
#   `wzvm --invoke <no such export> MODULE`, which reads, decodes, validates
#   every function (the CLI lowers each on its first call, LoadOptions::lazy)
#   and instantiates the module (data segments copied), then stops before
#   running anything: load + instantiate, plus process start-up.
# Times come from bash's `time` (millisecond resolution) per run.
set -euo pipefail
BUILD=build
RUNS=50
MODULES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift ;;
    --runs) RUNS=$2; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) MODULES+=("$1") ;;
  esac
  shift
done
WZVM=$BUILD/wzvm
HELLO=$BUILD/bench/wasi/hello.wasm
[ -x "$WZVM" ] || { echo "no $WZVM (build first)" >&2; exit 1; }
[ -f "$HELLO" ] || { echo "no $HELLO (build first)" >&2; exit 1; }
if [ ${#MODULES[@]} -eq 0 ]; then
  for m in "$BUILD/real/flite/package/flite.wasm" "$BUILD/real/yosys/package/gen/yosys.core.wasm"; do
    [ -f "$m" ] && MODULES+=("$m")
  done
fi

# times CMD...: runs CMD once; prints "wall cpu" in seconds.
times1() {
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 ) || true
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' <<<"$t"
}
# stats: reads "wall cpu" lines; prints median and min wall, median cpu (ms).
stats() {
  local lines walls cpus n
  lines=$(cat)
  n=$(wc -l <<<"$lines")
  walls=$(awk '{print $1}' <<<"$lines" | sort -n)
  cpus=$(awk '{print $2}' <<<"$lines" | sort -n)
  awk -v n="$n" -v w="$(sed -n "$(((n + 1) / 2))p" <<<"$walls")" -v wmin="$(head -1 <<<"$walls")" \
      -v c="$(sed -n "$(((n + 1) / 2))p" <<<"$cpus")" \
      'BEGIN { printf "median wall %.1f ms, min wall %.1f ms, median cpu %.1f ms (%d runs)\n", 1000 * w, 1000 * wmin, 1000 * c, n }'
}

out=$("$WZVM" "$HELLO")
[ "$out" = "hello, world" ] || { echo "hello.wasm printed '$out'" >&2; exit 1; }
printf '%-40s ' "hello ($(basename "$HELLO"))"
for ((i = 0; i < RUNS; ++i)); do times1 "$WZVM" "$HELLO"; done | stats

mruns=$((RUNS / 5)); [ $mruns -lt 3 ] && mruns=3
for m in "${MODULES[@]}"; do
  size=$(stat -c %s "$m")
  printf '%-40s ' "instantiate $(basename "$m") ($((size / 1000000)) MB)"
  # The export does not exist: wzvm stops after instantiating, with exit 1.
  msg=$("$WZVM" --invoke __no_such_export__ "$m" 2>&1 || true)
  grep -q "not found" <<<"$msg" || { echo "$m did not instantiate: $msg" >&2; exit 1; }
  for ((i = 0; i < mruns; ++i)); do times1 "$WZVM" --invoke __no_such_export__ "$m"; done | stats
done
