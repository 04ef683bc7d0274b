// A command whose output is its result (a token, the configuration, the health table, the version, a
// report) has not done its work when that output could not be written: `token admin > /dev/full` printed
// no token and exited 0, and a script went on with an empty token. What failed on stdout is found on the
// way out, whichever command wrote it and however it ended (yargs prints --help and --version and exits at
// once), so no command can forget it: one line on stderr and EXIT_IO_ERROR.
//
// A reader that closed the pipe early (`| head`, a pager quit: EPIPE) took what it wanted; that stays quiet
// and changes nothing, as src/process/closed-output.ts drops the rest.
import { writeFailureText } from './fatal.js';
import { EXIT_IO_ERROR, EXIT_USAGE } from './load.js';

/** `who`: how the line names the command (`voice-hub token`), asked only when a write failed. */
export function failOnUnwrittenOutput(who: () => string, stream: NodeJS.WriteStream = process.stdout): void {
  let failed: unknown;
  stream.on('error', (e) => {
    failed ??= e;
  });
  process.on('exit', (code) => {
    // A write that failed just before process.exit() has not emitted its 'error' yet; the stream holds it.
    const error = failed ?? stream.errored;
    if (!error || (error as NodeJS.ErrnoException).code === 'EPIPE') return;
    process.stderr.write(`${who()}: ${writeFailureText(error, 'the standard output')}\n`);
    // A failure already reported in words of its own (bad usage, the configuration, a bug) keeps its code.
    if (code < EXIT_USAGE) process.exitCode = EXIT_IO_ERROR;
  });
}
