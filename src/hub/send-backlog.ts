// What the transport holds unsent for one connection, and when that makes its client too slow. uWS
// would silently drop a frame past its own limit, so a client that cannot keep up is closed instead:
// past the connection's own bound (maxBufferedBytes), or past a fair share while all connections
// together hold more than Hub.MaximumUnsentBytes (unsent-account.ts). A stateful reconnect's replay is
// the hub's burst, not the client's slowness: it may sit on top of the own bound until it has drained.
import type { UnsentAccount } from './unsent-account.js';

/** Why a connection is too slow: its own bound, or its share of the hub's. */
export type Slowness = 'own' | 'hub';

export class SendBacklog {
  /**
   * Bytes of the replay a reconnect wrote at once, which the transport may hold on top of the own bound
   * until it has drained to it (a replay may be all of Hub.StatefulReconnectBufferSize, up to 16 MiB).
   */
  private replayAllowance = 0;
  /** What the transport held when last asked, as the hub's account has it. */
  private observed = 0;

  constructor(
    private readonly account: UnsentAccount,
    /** maxBufferedBytes: what a client that reads may leave unread. */
    private readonly bound: number,
  ) {}

  /** A replay is being written (its frames' bytes follow through replayed()). */
  startReplay(): void {
    this.replayAllowance = 0;
  }

  replayed(bytes: number): void {
    this.replayAllowance += bytes;
  }

  /** While a replay's allowance is open every write is checked, not only the first frame of each. */
  get replaying(): boolean {
    return this.replayAllowance !== 0;
  }

  /** The transport holds `buffered` now (0: its socket is gone); the hub's account follows. */
  observe(buffered: number): void {
    this.observed = this.account.move(this.observed, buffered);
  }

  /** Observes `buffered` and says whether the connection must close as too slow, and why. */
  slowness(buffered: number): Slowness | undefined {
    this.observe(buffered);
    if (buffered <= this.bound) this.replayAllowance = 0;
    if (buffered > this.bound + this.replayAllowance) return 'own';
    return this.account.overShare(buffered) ? 'hub' : undefined;
  }

  /** What the log line adds for `why`. */
  reason(why: Slowness): string {
    const { account } = this;
    return why === 'hub' ? ` (over ${account.fairShare} while all connections hold ${account.total}, more than Hub.MaximumUnsentBytes: ${account.bound})` : '';
  }
}
