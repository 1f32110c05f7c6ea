// V8 as an oracle for the binaryen campaign (fuzz/binaryen.h): runs modules
// the way binaryen's --fuzz-exec does (every exported function in order,
// with zero arguments, fuzzing-support.log-* printing what they get) and
// prints the events of fuzz/binaryen.h's canonical form:
//   module PATH / call NAME / log ... / result NAME => v, v / trap KIND
// Trap kinds are V8's messages mapped to spec traps at the grain V8 tells
// them apart (binaryen.h's coarse_kind).
//
// Usage: node v8_exec.js MANIFEST
// MANIFEST: one module per line, "PATH\tNAME=TYPE,TYPE\t..." giving each
// exported function's parameter types (JS needs BigInt zeros for i64).
'use strict';
const fs = require('fs');

const lines = [];
const out = (s) => lines.push(s);

function num(x) {
  if (typeof x === 'bigint') return x.toString();
  if (typeof x === 'number') {
    if (Number.isNaN(x)) return 'nan';
    if (Object.is(x, -0)) return '-0';
    return String(x);
  }
  return x === null ? 'null' : 'ref';
}

function kind(e) {
  if (e instanceof WebAssembly.Exception) return 'exception';
  const m = String(e && e.message);
  if (e instanceof RangeError && /call stack/.test(m)) return 'exhausted';
  if (/unreachable/.test(m)) return 'unreachable';
  if (/memory access out of bounds|data segment/.test(m)) return 'memory';
  if (/by zero/.test(m)) return 'divide-by-zero';
  if (/unrepresentable/.test(m)) return 'integer';
  if (/table index is out of bounds|table access|element segment|table/.test(m)) return 'table';
  if (/signature mismatch|null function/.test(m)) return 'indirect';
  if (/unaligned/.test(m)) return 'unaligned-atomic';
  if (/null/.test(m)) return 'null';
  return 'other:' + String(e && e.name) + ': ' + m;
}

for (const entry of fs.readFileSync(process.argv[2], 'utf8').split('\n')) {
  if (!entry) continue;
  const [path, ...exps] = entry.split('\t');
  const params = new Map(exps.map((x) => {
    const [name, types] = x.split('=');
    return [name, types ? types.split(',') : []];
  }));
  out('module ' + path);
  try {
    const mod = new WebAssembly.Module(fs.readFileSync(path));
    const log = (...args) => out('log ' + args.map(num).join(' '));
    const imports = {
      'fuzzing-support': {
        'log-i32': log,
        'log-f32': log,
        'log-f64': log,
        // Binaryen prints an i64 as its two i32 halves.
        'log-i64': (v) => out('log ' + BigInt.asIntN(32, v) + ' ' + BigInt.asIntN(32, v >> 32n)),
      },
    };
    const inst = new WebAssembly.Instance(mod, imports);
    for (const e of WebAssembly.Module.exports(mod)) {
      if (e.kind !== 'function') continue;
      out('call ' + e.name);
      const args = (params.get(e.name) || []).map((t) => (t === 'i64' ? 0n : (t === 'ref' ? null : 0)));
      try {
        // As binaryen does: re-arm the generated code's loop budget first.
        if (inst.exports.hangLimitInitializer) inst.exports.hangLimitInitializer();
        const r = inst.exports[e.name](...args);
        if (r === undefined) continue;
        out('result ' + e.name + ' => ' + (Array.isArray(r) ? '(' + r.map(num).join(', ') + ')' : num(r)));
      } catch (err) {
        out('trap ' + kind(err));
      }
    }
  } catch (err) {
    out('instantiate: ' + String(err));
  }
}
process.stdout.write(lines.join('\n') + '\n');
