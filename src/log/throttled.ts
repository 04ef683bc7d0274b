// Lines a hostile peer could make as fast as it likes (connections the hub closes for misbehaving, MQTT
// messages skipped for their size): one line each would let it flood the journal. The first `lines` of
// every window are logged as they happen, the rest counted and summed up in one line at the end of the
// window.
import type { Logger } from './logger.js';

export class ThrottledLog {
  private windowStart = -Infinity;
  private logged = 0;
  private suppressed = 0;
  private lastSuppressed = '';
  private summaryTimer: NodeJS.Timeout | undefined;
  private errorLeftOut = false;

  constructor(
    private readonly logger: Logger,
    private readonly lines: number,
    private readonly windowMs: number,
    private readonly now: () => number,
    /** The line for `count` lines left out in the last `seconds`, the last of them `last`. */
    private readonly summary: (count: number, seconds: number, last: string) => string,
  ) {}

  info(text: string): void {
    if (this.take(text)) this.logger.info(text);
  }

  warn(text: string): void {
    if (this.take(text)) this.logger.warn(text);
  }

  /** Its sum is an error line too, when an error is among what it sums up (the journal's priority). */
  error(text: string): void {
    if (this.take(text)) this.logger.error(text);
    else this.errorLeftOut = true;
  }

  private take(text: string): boolean {
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
    this.lastSuppressed = text;
    // Unref'd: a pending summary must not keep the process alive.
    this.summaryTimer ??= setTimeout(() => this.sum(), Math.max(0, this.windowStart + this.windowMs - now)).unref();
    return false;
  }

  /** Writes the sum of the window so far now: at shutdown, or what it counted would be lost with the timer. */
  flush(): void {
    if (this.suppressed > 0) this.sum();
  }

  private sum(): void {
    clearTimeout(this.summaryTimer);
    this.summaryTimer = undefined;
    const line = this.summary(this.suppressed, Math.round(this.windowMs / 1000), this.lastSuppressed);
    if (this.errorLeftOut) this.logger.error(line);
    else this.logger.warn(line);
    this.errorLeftOut = false;
    this.suppressed = 0;
    this.lastSuppressed = '';
  }
}
