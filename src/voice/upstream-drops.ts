// Upstream frames a session had to drop (decode queue full, a format change over the rebuild budget, a
// corrupt packet, a decoder thread that failed while it held the packet), counted always and reported once per burst: the first drop of a burst is told to the
// session's listeners (devices see it as one error) and logged as a warning; the drops after it are only
// counted until a quiet spell ends the burst, which logs the burst's totals. A misbehaving upstream can
// thus cost the devices one event per burst, not one per packet, and the journal a few lines, not thousands.
import type { Logger } from '../log/logger.js';
import { monotonicMs } from '../monotonic-clock.js';

export type DropReason = 'queue' | 'format' | 'corrupt' | 'thread';

export type DropCounts = Record<DropReason, number>;

/** A burst ends after this long without a drop; the next drop starts a new one (and a new report). */
export const BURST_QUIET_MS = 1000;
/** A burst that goes on is summarised in the log this often, so the counter stays visible. */
const PROGRESS_LOG_MS = 10_000;

export interface DropReporterOptions {
  sessionId: string;
  /** Tells the session's listeners about the first drop of a burst. */
  report: (reason: DropReason, message: string) => void;
  /**
   * Where the burst lines go: shared by every session (a ThrottledLog), since one corrupt packet a second
   * on each session of one bad server makes two lines a second per session.
   */
  logger: Pick<Logger, 'warn'>;
}

const none = (): DropCounts => ({ queue: 0, format: 0, corrupt: 0, thread: 0 });

export class DropReporter {
  /** Every drop since the session started, by reason. */
  readonly total: DropCounts = none();
  private burst: { counts: DropCounts; startedAt: number; loggedAt: number } | undefined;
  private quietTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: DropReporterOptions) {}

  get totalDropped(): number {
    return sum(this.total);
  }

  /** Counts one dropped frame; `message` is what the listeners are told if it starts a burst. */
  drop(reason: DropReason, message: string): void {
    this.total[reason]++;
    const now = monotonicMs();
    if (!this.burst) {
      this.burst = { counts: none(), startedAt: now, loggedAt: now };
      this.burst.counts[reason]++;
      this.quietTimer = setTimeout(() => this.endBurst(), BURST_QUIET_MS);
      this.quietTimer.unref();
      this.options.logger.warn(
        `session ${this.options.sessionId}: ${message}; further drops are counted until ${BURST_QUIET_MS} ms pass without one ` +
          `(${this.totalDropped} upstream frames dropped in this session)`,
      );
      this.options.report(reason, message);
      return;
    }
    this.burst.counts[reason]++;
    this.quietTimer?.refresh();
    if (now - this.burst.loggedAt >= PROGRESS_LOG_MS) {
      this.burst.loggedAt = now;
      this.options.logger.warn(`session ${this.options.sessionId}: still dropping upstream frames: ${this.describe('so far')}`);
    }
  }

  /** Ends a burst in progress (session end): its totals are logged. Idempotent. */
  close(): void {
    this.endBurst();
  }

  private endBurst(): void {
    clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
    if (!this.burst) return;
    this.options.logger.warn(`session ${this.options.sessionId}: upstream drop burst over: ${this.describe('in it')}`);
    this.burst = undefined;
  }

  private describe(when: string): string {
    const burst = this.burst!;
    const parts = (Object.entries(burst.counts) as [DropReason, number][])
      .filter(([, n]) => n > 0)
      .map(([reason, n]) => `${n} ${LABELS[reason]}`);
    const ms = Math.round(monotonicMs() - burst.startedAt);
    return `${sum(burst.counts)} frames dropped ${when} over ${ms} ms (${parts.join(', ')}); ${this.totalDropped} in this session`;
  }
}

const LABELS: Record<DropReason, string> = {
  queue: 'with the decode queue full',
  format: 'over the decoder rebuild budget',
  corrupt: 'not decodable',
  thread: 'lost with a failed decoder thread',
};

function sum(counts: DropCounts): number {
  return counts.queue + counts.format + counts.corrupt + counts.thread;
}
