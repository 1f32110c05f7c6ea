#!/usr/bin/env bash
# The whole-program suite: wzvm against native code and every peer runtime on PATH.
#
#   bash bench/suite.sh [--runs N] [--quick] [--profiling] [--wall] [--build DIR]
#                       [--size N] [--only RUNTIME,...] [PROGRAM...]
#
# Programs: bench/suite/*.c (README.md there), built by the normal build into
# BUILD/bench/suite/NAME.wasm (a WASI command) and BUILD/bench/suite/NAME
# (native, same source, same clang-14 -O2). Each prints one checksum line.
#
# Runtimes: native, wzvm, and the peers wasm3, iwasm, wasm-interp (wabt, with
# --wasi) and node (node:wasi; also as node-liftoff, V8's baseline compiler
# only) when on PATH; a peer that is absent, or cannot run WASI commands, is
# reported as such and left out. Run i of every runtime
# comes before run i+1 of any, so a change in the machine's load hits all alike.
# Every output must equal the native one (exit status 1 otherwise).
#
# The table: median time per runtime, wzvm's ratio to native and to each peer
# (wzvm / peer: below 1, wzvm is faster), each peer's ratio to native, and the
# geometric mean of every ratio column over the programs.
#
#   --runs N      runs per runtime and program (default 5; --quick: 3)
#   --quick       small sizes (a few ms natively): a correctness pass, not a measurement
#   --profiling   add wzvm --profile=cpu and --profile=instructions, with their
#                 ratio to profiling off (the profile is written inside the timed run)
#   --wall        time wall clock; the default is CPU time (user + sys of the
#                 process and its children), which load from other processes on a
#                 shared machine disturbs much less. node's CPU time includes its
#                 compiler and GC threads.
#   --size N      the size argument for every program (default: each program's own)
#   --only LIST   only these runtimes (comma list, e.g. native,wzvm); native is
#                 always run, as the reference output
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=build
RUNS=
QUICK=0
PROFILING=0
METRIC=cpu
SIZE_ALL=
ONLY=
PROGRAMS=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
need() { [ $# -ge 2 ] || { echo "suite.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) need "$@"; RUNS=$2; shift ;;
    --quick) QUICK=1 ;;
    --profiling) PROFILING=1 ;;
    --wall) METRIC=wall ;;
    --build) need "$@"; BUILD=$2; shift ;;
    --size) need "$@"; SIZE_ALL=$2; shift ;;
    --only) need "$@"; ONLY=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "suite.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) PROGRAMS+=("$1") ;;
  esac
  shift
done
[ -z "$RUNS" ] && { if [ "$QUICK" = 1 ]; then RUNS=3; else RUNS=5; fi; }
if ! [[ $RUNS =~ ^[1-9][0-9]*$ ]]; then echo "suite.sh: --runs must be a positive integer, got '$RUNS'" >&2; exit 2; fi
if [ -n "$SIZE_ALL" ] && ! [[ $SIZE_ALL =~ ^[1-9][0-9]*$ ]]; then
  echo "suite.sh: --size must be a positive integer, got '$SIZE_ALL'" >&2; exit 2
fi

if [ -n "$ONLY" ]; then
  IFS=, read -r -a _only <<<"$ONLY"
  for rt in "${_only[@]}"; do
    case "$rt" in native|wzvm|wasm3|iwasm|wasm-interp|node|node-liftoff) ;;
      *) echo "suite.sh: --only: unknown runtime '$rt' (native, wzvm, wasm3, iwasm, wasm-interp, node, node-liftoff)" >&2; exit 2 ;;
    esac
  done
fi

