// Reading upstream at the pace the session's receivers take what it forwards. An upstream may answer far
// faster than real time (a speech engine sending a 30 s answer within a second); what the session forwards
// then piles up for its slowest member, and past a bound (1 MiB) that member is ended as too slow: a
// member with stateful reconnect is sent only as fast as it acknowledges (about
// Hub.StatefulReconnectBufferSize a second), one on a slow link as fast as the link carries. Above
// RECEIVERS_HIGH_BYTES not yet sent to any receiver the session stops reading upstream, so TCP holds the
// server back, and looks again every POLL_MS until each is under RECEIVERS_LOW_BYTES. The high mark leaves
// room under the bound for what was read before the pause (frames still being decoded: upstream-inbound.ts
// bounds them).
//
// It waits as long as the receivers drain, however slowly: that is the pace of the slowest member. A
// receiver that takes nothing (a half-open socket, a client that stopped acknowledging) must not hold its
// session for good, nor take the others down with it: once its backlog has not shrunk for STALL_MS it is
// no longer waited for, and the session goes on at the pace of the others while the bound ends that one.
// It is waited for again once its backlog has gone under the low mark. STALL_MS is longer than a stateful
// client's acknowledgement interval (about a second), the steps in which such a member drains. A member
// whose socket is gone is not listed at all (the hub's groupUnsent): it cannot drain until it reconnects.
import { monotonicMs } from '../monotonic-clock.js';

export const RECEIVERS_HIGH_BYTES = 256 * 1024;
export const RECEIVERS_LOW_BYTES = 64 * 1024;
export const STALL_MS = 2000;
const POLL_MS = 20;

/** Calls `visit` with each receiver of the session's events and the bytes it was given and has not sent. */
export type ReceiversUnsent = (visit: (receiver: string, unsent: number) => void) => void;

export class ReceiverPace {
  private timer: NodeJS.Timeout | undefined;
  /** Receivers given up on: not waited for until their backlog is under the low mark. */
  private readonly stalled = new Set<string>();
  /** While paused: each waited-for receiver's lowest backlog so far, and when it last went lower. */
  private readonly progress = new Map<string, { lowest: number; at: number }>();

  constructor(
    private readonly receivers: ReceiversUnsent,
    /** Stops or resumes reading upstream on the receivers' account; `paused` says which. */
    private readonly changed: () => void,
    private readonly now: () => number = () => monotonicMs(),
    private readonly stallMs = STALL_MS,
  ) {}

  get paused(): boolean {
    return this.timer !== undefined;
  }

  /** After the session handed on what it made of a frame from upstream. */
  check(): void {
    if (this.timer !== undefined) return;
    let most = 0;
    let stalledSeen = 0;
    this.receivers((receiver, unsent) => {
      if (this.stalled.has(receiver)) {
        if (unsent < RECEIVERS_LOW_BYTES) this.stalled.delete(receiver);
        else stalledSeen++;
      } else if (unsent > most) most = unsent;
    });
    // A given-up receiver that left the session is forgotten.
    if (stalledSeen < this.stalled.size) this.forgetAbsent();
    if (most < RECEIVERS_HIGH_BYTES) return;
    this.progress.clear();
    this.timer = setInterval(() => this.poll(), POLL_MS);
    this.changed();
  }

  /** Stops looking (the session ended); reading is not resumed. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private poll(): void {
    const now = this.now();
    let waiting = false;
    this.receivers((receiver, unsent) => {
      if (this.stalled.has(receiver)) {
        if (unsent < RECEIVERS_LOW_BYTES) this.stalled.delete(receiver);
        return;
      }
      if (unsent <= RECEIVERS_LOW_BYTES) {
        this.progress.delete(receiver);
        return;
      }
      const seen = this.progress.get(receiver);
      if (!seen) this.progress.set(receiver, { lowest: unsent, at: now });
      else if (unsent < seen.lowest) {
        seen.lowest = unsent;
        seen.at = now;
      } else if (now - seen.at >= this.stallMs) {
        this.stalled.add(receiver);
        this.progress.delete(receiver);
        return;
      }
      waiting = true;
    });
    if (waiting) return;
    this.close();
    this.changed();
  }

  private forgetAbsent(): void {
    const present = new Set<string>();
    this.receivers((receiver) => present.add(receiver));
    for (const receiver of this.stalled) if (!present.has(receiver)) this.stalled.delete(receiver);
  }
}
