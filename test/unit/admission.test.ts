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
    expect(err?.message).toBe('The server is overloaded (too many turns are waiting to start); retry after 2 s.');
    expect(ac.refused).toBe(1);
  });

  it('refuses a waiter whose slot did not free within maxWaitMs', async () => {
    vi.useFakeTimers();
    const { ac } = make({ maxInSetup: 1 });
    ac.acquire();
    const waiting = ac.acquire() as Promise<Release>;
    const outcome = waiting.then(() => 'granted', (e: AppError) => `${e.code}: ${e.message}`);
    await vi.advanceTimersByTimeAsync(99);
    expect(ac.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcome).toBe('overloaded: The server is overloaded (no turn slot freed in time); retry after 2 s.');
    expect(ac.queued).toBe(0);
  });

  it('sheds load while the event loop lags, even with free slots, and admits again when it recovers', () => {
    const { ac, lag } = make({}, 31);
    expect(thrown(() => ac.acquire())?.message).toBe('The server is overloaded (the server is lagging 31 ms); retry after 2 s.');
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
    const w = (ac.acquire() as Promise<Release>).then(() => 'granted', (e: AppError) => `${e.code}: ${e.message}`);
    ac.close();
    expect(await w).toBe('shutting_down: The server is shutting down; retry on another instance.');
  });
});

/**
 * An AdmissionControl with live turns, a clock and a utilization reading set by hand: `live.live`,
 * `clock.t` (ms) and `busy.share` (0..1) are what the next acquire() sees.
 */
function adaptive(limits: Partial<AdmissionLimits> = {}) {
  const lag = { lagMs: 0 };
  const live = { live: 0 };
  const clock = { t: 1000 };
  const busy = { share: 0 };
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const ac = new AdmissionControl({ ...LIMITS, maxInSetup: 1000, maxLagMs: 1000, targetLagMs: 10, targetUtilization: 0.9, maxLiveTurns: 1000, minLiveTurns: 4, ...limits }, lag, {
    live, now: () => clock.t, utilization: () => busy.share, log: { warn: (fields, message) => warnings.push({ fields, message }) },
  });
  /** acquire() with the given state; 'ok' or the refusal's code (a granted slot is released at once). */
  const attempt = (): string => {
    try {
      const r = ac.acquire();
      if (typeof r === 'function') r();
      return 'ok';
    } catch (err) {
      return (err as AppError).code;
    }
  };
  return { ac, lag, live, clock, busy, warnings, attempt };
}

