// Whoever reads the process's stdout or stderr may go away while it runs: `voice-hub 2>&1 | head`, a
// pager quit, a terminal or SSH session gone (writes then fail with EIO), journald's stream closed. Node
// reports the failed write as an 'error' on the stream, which with no listener is an uncaught exception;
// the service logged that on stderr, which failed again, and so on without end: it stopped answering,
// spun at a full core and grew by gigabytes. Like .NET's console on a broken pipe, what cannot be
// written is dropped and the process goes on (a service keeps serving, a signal still stops it cleanly).

/** Makes a failed write to stdout or stderr drop the rest of that stream's output instead of throwing. */
export function tolerateClosedOutput(streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  // Once a stream has failed it is destroyed, and Node drops later writes to it without another error.
  for (const stream of streams) stream.on('error', () => {});
}
