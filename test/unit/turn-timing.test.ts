/**
 * A turn's timing (API.md "Chat", Timing: src/runtime/turn/turn.ts `timing`) and its Server-Timing header
 * (src/transport/http/one-shot.ts `serverTiming`), from step times set by hand.
 */
import { describe, expect, it } from 'vitest';
import { TurnChannel } from '../../src/runtime/turn/turn-channel.js';
import { Turn } from '../../src/runtime/turn/turn.js';
import type { AgentRecord } from '../../src/store/records.js';
import { oneShotResult, serverTiming } from '../../src/transport/http/one-shot.js';

const agent = { id: 'agt_1', model: { provider: 'openai', name: 'm' } } as AgentRecord;

function turn(arrivedAt?: number): Turn {
  return new Turn({
    id: 'turn_1', conversationId: 'conv_1', orgId: 'org_1', agent, visitorMessageId: 'msg_1', question: 'q', newConversation: true,
    channel: new TurnChannel('turn_1', 'conv_1', 'org_1', { maxChars: 1000 }), ...(arrivedAt === undefined ? {} : { arrivedAt }),
  });
}

describe('Turn.timing', () => {
  it('gives every step in ms from the request\'s arrival, rounded to the microsecond', () => {
    const t = turn(1000);
    t.startedAt = 1000.0104;
    t.modelCalledAt = 1000.5;
    t.firstTokenReceivedAt = 1021.2345678;
    t.firstTokenAt = 1021.3;
    expect(t.timing(1030.0006)).toEqual({ queued_ms: 0.01, setup_ms: 0.5, upstream_first_byte_ms: 21.235, first_token_ms: 21.3, total_ms: 30.001 });
  });

  it('is null for a step that did not happen, and total counts to the given end', () => {
    const t = turn(50);
    expect(t.timing(57.25)).toEqual({ queued_ms: null, setup_ms: null, upstream_first_byte_ms: null, first_token_ms: null, total_ms: 7.25 });
    t.startedAt = 51;
    t.modelCalledAt = 52;
    expect(t.timing(60)).toEqual({ queued_ms: 1, setup_ms: 2, upstream_first_byte_ms: null, first_token_ms: null, total_ms: 10 });
  });

  it('counts from when the turn was made when no arrival is given', () => {
    const before = performance.now();
    const t = turn();
    const after = performance.now();
    expect(t.arrivedAt).toBeGreaterThanOrEqual(before);
    expect(t.arrivedAt).toBeLessThanOrEqual(after);
  });
});

describe('serverTiming', () => {
  it('names each step that happened, with its duration from the arrival', () => {
    expect(serverTiming({ queued_ms: 0.02, setup_ms: 0.41, upstream_first_byte_ms: 231.87, first_token_ms: 231.934, total_ms: 1204.5 }))
      .toBe('queued;dur=0.02, setup;dur=0.41, upstream_first_byte;dur=231.87, first_token;dur=231.934, total;dur=1204.5');
    expect(serverTiming({ queued_ms: 0, setup_ms: null, upstream_first_byte_ms: null, first_token_ms: null, total_ms: 3 })).toBe('queued;dur=0, total;dur=3');
  });

  it('goes on a one-shot result when the turn has a timing, and not otherwise', () => {
    const timing = { queued_ms: 1, setup_ms: 2, upstream_first_byte_ms: null, first_token_ms: 3, total_ms: 4 };
    expect(oneShotResult({ a: 1 }, timing)).toEqual({ kind: 'json', status: 200, body: { a: 1 }, headers: { 'Server-Timing': 'queued;dur=1, setup;dur=2, first_token;dur=3, total;dur=4' } });
    expect(oneShotResult({ a: 1 }, null)).toEqual({ kind: 'json', status: 200, body: { a: 1 } });
  });
});
