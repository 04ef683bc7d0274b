// The bytes uWS holds unsent for all hub connections together. Each connection may leave up to
// maxBufferedBytes (1 MiB) unread before it is closed as too slow, but one address may hold 512
// connections and the hub 10,000: 500 connections from one device token that never read held 170 MB
// of a 1 GB Pi, each under its own bound. Each connection tells the account what it last saw the
// transport hold (one subtraction and one addition, no loop over connections); while the sum is over
// Hub.MaximumUnsentBytes, a connection holding more than a fair share is closed as too slow at its next
// send (or heartbeat), the others go on. The fair share is ASP.NET Core's pause threshold (64 KiB of
// unsent output a connection may have before its writes wait), which voice fan-out to a large session
// on bad Wi-Fi stays inside (300 members x 64 KiB = 19 MiB, under the default 32 MiB).

/** Unsent bytes a connection may hold whatever the total (ASP.NET Core's PauseWriterThreshold). */
export const FAIR_SHARE_BYTES = 64 * 1024;
export const DEFAULT_MAX_UNSENT_BYTES = 32 * 1024 * 1024;

export class UnsentAccount {
  private sum = 0;

  constructor(
    /** Hub.MaximumUnsentBytes. */
    readonly bound: number,
    readonly fairShare = FAIR_SHARE_BYTES,
  ) {}

  /** Bytes held for all connections, as last observed. */
  get total(): number {
    return this.sum;
  }

  /** A connection that last saw `previous` now sees `current` (0: its socket is gone); returns `current` for it to keep. */
  move(previous: number, current: number): number {
    this.sum += current - previous;
    return current;
  }

  /** A connection holding `own` must go: the hub is over its bound and this one holds more than its share. */
  overShare(own: number): boolean {
    return own > this.fairShare && this.sum > this.bound;
  }
}
