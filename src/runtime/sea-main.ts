// The main script of every single executable: it reads the program (build.mjs' bundle), which the build
// appends after the ELF with the other assets, and runs it (run-program.ts). As the SEA's own main script
// the program was copied into the V8 heap by Node while its pages in the mapped executable stayed
// resident too (1.6 MiB); read with pread from the payload, only the heap copy remains.
import { withPriority } from '../log/logger.js';
import { embeddedProgram, markSingleExecutable, nativeCacheDir, programFile } from './assets.js';
import { runProgram } from './run-program.js';

markSingleExecutable();
// Read inside the call, not into a module variable: this module's scope outlives start-up and would keep
// the program's 1 MB of bytes beside its text for the life of the process. It runs as the executable's
// file (its __dirname is where config/appsettings.json is looked for beside it), which is not
// process.execPath when started through an explicit dynamic loader.
runProgram(readProgram(), programFile(), nativeCacheDir());

/** The program's bytes; an executable without them stops here, saying why. */
function readProgram(): Buffer {
  try {
    return embeddedProgram();
  } catch (e) {
    process.stderr.write(withPriority('Error', `start-up failed: ${e instanceof Error ? e.message : String(e)}`));
    process.exit(1);
  }
}
