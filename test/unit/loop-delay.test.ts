import { afterEach, describe, expect, it, vi } from 'vitest';
import { LoopDelaySampler } from '../../src/metrics/loop-delay.js';

let running: LoopDelaySampler | undefined;
afterEach(() => { running?.close(); running = undefined; });

/** Feeds `count` on-time ticks of `periodMs` from `from` (ms) with event-loop utilization `busy`; returns each period the sampler asked for and the time after the last tick. */
function ticks(m: LoopDelaySampler, from: number, periodMs: number, count: number, busy: number): { periods: number[]; at: number } {
  const periods: number[] = [];
  let at = from;
  for (let k = 0; k < count; k++) {
    at += periodMs;
    periods.push(m.tick(at, busy));
  }
  return { periods, at };
}

describe('LoopDelaySampler period', () => {
  it('keeps the 10 ms period while the loop works (the default: every tick counts as busy)', () => {
    const m = new LoopDelaySampler(10, 5, 0);
    let at = 0;
    for (let k = 0; k < 300; k++) expect(m.tick((at += 10))).toBe(10);
    expect(m.periodMs).toBe(10);
  });

  it('slows to the idle period after one second under 5% busy, and speeds up on the first busy tick', () => {
    const m = new LoopDelaySampler(10, 5, 0, 1000, 250);
    const idle = ticks(m, 0, 10, 100, 0);
    // 99 ticks add up to 990 ms of idleness; the 100th reaches one second.
    expect(idle.periods.slice(0, 99).every((p) => p === 10)).toBe(true);
    expect(idle.periods[99]).toBe(250);
    expect(m.periodMs).toBe(250);
    const slow = ticks(m, idle.at, 250, 3, 0.049);
    expect(slow.periods).toEqual([250, 250, 250]);
    // A tick that finds the loop 5% busy (the bound itself) is busy.
    expect(m.tick(slow.at + 250, 0.05)).toBe(10);
    expect(m.periodMs).toBe(10);
    // A new span starts: 99 idle ticks are not enough.
    const again = ticks(m, slow.at + 250, 10, 99, 0);
    expect(again.periods.every((p) => p === 10)).toBe(true);
    expect(m.tick(again.at + 10, 0)).toBe(250);
  });

  it('averages the utilization over the second: one busy tick among idle ones still slows down, a busy mean does not', () => {
    const m = new LoopDelaySampler(10, 5, 0);
    // 99 idle ticks and one 50% busy: the second was 0.5% busy.
    let t = ticks(m, 0, 10, 99, 0);
    expect(m.tick(t.at + 10, 0.5)).toBe(250);
    t = ticks(m, t.at + 10, 250, 1, 0.9); // busy: back to 10 ms, a new span starts
    // 50 ticks at 0% and 50 at 10%: a 5% mean, the bound, stays at 10 ms.
    t = ticks(m, t.at, 10, 50, 0);
    const busyHalf = ticks(m, t.at, 10, 50, 0.1);
    expect(busyHalf.periods.every((p) => p === 10)).toBe(true);
    // The next span, idle, slows down at its end.
    const idle = ticks(m, busyHalf.at, 10, 100, 0.049);
    expect(idle.periods.slice(0, 99).every((p) => p === 10)).toBe(true);
    expect(idle.periods[99]).toBe(250);
  });

  it('counts a late tick’s whole span as idle time: four idle ticks 250 ms late reach one second', () => {
    const m = new LoopDelaySampler(10, 5, 0);
    // Expected at 10, fired at 260: 250 ms late, 260 ms since the start.
    expect(m.tick(260, 0)).toBe(10);
    expect(m.tick(530, 0)).toBe(10); // expected 270: 260 late, a span of 530 ms so far
    expect(m.tick(800, 0)).toBe(10); // 800 ms
    expect(m.tick(1070, 0)).toBe(250); // 1070 ms
  });

  it('measures lateness against the idle period while idle, so a stall in an idle server is still recorded', () => {
    const m = new LoopDelaySampler(10, 3, 0);
    const idle = ticks(m, 0, 10, 100, 0);
    m.takeWindow();
    // Next tick expected 250 ms after the last one; it fires 400 ms after: 150 ms late.
    expect(m.tick(idle.at + 400, 0.9)).toBe(10);
    expect(m.takeWindow()).toEqual({ count: 1, p50: 150, p90: 150, p99: 150, max: 150 });
  });

  it('an idle period equal to the interval never changes the period', () => {
    const m = new LoopDelaySampler(10, 5, 0, 1000, 10);
    expect(ticks(m, 0, 10, 300, 0).periods.every((p) => p === 10)).toBe(true);
  });

  it('refuses a period that is not positive, and an idle period below the interval', () => {
    expect(() => new LoopDelaySampler(0, 5, 0)).toThrow(/intervalMs must be positive, got 0/);
    expect(() => new LoopDelaySampler(Number.NaN, 5, 0)).toThrow(RangeError);
    expect(() => new LoopDelaySampler(10, 5, 0, 1000, 5)).toThrow(/idleIntervalMs must be at least intervalMs \(10\), got 5/);
    expect(() => new LoopDelaySampler(10, 5, 0, 1000, 10)).not.toThrow();
  });

  it('the median of the recent ticks follows the ticks as they come, in any order of lateness', () => {
    const m = new LoopDelaySampler(10, 5, 0);
    // Lateness 40, 0, 30, 10, 20 (each tick expected 10 ms after the previous one fired).
    let at = 0;
    for (const late of [40, 0, 30, 10, 20]) { at += 10 + late; m.tick(at); }
    expect(m.lagMs).toBe(20);
    for (const late of [50, 60]) { at += 10 + late; m.tick(at); } // now 30, 10, 20, 50, 60
    expect(m.lagMs).toBe(30);
  });

  it('takes the upper middle of an even window as its median', () => {
    const m = new LoopDelaySampler(10, 4, 0);
    let at = 0;
    for (const late of [30, 0, 20, 10]) { at += 10 + late; m.tick(at); } // sorted 0, 10, 20, 30
    expect(m.lagMs).toBe(20);
  });

  it('counts the first tick from the given start time', () => {
    const m = new LoopDelaySampler(10, 1, 1e9);
    m.tick(1e9 + 10);
    expect(m.lagMs).toBe(0);
    m.tick(1e9 + 45); // expected 1e9 + 20
    expect(m.lagMs).toBe(25);
  });
});

describe('LoopDelaySampler timer', () => {
  it('on an idle event loop, its own timer moves to the idle period', async () => {
    running = new LoopDelaySampler(10, 5, undefined, 1000, 40);
    expect(running.periodMs).toBe(10);
    await vi.waitFor(() => { expect(running!.periodMs).toBe(40); }, { timeout: 10_000, interval: 100 });
    expect(running.takeWindow().count).toBeGreaterThan(50);
    expect(running.resolutionMs).toBe(10); // the resolution under load, whatever the pace now
    running.close();
    running.takeWindow();
    await new Promise((r) => setTimeout(r, 150));
    expect(running.takeWindow().count).toBe(0);
  });

  it('given a start time, runs no timer of its own', async () => {
    running = new LoopDelaySampler(10, 5, performance.now());
    await new Promise((r) => setTimeout(r, 60));
    expect(running.takeWindow().count).toBe(0);
  });
});
