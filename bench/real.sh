#!/usr/bin/env bash
# Real programs: wzvm against the same programs run natively and on the
# peers on PATH (node's V8 through node:wasi, wasm3, iwasm), as ratios of CPU
# time, plus what wzvm's profilers cost on them (--profiling).
#
#   bash bench/real.sh [--runs N] [--profiling] [--build DIR] [PROGRAM...]
#
# Go programs are Go's own package tests, built here with `go test -c` by the
# newest Go of 1.21 or later installed (Debian's golang-1.2x-go, from
# bookworm-backports) for GOOS=wasip1 and natively, into BUILD/bench/go/
# (cached), and run as Go's own wasip1 runner runs them: in the package's
# source directory, with / preopened and PWD set, with -test.short and a
# selection of the package's tests (SEL below), a second to a few on wzvm:
#   strconv    all its tests: number parsing and formatting (i64 arithmetic,
#              math/bits done in software)
#   flate      compress/flate Deflate/Inflate/Writer/Reader (tables, bit twiddling)
#   json       encoding/json Marshal/Unmarshal round trips (reflection, maps,
#              allocation; not TestUnmarshalMaxDepth, 10,000 levels deep, where
#              --profile=instructions needs 30 s and 1.8 GB: one counter block
#              per call-tree node and depth)
#   sort       all its tests (calls through interfaces; short natively, so
#              its ratio to native is mostly wzvm's start-up and loading)
#   big        math/big, all but TestNatDiv and TestIssue45910 (a minute and
#              more on wzvm, most of it in the same multiply loops) and
#              TestNewIntAllocs (allocation counts, which the native build
#              below fails): multi-word arithmetic, math/bits.Mul64 and Add64.
#              Natively with -tags math_big_pure_go, so that native code runs
#              the same Go loops as wasm does (amd64's own are assembly)
#   regexp     all but TestOnePassCutoff (a recursion deeper than node's
#              stack): parsing, compiling and matching
# Python programs are the scripts in bench/python/ run by CPython 3.11 built
# for wasm32-wasi from Debian's source (BUILD/cpython, scripts/build-cpython.sh;
# skipped without it), its standard library preopened as /lib, and natively
# by Debian's python3.11 (also built from that source, with PGO):
#   py-objects   a binary tree of objects, dicts, recursion, json, re
#   py-text      regular expressions, string building, a JSON round trip
#   py-calls     calls, methods, closures, generators, exceptions
# Lua programs are the scripts in bench/lua/ run by Lua 5.4, zlib is
# bench/zlib/zbench.c on zlib and sqlite bench/sqlite/sqlbench.c on SQLite
# 3.40, all built from Debian's source packages by bench/build-programs.sh
# for wasm32-wasi and natively (the same source and compiler, clang-14 -O2)
# into BUILD/bench/programs (cached):
#   lua-objects  tables as objects with metatables, closures, string building,
#                table.sort with a comparator, gmatch
#   lua-numeric  recursion (fib), a sieve, matrix multiply, Mandelbrot in floats
#   zlib         deflate 2 MB of generated text at levels 1, 6 and 9, inflate it
#   sqlite       a 2.8 MB database file in a temporary directory (preopened as
#                /db): 44,600 rows inserted through prepared statements,
#                indexes, joins, GROUP BY, ORDER BY, LIKE, recursive CTEs,
#                10,000 point lookups, updates, deletes, a rollback
# A Go run must print PASS; a Python, Lua, zlib or SQLite run must print what
# the native one prints.
# Run i of every runtime comes before run i+1 of any, so a change in the
# machine's load hits all alike.
#
#   --runs N      runs per runtime and program (default 5)
#   --profiling   add wzvm --profile=cpu, --profile=instructions and --profile=mem, as ratios to plain
#   --base PATH   add another wzvm binary (an earlier commit's) as runtime `base`:
#                 wzvm/base is a change's speed-up side by side, in the same run
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=build
RUNS=5
PROFILING=0
BASE=
PROGRAMS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift ;;
    --profiling) PROFILING=1 ;;
    --base) BASE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
    --build) BUILD=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "real.sh: unknown option $1" >&2; exit 2 ;;
    *) PROGRAMS+=("$1") ;;
  esac
  shift
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "real.sh: --runs must be a positive integer" >&2; exit 2; }

