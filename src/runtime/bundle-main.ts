// What `node dist/voice-hub.cjs` runs: a launcher that reads the program (build.mjs' bundle of
// src/main.ts, dist/program.cjs beside it) and runs it with the V8 code cache of its last start
// (run-program.ts), as the single executables do. Loaded by Node itself, the 1 MB program was compiled
// afresh at every start: with the cache, a start takes about 0.8 of the time.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { withPriority } from '../log/logger.js';
import { PROGRAM_ASSET } from './asset-manifest.mjs';
import { nativeCacheDir } from './assets.js';
import { runProgram } from './run-program.js';

const filename = path.join(__dirname, PROGRAM_ASSET);
// Node maps stack traces through the program's source map (`node --enable-source-maps`) only for what its
// own loader compiled: with them asked for, the program is loaded that way, without the code cache.
// The bytes are read inside the call, not into a module variable, which would keep them for the life of
// the process beside the program's text.
if (process.sourceMapsEnabled) {
  readProgram(); // a build without its program is told so the same way
  require(filename);
} else runProgram(readProgram(), filename, nativeCacheDir());

/** The program's bytes; a launcher without them stops here, naming the file it looked for. */
function readProgram(): Buffer {
  try {
    return readFileSync(filename);
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : e instanceof Error ? e.message : String(e);
    process.stderr.write(withPriority('Error', `start-up failed: the program ${filename} could not be read (${why}): this build is incomplete (run node build.mjs)`));
    process.exit(1);
  }
}
