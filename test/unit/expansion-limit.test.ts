import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_EXPANDED_BYTES, DocumentTooLargeError, ExpansionBudget } from '../../src/knowledge/expansion-limit.js';

describe('ExpansionBudget', () => {
  it('defaults to 128 MiB', () => {
    expect(DEFAULT_MAX_EXPANDED_BYTES).toBe(134_217_728);
  });

  it('counts up to the limit and throws past it, naming the limit and the unit', () => {
    const budget = new ExpansionBudget(10, 'decompressed bytes');
    budget.take(4);
    budget.take(6);
    expect(budget.used).toBe(10);
    expect(budget.exceeded).toBeUndefined();
    expect(() => budget.take(1)).toThrow(DocumentTooLargeError);
    expect(budget.used).toBe(11);
    expect(budget.exceeded?.message).toBe('document expands to more than 10 decompressed bytes (the ingestion expansion limit)');
    expect(budget.exceeded?.name).toBe('DocumentTooLargeError');
  });

  it('throws the same error on every later take, even of nothing', () => {
    const budget = new ExpansionBudget(5, 'text characters');
    let first: unknown;
    try { budget.take(6); } catch (err) { first = err; }
    expect(first).toBeInstanceOf(DocumentTooLargeError);
    expect((first as Error).message).toBe('document expands to more than 5 text characters (the ingestion expansion limit)');
    expect(() => budget.take(0)).toThrow(first as Error);
    let again: unknown;
    try { budget.take(1); } catch (err) { again = err; }
    expect(again).toBe(first);
    expect(budget.used).toBe(6);
  });

  it('ignores zero, negative and non-finite counts', () => {
    const budget = new ExpansionBudget(3, 'decompressed bytes');
    budget.take(0);
    budget.take(-5);
    budget.take(Number.NaN);
    budget.take(Number.POSITIVE_INFINITY);
    expect(budget.used).toBe(0);
    budget.take(3);
    expect(budget.used).toBe(3);
    expect(budget.exceeded).toBeUndefined();
  });

  it('a limit of 0 allows nothing; a bad limit is refused', () => {
    expect(() => new ExpansionBudget(0, 'decompressed bytes').take(1)).toThrow(DocumentTooLargeError);
    expect(() => new ExpansionBudget(-1, 'decompressed bytes')).toThrow(RangeError);
    expect(() => new ExpansionBudget(1.5, 'decompressed bytes')).toThrow(/expansion limit must be an integer >= 0, got 1.5/);
  });
});