GO=
for v in 1.23 1.22 1.21; do [ -x /usr/lib/go-$v/bin/go ] && { GO=/usr/lib/go-$v/bin/go; break; }; done
[ -n "$GO" ] || { echo "real.sh: no Go 1.21+ (install golang-1.23-go from bookworm-backports)" >&2; exit 1; }
GOROOT=$("$GO" env GOROOT)
WZVM=$BUILD/wzvm
[ -x "$WZVM" ] || { echo "real.sh: $WZVM not found: build first" >&2; exit 1; }
WZVM=$(cd "$(dirname "$WZVM")" && pwd)/wzvm
OUT=$(mkdir -p "$BUILD/bench/go" && cd "$BUILD/bench/go" && pwd)
NODE_RUNNER=$(pwd)/bench/wasi/run-node-wasi.mjs
CPU_TIME=$(pwd)/bench/cpu-time.py
PYDIR=$(pwd)/bench/python
# Debian's python3.11 (the same 3.11.2 source as the wasm build), not
# whatever python3.11 comes first on PATH.
PYTHON=/usr/bin/python3.11
[ -x "$PYTHON" ] || PYTHON=python3.11
CPYTHON=$(cd "$BUILD" && pwd)/cpython
LUADIR=$(pwd)/bench/lua
PROGOUT=$(mkdir -p "$BUILD/bench/programs" && cd "$BUILD/bench/programs" && pwd)

# name package test-selection
declare -A PKG=([strconv]=strconv [flate]=compress/flate [json]=encoding/json [sort]=sort [big]=math/big
                [regexp]=regexp)
declare -A SEL=([strconv]='^Test'
                [flate]='^Test(Deflate|Inflate|Writer|Reader|BestSpeed)'
                [json]='^Test(Marshal|Unmarshal|MarshalEmbeds|UnmarshalMarshal|RoundTrip)$'
                [sort]='^Test' [big]='^Test' [regexp]='^Test')