# Quick sizes: each program's own default (in its source) is the full size,
# 20-80 ms natively (memwalk 0.5 s); these take a few ms.
declare -A QSIZE=([calls]=25 [gemm]=60 [interp]=1 [intmix]=300 [lz]=64 [memwalk]=1 [nbody]=50000 [sha256]=1)
SUITE="$BUILD/bench/suite"
WZVM="$BUILD/wzvm"
[ -x "$WZVM" ] || { echo "suite.sh: $WZVM not found: build first (cmake --build $BUILD)" >&2; exit 1; }
if [ ${#PROGRAMS[@]} -eq 0 ]; then
  for f in bench/suite/*.c; do n=${f##*/}; PROGRAMS+=("${n%.c}"); done
fi
for p in "${PROGRAMS[@]}"; do
  if [ ! -f "bench/suite/$p.c" ]; then echo "suite.sh: unknown program $p (bench/suite/$p.c)" >&2; exit 2; fi
  for f in "$SUITE/$p.wasm" "$SUITE/$p"; do
    [ -f "$f" ] || { echo "suite.sh: $f not built (cmake --build $BUILD)" >&2; exit 1; }
  done
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

have() { command -v "$1" >/dev/null 2>&1; }
wanted() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }
# A peer counts only if it runs a WASI command correctly: probe it on the
# smallest program and compare with the native output.
probe() {  # runtime -> 0 if usable; prints why not otherwise
  local rt=$1 out
  out=$(run_cmd "$rt" calls.wasm 10 2>&1) || true
  if [ "$out" = "$("$SUITE/calls" 10)" ]; then return 0; fi
  echo "${out%%$'\n'*}"
  return 1
}
run_cmd() {  # runtime module args...: runs it, stdout to stdout
  local rt=$1 wasm="$SUITE/$2"; shift 2
  case "$rt" in
    wzvm) "$WZVM" "$wasm" "$@" ;;
    wzvm+cpu) "$WZVM" --profile=cpu --profile-out "$TMP/cpu.pb.gz" "$wasm" "$@" ;;
    wzvm+instr) "$WZVM" --profile=instructions --profile-out "$TMP/instr.pb.gz" "$wasm" "$@" ;;
    wasm3) wasm3 "$wasm" "$@" ;;
    iwasm) iwasm "$wasm" "$@" ;;
    wasm-interp) wasm-interp --wasi "$wasm" "$@" ;;
    node) node --no-warnings bench/wasi/run-node-wasi.mjs "$wasm" "$@" ;;
    node-liftoff) node --no-warnings --liftoff --no-wasm-tier-up --no-wasm-dynamic-tiering \
      bench/wasi/run-node-wasi.mjs "$wasm" "$@" ;;
  esac
}

PEERS=()
for rt in wasm3 iwasm wasm-interp node node-liftoff; do
  if ! wanted "$rt"; then continue; fi
  if ! have "${rt%-liftoff}"; then echo "$rt: absent"; continue; fi
  if why=$(probe "$rt"); then PEERS+=("$rt")
  else echo "$rt: present but cannot run WASI commands (${why:-no output}); left out"; fi
done
RUNTIMES=(native)
wanted wzvm && RUNTIMES+=(wzvm)
PROFILED=()
if [ "$PROFILING" = 1 ]; then
  [[ " ${RUNTIMES[*]} " == *" wzvm "* ]] || { echo "suite.sh: --profiling needs wzvm among the runtimes" >&2; exit 2; }
  PROFILED=(wzvm+cpu wzvm+instr)
fi
RUNTIMES+=("${PROFILED[@]}" "${PEERS[@]}")
HAVE_WZVM=0
[[ " ${RUNTIMES[*]} " == *" wzvm "* ]] && HAVE_WZVM=1