describe('AdmissionControl, live turns', () => {
  it('starts at maxLiveTurns and refuses at once when that many turns are live, with 503 overloaded', () => {
    const { ac, live, attempt } = adaptive({ maxLiveTurns: 50 });
    expect(ac.limit).toBe(50);
    live.live = 49;
    expect(attempt()).toBe('ok');
    live.live = 50;
    expect(attempt()).toBe('overloaded');
    expect(ac.refused).toBe(1);
    expect(ac.active).toBe(0);
  });

  it('has no live-turn bound without a live source or maxLiveTurns', () => {
    const ac = new AdmissionControl({ ...LIMITS, targetLagMs: 10 }, { lagMs: 0 });
    expect(ac.limit).toBe(Number.POSITIVE_INFINITY);
    expect(ac.acquire()).toBeTypeOf('function');
  });

  it('cuts the limit to 90% of the live turns while the lag is above its target, at most every 300 ms', () => {
    const { ac, live, lag, clock, attempt } = adaptive();
    live.live = 200;
    lag.lagMs = 11;
    expect(attempt()).toBe('overloaded'); // the cut applies to this very arrival: 200 >= 180
    expect(ac.limit).toBe(180);
    // Within the same 100 ms span nothing changes, however lagged.
    clock.t += 99;
    live.live = 179;
    expect(attempt()).toBe('ok');
    expect(ac.limit).toBe(180);
    // Later spans, still lagging, but within 300 ms of the cut: the live turns still running keep the loop
    // busy, so the limit waits for them instead of following them down.
    clock.t += 1;
    live.live = 150;
    expect(attempt()).toBe('ok');
    expect(ac.limit).toBe(180);
    clock.t += 100;
    expect(attempt()).toBe('ok');
    expect(ac.limit).toBe(180);
    clock.t += 100; // 300 ms after the cut
    expect(attempt()).toBe('overloaded'); // 150 >= 135
    expect(ac.limit).toBe(135);
  });

  it('does not grow during the cool-down either while the loop stays over target', () => {
    const { ac, live, lag, clock, attempt } = adaptive();
    live.live = 100;
    lag.lagMs = 50;
    attempt();
    expect(ac.limit).toBe(90);
    clock.t += 100;
    live.live = 89;
    attempt();
    expect(ac.limit).toBe(90);
  });

  it('smooths the utilization: one fully busy span does not cut, a busy stretch does', () => {
    const { ac, live, busy, clock, attempt } = adaptive();
    live.live = 100;
    busy.share = 1;
    attempt();
    expect(ac.limit).toBe(1000); // smoothed 0.5
    busy.share = 0;
    clock.t += 100;
    attempt();
    expect(ac.limit).toBe(1000); // 0.25
    busy.share = 1;
    const limits: number[] = [];
    for (let i = 0; i < 4; i++) {
      clock.t += 100;
      attempt();
      limits.push(ac.limit);
    }
    // Smoothed 0.625, 0.81, 0.91 (over 0.9: cut to 90% of 100 live), 0.95 (within the cool-down).
    expect(limits).toEqual([1000, 1000, 90, 90]);
  });

  it('cuts on the utilization alone, with the lag on target', () => {
    const { ac, live, busy, clock, attempt } = adaptive({ targetLagMs: 0 });
    live.live = 50;
    busy.share = 1;
    for (let i = 0; i < 4; i++) { attempt(); clock.t += 100; }
    expect(ac.limit).toBe(45);
  });

  it('cuts while the lag is above its target, even with the loop under its busy target', () => {
    const { ac, live, lag, busy, attempt } = adaptive();
    live.live = 100;
    busy.share = 0.5;
    lag.lagMs = 11;
    attempt();
    expect(ac.limit).toBe(90);
  });

  it('does not cut at the targets exactly', () => {
    const { ac, live, lag, busy, clock, attempt } = adaptive();
    live.live = 100;
    busy.share = 0.9;
    lag.lagMs = 10;
    for (let i = 0; i < 20; i++) { expect(attempt()).toBe('ok'); clock.t += 100; }
    expect(ac.limit).toBe(1000);
  });

  it('never cuts below minLiveTurns, so a lag from elsewhere does not shut chat out', () => {
    const { ac, live, lag, attempt } = adaptive({ minLiveTurns: 4 });
    live.live = 2;
    lag.lagMs = 100;
    expect(attempt()).toBe('ok');
    expect(ac.limit).toBe(4);
  });

  it('grows the limit by 10% (at least 1) per span while it binds and the loop has room, up to maxLiveTurns', () => {
    const { ac, live, lag, clock, attempt } = adaptive({ maxLiveTurns: 100 });
    live.live = 80;
    lag.lagMs = 20;
    attempt();
    expect(ac.limit).toBe(72);
    lag.lagMs = 0;
    clock.t += 100;
    live.live = 65; // 65 >= 0.9 x 72 = 64.8: the limit binds
    expect(attempt()).toBe('ok');
    expect(ac.limit).toBe(79); // 72 + floor(7.2)
    clock.t += 100;
    live.live = 70; // 70 < 0.9 x 79: not binding, no growth
    attempt();
    expect(ac.limit).toBe(79);
    for (let i = 0; i < 20; i++) {
      clock.t += 100;
      live.live = ac.limit;
      attempt();
    }
    expect(ac.limit).toBe(100);
  });

  // [live at the cut, limit after it, live turns afterwards (90% of that limit), limit after growing]
  it.each([
    [10, 9, 9, 10], // 10% of 9 is under one turn: grows by one
    [100, 90, 81, 99], // exactly 90% of the limit binds
  ])('after a cut at %i live turns (limit %i), %i live turns grow the limit to %i', (liveAtCut, cut, liveAfter, grown) => {
    const { ac, live, lag, clock, attempt } = adaptive({ minLiveTurns: 4 });
    live.live = liveAtCut;
    lag.lagMs = 20;
    attempt();
    expect(ac.limit).toBe(cut);
    lag.lagMs = 0;
    clock.t += 100;
    live.live = liveAfter;
    attempt();
    expect(ac.limit).toBe(grown);
  });

  it('a smoothed utilization equal to the target does not cut', () => {
    const { ac, live, busy, attempt } = adaptive({ targetUtilization: 0.5, targetLagMs: 0 });
    live.live = 100;
    busy.share = 1; // smoothed: 0.5
    attempt();
    expect(ac.limit).toBe(1000);
  });

  it('a signal whose target is off never cuts, however high it is', () => {
    const lagOff = adaptive({ targetLagMs: 0, targetUtilization: 0.9 });
    lagOff.live.live = 100;
    lagOff.lag.lagMs = 25; // under maxLagMs
    for (let i = 0; i < 5; i++) { lagOff.attempt(); lagOff.clock.t += 100; }
    expect(lagOff.ac.limit).toBe(1000);
    for (const targetUtilization of [0, 1]) {
      const busyOff = adaptive({ targetLagMs: 10, targetUtilization });
      busyOff.live.live = 100;
      busyOff.busy.share = 1;
      for (let i = 0; i < 5; i++) { busyOff.attempt(); busyOff.clock.t += 100; }
      expect(busyOff.ac.limit).toBe(1000);
    }
  });

  it('costs nothing when no target is set: neither the clock nor the utilization is read', () => {
    let reads = 0;
    for (const limits of [{}, { targetLagMs: 0, targetUtilization: 0 }, { targetUtilization: 1 }]) {
      const ac = new AdmissionControl({ ...LIMITS, maxInSetup: 100, maxLiveTurns: 50, ...limits }, { lagMs: 0 }, {
        live: { live: 49 }, now: () => { reads++; return 0; }, utilization: () => { reads++; return 1; },
      });
      (ac.acquire() as Release)();
      expect(ac.limit).toBe(50);
    }
    expect(reads).toBe(0);
  });

  it('reads the real clock and event-loop utilization by default: a loop kept busy cuts the limit', () => {
    const live = { live: 100 };
    const ac = new AdmissionControl({ ...LIMITS, maxInSetup: 1000, targetUtilization: 0.5, maxLiveTurns: 1000 }, { lagMs: 0 }, { live });
    const attemptBusy = () => {
      const until = performance.now() + 110; // a new 100 ms span each time, the loop busy all of it
      while (performance.now() < until) { /* busy */ }
      try { (ac.acquire() as Release)(); } catch { /* refused once cut */ }
    };
    for (let i = 0; i < 4; i++) attemptBusy();
    // Spans: the first reading (0), then fully busy ones: smoothed 0.5, 0.75 (over 0.5: cut), then the cool-down.
    expect(ac.limit).toBe(90);
  });

  it('steers on the lag alone when only a lag target is set', () => {
    const { ac, live, lag, attempt } = adaptive({ targetUtilization: 0, targetLagMs: 10 });
    live.live = 60;
    lag.lagMs = 11;
    attempt();
    expect(ac.limit).toBe(54);
  });

  it('uses neither signal when no target is set (0, and a utilization target of 1 or more)', () => {
    const { ac, live, lag, busy, attempt } = adaptive({ targetLagMs: 0, targetUtilization: 1 });
    live.live = 500;
    lag.lagMs = 25;
    busy.share = 1;
    expect(attempt()).toBe('ok');
    expect(ac.limit).toBe(1000);
  });

  it('reads the utilization once per span: each reading covers the span since the previous one', () => {
    let reads = 0;
    const clock = { t: 0 };
    const ac = new AdmissionControl({ ...LIMITS, maxInSetup: 100, targetUtilization: 0.9, maxLiveTurns: 100 }, { lagMs: 0 }, {
      live: { live: 0 }, now: () => clock.t, utilization: () => { reads++; return 0; },
    });
    for (let i = 0; i < 5; i++) (ac.acquire() as Release)();
    expect(reads).toBe(1);
    clock.t = 100;
    (ac.acquire() as Release)();
    expect(reads).toBe(2);
  });

  it('logs one summary of refusals per 10 s, counting those in between', () => {
    const { live, clock, warnings, attempt } = adaptive({ maxLiveTurns: 10, targetLagMs: 0, targetUtilization: 0 });
    live.live = 10;
    attempt();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toBe('refusing new turns: the server is overloaded');
    expect(warnings[0]!.fields).toMatchObject({ refused: 1, live_limit: 10 });
    expect(String(warnings[0]!.fields.reason)).toContain('10 turns are live');
    for (let i = 0; i < 5; i++) { clock.t += 1000; attempt(); }
    expect(warnings).toHaveLength(1);
    clock.t += 5000; // 10 s after the first line
    attempt();
    expect(warnings).toHaveLength(2);
    expect(warnings[1]!.fields).toMatchObject({ refused: 6 });
  });

  it('checks its limits', () => {
    const make2 = (l: Partial<AdmissionLimits>) => () => new AdmissionControl({ ...LIMITS, ...l }, { lagMs: 0 });
    expect(make2({ targetLagMs: -1 })).toThrow(RangeError);
    expect(make2({ targetLagMs: -1 })).toThrow('targetLagMs must be a number >= 0, got -1');
    expect(make2({ targetUtilization: Number.NaN })).toThrow(RangeError);
    expect(make2({ maxLiveTurns: -5 })).toThrow(RangeError);
    expect(make2({ maxLiveTurns: 8, minLiveTurns: 9 })).toThrow(/minLiveTurns \(9\) must not exceed maxLiveTurns \(8\)/);
    expect(new AdmissionControl({ ...LIMITS, maxLiveTurns: 3 }, { lagMs: 0 }, { live: { live: 0 } }).limit).toBe(3);
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
