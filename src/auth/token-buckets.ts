/**
 * Token buckets in memory, one per key (an account, a client address): `capacity` tokens, refilled
 * evenly over `windowMs`, so at most `capacity` attempts fit in a burst and `capacity` per window follow.
 * The number of keys is bounded: past `maxKeys` the least recently used key is forgotten (its bucket
 * starts full again), so memory stays bounded under a flood of new keys.
 */
export interface TokenBucketOptions {
  /** Tokens in a full bucket (the burst), at least 1. */
  capacity: number;
  /** Time to refill an empty bucket, ms. */
  windowMs: number;
  /** Keys remembered at most (default 100,000). */
  maxKeys?: number;
  /** Current time, ms (default Date.now). */
  now?: () => number;
  /**
   * How many processes share the budget (default 1): this process keeps `capacity / divisor()` of it (at
   * least 1 token), refilled in the same window. Several Parley processes serving one port or one store
   * each count only what reaches them, so together they allow about `capacity` (docs/scaling.md).
   */
  divisor?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly maxKeys: number;
  private readonly now: () => number;
  private readonly divisor: () => number;

  constructor(private readonly opts: TokenBucketOptions) {
    this.maxKeys = opts.maxKeys ?? 100_000;
    this.now = opts.now ?? Date.now;
    this.divisor = opts.divisor ?? (() => 1);
  }

  /** This process's share of the capacity now (at least 1 token). */
  private get capacity(): number {
    return Math.max(1, this.opts.capacity / Math.max(1, this.divisor()));
  }

  /**
   * Takes one token from `key`'s bucket: 0 when one was taken, otherwise the time until one is back, ms
   * (nothing is taken then).
   */
  take(key: string): number {
    const capacity = this.capacity;
    const b = this.current(key, capacity);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - b.tokens) / (capacity / this.opts.windowMs));
  }

  /** Gives one token back to `key`'s bucket (never above capacity). */
  refund(key: string): void {
    const capacity = this.capacity;
    const b = this.current(key, capacity);
    b.tokens = Math.min(capacity, b.tokens + 1);
  }

  /** Keys remembered now. */
  get size(): number {
    return this.buckets.size;
  }

  /** The bucket of `key`, refilled up to now, moved to the most-recently-used end. */
  private current(key: string, capacity: number): Bucket {
    const now = this.now();
    let b = this.buckets.get(key);
    if (b === undefined) {
      b = { tokens: capacity, at: now };
    } else {
      this.buckets.delete(key);
      b.tokens = Math.min(capacity, b.tokens + (now - b.at) * (capacity / this.opts.windowMs));
      b.at = now;
    }
    this.buckets.set(key, b);
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    return b;
  }
}
