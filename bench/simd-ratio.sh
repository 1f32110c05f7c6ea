#!/usr/bin/env bash
# SIMD payoff on wzvm: the same C kernels (bench/programs/simd_kernels.c, an
# int16 dot product and a sum of absolute byte differences) built without
# and with -msimd128, both run on wzvm.
#
#   bash bench/simd-ratio.sh [--runs N] [--build DIR] [--size N] [--instructions]
#
# Prints the median wall time of each build (N runs, alternating, process
# start included) and scalar time / SIMD time (> 1: the SIMD build is
# faster). --instructions also counts host instructions with callgrind (exact
# and repeatable, unlike wall time on a shared VM; needs valgrind). The two
# builds must return the same checksum.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=build
RUNS=5
SIZE=10000
INSTR=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --size) SIZE=$2; shift ;;
    --instructions) INSTR=1 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "simd-ratio.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

WZVM=$BUILD/wzvm
SCALAR=$BUILD/bench/programs/simd_kernels.wasm
SIMD=$BUILD/bench/programs/simd_kernels-simd128.wasm
for f in "$WZVM" "$SCALAR" "$SIMD"; do
  [ -e "$f" ] || { echo "simd-ratio.sh: $f not built (ninja -C $BUILD)" >&2; exit 1; }
done

r1=$("$WZVM" --invoke run "$SCALAR" "$SIZE")
r2=$("$WZVM" --invoke run "$SIMD" "$SIZE")
if [ "$r1" != "$r2" ]; then
  echo "simd-ratio.sh: results differ: scalar $r1, simd128 $r2" >&2
  exit 1
fi

now() { date +%s.%N; }
declare -a T_SCALAR T_SIMD
for ((i = 0; i < RUNS; i++)); do
  t0=$(now); "$WZVM" --invoke run "$SCALAR" "$SIZE" >/dev/null; t1=$(now)
  "$WZVM" --invoke run "$SIMD" "$SIZE" >/dev/null; t2=$(now)
  T_SCALAR+=("$(echo "$t1 - $t0" | bc -l)")
  T_SIMD+=("$(echo "$t2 - $t1" | bc -l)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ms=$(median "${T_SCALAR[@]}")
mv=$(median "${T_SIMD[@]}")
printf 'simd_kernels run(%s), checksum %s, median of %d runs\n' "$SIZE" "$r1" "$RUNS"
printf '  scalar (no -msimd128)  %8.3f s\n' "$ms"
printf '  -msimd128              %8.3f s\n' "$mv"
printf '  ratio scalar/simd      %8.2fx\n' "$(echo "$ms / $mv" | bc -l)"

if [ "$INSTR" = 1 ]; then
  command -v valgrind >/dev/null 2>&1 || { echo "simd-ratio.sh: --instructions needs valgrind" >&2; exit 1; }
  count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$WZVM" --invoke run "$1" "$2" 2>&1 >/dev/null |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  n=$((SIZE / 10 > 0 ? SIZE / 10 : 1))
  is=$(count "$SCALAR" "$n")
  iv=$(count "$SIMD" "$n")
  printf 'host instructions (callgrind, run(%s)): scalar %s, simd128 %s, ratio %.2fx\n' \
    "$n" "$is" "$iv" "$(echo "$is / $iv" | bc -l)"
fi
