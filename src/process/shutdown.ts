// How a stopping service ends: a first signal drains (requests, sessions, hub, MQTT) and flushes within
// a deadline; a second, or the deadline passing, stops waiting for the drain but still writes the
// database before the process goes. What was answered 200 (telemetry is written every FlushInterval, not
// per request) is on disk either way: exiting at the deadline without that write lost it.
import { errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';

/** After a shutdown signal the service has this long to drain and flush before it stops waiting. */
export const SHUTDOWN_DEADLINE_MS = 10_000;
/** Once it stops waiting (a second signal, or the deadline), how long writing the database may take. */
export const FLUSH_DEADLINE_MS = 3_000;

export interface ShutdownDeps {
  logger: Logger;
  /** The whole drain: resolves once everything is closed and the database written. */
  stop: () => Promise<void>;
  /** Writes the database and closes it; later writes are refused (503 `storage is closed`). */
  closeStore: () => Promise<void>;
  exit: (code: number) => void;
  deadlineMs?: number;
  flushMs?: number;
}

export class Shutdown {
  private flushing = false;

  constructor(private readonly deps: ShutdownDeps) {}

  /** The first signal: drain and flush, exit 0; past the deadline, write the database and exit 1. */
  begin(signal: string): void {
    const { logger, exit } = this.deps;
    const deadlineMs = this.deps.deadlineMs ?? SHUTDOWN_DEADLINE_MS;
    logger.info(`${signal} received: draining and flushing`);
    setTimeout(() => this.flushAndExit(`shutdown took longer than ${deadlineMs} ms: not waiting any more; writing the database, then exiting`), deadlineMs).unref();
    this.deps.stop().then(
      () => exit(0),
      (e: unknown) => {
        logger.error(`shutdown failed: ${errorText(e)}`);
        exit(1);
      },
    );
  }

  /** A second signal during the drain (Ctrl-C twice, or SIGHUP then SIGTERM). */
  again(signal: string): void {
    this.flushAndExit(`${signal} again: not waiting for requests and sessions; writing the database, then exiting`);
  }

  private flushAndExit(why: string): void {
    if (this.flushing) return;
    this.flushing = true;
    const { logger, exit } = this.deps;
    logger.warn(why);
    const deadline = setTimeout(() => exit(1), this.deps.flushMs ?? FLUSH_DEADLINE_MS);
    this.deps.closeStore().then(
      () => exit(1),
      (e: unknown) => {
        clearTimeout(deadline);
        logger.error(`writing the database failed: ${errorText(e)}`);
        exit(1);
      },
    );
  }
}
