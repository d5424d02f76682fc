import { describe, expect, it } from 'vitest';
import { RateSearch } from '../../bench/lib/rate-search.js';

/** Drives a search against a target that passes every rate <= capacity; returns the rates probed. */
function drive(s: RateSearch, capacity: number): number[] {
  const rates: number[] = [];
  for (let r = s.next(); r !== null && rates.length < 100; r = s.next()) {
    rates.push(r);
    s.record(r, r <= capacity);
  }
  return rates;
}

describe('bench RateSearch', () => {
  it('doubles from the start until a failure, then bisects twice', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 6400, refine: 2 });
    expect(drive(s, 700)).toEqual([50, 100, 200, 400, 800, 600, 700]);
    expect(s.best).toBe(700);
    expect(s.lowestFail).toBe(800);
    expect(s.capped).toBe(false);
  });

  it('bisects downwards when the midpoint fails', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 6400, refine: 2 });
    expect(drive(s, 450)).toEqual([50, 100, 200, 400, 800, 600, 500]);
    expect(s.best).toBe(400);
  });

  it('stops at the ladder with refine 0', () => {
    const s = new RateSearch({ start: 100, factor: 2, max: 6400, refine: 0 });
    expect(drive(s, 350)).toEqual([100, 200, 400]);
    expect(s.best).toBe(200);
  });

  it('ends with a probe at exactly max and reports the cap', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 300, refine: 2 });
    expect(drive(s, 10_000)).toEqual([50, 100, 200, 300]);
    expect(s.best).toBe(300);
    expect(s.capped).toBe(true);
  });

  it('gives 0 and stops when the first rate fails (no downward search)', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 6400, refine: 2 });
    expect(drive(s, 30)).toEqual([50]);
    expect(s.best).toBe(0);
    expect(s.capped).toBe(false);
  });

  it('goes down the ladder from a failing start when a min is given, then bisects', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 6400, refine: 2, min: 6 });
    // 50 fails, 25 fails, 13 passes: bisect between 13 and 25 twice (19 passes, 22 fails).
    expect(drive(s, 20)).toEqual([50, 25, 13, 19, 22]);
    expect(s.best).toBe(19);
    expect(s.lowestFail).toBe(22);
  });

  it('gives 0 when even the min fails, and never probes below it', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 6400, refine: 2, min: 10 });
    expect(drive(s, 3)).toEqual([50, 25, 13]);
    expect(s.best).toBe(0);
  });

  it('probes a downward rate equal to the min, and stops when halving no longer goes lower', () => {
    const s = new RateSearch({ start: 48, factor: 2, max: 6400, refine: 0, min: 12 });
    expect(drive(s, 12)).toEqual([48, 24, 12]);
    expect(s.best).toBe(12);
    // A start of 1 that fails: 1 / 2 rounds back to 1, which must not be probed again.
    const one = new RateSearch({ start: 1, factor: 2, max: 10, refine: 2, min: 1 });
    expect(drive(one, 0)).toEqual([1]);
  });

  it('counts bisection steps from the first pass below a failure, not from a noisy pass above it', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 6400, refine: 1, min: 12 });
    s.record(50, false);
    s.record(100, true); // above the failure: noise, not a bracket
    s.record(25, true);
    expect(s.next()).toBe(38);
  });

  it('reports the cap only when nothing failed and the best rate reached max', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 300, refine: 0 });
    s.record(50, true);
    expect(s.capped).toBe(false);
    s.record(300, true);
    s.record(400, false);
    expect(s.capped).toBe(false);
  });

  it('stops refining once pass and failure are within the resolution', () => {
    const s = new RateSearch({ start: 2, factor: 2, max: 64, refine: 5, resolution: 1 });
    expect(drive(s, 5)).toEqual([2, 4, 8, 6, 5]);
    expect(s.best).toBe(5);
  });

  it('ignores a pass above a failure (noise) when reporting the best rate', () => {
    const s = new RateSearch({ start: 50, factor: 2, max: 6400, refine: 0 });
    s.record(50, true);
    s.record(100, false);
    s.record(200, true);
    expect(s.best).toBe(50);
    expect(s.lowestFail).toBe(100);
    expect(s.next()).toBeNull();
  });

  it('rejects options that cannot terminate', () => {
    expect(() => new RateSearch({ start: 0, factor: 2, max: 10, refine: 0 })).toThrow(RangeError);
    expect(() => new RateSearch({ start: 10, factor: 1, max: 10, refine: 0 })).toThrow(RangeError);
    expect(() => new RateSearch({ start: 10, factor: 2, max: 5, refine: 0 })).toThrow(RangeError);
    expect(() => new RateSearch({ start: 10, factor: 2, max: 50, refine: -1 })).toThrow(RangeError);
    expect(() => new RateSearch({ start: 10, factor: 2, max: 10, refine: 0, min: 10 })).not.toThrow();
    expect(() => new RateSearch({ start: 10, factor: 2, max: 50, refine: 0, min: 0 })).toThrow(/bad rate search options \{"start":10/);
    expect(() => new RateSearch({ start: 10, factor: 2, max: 50, refine: 0, min: 11 })).toThrow(RangeError);
  });
});
