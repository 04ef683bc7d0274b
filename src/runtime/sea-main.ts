// The main script of every single executable: it reads the program (build.mjs' bundle), which the build
// appends after the ELF with the other assets, and runs it (run-program.ts). As the SEA's own main script
// the program was copied into the V8 heap by Node while its pages in the mapped executable stayed
// resident too (1.6 MiB); read with pread from the payload, only the heap copy remains.
import { withPriority } from '../log/logger.js';
import { embeddedProgram, markSingleExecutable, nativeCacheDir } from './assets.js';
import { runProgram } from './run-program.js';

markSingleExecutable();
let program: Buffer;
try {
  program = embeddedProgram();
} catch (e) {
  process.stderr.write(withPriority('Error', `start-up failed: ${e instanceof Error ? e.message : String(e)}`));
  process.exit(1);
}
runProgram(program, process.execPath, nativeCacheDir());
