// Runs the program (build.mjs' bundle of src/main.ts) as the CommonJS module it is, compiled with the V8
// code cache of its last start (code-cache.ts): both launchers use it, src/runtime/sea-main.ts inside a
// single executable and src/runtime/bundle-main.ts for `node dist/voice-hub.cjs`. Node's own loader
// offers no code cache on Node 20, so the program is compiled here, in CommonJS' own wrapper.
import { isAscii } from 'node:buffer';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { withPriority } from '../log/logger.js';
import { ProgramCodeCache } from './code-cache.js';

/**
 * Compiles `source` in CommonJS' own wrapper and runs it as the module at `filename`, its `require`
 * resolving from `requireFrom`; returns the script and the module's exports. The program's parts
 * (program-parts.ts) run this way inside an executable too.
 */
export function runCommonJs(source: string, filename: string, requireFrom = filename, cachedData?: Buffer): { script: Script; exports: Record<string, unknown> } {
  // The wrapper opens on the first line, so line numbers in stack traces stay the source's.
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename, ...(cachedData ? { cachedData } : {}) });
  const run = script.runInThisContext() as (this: unknown, ...args: unknown[]) => void;
  const module = { exports: {} as Record<string, unknown> };
  run.call(module.exports, module.exports, createRequire(requireFrom), module, filename, path.dirname(filename));
  return { script, exports: module.exports };
}

/**
 * The text of a bundle's bytes. esbuild writes ASCII (it escapes the rest), which reads as Latin-1 in
 * about half the time UTF-8 decoding takes: a few ms of every start for the 1 MB program.
 */
export const bundleText = (bytes: Buffer): string => bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');

/**
 * Runs the program, given as the bytes of its file, as the module at `filename`, with the code cache kept
 * in `cacheDir`; what stops the cache from being written is a warning on stderr.
 */
export function runProgram(program: Buffer, filename: string, cacheDir: string): void {
  // The cache is keyed by the bytes: hashing the text would encode all of it to UTF-8 again.
  const cache = new ProgramCodeCache(cacheDir, program);
  const { script } = runCommonJs(bundleText(program), filename, filename, cache.data);
  cache.saveLater(script, (message) => process.stderr.write(withPriority('Warning', `warning: ${message}`)));
}
