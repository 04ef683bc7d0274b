// Runs the program (build.mjs' bundle of src/main.ts) as the CommonJS module it is, compiled with the V8
// code cache of its last start (code-cache.ts): both launchers use it, src/runtime/sea-main.ts inside a
// single executable and src/runtime/bundle-main.ts for `node dist/voice-hub.cjs`. Node's own loader
// offers no code cache on Node 20, so the program is compiled here, in CommonJS' own wrapper.
import { createRequire } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { ProgramCodeCache } from './code-cache.js';

export interface ProgramFile {
  /** The program's source. */
  readonly source: string;
  /** The file it stands for: its `__filename`, what its `require` resolves from, the name in stack traces. */
  readonly filename: string;
}

/** Compiles and runs `program` once; the cache is read from `cacheDir` and written there later, what stops that told to `warn`. */
export function runProgram({ source, filename }: ProgramFile, cacheDir: string, warn: (message: string) => void): void {
  const cache = new ProgramCodeCache(cacheDir, source);
  // The wrapper opens on the program's first line, so line numbers in stack traces stay the program's.
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename, cachedData: cache.data });
  const run = script.runInThisContext() as (this: unknown, ...args: unknown[]) => void;
  cache.saveLater(script, warn);
  const module = { exports: {} };
  run.call(module.exports, module.exports, createRequire(filename), module, filename, path.dirname(filename));
}
