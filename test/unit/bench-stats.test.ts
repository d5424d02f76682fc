import { describe, expect, it } from 'vitest';
import { diffSummary, percentile, Samples, summarize } from '../../bench/lib/stats.js';

describe('bench percentile (nearest-rank)', () => {
  const ten = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

  it('is sorted[ceil(p/100 * n) - 1]', () => {
    expect(percentile(ten, 50)).toBe(5);
    expect(percentile(ten, 90)).toBe(9);
    expect(percentile(ten, 91)).toBe(10);
    expect(percentile(ten, 99)).toBe(10);
    expect(percentile(ten, 100)).toBe(10);
    expect(percentile(ten, 10)).toBe(1);
    expect(percentile(ten, 11)).toBe(2);
  });

  it('p0 is the minimum, and every result is one of the samples (no interpolation)', () => {
    expect(percentile(ten, 0)).toBe(1);
    const odd = [0.5, 1.5, 7];
    for (const p of [0, 1, 33, 34, 50, 66, 67, 99, 100]) expect(odd).toContain(percentile(odd, p));
    expect(percentile(odd, 33)).toBe(0.5);
    expect(percentile(odd, 34)).toBe(1.5);
    expect(percentile(odd, 67)).toBe(7);
  });

  it('handles one sample, an empty set and out-of-range p', () => {
    expect(percentile([42], 0)).toBe(42);
    expect(percentile([42], 99)).toBe(42);
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile(ten, -1)).toThrow(RangeError);
    expect(() => percentile(ten, 101)).toThrow(RangeError);
    expect(() => percentile(ten, Number.NaN)).toThrow(RangeError);
  });

  it('p99 of 1..1000 is 990 and p99 of 1..100 is 99', () => {
    const big = Float64Array.from({ length: 1000 }, (_, i) => i + 1);
    expect(percentile(big, 99)).toBe(990);
    expect(percentile(big.subarray(0, 100), 99)).toBe(99);
  });

  it('summarize sorts a copy numerically (not lexically) and leaves the input alone', () => {
    const input = [10, 9, 100, 2, 1];
    const s = summarize(input);
    expect(input).toEqual([10, 9, 100, 2, 1]);
    expect(s).toEqual({ count: 5, min: 1, p50: 9, p90: 100, p99: 100, max: 100, mean: 24.4 });
    expect(summarize([]).p50).toBeNaN();
  });

  it('Samples grows, caps and summarizes; diffSummary subtracts percentile by percentile', () => {
    const s = new Samples(16, 100);
    for (let i = 1; i <= 150; i++) s.push(i);
    expect(s.length).toBe(100);
    expect(s.dropped).toBe(50);
    expect(s.summary().p50).toBe(50);
    const d = diffSummary(summarize([5, 10, 20]), summarize([1, 2, 3]));
    expect(d.p50).toBe(8);
    expect(d.max).toBe(17);
  });
});
