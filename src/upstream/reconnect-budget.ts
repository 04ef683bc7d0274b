// How many times, and how soon, a voice session's upstream link may reconnect. Failed attempts are
// counted over a sliding window, so an upstream that keeps accepting and then dropping the connection
// spends the budget instead of being retried forever; the back-off doubles with each failure in the
// window, with random jitter so that sessions dropped together do not reconnect in lockstep. Pure:
// the caller passes the clock and the randomness.

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

  constructor(
    readonly policy: ReconnectPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Records a failed attempt: it could not connect, or its connection did not prove stable. */
  fail(now: number): void {
    this.failures.push(now);
    this.forgetOld(now);
  }

  /** Whether a connection that was up for `upMs` proved stable (a shorter one is a failed attempt). */
  isStable(upMs: number): boolean {
    return upMs >= this.policy.stableAfterMs;
  }

  /** Failures within the window as of `now`. */
  failuresAt(now: number): number {
    this.forgetOld(now);
    return this.failures.length;
  }

  /** The next attempt's number and back-off, or undefined once the window holds `attempts` failures. */
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