# -test.skip (Go 1.20 and later): tests left out of a package's selection
declare -A SKIP=([big]='^Test(NatDiv|Issue45910|NewIntAllocs)$' [regexp]='^TestOnePassCutoff$')
# go build tags of the native build (the same Go code as the wasm build runs)
declare -A NATIVE_TAGS=([big]=math_big_pure_go)
if [ ${#PROGRAMS[@]} -eq 0 ]; then
  PROGRAMS=(strconv flate json sort big regexp)
  if [ -f "$CPYTHON/python.wasm" ]; then PROGRAMS+=(py-objects py-text py-calls)
  else echo "real.sh: no $CPYTHON/python.wasm: Python programs skipped (bash scripts/build-cpython.sh $CPYTHON)" >&2; fi
  if bash bench/build-programs.sh "$PROGOUT"; then PROGRAMS+=(lua-objects lua-numeric zlib sqlite)
  else echo "real.sh: Lua, zlib and SQLite skipped (bench/build-programs.sh failed)" >&2; fi
fi

export GOCACHE=$OUT/cache GOPATH=$OUT/path GOPROXY=off GOTOOLCHAIN=local GOFLAGS=
for p in "${PROGRAMS[@]}"; do
  if [[ $p == lua-* || $p == zlib || $p == sqlite ]]; then
    [[ $p == zlib || $p == sqlite || -f "$LUADIR/${p#lua-}.lua" ]] || { echo "real.sh: unknown program $p (no bench/lua/${p#lua-}.lua)" >&2; exit 2; }
    bash bench/build-programs.sh "$PROGOUT"
    if [[ $p == zlib ]]; then "$PROGOUT/zbench.native" >"$OUT/$p.expected"
    elif [[ $p == sqlite ]]; then "$PROGOUT/sqlbench.native" "$PROGOUT/sqlbench.db" >"$OUT/$p.expected"
    else "$PROGOUT/lua.native" "$LUADIR/${p#lua-}.lua" >"$OUT/$p.expected"; fi
    continue
  fi
  if [[ $p == py-* ]]; then
    [ -f "$PYDIR/${p#py-}.py" ] || { echo "real.sh: unknown program $p (no bench/python/${p#py-}.py)" >&2; exit 2; }
    [ -f "$CPYTHON/python.wasm" ] || { echo "real.sh: $p needs $CPYTHON/python.wasm (bash scripts/build-cpython.sh $CPYTHON)" >&2; exit 1; }
    "$PYTHON" "$PYDIR/${p#py-}.py" >"$OUT/$p.expected"
    continue
  fi
  [ -n "${PKG[$p]:-}" ] || { echo "real.sh: unknown program $p" >&2; exit 2; }
  [ -f "$OUT/$p.wasm" ] || GOOS=wasip1 GOARCH=wasm "$GO" test -c -o "$OUT/$p.wasm" "${PKG[$p]}"
  [ -f "$OUT/$p.native" ] || "$GO" test -c -tags "${NATIVE_TAGS[$p]:-}" -o "$OUT/$p.native" "${PKG[$p]}"
done

have() { command -v "$1" >/dev/null 2>&1; }
RUNTIMES=(native wzvm)
[ -n "$BASE" ] && RUNTIMES+=(base)
have node && RUNTIMES+=(node)
have wasm3 && RUNTIMES+=(wasm3)
have iwasm && RUNTIMES+=(iwasm)
[ "$PROFILING" = 1 ] && RUNTIMES+=(wzvm+cpu wzvm+instr wzvm+mem)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/db"  # sqlite's database file

# The command line of program $2 on runtime $1, into CMD, and the directory
# to run it in, into DIR.
command_for() {
  local rt=$1 p=$2 wasm args wasi=()
  if [[ $p == zlib ]]; then
    DIR=$PROGOUT
    [ "$rt" = native ] && { CMD=("$PROGOUT/zbench.native"); return; }
    wasm=$PROGOUT/zbench.wasm
    args=()
  elif [[ $p == sqlite ]]; then
    DIR=$TMP/db
    [ "$rt" = native ] && { CMD=("$PROGOUT/sqlbench.native" "$TMP/db/bench.db"); return; }
    wasm=$PROGOUT/sqlbench.wasm
    args=(/db/bench.db)
    wasi=(--dir "$TMP/db::/db")
    [[ $rt == wasm3 || $rt == iwasm ]] && args=("$TMP/db/bench.db")
  elif [[ $p == lua-* ]]; then
    DIR=$LUADIR
    [ "$rt" = native ] && { CMD=("$PROGOUT/lua.native" "$LUADIR/${p#lua-}.lua"); return; }
    wasm=$PROGOUT/lua.wasm
    args=(/src/${p#lua-}.lua)
    wasi=(--dir "$LUADIR::/src")
    # wasm3 and iwasm see the host's paths (below)
    [[ $rt == wasm3 || $rt == iwasm ]] && args=("$LUADIR/${p#lua-}.lua")
  elif [[ $p == py-* ]]; then
    DIR=$PYDIR
    [ "$rt" = native ] && { CMD=("$PYTHON" "$PYDIR/${p#py-}.py"); return; }
    wasm=$CPYTHON/python.wasm
    args=(/src/${p#py-}.py)
    wasi=(--dir "$CPYTHON/lib::/lib" --dir "$PYDIR::/src" --env PYTHONHOME=/ --env PYTHONDONTWRITEBYTECODE=1)
  else
    DIR=$GOROOT/src/${PKG[$p]}
    [ "$rt" = native ] && { CMD=("$OUT/$p.native" -test.short -test.run "${SEL[$p]}" -test.skip "${SKIP[$p]:-^$}"); return; }
    wasm=$OUT/$p.wasm
    args=(-test.short -test.run "${SEL[$p]}" -test.skip "${SKIP[$p]:-^$}")
    wasi=(--dir /::/ --env "PWD=$DIR")
  fi
  case "$rt" in
    wzvm) CMD=("$WZVM" "${wasi[@]}" "$wasm" "${args[@]}") ;;
    base) CMD=("$BASE" "${wasi[@]}" "$wasm" "${args[@]}") ;;
    wzvm+cpu) CMD=("$WZVM" --profile=cpu --profile-out "$TMP/c.pb.gz" "${wasi[@]}" "$wasm" "${args[@]}") ;;
    wzvm+instr) CMD=("$WZVM" --profile=instructions --profile-out "$TMP/i.pb.gz" "${wasi[@]}" "$wasm" "${args[@]}") ;;
    wzvm+mem) CMD=("$WZVM" --profile=mem --profile-out "$TMP/m.pb.gz" "${wasi[@]}" "$wasm" "${args[@]}") ;;
    node) CMD=(node --no-warnings "$NODE_RUNNER" "${wasi[@]}" "$wasm" "${args[@]}") ;;
    # wasm3 and iwasm take preopens as host paths seen at the same guest path.
    wasm3) CMD=(wasm3 --dir / "$wasm" "${args[@]}") ;;
    iwasm) CMD=(iwasm --dir=/ "--env=PWD=$DIR" "$wasm" "${args[@]}") ;;
  esac
}

