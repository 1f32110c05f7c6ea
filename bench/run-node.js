// Runs one export of a wasm module without imports under node:
//   node bench/run-node.js MODULE.wasm NAME [ARG...]
// and prints its result, for bench/compare.sh.
'use strict';
const fs = require('fs');
const [file, name, ...args] = process.argv.slice(2);
const instance = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(file)), {});
const result = instance.exports[name](...args.map(Number));
if (result !== undefined) console.log(String(result));
