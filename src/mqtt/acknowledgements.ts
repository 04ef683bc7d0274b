// The QoS 1 messages the connected broker has not acknowledged yet, and whether the oldest has waited too
// long. A connection that answers pings and acknowledges nothing (a stuck or overloaded broker, a proxy
// that drops packets) delivers nothing while it looks connected: the publisher's health says so.
import { monotonicMs } from '../monotonic-clock.js';

/**
 * A broker acknowledges a QoS 1 message in milliseconds, and with the publisher's in-flight window full
 * the oldest waits only for those ahead of it. 30 s is the keepalive interval: as long as MQTT lets a
 * connection go silent before a ping.
 */
export const UNACKNOWLEDGED_LIMIT_MS = 30_000;

export interface AcknowledgementEvents {
  /** The oldest unacknowledged message has just waited longer than the limit. */
  stalled(unacknowledged: number): void;
  /** After `stalled`: acknowledgements came, the oldest left is within the limit. */
  resumed(): void;
  /** After `stalled`: the connection was given up (`reset`), its messages mqtt.js' to resend. */
  abandoned(): void;
}

export class AcknowledgementWatch {
  /** Message number -> when it was sent (monotonicMs()), oldest first. */
  private readonly sentAt = new Map<number, number>();
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  private isStalled = false;
  private closed = false;

  constructor(readonly limitMs: number, private readonly events: AcknowledgementEvents) {}

  /** A message went out on the current connection; the function returned is its acknowledgement. */
  sent(): () => void {
    const number = this.next++;
    this.sentAt.set(number, monotonicMs());
    this.watch();
    return () => {
      if (this.sentAt.delete(number)) this.acknowledged();
    };
  }

  /** While the oldest message has waited longer than the limit: how many wait. */
  stall(): { unacknowledged: number; limitMs: number } | undefined {
    const waited = this.oldestWait();
    return waited !== undefined && waited > this.limitMs ? { unacknowledged: this.sentAt.size, limitMs: this.limitMs } : undefined;
  }

  /** A connection ended or began: what the old one did not acknowledge is not waited for here. */
  reset(): void {
    this.sentAt.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.isStalled) return;
    this.isStalled = false;
    this.events.abandoned();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private oldestWait(): number | undefined {
    const oldest = this.sentAt.values().next();
    return oldest.done ? undefined : monotonicMs() - oldest.value;
  }

  /** Arms the timer that notices the oldest message reaching the limit. */
  private watch(): void {
    if (this.timer !== undefined || this.isStalled || this.closed) return;
    const waited = this.oldestWait();
    if (waited === undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const now = this.oldestWait();
      if (now === undefined || this.closed) return;
      // The one it was armed for was acknowledged: a younger one is the oldest now.
      if (now <= this.limitMs) return this.watch();
      this.isStalled = true;
      this.events.stalled(this.sentAt.size);
    }, Math.max(0, this.limitMs - waited) + 1);
    this.timer.unref();
  }

  private acknowledged(): void {
    if (this.isStalled) {
      const waited = this.oldestWait();
      if (waited !== undefined && waited > this.limitMs) return;
      this.isStalled = false;
      this.events.resumed();
    }
    this.watch();
  }
}
