#!/usr/bin/env bash
# The rooms' layering, checked (ctest `layering`): the engine (vm/) includes
# nothing above it; WASI (wasi/) and the profilers (profiler/) build on vm/
# alone and not on each other; only cli/ (the command) ties them together.
# A violation prints the offending line and fails.
#
# Usage: bash tests/layering.sh SOURCE_DIR
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

status=0
# room: the rooms it may include besides itself
check() {
  local room=$1 allowed=$2 bad
  # Project headers are included by their path from the root ("vm/module.h").
  bad=$(grep -HnE '^\s*#\s*include\s+"[a-z_]+/' "$room"/*.cc "$room"/*.h "$room"/*.inc 2>/dev/null |
        grep -vE "#\s*include\s+\"($room|$allowed)/" || true)
  if [ -n "$bad" ]; then
    echo "layering: $room/ may include only $room/${allowed:+ and ${allowed//|/, }/}:" >&2
    echo "$bad" >&2
    status=1
  fi
}
check vm ""
check wasi "vm"
check profiler "vm"
[ "$status" = 0 ] && echo "layering: vm/ <- wasi/, profiler/ <- cli/ holds"
exit "$status"
