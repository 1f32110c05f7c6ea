#!/usr/bin/env bash
# The project's C++ in the house style (.clang-format), with clang-format 14.
#   bash scripts/format.sh          reformat in place
#   bash scripts/format.sh --check  list what differs and fail (ctest `format`)
# Covers the C++ the project writes (*.cc, *.h): not third_party/, and not
# the guest programs in testdata/ and bench/, whose line numbers tests and
# benchmark listings refer to.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || true)
[ -n "$fmt" ] || { echo "format: clang-format-14 not found (apt-get install clang-format-14)" >&2; exit 2; }
# The rooms that hold the project's C++.
ROOMS=(vm fuzz wasi profiler cli tests spec-tests bench examples)
patterns=()
for r in "${ROOMS[@]}"; do patterns+=("$r/*.cc" "$r/*.h"); done
mapfile -t files < <(git ls-files -- "${patterns[@]}" 2>/dev/null || true)
# 77: ctest's "skipped" (a source tree that is not a git checkout).
[ "${#files[@]}" -gt 0 ] || { echo "format: not a git checkout: no list of the project's files; skipped" >&2; exit 77; }
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$fmt" --dry-run -Werror "$f" >/dev/null 2>&1; then
      echo "format: $f differs from .clang-format (bash scripts/format.sh fixes it)" >&2
      bad=1
    fi
  done
  [ "$bad" = 0 ] && echo "format: ${#files[@]} files follow .clang-format"
  exit "$bad"
fi
"$fmt" -i "${files[@]}"
