/**
 * Percentile math for the benchmarks: one definition (nearest-rank), used by every benchmark and
 * unit-tested in test/unit/bench-stats.test.ts.
 */

/**
 * The nearest-rank percentile of `sorted` (ascending): the smallest value such that at least `p`
 * percent of the values are <= it, i.e. `sorted[ceil(p/100 * n) - 1]`; p=0 gives the minimum.
 * Returns NaN for an empty array. Throws RangeError when p is outside [0, 100].
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be in [0, 100], got ${p}`);
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * n));
  return sorted[Math.min(rank, n) - 1]!;
}

/** The distribution summary printed and stored for every latency-like series. */
export interface Summary {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** The percentiles every summary carries. */
export const SUMMARY_PERCENTILES = [50, 90, 99] as const;

/** Summarizes `values` (any order; not modified). Every field is NaN when there are no values. */
export function summarize(values: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  const n = sorted.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i]!;
  return {
    count: n,
    min: n > 0 ? sorted[0]! : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: n > 0 ? sorted[n - 1]! : Number.NaN,
    mean: n > 0 ? sum / n : Number.NaN,
  };
}

/** A growable Float64Array of samples (cheap to append millions of gaps), capped at `limit` samples. */
export class Samples {
  private data: Float64Array;
  private n = 0;
  /** Samples refused because the cap was reached. */
  dropped = 0;

  constructor(initial = 1024, private readonly limit = 20_000_000) {
    this.data = new Float64Array(Math.max(16, initial));
  }

  push(v: number): void {
    if (this.n === this.data.length) {
      if (this.n >= this.limit) {
        this.dropped++;
        return;
      }
      const next = new Float64Array(Math.min(this.limit, this.data.length * 2));
      next.set(this.data);
      this.data = next;
    }
    this.data[this.n++] = v;
  }

  get length(): number {
    return this.n;
  }

  values(): Float64Array {
    return this.data.subarray(0, this.n);
  }

  summary(): Summary {
    return summarize(this.values());
  }
}

/** Percentile-by-percentile difference a - b (e.g. Parley minus direct upstream: the added overhead). */
export function diffSummary(a: Summary, b: Summary): Summary {
  return {
    count: Math.min(a.count, b.count),
    min: a.min - b.min,
    p50: a.p50 - b.p50,
    p90: a.p90 - b.p90,
    p99: a.p99 - b.p99,
    max: a.max - b.max,
    mean: a.mean - b.mean,
  };
}
