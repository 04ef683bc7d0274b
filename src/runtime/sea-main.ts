// The main script of every single executable: it reads the program (build.mjs' bundle), which the build
// appends after the ELF with the other assets, compiles it and runs it as the CommonJS module it is. As
// the SEA's own main script the program was copied into the V8 heap by Node while its pages in the mapped
// executable stayed resident too (1.6 MiB); read with pread from the payload, only the heap copy remains.
import { createRequire } from 'node:module';
import path from 'node:path';
import { compileFunction } from 'node:vm';
import { embeddedProgram } from './assets.js';

const filename = process.execPath;
let program: string;
try {
  // A #! line starts the bundle (for running it by its path); inside a function it would not parse.
  program = embeddedProgram().toString('utf8').replace(/^#!.*/, '');
} catch (e) {
  process.stderr.write(`start-up failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
const run = compileFunction(program, ['exports', 'require', 'module', '__filename', '__dirname'], { filename });
const module = { exports: {} };
run.call(module.exports, module.exports, createRequire(filename), module, filename, path.dirname(filename));
