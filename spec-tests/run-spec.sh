#!/usr/bin/env bash
# Run the WebAssembly core spec tests against wzvm (registered with ctest as spec-core).
#
# Usage: spec-tests/run-spec.sh RUNNER BUILD_SPEC_DIR [--folder DIR] [RUNNER_FLAGS...]
#   RUNNER          path of the wzvm-spectest binary
#   BUILD_SPEC_DIR  where the converted tests go (e.g. build/spec; core tests land in build/spec/core)
#   --folder DIR    core (the default) or a proposal folder, e.g. proposals/tail-call
#                   (registered with ctest as spec-tail-call etc.); each of its files
#                   runs with the flags `convert.sh --flags FILE` prints for it
#   RUNNER_FLAGS    passed on to wzvm-spectest before the files (e.g. -v)
#
# 1. Finds the testsuite: $WZVM_SPEC_TESTSUITE, else ../shared/wasm-testsuite beside
#    the repository, else the git submodule third_party/testsuite (when populated).
#    Layouts: core tests under core/ (the shared copy) or at the top level (upstream).
# 2. Converts core/*.wast with wast2json (the suite's own convert.sh when it has one),
#    reusing the previous conversion when nothing changed (stamp file).
# 3. Runs wzvm-spectest over BUILD_SPEC_DIR/core (or the folder) with
#    spec-tests/known-failures.txt (one list for every folder: entries name
#    the file as the runner prints it, e.g. tail-call/return_call.json).
#    simd_*.json files run too; WZVM_SPEC_SIMD=0 counts them as skipped
#    instead (e.g. to time the scalar suite alone).
set -u

