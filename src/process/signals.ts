// The signals the service answers. A shutdown signal drains and flushes; a second one stops waiting
// for requests and sessions but still writes what was acknowledged; a third exits at once. The other
// signals whose default is to end the process are ignored with a line in the log: SIGUSR2 killed the
// service mid-write, losing acknowledged telemetry and leaving its lock behind, and SIGUSR1 opened
// Node's debugger on 127.0.0.1:9229 to every local user (whoever attached could read the signing key
// out of the process). A listener of our own keeps Node from opening it.
import type { Logger } from '../log/logger.js';

/**
 * The signals that stop the service cleanly: drain, flush, exit 0. SIGHUP among them: a run in the
 * foreground gets it when its SSH session drops, and its default, dying at once, lost the telemetry not
 * yet written. SIGQUIT keeps its default (exit with a core dump): Ctrl-\ is what one presses to examine
 * a service that hangs.
 */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * Signals whose default action ends the process and that nothing should be able to end it with.
 * Not SIGPROF (V8's sampling profiler uses it), nor those that report a fault or ask for a core dump
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP, SIGQUIT), nor SIGXCPU/SIGXFSZ (a limit the
 * operator set: its default is the point).
 */
export const IGNORED_SIGNALS = ['SIGUSR1', 'SIGUSR2', 'SIGALRM', 'SIGVTALRM', 'SIGIO', 'SIGPWR', 'SIGSTKFLT'] as const;

export type ShutdownSignal = (typeof SHUTDOWN_SIGNALS)[number];

/**
 * `handle(signal, count)` is called for each shutdown signal with how many have come so far. One that
 * arrives before `handle` is set (while the data directory is claimed) is handed to it when it is.
 */
export class ServiceSignals {
  private handler: ((signal: ShutdownSignal, count: number) => void) | undefined;
  private readonly early: ShutdownSignal[] = [];
  private arrivals = 0;

  constructor(private readonly logger: Logger) {
    for (const signal of SHUTDOWN_SIGNALS) process.on(signal, () => this.arrived(signal));
    for (const signal of IGNORED_SIGNALS) {
      process.on(signal, () => this.logger.warn(`${signal} received: ignored (SIGTERM stops the service)`));
    }
  }

  /** How many shutdown signals have come so far. */
  get count(): number {
    return this.arrivals;
  }

  set handle(handler: (signal: ShutdownSignal, count: number) => void) {
    this.handler = handler;
    this.early.splice(0).forEach((signal, i) => handler(signal, i + 1));
  }

  private arrived(signal: ShutdownSignal): void {
    this.arrivals++;
    if (this.handler) this.handler(signal, this.arrivals);
    else this.early.push(signal);
  }
}
