#!/usr/bin/env bash
# Whole-program comparison of wzvm against peer runtimes.
#
#   bash bench/compare.sh [--quick] [--runs N] [--build DIR] [--profiling] [PROGRAM...]
#
# Programs (bench/programs/*.c, built by the normal build into
# BUILD/bench/programs/*.wasm) each export `run(n)` and import nothing:
#   fib     recursive calls          loop    tight integer loop
#   sieve   memory-heavy kernel      matmul  floating-point kernel
# Peers: wabt's wasm-interp (required), node, wasm3 and iwasm when on PATH
# (reported as absent otherwise). Each runtime runs each program N times,
# alternating runtimes run by run; the table shows median wall times (process
# start included) and, per peer, peer time / wzvm time (> 1: wzvm is faster).
# Results are checked to agree across runtimes.
#
# wzvm also runs with its profilers on, as two more columns: wzvm+cpu
# (--profile=cpu) and wzvm+instr (--profile=instructions), each with its
# ratio to profiling off (cpu/off, instr/off: 1.03 = 3% slower; the profile is
# written, to a temporary directory, inside the timed run). --profiling runs
# only these three (no peers), to measure profiler overhead quickly.
#
# Debian's wasm-interp can only run exports without parameters, so for it a
# wrapper module (wasm2wat + one extra export `bench_main` calling run(n)) is
# made on the fly.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=build
RUNS=5
QUICK=0
PROFILING_ONLY=0
PROGRAMS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --runs) RUNS=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --profiling) PROFILING_ONLY=1 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    *) PROGRAMS+=("$1") ;;
  esac
  shift
done

