// Lines about connections the hub closes for misbehaving (budgets, protocol errors): a hostile client
// opens connections as fast as it can, and one line each would let it flood the journal. The first
// `lines` of every window are logged as they happen, the rest counted and summed up in one line at
// the end of the window.
import type { Logger } from '../log/logger.js';

export class ThrottledLog {
  private windowStart = -Infinity;
  private logged = 0;
  private suppressed = 0;
  private summary: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly lines: number,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  info(text: string): void {
    if (this.take()) this.logger.info(text);
  }

  warn(text: string): void {
    if (this.take()) this.logger.warn(text);
  }

  private take(): boolean {
    const now = this.now();
    if (now - this.windowStart >= this.windowMs) {
      this.windowStart = now;
      this.logged = 0;
    }
    if (this.logged < this.lines) {
      this.logged++;
      return true;
    }
    this.suppressed++;
    // Unref'd: a pending summary must not keep the process alive.
    this.summary ??= setTimeout(() => this.sum(), Math.max(0, this.windowStart + this.windowMs - now)).unref();
    return false;
  }

  private sum(): void {
    this.summary = undefined;
    this.logger.warn(`${this.suppressed} more connections closed for misbehaving in the last ${Math.round(this.windowMs / 1000)} s (not logged one by one; the hub counters have them all)`);
    this.suppressed = 0;
  }
}
