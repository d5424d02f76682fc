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
}

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(private readonly opts: TokenBucketOptions) {
    this.perMs = opts.capacity / opts.windowMs;
    this.maxKeys = opts.maxKeys ?? 100_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Takes one token from `key`'s bucket: 0 when one was taken, otherwise the time until one is back, ms
   * (nothing is taken then).
   */
  take(key: string): number {
    const b = this.current(key);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - b.tokens) / this.perMs);
  }

  /** Gives one token back to `key`'s bucket (never above capacity). */
  refund(key: string): void {
    const b = this.current(key);
    b.tokens = Math.min(this.opts.capacity, b.tokens + 1);
  }

  /** Keys remembered now. */
  get size(): number {
    return this.buckets.size;
  }

  /** The bucket of `key`, refilled up to now, moved to the most-recently-used end. */
  private current(key: string): Bucket {
    const now = this.now();
    let b = this.buckets.get(key);
    if (b === undefined) {
      b = { tokens: this.opts.capacity, at: now };
    } else {
      this.buckets.delete(key);
      b.tokens = Math.min(this.opts.capacity, b.tokens + (now - b.at) * this.perMs);
      b.at = now;
    }
    this.buckets.set(key, b);
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    return b;
  }
}
