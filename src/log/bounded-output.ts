// The log's lines on their way to stderr, bounded. stderr under systemd is a socket to journald, and in a
// shell often a pipe; Node writes to both without blocking and keeps whatever the reader has not taken.
// A reader that stops (journald stalled, `voice-hub serve | ...` into a program that never reads) left
// every line after the pipe's 64 KiB in the service's memory: with the access log on, a client's
// requests grew it by 7 MB a second (98 MB to 442 MB in 40 s, and on without end). Like ASP.NET Core's
// console logger (a queue of 2,500 messages), at most MAX_UNWRITTEN_LOG_BYTES wait; lines past that
// are dropped and counted, and once the reader has taken everything, one line says how many it missed.
import type { Writable } from 'node:stream';

/** The most bytes of log lines that wait for stderr's reader: several thousand lines, a second of a flood. */
export const MAX_UNWRITTEN_LOG_BYTES = 1024 * 1024;

export class BoundedOutput {
  private dropped = 0;

  constructor(
    private readonly stream: Writable,
    /** The line (without its line end) that says `count` lines were dropped. */
    private readonly droppedLine: (count: number) => string,
    private readonly maxBytes = MAX_UNWRITTEN_LOG_BYTES,
  ) {}

  /** Writes `line` and a line end, or drops it while the reader is more than `maxBytes` behind. */
  write(line: string): void {
    // A stream that failed (closed-output.ts) drops what it is given: nothing waits, nothing to count.
    if (this.stream.writableLength >= this.maxBytes && !this.stream.destroyed) {
      // 'drain' comes once everything written has gone out, which the write that passed the bound asked for.
      if (this.dropped++ === 0) this.stream.once('drain', () => this.caughtUp());
      return;
    }
    this.stream.write(line + '\n');
  }

  private caughtUp(): void {
    const count = this.dropped;
    this.dropped = 0;
    this.stream.write(this.droppedLine(count) + '\n');
  }
}