# One timed run; prints the seconds and leaves stdout in $TMP/out, stderr in
# $TMP/err; returns the program's exit status. bash's `time` reports real, user
# and sys of the command including its children; the groups run in this shell,
# so $st survives them.
time_once() {  # runtime program size
  local rt=$1 p=$2 n=$3 st real user sys
  local TIMEFORMAT='%3R %3U %3S'
  if [ "$rt" = native ]; then
    { time { "$SUITE/$p" "$n" >"$TMP/out" 2>"$TMP/err" && st=0 || st=$?; }; } 2>"$TMP/time"
  else
    { time { run_cmd "$rt" "$p.wasm" "$n" >"$TMP/out" 2>"$TMP/err" && st=0 || st=$?; }; } 2>"$TMP/time"
  fi
  read -r real user sys <"$TMP/time"
  if [ "$METRIC" = wall ]; then echo "$real"; else awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f\n", u + s }'; fi
  return "$st"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.2f", a / b; else printf "nan" }'; }

# Columns: times, then ratios. A ratio column is "A/B" with its own list of
# values for the geometric mean.
RATIO_COLS=()
if [ "$HAVE_WZVM" = 1 ]; then
  RATIO_COLS+=(wzvm/native)
  for rt in "${PROFILED[@]}"; do RATIO_COLS+=("$rt/wzvm"); done
  for rt in "${PEERS[@]}"; do RATIO_COLS+=("wzvm/$rt"); done
fi
for rt in "${PEERS[@]}"; do RATIO_COLS+=("$rt/native"); done

metric_name=$([ "$METRIC" = wall ] && echo "wall time" || echo "CPU time, user + sys")
echo "runs per runtime: $RUNS; median $metric_name, seconds$([ "$QUICK" = 1 ] && echo "; quick sizes")"
printf '%-8s %8s' program size
w() { echo $(( ${#1} > 10 ? ${#1} : 10 )); }  # column width for a heading
for rt in "${RUNTIMES[@]}"; do printf ' %*s' "$(w "$rt")" "$rt"; done
for c in "${RATIO_COLS[@]}"; do printf ' %*s' "$(w "$c")" "$c"; done
echo

status=0
declare -A LOGSUM=() LOGN=()
for p in "${PROGRAMS[@]}"; do
  n=$(sed -n 's/.*suite_size(argc, argv, \([0-9]*\)).*/\1/p' "bench/suite/$p.c")
  [ "$QUICK" = 1 ] && n=${QSIZE[$p]:-$n}
  [ -n "$SIZE_ALL" ] && n=$SIZE_ALL
  declare -A times=() outs=()
  for ((i = 0; i < RUNS; i++)); do
    for rt in "${RUNTIMES[@]}"; do
      t=$(time_once "$rt" "$p" "$n") && rc=0 || rc=$?
      if [ "$rc" = 0 ]; then
        times[$rt]+="$t"$'\n'
      else
        echo "suite.sh: $rt failed on $p $n (exit status $rc): $(head -c 300 "$TMP/err")" >&2
        status=1
        times[$rt]+=$'nan\n'
      fi
      outs[$rt]=$(cat "$TMP/out")
    done
  done
  declare -A med=()
  printf '%-8s %8s' "$p" "$n"
  for rt in "${RUNTIMES[@]}"; do
    if [[ ${times[$rt]} == *nan* ]]; then med[$rt]=nan; else med[$rt]=$(printf '%s' "${times[$rt]}" | median); fi
    printf ' %*s' "$(w "$rt")" "${med[$rt]}"
  done
  for c in "${RATIO_COLS[@]}"; do
    r=$(ratio "${med[${c%/*}]}" "${med[${c#*/}]}")
    printf ' %*s' "$(w "$c")" "$r"
    if [ "$r" != nan ]; then
      LOGSUM[$c]=$(awk -v s="${LOGSUM[$c]:-0}" -v r="$r" 'BEGIN { printf "%.9f", s + log(r) }')
      LOGN[$c]=$(( ${LOGN[$c]:-0} + 1 ))
    fi
  done
  echo
  for rt in "${RUNTIMES[@]}"; do
    if [ "$rt" != native ] && [ "${outs[$rt]}" != "${outs[native]}" ]; then
      echo "  output mismatch on $p: native '${outs[native]}', $rt '${outs[$rt]}'" >&2
      status=1
    fi
  done
  unset times outs med
done
printf '%-8s %8s' geomean ""
for rt in "${RUNTIMES[@]}"; do printf ' %*s' "$(w "$rt")" ""; done
for c in "${RATIO_COLS[@]}"; do
  if [ -n "${LOGN[$c]:-}" ]; then g=$(awk -v s="${LOGSUM[$c]}" -v k="${LOGN[$c]}" 'BEGIN { printf "%.2f", exp(s / k) }'); else g=nan; fi
  printf ' %*s' "$(w "$c")" "$g"
done
echo
exit $status
