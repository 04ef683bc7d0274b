// How many times, and how soon, a voice session's upstream link may reconnect. Failed attempts are
// counted over a sliding window, so an upstream that keeps accepting and then dropping the connection
// spends the budget instead of being retried forever; the back-off doubles with each failure in the
// window, with random jitter so that sessions dropped together do not reconnect in lockstep. The failures
// of the outage in progress count however long ago they were: its attempts are spaced by the back-off and
// the connect timeout, and once those spread them wider than the window (ConnectTimeout 30 s, or 20
// attempts at the 10 s back-off cap, against a 1 min window) the window never held `attempts` of them,
// and a dead upstream was retried for ever ("attempt 9 of 20 failed", again and again). Pure: the caller
// passes the clock and the randomness.

export interface ReconnectPolicy {
  /** Failed attempts within `windowMs` that end the session; 0: never reconnect. */
  attempts: number;
  windowMs: number;
  /** Back-off before the first attempt; doubled for each failure in the window. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A reconnected connection that drops sooner counts as a failed attempt. */
  stableAfterMs: number;
}

export interface NextAttempt {
  /** 1-based: this attempt, should it fail, is failure `attempt` of `policy.attempts` in the window. */
  attempt: number;
  delayMs: number;
}

export class ReconnectBudget {
  /** Times of the failures still inside the window, oldest first (at most `attempts` + 1 long). */
  private failures: number[] = [];
  /** Failures since the connection was last up for good (outageOver): none of them is forgotten. */
  private outage = 0;

  constructor(
    readonly policy: ReconnectPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Records a failed attempt: it could not connect, or its connection did not prove stable. */
  fail(now: number): void {
    this.failures.push(now);
    this.outage++;
    this.forgetOld(now);
  }

  /**
   * The connection that just dropped was no failed attempt (it proved stable, or it was the first one):
   * the outage that led to it is over, and its failures count only while they are inside the window.
   */
  outageOver(): void {
    this.outage = 0;
  }

  /** Whether a connection that was up for `upMs` proved stable (a shorter one is a failed attempt). */
  isStable(upMs: number): boolean {
    return upMs >= this.policy.stableAfterMs;
  }

  /** Failures that count as of `now`: those within the window, or all of the outage in progress when more. */
  failuresAt(now: number): number {
    this.forgetOld(now);
    return Math.max(this.failures.length, this.outage);
  }

  /** Whether the window alone holds `attempts` failures as of `now` (else the outage's run of them spent the budget). */
  windowHolds(now: number): boolean {
    this.forgetOld(now);
    return this.failures.length >= this.policy.attempts;
  }

  /** The next attempt's number and back-off, or undefined once `attempts` failures count (failuresAt). */
  next(now: number): NextAttempt | undefined {
    const failed = this.failuresAt(now);
    if (failed >= this.policy.attempts) return undefined;
    const { initialDelayMs, maxDelayMs } = this.policy;
    const full = Math.min(maxDelayMs, initialDelayMs * 2 ** failed);
    // "Equal jitter": between half and all of the back-off, so it still grows with every failure.
    return { attempt: failed + 1, delayMs: Math.round(full * (0.5 + 0.5 * this.random())) };
  }

  private forgetOld(now: number): void {
    const cutoff = now - this.policy.windowMs;
    let old = 0;
    while (old < this.failures.length && this.failures[old]! <= cutoff) old++;
    if (old > 0) this.failures.splice(0, old);
  }
}
