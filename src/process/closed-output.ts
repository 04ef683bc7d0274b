// Whoever reads the process's stdout or stderr may go away while it runs: `voice-hub 2>&1 | head`, a
// pager quit, a terminal or SSH session gone (writes then fail with EIO), journald's stream closed. Node
// reports the failed write as an 'error' on the stream, which with no listener is an uncaught exception;
// the service logged that on stderr, which failed again, and so on without end: it stopped answering,
// spun at a full core and grew by gigabytes. Like .NET's console on a broken pipe, what cannot be
// written is dropped and the process goes on (a service keeps serving, a signal still stops it cleanly).
import { closeSync } from 'node:fs';
import { isatty } from 'node:tty';

/** Makes a failed write to stdout or stderr drop the rest of that stream's output instead of throwing. */
export function tolerateClosedOutput(streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  // Once a stream has failed it is destroyed, and Node drops later writes to it without another error.
  for (const stream of streams) stream.on('error', () => {});
  forgetHungUpTerminals();
}

/**
 * At exit Node 20 puts each standard descriptor that was a terminal back into the mode it found it in,
 * and aborts (a core dump, exit status 134) when that fails, as it does on a terminal that hung up: a
 * service in the foreground of an SSH session that dropped drained and flushed on its SIGHUP, then
 * crashed on the way out (fixed in Node 24, nodejs/node#58200). Node skips a descriptor that is no
 * longer open, so one whose terminal is gone (no longer answering as a terminal) is closed at exit;
 * nothing can be written to it any more anyway.
 */
function forgetHungUpTerminals(): void {
  const terminals = [0, 1, 2].filter((fd) => isatty(fd));
  if (terminals.length === 0) return;
  process.on('exit', () => {
    for (const fd of terminals) {
      if (isatty(fd)) continue;
      try {
        closeSync(fd);
      } catch {
        // Already closed: Node skips it too.
      }
    }
  });
}
