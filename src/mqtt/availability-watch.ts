// `<prefix>/status` is the availability topic of every entity the hub announces, and any client of the
// broker can publish to it: a retained `offline` someone else left there (another hub sharing the prefix
// shutting down, a forged message, a tool clearing retained topics) made Home Assistant show the hub and all
// its devices unavailable for as long as the connection lasted, Home Assistant's restarts included. The
// hub watches the topic and says `online` again, at most once an interval however many such messages come.
// Not at once: a broker shutting down publishes the hub's own last will (`offline`) to the hub's own
// subscription as it closes the connection, and the next connection says `online` anyway. So the answer
// comes at the end of the interval, and only if the connection that heard the message is still up.
import type { Logger } from '../log/logger.js';
import { ThrottledLog } from '../log/throttled.js';
import { monotonicMs } from '../monotonic-clock.js';

export const AVAILABILITY_RESEND_INTERVAL_MS = 1000;

/** What Home Assistant reads as available, from the hub here and from itself on its own status topic. */
export const ONLINE = Buffer.from('online');

export interface AvailabilityWatchOptions {
  /** The topic as a log line shows it. */
  shownTopic: string;
  intervalMs: number;
  /** Whether the connection that heard the message is still up, and the hub not closing. */
  mayAnswer: () => boolean;
  /** Publishes `online` (retained) again. */
  answer: () => void;
}

export class AvailabilityWatch {
  private timer: NodeJS.Timeout | undefined;
  /** What the last message other than `online` was, for the log line of the answer. */
  private heard = '';
  /** Other clients can overwrite the topic as fast as the network carries. */
  private readonly log: ThrottledLog;

  constructor(logger: Logger, private readonly options: AvailabilityWatchOptions) {
    this.log = new ThrottledLog(logger, 5, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more times in the last ${seconds} s another MQTT client said the hub was not online; the last: ${last}`);
  }

  /** A message on the topic: anything but `online` is answered. */
  message(payload: Buffer): void {
    if (!payload.equals(ONLINE)) this.overwritten(`${payload.length} bytes`);
  }

  /** A message on the topic skipped unread for its size (packet-limit.ts): no `online` either. */
  skipped(bytes: number): void {
    this.overwritten(`${bytes} bytes, skipped unread`);
  }

  /** The connection ended: the next one says `online` as it opens. */
  disconnected(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  close(): void {
    this.disconnected();
    this.log.flush();
  }

  private overwritten(what: string): void {
    this.heard = what;
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.options.mayAnswer()) return;
      this.log.warn(
        `another MQTT client published something other than 'online' (${this.heard}) on ${this.options.shownTopic}, ` +
          `the availability of this hub's Home Assistant entities; publishing 'online' again`);
      this.options.answer();
    }, this.options.intervalMs);
    this.timer.unref();
  }
}
