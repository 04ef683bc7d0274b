// Message budgets per client address, for connections that have not authenticated. Each connection has
// its own bucket (rate-limit.ts), but every new connection starts with a full one: a client that kept
// opening connections, each spending its burst on the costliest messages to decode, held the event loop
// (8 such loops took 4 s of CPU in 10 s and /health answered in 0.8 s). The address's bucket is shared by
// all its anonymous connections and outlives them, so reconnecting does not refill it. Addresses are
// keyed as address-slots.ts counts connections (IPv6 per /64).
import { TokenBucket, type MessageBudget } from './rate-limit.js';

/**
 * The buckets of addresses that spent some of their budget. A bucket that has refilled carries nothing
 * (a fresh one is the same), so it is dropped: an idle address costs nothing. At most `maxEntries` are
 * kept; past that, full ones go first, then the least recently used.
 */
export class AddressBudgets {
  // Insertion order is use order: the first entry is the least recently used.
  private readonly buckets = new Map<string, TokenBucket>();

  /** `budget` undefined: no budget per address (every take succeeds, nothing is kept). */
  constructor(
    readonly budget: MessageBudget | undefined,
    private readonly maxEntries: number,
  ) {}

  /** Takes `tokens` from `key`'s bucket; false when it holds fewer (nothing is taken then). */
  take(key: string, now: number, tokens: number): boolean {
    if (this.budget === undefined) return true;
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      if (this.buckets.size >= this.maxEntries) this.makeRoom(now);
      bucket = new TokenBucket(this.budget, now);
    } else {
      this.buckets.delete(key);
    }
    this.buckets.set(key, bucket);
    return bucket.take(now, tokens);
  }

  /** Drops the buckets that have refilled; returns how many are left. */
  sweep(now: number): number {
    for (const [key, bucket] of this.buckets) if (bucket.isFull(now)) this.buckets.delete(key);
    return this.buckets.size;
  }

  get size(): number {
    return this.buckets.size;
  }

  private makeRoom(now: number): void {
    if (this.sweep(now) < this.maxEntries) return;
    // Every address kept is spending: the one unused the longest gets a fresh bucket when it comes back.
    const oldest = this.buckets.keys().next();
    if (!oldest.done) this.buckets.delete(oldest.value);
  }
}
