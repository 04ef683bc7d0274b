// A token bucket per connection: `burst` tokens at once, refilled at `perSecond`. A client that
// takes more is closed (connection.ts); a well-behaved one never notices, because the bucket holds
// what a device sends in real time plus the backlog a client flushes after a stall.

export interface MessageBudget {
  /** Sustained tokens (messages under 4 KiB) per second. */
  readonly perSecond: number;
  /** Tokens that may be spent at once (the bucket's size). */
  readonly burst: number;
}

export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(private budget: MessageBudget, now: number) {
    this.tokens = budget.burst;
    this.updatedAt = now;
  }

  get limits(): MessageBudget {
    return this.budget;
  }

  /**
   * Takes `tokens` (at most the whole burst: a message larger than the bucket can ever hold costs a
   * full one); false when fewer are left, and nothing is taken then.
   */
  take(now: number, tokens = 1): boolean {
    this.refill(now);
    const cost = Math.min(tokens, this.budget.burst);
    if (this.tokens < cost) return false;
    this.tokens -= cost;
    return true;
  }

  /** Switches to another budget, keeping what was spent: a larger bucket adds its extra room. */
  change(budget: MessageBudget, now: number): void {
    this.refill(now);
    this.tokens = Math.min(budget.burst, this.tokens + Math.max(0, budget.burst - this.budget.burst));
    this.budget = budget;
  }

  /** Holds its whole burst again: it would answer as a new bucket does. */
  isFull(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.budget.burst;
  }

  private refill(now: number): void {
    const elapsed = Math.max(0, now - this.updatedAt) / 1000;
    this.updatedAt = now;
    this.tokens = Math.min(this.budget.burst, this.tokens + elapsed * this.budget.perSecond);
  }
}