# Argument n of run(n). Full sizes: about 1 s in wzvm and 15 s in wasm-interp on a
# 2-vCPU VM (bench/README.md); quick sizes: about 1 s in wasm-interp.
declare -A SIZE=([fib]=37 [loop]=60000000 [sieve]=24000000 [matmul]=350)
declare -A QSIZE=([fib]=31 [loop]=5000000 [sieve]=2000000 [matmul]=150)
[ ${#PROGRAMS[@]} -eq 0 ] && PROGRAMS=(fib loop sieve matmul)
if [ "$QUICK" = 1 ] && [ "$RUNS" = 5 ]; then RUNS=3; fi

WZVM="$BUILD/wzvm"
PROGDIR="$BUILD/bench/programs"
if [ ! -x "$WZVM" ]; then
  echo "compare.sh: $WZVM not found; build first (bash scripts/dev.sh demo)" >&2
  exit 1
fi
for p in "${PROGRAMS[@]}"; do
  if [ -z "${SIZE[$p]:-}" ]; then echo "compare.sh: unknown program $p" >&2; exit 2; fi
  if [ ! -f "$PROGDIR/$p.wasm" ]; then echo "compare.sh: $PROGDIR/$p.wasm not built" >&2; exit 1; fi
done

PEERS=()
have() { command -v "$1" >/dev/null 2>&1; }
if [ "$PROFILING_ONLY" = 1 ]; then :
elif have wasm-interp && have wasm2wat && have wat2wasm; then PEERS+=(wasm-interp); else echo "wasm-interp: absent"; fi
if [ "$PROFILING_ONLY" = 0 ]; then
  if have node; then PEERS+=(node); else echo "node: absent"; fi
  if have wasm3; then PEERS+=(wasm3); else echo "wasm3: absent"; fi
  if have iwasm; then PEERS+=(iwasm); else echo "iwasm: absent"; fi
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# wasm-interp wrapper: MODULE + (func (export "bench_main") (result i32) (call RUN (i32.const N)))
make_wrapper() {  # program n -> path
  local p=$1 n=$2 out="$TMP/$1-$2.wasm"
  if [ ! -f "$out" ]; then
    wasm2wat "$PROGDIR/$p.wasm" -o "$TMP/$p.wat"
    local ref
    ref=$(sed -n 's/.*(export "run" (func \([^)]*\))).*/\1/p' "$TMP/$p.wat" | head -1)
    if [ -z "$ref" ]; then echo "compare.sh: no export run in $p.wasm" >&2; exit 1; fi
    sed "\$ s/)\$/\n  (func (export \"bench_main\") (result i32) (call $ref (i32.const $n))))/" \
      "$TMP/$p.wat" >"$TMP/$p-$n.wat"
    wat2wasm "$TMP/$p-$n.wat" -o "$out"
  fi
  echo "$out"
}

# Runs one runtime once; prints "SECONDS RESULT".
run_once() {  # runtime program n
  local rt=$1 p=$2 n=$3 wasm="$PROGDIR/$2.wasm" out t0 t1
  t0=$EPOCHREALTIME
  case "$rt" in
    wzvm) out=$("$WZVM" --invoke run "$wasm" "$n") ;;
    wzvm+cpu) out=$("$WZVM" --profile=cpu --profile-out "$TMP/cpu.pb.gz" --invoke run "$wasm" "$n" 2>/dev/null) ;;
    wzvm+instr) out=$("$WZVM" --profile=instructions --profile-out "$TMP/instr.pb.gz" --invoke run "$wasm" "$n" 2>/dev/null) ;;
    wasm-interp) out=$(wasm-interp --run-all-exports "$(make_wrapper "$p" "$n")") ;;
    node) out=$(node bench/run-node.js "$wasm" run "$n") ;;
    wasm3) out=$(wasm3 --func run "$wasm" "$n") ;;
    iwasm) out=$(iwasm --function run "$wasm" "$n") ;;
  esac
  t1=$EPOCHREALTIME
  # Normalise the result: wasm-interp "bench_main() => i32:N", iwasm "0xHEX:i32", others the number.
  local res
  if [[ $out =~ i32:([0-9]+) ]]; then res=${BASH_REMATCH[1]}
  elif [[ $out =~ 0x([0-9a-fA-F]+):i32 ]]; then res=$((16#${BASH_REMATCH[1]}))
  elif [[ $out =~ (-?[0-9]+)[[:space:]]*$ ]]; then res=${BASH_REMATCH[1]}
  else res="?"; fi
  awk -v a="$t0" -v b="$t1" -v r="$res" 'BEGIN { printf "%.4f %s\n", b - a, r }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

PROFILED=(wzvm+cpu wzvm+instr)
RUNTIMES=(wzvm "${PROFILED[@]}" "${PEERS[@]}")
declare -A RATIO_NAME=([wzvm+cpu]=cpu/off [wzvm+instr]=instr/off)
echo "runs per runtime: $RUNS (median wall time, seconds)$([ "$QUICK" = 1 ] && echo ", quick sizes")"
printf '%-8s %10s' program n
for rt in "${RUNTIMES[@]}"; do printf ' %12s' "$rt"; done
for rt in "${PROFILED[@]}"; do printf ' %10s' "${RATIO_NAME[$rt]}"; done
for rt in "${PEERS[@]}"; do printf ' %18s' "$rt/wzvm"; done
echo

status=0
for p in "${PROGRAMS[@]}"; do
  n=${SIZE[$p]}
  [ "$QUICK" = 1 ] && n=${QSIZE[$p]}
  [[ " ${RUNTIMES[*]} " == *" wasm-interp "* ]] && make_wrapper "$p" "$n" >/dev/null
  declare -A times=() results=()
  for ((i = 0; i < RUNS; i++)); do
    for rt in "${RUNTIMES[@]}"; do
      if ! line=$(run_once "$rt" "$p" "$n"); then
        echo "compare.sh: $rt failed on $p" >&2
        status=1
        line="nan FAILED"
      fi
      times[$rt]+="${line%% *}"$'\n'
      results[$rt]=${line#* }
    done
  done
  declare -A med=()
  printf '%-8s %10s' "$p" "$n"
  for rt in "${RUNTIMES[@]}"; do
    med[$rt]=$(printf '%s' "${times[$rt]}" | median)
    printf ' %12.3f' "${med[$rt]}"
  done
  for rt in "${PROFILED[@]}"; do
    printf ' %10.3f' "$(awk -v a="${med[$rt]}" -v b="${med[wzvm]}" 'BEGIN { print (b > 0 ? a / b : 0) }')"
  done
  for rt in "${PEERS[@]}"; do
    printf ' %17.2fx' "$(awk -v a="${med[$rt]}" -v b="${med[wzvm]}" 'BEGIN { print (b > 0 ? a / b : 0) }')"
  done
  echo
  for rt in "${PROFILED[@]}" "${PEERS[@]}"; do
    if [ "${results[$rt]}" != "${results[wzvm]}" ]; then
      echo "  result mismatch on $p: wzvm=${results[wzvm]} $rt=${results[$rt]}" >&2
      status=1
    fi
  done
  unset times results med
done
exit $status