run() {  # runtime program -> CPU seconds on stdout; fails unless the run is right
  local rt=$1 p=$2
  command_for "$rt" "$p"
  # CPU time to the microsecond (bench/cpu-time.py: /usr/bin/time counts in
  # 10 ms, the whole native run of the shortest Go tests).
  (cd "$DIR" && python3 "$CPU_TIME" "$TMP/t" "${CMD[@]}" >"$TMP/out" 2>"$TMP/err") || true
  if [[ $p == py-* || $p == lua-* || $p == zlib || $p == sqlite ]] && ! cmp -s "$TMP/out" "$OUT/$p.expected"; then
    echo "real.sh: $rt $p printed something else than the native interpreter: $(tail -n 3 "$TMP/out" "$TMP/err" | tr '\n' ' ')" >&2
    return 1
  elif [[ $p != py-* && $p != lua-* && $p != zlib && $p != sqlite ]] && ! grep -q '^PASS$' "$TMP/out"; then
    echo "real.sh: $rt $p did not pass: $(tail -n 3 "$TMP/out" "$TMP/err" | tr '\n' ' ')" >&2
    return 1
  fi
  awk '{ printf "%.3f\n", $1 + $2 }' "$TMP/t"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

declare -A T
for p in "${PROGRAMS[@]}"; do
  for rt in "${RUNTIMES[@]}"; do : >"$TMP/$p.$rt"; done
  for ((i = 0; i < RUNS; i++)); do
    for rt in "${RUNTIMES[@]}"; do
      if s=$(run "$rt" "$p"); then echo "$s" >>"$TMP/$p.$rt"; fi
    done
  done
  for rt in "${RUNTIMES[@]}"; do
    if [ -s "$TMP/$p.$rt" ]; then T[$p.$rt]=$(median <"$TMP/$p.$rt"); else T[$p.$rt]=; fi
  done
done

printf '%s and Python %s on %s, %s runs, CPU time medians (s); ratios: wzvm / other\n' \
  "$("$GO" version | awk '{print $3}')" "$("$PYTHON" -c 'import platform; print(platform.python_version())')" \
  "$(uname -m)" "$RUNS"
printf '%-11s' program
for rt in "${RUNTIMES[@]}"; do printf '%11s' "$rt"; done
printf '%14s' wzvm/native
for rt in "${RUNTIMES[@]:2}"; do
  case "$rt" in wzvm+*) printf '%16s' "$rt/wzvm" ;; *) printf '%12s' "wzvm/$rt" ;; esac
done
echo
declare -A LOGS
for p in "${PROGRAMS[@]}"; do
  printf '%-11s' "$p"
  for rt in "${RUNTIMES[@]}"; do printf '%11s' "${T[$p.$rt]:--}"; done
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
  r=$(ratio "${T[$p.wzvm]}" "${T[$p.native]}")
  printf '%14s' "$r"
  [ "$r" != - ] && LOGS[native]+=" $r"
  for rt in "${RUNTIMES[@]:2}"; do
    case "$rt" in
      wzvm+*) r=$(ratio "${T[$p.$rt]}" "${T[$p.wzvm]}"); printf '%16s' "$r" ;;
      *) r=$(ratio "${T[$p.wzvm]}" "${T[$p.$rt]}"); printf '%12s' "$r" ;;
    esac
    [ "$r" != - ] && LOGS[$rt]+=" $r"
  done
  echo
done
geo() { awk '{ s = 0; for (i = 1; i <= NF; i++) s += log($i); printf "%.2f", NF ? exp(s / NF) : 0 }' <<<"$1"; }
printf '%-11s' geomean
for rt in "${RUNTIMES[@]}"; do printf '%11s' ''; done
printf '%14s' "$(geo "${LOGS[native]:-}")"
for rt in "${RUNTIMES[@]:2}"; do
  case "$rt" in wzvm+*) printf '%16s' "$(geo "${LOGS[$rt]:-}")" ;; *) printf '%12s' "$(geo "${LOGS[$rt]:-}")" ;; esac
done
echo
