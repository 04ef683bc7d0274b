// Reading upstream at the pace the session's receivers take what it forwards. An upstream may answer far
// faster than real time (a speech engine sending a 30 s answer within a second); what the session forwards
// then piles up for its slowest member, and past a bound (1 MiB) that member is ended as too slow: a
// member with stateful reconnect is sent only as fast as it acknowledges (about
// Hub.StatefulReconnectBufferSize a second), one on a slow link as fast as the link carries. Above
// RECEIVERS_HIGH_BYTES not yet sent the session stops reading upstream, so TCP holds the server back, and
// looks again every POLL_MS until it is under RECEIVERS_LOW_BYTES. The high mark leaves room under the
// bound for what was read before the pause (frames still being decoded: upstream-inbound.ts bounds them).
//
// It waits as long as the receivers drain, however slowly: that is the pace of the slowest member. A
// member that takes nothing (a half-open socket, a client that stopped acknowledging) must not hold its
// session, and the other members, for good: once the backlog has not shrunk for STALL_MS the session reads
// on, and the bound ends that member as before; it waits again only once the backlog has gone under the
// low mark. STALL_MS is longer than a stateful client's acknowledgement interval (about a second), the
// steps in which such a member drains. A member whose socket is gone is not counted at all (the hub's
// groupUnsentBytes): it cannot drain until it reconnects.

export const RECEIVERS_HIGH_BYTES = 256 * 1024;
export const RECEIVERS_LOW_BYTES = 64 * 1024;
export const STALL_MS = 2000;
const POLL_MS = 20;

export class ReceiverPace {
  private timer: NodeJS.Timeout | undefined;
  /** Waited STALL_MS without progress: no waiting again until the backlog is under the low mark. */
  private gaveUp = false;

  constructor(
    /** The most bytes any receiver of the session has been given and not yet sent. */
    private readonly unsent: () => number,
    /** Stops or resumes reading upstream on the receivers' account; `paused` says which. */
    private readonly changed: () => void,
    private readonly now: () => number = () => performance.now(),
    private readonly stallMs = STALL_MS,
  ) {}

  get paused(): boolean {
    return this.timer !== undefined;
  }

  /** After the session handed on what it made of a frame from upstream. */
  check(): void {
    if (this.timer !== undefined) return;
    const unsent = this.unsent();
    if (this.gaveUp) {
      if (unsent < RECEIVERS_LOW_BYTES) this.gaveUp = false;
      return;
    }
    if (unsent < RECEIVERS_HIGH_BYTES) return;
    let lowest = unsent;
    let progressAt = this.now();
    this.timer = setInterval(() => {
      const left = this.unsent();
      const drained = left <= RECEIVERS_LOW_BYTES;
      if (left < lowest) {
        lowest = left;
        progressAt = this.now();
      }
      if (!drained && this.now() - progressAt < this.stallMs) return;
      this.gaveUp = !drained;
      this.close();
      this.changed();
    }, POLL_MS);
    this.changed();
  }

  /** Stops looking (the session ended); reading is not resumed. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
