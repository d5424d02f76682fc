import { afterEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { LoopDelaySampler } from '../../src/metrics/loop-delay.js';
import { AdmissionControl, type AdmissionLimits, type Release } from '../../src/runtime/admission.js';

const LIMITS: AdmissionLimits = { maxInSetup: 2, maxWaiting: 2, maxWaitMs: 100, maxLagMs: 30, retryAfterSeconds: 2 };

function make(limits: Partial<AdmissionLimits> = {}, lagMs = 0) {
  const lag = { lagMs };
  return { ac: new AdmissionControl({ ...LIMITS, ...limits }, lag), lag };
}

/** The error `fn` throws (or undefined). */
function thrown(fn: () => unknown): AppError | undefined {
  try { fn(); } catch (err) { return err as AppError; }
  return undefined;
}

afterEach(() => { vi.useRealTimers(); });

describe('AdmissionControl', () => {
  it('grants free slots synchronously, counting them, and a release frees the slot once', () => {
    const { ac } = make();
    const r1 = ac.acquire();
    expect(r1).toBeTypeOf('function');
    const r2 = ac.acquire() as Release;
    expect(ac.active).toBe(2);
    r2();
    r2();
    expect(ac.active).toBe(1);
    (r1 as Release)();
    expect(ac.active).toBe(0);
  });

  it('queues past maxInSetup and hands a freed slot to the oldest waiter', async () => {
    const { ac } = make();
    const r1 = ac.acquire() as Release;
    ac.acquire();
    const order: string[] = [];
    const w1 = (ac.acquire() as Promise<Release>).then((r) => { order.push('w1'); return r; });
    const w2 = (ac.acquire() as Promise<Release>).then((r) => { order.push('w2'); return r; });
    expect(ac.queued).toBe(2);
    r1();
    const granted = await w1;
    expect(order).toEqual(['w1']);
    expect(ac.active).toBe(2);
    expect(ac.queued).toBe(1);
    granted();
    await w2;
    expect(order).toEqual(['w1', 'w2']);
  });

  it('refuses at once with 503 overloaded and Retry-After when the wait queue is full', () => {
    const { ac } = make({ maxInSetup: 1, maxWaiting: 1 });
    ac.acquire();
    // The waiter is refused after maxWaitMs with nobody to hear it: handle that, so a slow run does not
    // report an unhandled rejection.
    (ac.acquire() as Promise<Release>).catch(() => undefined);
    const err = thrown(() => ac.acquire());
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'overloaded', status: 503, type: 'api_error', headers: { 'Retry-After': '2' } });
    expect(ac.refused).toBe(1);
  });

  it('refuses a waiter whose slot did not free within maxWaitMs', async () => {
    vi.useFakeTimers();
    const { ac } = make({ maxInSetup: 1 });
    ac.acquire();
    const waiting = ac.acquire() as Promise<Release>;
    const outcome = waiting.then(() => 'granted', (e: AppError) => e.code);
    await vi.advanceTimersByTimeAsync(99);
    expect(ac.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcome).toBe('overloaded');
    expect(ac.queued).toBe(0);
  });

  it('sheds load while the event loop lags, even with free slots, and admits again when it recovers', () => {
    const { ac, lag } = make({}, 31);
    expect(thrown(() => ac.acquire())?.code).toBe('overloaded');
    expect(ac.active).toBe(0);
    lag.lagMs = 30;
    expect(ac.acquire()).toBeTypeOf('function');
  });

  it('a newcomer does not overtake waiters even when a slot is free at that moment', async () => {
    const { ac } = make({ maxInSetup: 1 });
    const r1 = ac.acquire() as Release;
    const w = ac.acquire() as Promise<Release>;
    r1(); // the slot goes to the waiter, synchronously
    const late = ac.acquire();
    expect(late).toBeInstanceOf(Promise);
    (await w)();
    expect(await late).toBeTypeOf('function');
  });

  it('close refuses the waiters with shutting_down', async () => {
    const { ac } = make({ maxInSetup: 1 });
    ac.acquire();
    const w = (ac.acquire() as Promise<Release>).then(() => 'granted', (e: AppError) => e.code);
    ac.close();
    expect(await w).toBe('shutting_down');
  });
});

describe('LoopDelaySampler', () => {
  it('reports the median lateness of the last window: one long task does not count, sustained lag does', () => {
    const m = new LoopDelaySampler(10, 5, 1000);
    m.close(); // driven by hand below
    m.tick(1010); // on time
    expect(m.lagMs).toBe(0);
    m.tick(1520); // expected 1020: one 500 ms stall
    expect(m.lagMs).toBe(0);
    m.tick(1530);
    m.tick(1540);
    m.tick(1550);
    expect(m.lagMs).toBe(0);
    // Now every tick is ~30 ms late: the loop is behind.
    m.tick(1590);
    m.tick(1630);
    expect(m.lagMs).toBe(0); // 2 of 5 late
    m.tick(1670); // 3 of 5 late
    expect(m.lagMs).toBe(30);
  });
});

describe('LoopDelaySampler windows (for /metrics)', () => {
  it('reports the quantiles of every sample since the previous window, then starts afresh', () => {
    const m = new LoopDelaySampler(10, 5, 0);
    m.close();
    // Lateness 0, 0, 30, 0, 100 (ms): expected 10, 20, 30, 70, 80 -> fired at 10, 20, 60, 70, 180.
    for (const at of [10, 20, 60, 70, 180]) m.tick(at);
    expect(m.takeWindow()).toEqual({ count: 5, p50: 0, p90: 100, p99: 100, max: 100 });
    expect(m.takeWindow()).toEqual({ count: 0, p50: 0, p90: 0, p99: 0, max: 0 });
    m.tick(195); // expected 190: 5 ms late
    expect(m.takeWindow()).toEqual({ count: 1, p50: 5, p90: 5, p99: 5, max: 5 });
  });

  it('keeps at most maxWindow samples, dropping the oldest', () => {
    const m = new LoopDelaySampler(10, 5, 0, 3);
    m.close();
    for (const at of [60, 70, 80, 90]) m.tick(at); // 50 ms late, then on time
    expect(m.takeWindow()).toEqual({ count: 3, p50: 0, p90: 0, p99: 0, max: 0 });
  });
});
