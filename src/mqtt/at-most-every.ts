// Work that a request from outside sets off, done at most once per interval: the first request at once,
// any within the interval after it once at its end, together. What it bounds is what a flood of
// requests can cost, not whether a request is answered.
import { monotonicMs } from '../monotonic-clock.js';

export class AtMostEvery {
  private last = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly intervalMs: number, private readonly work: () => void) {}

  /**
   * Runs the work now, or once at the end of the current interval. Returns the wait in ms (0: now), or
   * undefined when a run was already waiting, which this request joins: a flood is told of once.
   */
  request(): number | undefined {
    if (this.closed) return 0;
    const wait = this.last + this.intervalMs - monotonicMs();
    if (this.timer !== undefined) return undefined;
    if (wait <= 0) {
      this.run();
      return 0;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.run();
    }, wait);
    this.timer.unref();
    return wait;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private run(): void {
    if (this.closed) return;
    this.last = monotonicMs();
    this.work();
  }
}
