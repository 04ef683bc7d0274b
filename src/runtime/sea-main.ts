// The main script of every single executable: it reads the program (build.mjs' bundle), which the build
// appends after the ELF with the other assets, compiles it and runs it as the CommonJS module it is. As
// the SEA's own main script the program was copied into the V8 heap by Node while its pages in the mapped
// executable stayed resident too (1.6 MiB); read with pread from the payload, only the heap copy remains.
// Compiled with the code cache of the last start when there is one (code-cache.ts).
import { createRequire } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { withPriority } from '../log/logger.js';
import { embeddedProgram, markSingleExecutable, nativeCacheDir } from './assets.js';
import { ProgramCodeCache } from './code-cache.js';

markSingleExecutable();
const filename = process.execPath;
let program: string;
try {
  // A #! line starts the bundle (for running it by its path); inside a function it would not parse.
  // Emptied rather than removed, so that line numbers in stack traces stay the bundle's.
  program = embeddedProgram().toString('utf8').replace(/^#!.*/, '');
} catch (e) {
  process.stderr.write(withPriority('Error', `start-up failed: ${e instanceof Error ? e.message : String(e)}`));
  process.exit(1);
}
const cache = new ProgramCodeCache(nativeCacheDir(), program);
// CommonJS' own wrapper, on the program's first line.
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${program}\n})`, { filename, cachedData: cache.data });
const run = script.runInThisContext() as (this: unknown, ...args: unknown[]) => void;
cache.saveLater(script, (message) => process.stderr.write(withPriority('Warning', `warning: ${message}`)));
const module = { exports: {} };
run.call(module.exports, module.exports, createRequire(filename), module, filename, path.dirname(filename));
