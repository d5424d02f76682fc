import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, SimulatedClock } from 'xstate';
import { DEFAULT_RETRY_SCHEDULE_MS, nextRetry, retryAfterMs } from '../../actors/webhook-endpoint/retry.rules.js';
import { webhookEndpointMachine } from '../../actors/webhook-endpoint/webhook-endpoint.machine.js';
import type { PumpInput, WebhookEndpointEvent, WebhookEndpointInput } from '../../actors/webhook-endpoint/webhook-endpoint.types.js';

const DAY = 86_400_000;

function start(input: Partial<WebhookEndpointInput> = {}) {
  const pumps: PumpInput[] = [];
  let report: ((e: WebhookEndpointEvent) => void) | undefined;
  const clock = new SimulatedClock();
  const logic = webhookEndpointMachine.provide({
    actors: {
      pump: fromCallback(({ input: i, sendBack }) => {
        pumps.push(i as PumpInput);
        report = sendBack as (e: WebhookEndpointEvent) => void;
      }),
    },
  });
  const actor = createActor(logic, { input: { endpointId: 'whe_1', maxInFlight: 4, disableAfterMs: 5 * DAY, disabled: false, failingSince: null, ...input }, clock });
  actor.start();
  return {
    actor, clock, pumps,
    pump: (e: WebhookEndpointEvent) => report!(e),
    value: () => actor.getSnapshot().value,
    ctx: () => actor.getSnapshot().context,
  };
}

describe('webhook-endpoint machine', () => {
  it('pumps at once on start (deliveries left by an earlier run), with the concurrency bound', () => {
    const m = start();
    expect(m.value()).toBe('delivering');
    expect(m.pumps).toEqual([{ endpointId: 'whe_1', maxInFlight: 4 }]);
  });

  it('goes idle when nothing waits, and delivers again on wake', () => {
    const m = start();
    m.pump({ type: 'drained', nextDueInMs: null });
    expect(m.value()).toBe('idle');
    m.actor.send({ type: 'wake' });
    expect(m.value()).toBe('delivering');
    expect(m.pumps).toHaveLength(2);
  });

  it('backs off until the next delivery is due, then pumps again (or earlier on wake)', () => {
    const m = start();
    m.pump({ type: 'drained', nextDueInMs: 5_000 });
    expect(m.value()).toBe('backingOff');
    m.clock.increment(4_999);
    expect(m.value()).toBe('backingOff');
    m.clock.increment(1);
    expect(m.value()).toBe('delivering');
    m.pump({ type: 'drained', nextDueInMs: 60_000 });
    m.actor.send({ type: 'wake' });
    expect(m.value()).toBe('delivering');
    expect(m.pumps).toHaveLength(3);
  });

  it('a 410 Gone disables the endpoint at once', () => {
    const m = start();
    m.pump({ type: 'attempt.finished', outcome: 'gone', at: 1_000 });
    expect(m.value()).toBe('disabled');
    expect(m.ctx().disabledReason).toBe('gone');
    m.actor.send({ type: 'wake' });
    expect(m.value()).toBe('disabled');
  });

  it('tracks the failing streak; a success ends it; 5 days of failures disable the endpoint', () => {
    const m = start();
    m.pump({ type: 'attempt.finished', outcome: 'failed', at: 1_000 });
    expect(m.ctx().failingSince).toBe(1_000);
    m.pump({ type: 'attempt.finished', outcome: 'failed', at: 2_000 });
    expect(m.ctx().failingSince).toBe(1_000);
    m.pump({ type: 'attempt.finished', outcome: 'succeeded', at: 3_000 });
    expect(m.ctx().failingSince).toBeNull();
    m.pump({ type: 'attempt.finished', outcome: 'failed', at: 10_000 });
    m.pump({ type: 'attempt.finished', outcome: 'failed', at: 10_000 + 5 * DAY - 1 });
    expect(m.value()).toBe('delivering');
    m.pump({ type: 'attempt.finished', outcome: 'failed', at: 10_000 + 5 * DAY });
    expect(m.value()).toBe('disabled');
    expect(m.ctx().disabledReason).toBe('failing');
  });

  it('a streak that began before a restart counts from the stored time', () => {
    const m = start({ failingSince: 0 });
    m.pump({ type: 'attempt.finished', outcome: 'failed', at: 5 * DAY });
    expect(m.value()).toBe('disabled');
  });

  it('starts disabled when stored so; enable clears the streak and pumps', () => {
    const m = start({ disabled: true, failingSince: 123 });
    expect(m.value()).toBe('disabled');
    expect(m.pumps).toEqual([]);
    m.actor.send({ type: 'enable' });
    expect(m.value()).toBe('delivering');
    expect(m.ctx()).toMatchObject({ failingSince: null, disabledReason: null });
  });

  it('disable stops delivering from any state', () => {
    const m = start();
    m.actor.send({ type: 'disable' });
    expect(m.value()).toBe('disabled');
    expect(m.ctx().disabledReason).toBe('manual');
  });
});

describe('retry schedule', () => {
  it('is at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(DEFAULT_RETRY_SCHEDULE_MS).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  });

  it('waits the next step after a failed attempt, spread by +-20%', () => {
    expect(nextRetry(1, DEFAULT_RETRY_SCHEDULE_MS, 0.5)).toEqual({ retryInMs: 5_000 });
    expect(nextRetry(1, DEFAULT_RETRY_SCHEDULE_MS, 0)).toEqual({ retryInMs: 4_000 });
    expect(nextRetry(2, DEFAULT_RETRY_SCHEDULE_MS, 0.999999)).toEqual({ retryInMs: 360_000 });
    expect(nextRetry(7, DEFAULT_RETRY_SCHEDULE_MS, 0.5)).toEqual({ retryInMs: 36_000_000 });
  });

  it('gives up after the 8th attempt', () => {
    expect(nextRetry(8, DEFAULT_RETRY_SCHEDULE_MS, 0.5)).toEqual({ giveUp: true });
  });

  it('never retries before Retry-After', () => {
    expect(nextRetry(1, DEFAULT_RETRY_SCHEDULE_MS, 0.5, 0.2, 60_000)).toEqual({ retryInMs: 60_000 });
    expect(nextRetry(3, DEFAULT_RETRY_SCHEDULE_MS, 0.5, 0.2, 60_000)).toEqual({ retryInMs: 1_800_000 });
  });

  it('reads Retry-After as seconds or an HTTP date, capped at a day', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs('Mon, 23 Nov 2026 12:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('Mon, 23 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('999999', now)).toBe(86_400_000);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});
