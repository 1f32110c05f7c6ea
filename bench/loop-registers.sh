#!/usr/bin/env bash
# Where GCC put the interpreter loops' hot values: for a few hot handlers of
# the plain loop (run<Plain>) and the counting loop (run<Counted>), the
# handler's instruction count up to its dispatch and every stack-slot
# operand it reads or writes. After any change to vm/interp.cc, a handler
# that grew a `(%rsp)` operand means a loop value (the dispatch table,
# inst, memory 0's base or size, fp, ip) left its register for a stack slot
# (docs/RATIONALE.md, "The loop's registers are named"); check this before
# timing. As of 2026-11-29 the top frame (`frame`) is in a slot in both
# loops (ret1, the call paths), and the counting loop, which has one hot
# value more than x86-64 has callee-saved registers, keeps its `counters` in
# r13 and the instance in a slot (global.get and global.set read it there).
# In the profile-guided build (scripts/pgo.sh) GCC copies the call path into
# copy+call_func (38 instructions, `frame` read and written in its slot) and
# i32.load sets its trap code in the handler (14): both by design of the
# profile, not a lost register.
#
#   bash bench/loop-registers.sh [--build DIR] [--bin WZVM] [--show] [HANDLER...]
#
# --show prints each handler's instructions, not only its stack-slot ones.
#
# --bin reads another wzvm binary (an experiment's) with DIR's op names:
# only right when both have the same ops (vm/iops.inc) in the same order.
#
# Handlers are named as in listings (vm/iops.inc): default global.get
# global.set i32.load i32.add ret1 copy+call_func. Needs objdump, nm and
# readelf (binutils) and a computed-goto build (not WZVM_SWITCH_DISPATCH).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=build
BIN=
SHOW=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --show) SHOW=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
HANDLERS=("$@")
[ ${#HANDLERS[@]} -gt 0 ] || HANDLERS=(global.get global.set i32.load i32.add ret1 copy+call_func)
BIN=${BIN:-$BUILD/wzvm}
LIB=$BUILD/vm/libwzvm_vm.a
for f in "$BIN" "$LIB"; do
  [ -f "$f" ] || { echo "loop-registers: no $f (build wzvm first: bash scripts/dev.sh build)" >&2; exit 1; }
done

# The op names in IOp order, from the library itself (iop_name), so that
# they match the binary's tables.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/names.cc" <<'EOF'
#include <cstdio>
#include "vm/code.h"
int main() {
  for (uint32_t i = 0; i < static_cast<uint32_t>(wzvm::vm::IOp::Count); ++i)
    std::printf("%s\n", wzvm::vm::iop_name(static_cast<wzvm::vm::IOp>(i)));
}
EOF
c++ -std=c++20 -O1 -I. "$TMP/names.cc" "$LIB" -o "$TMP/names"
"$TMP/names" > "$TMP/names.txt"

SHOW=$SHOW python3 - "$BIN" "$TMP/names.txt" "${HANDLERS[@]}" <<'EOF'
import os, re, subprocess, sys

binary, names_file, handlers = sys.argv[1], sys.argv[2], sys.argv[3:]
names = open(names_file).read().split('\n')

def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

symbols = run('nm', '-S', '-C', binary).splitlines()
relocs = run('readelf', '-rW', binary).splitlines()

def table(mode, name):
    # The handler addresses of a loop's label table: its relocations'
    # addends (a position-independent binary), in IOp order.
    for line in symbols:
        if name in line and f'Mode){mode}>' in line and 'run<' in line:
            start, size = int(line.split()[0], 16), int(line.split()[1], 16)
            break
    else:
        sys.exit(f'loop-registers: no {name} of run<Mode {mode}> in {binary}')
    entries = {}
    for line in relocs:
        f = line.split()
        if len(f) >= 4 and 'R_X86_64_RELATIVE' in line:
            off = int(f[0], 16)
            if start <= off < start + size:
                entries[(off - start) // 8] = int(f[-1], 16)
    return {names[i]: a for i, a in entries.items()}

for mode, label, tname in ((0, 'plain', 'kLabels'), (1, 'counting', 'kCountedLabels')):
    addrs = table(mode, tname)
    print(f'== {label} loop (run<Mode {mode}>)')
    for h in handlers:
        if h not in addrs:
            print(f'  {h}: no such op')
            continue
        out = run('objdump', '-d', '--no-show-raw-insn', f'--start-address={addrs[h]:#x}',
                  f'--stop-address={addrs[h] + 512:#x}', binary)
        body = []
        for line in out.splitlines():
            m = re.match(r'\s+[0-9a-f]+:\s+(.*)', line)
            if not m:
                continue
            body.append(m.group(1).strip())
            # the handler ends at its dispatch (or a jump into shared code)
            if body[-1].startswith('jmp'):
                break
        slots = [ins for ins in body if '(%rsp)' in ins]
        shown = body if os.environ.get('SHOW') else slots
        print(f'  {h:16} {len(body):3} instructions, stack slots: {len(slots)}'
              + (''.join(f'\n      {s}' for s in shown)))
EOF
