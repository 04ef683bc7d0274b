// At the file-descriptor limit uWS cannot accept a waiting connection, and it tries again at once, turn
// after turn: the event loop spins at a full core (47,000 failed accept4 calls in 3 s, measured), the
// connections queue unanswered in the kernel, and the service's own files (the database's next write)
// fail too. A LAN host that opens connections faster than they time out can get there. So the count of
// open descriptors is looked at once a second once half the limit is in use (every 10 s below that, so an
// idle service does next to nothing): near the limit the listeners stop accepting (their
// sockets are closed: the kernel then refuses new connections at once, which a client can act on, and
// a reserve of descriptors stays free for the database), until enough have been let go again.
import { readdirSync, readFileSync } from 'node:fs';
import type { Logger } from '../log/logger.js';

/** What the guard switches: accepting new connections, on every listener. */
export interface AcceptSwitch {
  pause(): void;
  /** False while the address cannot be listened on again (the guard tries at its next check). */
  resume(): Promise<boolean>;
}

export interface DescriptorGuardOptions {
  /** The soft limit of open descriptors (RLIMIT_NOFILE). */
  readonly limit: number;
  /** Descriptors open now. */
  readonly count: () => number;
  readonly listeners: readonly AcceptSwitch[];
  readonly logger: Logger;
}

/** Between checks while at least half the limit is in use, or the listeners are paused. */
const BUSY_INTERVAL_MS = 1000;
/** Between checks below that: a flood takes more than this to fill the other half. */
const IDLE_INTERVAL_MS = 10_000;

/** Descriptors kept free below the limit: the database's write and the service's other files need a few. */
export function reserveOf(limit: number): number {
  return Math.max(32, Math.floor(limit / 64));
}

export class DescriptorGuard {
  private paused = false;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private checking = false;
  private lastOpen = 0;

  constructor(private readonly options: DescriptorGuardOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule();
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The next check. uWS holds the process open through its listening sockets: while they are closed,
   * this timer is what must, or the process would end as at a shutdown.
   */
  private schedule(): void {
    if (!this.running) return;
    const busy = this.paused || this.lastOpen >= this.options.limit / 2;
    this.timer = setTimeout(() => {
      this.check()
        .catch((e: unknown) => {
          this.options.logger.warn(`cannot count the open file descriptors (${e instanceof Error ? e.message : String(e)}): their limit is no longer watched`);
          this.stop();
        })
        .finally(() => this.schedule());
    }, busy ? BUSY_INTERVAL_MS : IDLE_INTERVAL_MS);
    if (!this.paused) this.timer.unref();
  }

  get accepting(): boolean {
    return !this.paused;
  }

  /** Pauses the listeners near the limit, resumes them once twice the reserve is free. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const { limit, logger, listeners } = this.options;
      const reserve = reserveOf(limit);
      const open = this.options.count();
      this.lastOpen = open;
      if (!this.paused && open >= limit - reserve) {
        this.paused = true;
        for (const listener of listeners) listener.pause();
        logger.warn(`${open} of ${limit} file descriptors open: not accepting new connections until no more than ${limit - 2 * reserve} are (the kernel refuses them meanwhile)`);
      } else if (this.paused && open <= limit - 2 * reserve) {
        const resumed = await Promise.all(listeners.map((listener) => listener.resume()));
        if (resumed.every(Boolean)) {
          this.paused = false;
          logger.info(`${open} of ${limit} file descriptors open: accepting new connections again`);
        }
      }
    } finally {
      this.checking = false;
    }
  }
}

/** The soft limit on open descriptors from /proc/self/limits, or undefined where it cannot be read or is unlimited. */
export function descriptorLimit(limits = (): string => readFileSync('/proc/self/limits', 'utf8')): number | undefined {
  let text: string;
  try {
    text = limits();
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\S+)/m.exec(text)?.[1];
  const n = Number(soft);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * Descriptors open now. Reading the list takes a descriptor itself: when none is left (EMFILE, ENFILE)
 * the count is the limit.
 */
export function openDescriptors(limit: number): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EMFILE' || code === 'ENFILE') return limit;
    throw e;
  }
}
