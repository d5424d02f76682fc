/**
 * The search for the highest open-loop arrival rate a target sustains under a latency bound (used by
 * short-turns and overload): a geometric ladder (start, start x factor, ... up to max) until a rate
 * fails, then a few bisection steps between the highest passing and the lowest failing rate. When the
 * very first rate fails and a `min` is given, the ladder goes down instead (start / factor, ... down to
 * min) until a rate passes, and the bisection steps follow from there. Pure: it
 * only proposes rates and records outcomes; the caller runs the probes. Unit-tested in
 * test/unit/bench-rate-search.test.ts.
 */

/** Options of {@link RateSearch}. Rates are arrivals per second. */
export interface RateSearchOptions {
  /** First rate probed (arrivals/s, > 0). */
  start: number;
  /** Ladder multiplier (> 1): after a pass at r the next ladder probe is r x factor. */
  factor: number;
  /** Highest rate ever probed (arrivals/s); the ladder ends with a probe at exactly `max`. */
  max: number;
  /** Bisection probes after the first failure (0: ladder only). */
  refine: number;
  /** Stop refining when the highest pass and the lowest failure are this close (arrivals/s); default 1. */
  resolution?: number;
  /**
   * Lowest rate probed on the way down when `start` itself fails (arrivals/s, > 0 and <= start); without
   * it a failing start ends the search with 0.
   */
  min?: number;
}

/** One probe's outcome. */
export interface RateProbe {
  rate: number;
  pass: boolean;
}

export class RateSearch {
  private readonly list: RateProbe[] = [];

  constructor(private readonly opts: RateSearchOptions) {
    if (!(opts.start > 0) || !(opts.factor > 1) || !(opts.max >= opts.start) || !(opts.refine >= 0) ||
      (opts.min !== undefined && !(opts.min > 0 && opts.min <= opts.start))) {
      throw new RangeError(`bad rate search options ${JSON.stringify(opts)}`);
    }
  }

  /** Records the outcome of a probe at `rate` (arrivals/s). */
  record(rate: number, pass: boolean): void {
    this.list.push({ rate, pass });
  }

  /** Every probe so far, in the order recorded. */
  get probes(): readonly RateProbe[] {
    return this.list;
  }

  /** The lowest failing rate (arrivals/s), or null when nothing failed. */
  get lowestFail(): number | null {
    let lo: number | null = null;
    for (const p of this.list) if (!p.pass && (lo === null || p.rate < lo)) lo = p.rate;
    return lo;
  }

  /**
   * The result: the highest passing rate below the lowest failing one (arrivals/s); 0 when no rate
   * passed. A pass above a failure (noise) does not count.
   */
  get best(): number {
    const fail = this.lowestFail;
    let best = 0;
    for (const p of this.list) if (p.pass && (fail === null || p.rate < fail) && p.rate > best) best = p.rate;
    return best;
  }

  /** True when the ladder reached `max` without a failure: the result is the search's cap, not the target's. */
  get capped(): boolean {
    return this.lowestFail === null && this.best >= this.opts.max;
  }

  /** Index of the probe after which a pass lay below a failure for the first time (bisection starts there). */
  private bracketedAt(): number {
    let fail = Number.POSITIVE_INFINITY;
    let pass = 0;
    for (let i = 0; i < this.list.length; i++) {
      const p = this.list[i]!;
      if (p.pass) pass = Math.max(pass, p.rate);
      else fail = Math.min(fail, p.rate);
      if (pass > 0 && pass < fail && fail !== Number.POSITIVE_INFINITY) return i;
    }
    return this.list.length - 1;
  }

  /** The next rate to probe (arrivals/s, an integer), or null when the search is over. */
  next(): number | null {
    const { start, factor, max, refine } = this.opts;
    if (this.list.length === 0) return Math.round(start);
    const lo = this.best;
    const hi = this.lowestFail;
    if (hi === null) {
      if (lo >= max) return null;
      return Math.min(Math.round(lo * factor), Math.round(max));
    }
    if (lo === 0) {
      // Nothing passed yet: the start failed. Go down the ladder when a floor is given.
      if (this.opts.min === undefined) return null;
      const down = Math.round(hi / factor);
      return down >= this.opts.min && down < hi ? down : null;
    }
    const refinesDone = this.list.length - this.bracketedAt() - 1;
    if (refinesDone >= refine || hi - lo <= (this.opts.resolution ?? 1)) return null;
    const mid = Math.round((lo + hi) / 2);
    return mid <= lo || mid >= hi ? null : mid;
  }
}
