// Runs a WASI command module under node's WASI (node:wasi), the peer that
// bench/wasi/compare.sh times wzvm against and tests/wasi_programs_test.cc
// compares outputs with.
// Usage: node run-node-wasi.mjs [--dir HOST::GUEST | --env NAME=VALUE]... MODULE.wasm [ARGS...]
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';

const argv = process.argv.slice(2);
const preopens = {};
const env = {};
while (argv[0] === '--dir' || argv[0] === '--env') {
  if (argv[0] === '--dir') {
    const [host, guest] = argv[1].split('::');
    preopens[guest ?? host] = host;
  } else {
    const eq = argv[1].indexOf('=');
    env[argv[1].slice(0, eq)] = argv[1].slice(eq + 1);
  }
  argv.splice(0, 2);
}
const wasi = new WASI({ version: 'preview1', args: argv, env, preopens, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(argv[0]));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