if [ $# -lt 2 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
fi
RUNNER=$1
OUT=$2
shift 2
folder=core
if [ "${1:-}" = "--folder" ]; then
  [ $# -ge 2 ] || { echo "run-spec.sh: --folder needs a directory (core, proposals/NAME)" >&2; exit 2; }
  folder=${2%/}
  shift 2
fi
# ctest's SKIP_RETURN_CODE: a proposal folder cannot run without the shared
# copy of the suite (its convert.sh knows each file's flags).
SKIP=77

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
WAST2JSON=${WAST2JSON:-wast2json}

# --- 1. find the testsuite -------------------------------------------------
has_wast() { compgen -G "$1/*.wast" >/dev/null 2>&1; }

suite=""
if [ -n "${WZVM_SPEC_TESTSUITE:-}" ]; then
  suite=$WZVM_SPEC_TESTSUITE
  [ -d "$suite" ] || { echo "run-spec.sh: WZVM_SPEC_TESTSUITE=$suite is not a directory" >&2; exit 2; }
elif [ -d "$repo/../shared/wasm-testsuite" ]; then
  suite=$(cd "$repo/../shared/wasm-testsuite" && pwd)
elif has_wast "$repo/third_party/testsuite"; then
  suite=$repo/third_party/testsuite
else
  cat >&2 <<EOF
run-spec.sh: WebAssembly spec testsuite not found. Get it with
    git submodule update --init third_party/testsuite
or point WZVM_SPEC_TESTSUITE at a checkout of https://github.com/WebAssembly/testsuite
(commit 3a04b2cf93bd8fce277458d419eea8d9c326345c, the one wabt 1.0.32 parses).
EOF
  exit 2
fi

if has_wast "$suite/core"; then
  coresrc=$suite/core        # shared copy: core/ and proposals/
elif has_wast "$suite"; then
  coresrc=$suite             # upstream testsuite repo: core tests at the top level
else
  echo "run-spec.sh: no .wast files in $suite/core or $suite" >&2
  exit 2
fi

if [ ! -x "$RUNNER" ]; then
  echo "run-spec.sh: runner $RUNNER not found or not executable (build the wzvm-spectest target)" >&2
  exit 2
fi

# --- 2. convert (once) -------------------------------------------------------
command -v "$WAST2JSON" >/dev/null 2>&1 || {
  echo "run-spec.sh: $WAST2JSON not found (apt-get install wabt; 1.0.32 is the tested version)" >&2; exit 2; }

mkdir -p "$OUT/core" || exit 2
OUT=$(cd "$OUT" && pwd)
stamp=$OUT/core/.converted
ident="suite=$coresrc wast2json=$(command -v "$WAST2JSON") version=$("$WAST2JSON" --version 2>/dev/null)"

up_to_date() {
  [ -f "$stamp" ] || return 1
  [ "$(cat "$stamp")" = "$ident" ] || return 1
  # Any .wast (or the converter) newer than the stamp means a new conversion
  # (proposals/ too when the suite's convert.sh converts them).
  [ -z "$(find "$coresrc" -maxdepth 1 -name '*.wast' -newer "$stamp" -print -quit)" ] || return 1
  if [ -d "$suite/proposals" ] && [ "$coresrc" = "$suite/core" ]; then
    [ -z "$(find "$suite/proposals" -name '*.wast' -newer "$stamp" -print -quit)" ] || return 1
  fi
  if [ -f "$suite/convert.sh" ] && [ "$suite/convert.sh" -nt "$stamp" ]; then return 1; fi
  return 0
}

if ! up_to_date; then
  rm -f "$stamp"
  echo "run-spec.sh: converting $coresrc/*.wast into $OUT/core ..."
  if [ -f "$suite/convert.sh" ] && [ "$coresrc" = "$suite/core" ]; then
    # The suite's own script knows the flags (none for core). It converts
    # proposals/ too, which the proposal runs (issue 11) will use.
    WAST2JSON=$WAST2JSON bash "$suite/convert.sh" "$OUT" "$suite" || {
      echo "run-spec.sh: conversion failed (see the *.wast2json.log files under $OUT)" >&2; exit 1; }
  else
    fail=0
    for wast in "$coresrc"/*.wast; do
      base=$(basename "$wast" .wast)
      rm -f "$OUT/core/$base.json" "$OUT/core/$base".[0-9]*.wasm "$OUT/core/$base".[0-9]*.wat
      # No flags for core: wasm 2.0 features are wast2json's defaults.
      if ! (cd "$coresrc" && "$WAST2JSON" "$base.wast" -o "$OUT/core/$base.json") 2>"$OUT/core/$base.wast2json.log"; then
        echo "run-spec.sh: wast2json failed on $wast (see $OUT/core/$base.wast2json.log)" >&2
        fail=1
      else
        rm -f "$OUT/core/$base.wast2json.log"
      fi
    done
    [ "$fail" -eq 0 ] || exit 1
  fi
  echo "$ident" >"$stamp"
fi

# --- 3. run ----------------------------------------------------------------
flags=(--known-failures "$here/known-failures.txt")
if [ "${WZVM_SPEC_SIMD:-1}" = 0 ]; then
  flags+=(--skip-simd)  # every simd_*.json command counts as skipped
fi
if [ "$folder" = core ]; then
  exec "$RUNNER" "${flags[@]}" "$@" "$OUT/core"
fi

# A proposal folder: one runner per file, with that file's flags.
case "$folder" in
  proposals/*) ;;
  *) echo "run-spec.sh: --folder must be core or proposals/NAME, got $folder" >&2; exit 2 ;;
esac
if [ ! -f "$suite/convert.sh" ] || [ "$coresrc" != "$suite/core" ]; then
  echo "run-spec.sh: $folder needs the shared testsuite copy with convert.sh (skipped)" >&2
  exit $SKIP
fi
[ -d "$suite/$folder" ] || { echo "run-spec.sh: no folder $suite/$folder" >&2; exit 2; }
status=0
passed=0
files=0
for wast in "$suite/$folder"/*.wast; do
  base=$(basename "$wast" .wast)
  file_flags=$(bash "$suite/convert.sh" --flags "$folder/$base.wast") || exit 2
  files=$((files + 1))
  # shellcheck disable=SC2086  # the flags are words
  echo "== $folder/$base.wast (flags: ${file_flags:-none})"
  if "$RUNNER" "${flags[@]}" $file_flags "$@" "$OUT/$folder/$base.json"; then
    passed=$((passed + 1))
  else
    status=1
  fi
done
echo "$folder: $passed of $files files pass"
exit $status
