import { afterEach, describe, expect, it, vi } from 'vitest';
import { TurnChannel } from '../../src/runtime/turn/turn-channel.js';
import { TurnRegistry } from '../../src/runtime/turn/turn-registry.js';
import type { StreamEvent } from '../../src/vocabulary/stream-event.js';

interface Seen { seq: number; event: StreamEvent; json: string }

const collect = (ch: TurnChannel, after = 0) => {
  const seen: Seen[] = [];
  let ended = 0;
  const unsubscribe = ch.subscribe({ onEvent: (seq, event, json) => seen.push({ seq, event, json }), onEnd: () => { ended++; } }, after);
  return { seen, ended: () => ended, unsubscribe };
};

const channel = (maxChars = 1_000_000, onEnded?: (c: TurnChannel) => void) => new TurnChannel('turn_1', 'conv_1', 'org_1', { maxChars }, onEnded);

describe('TurnChannel', () => {
  it('replays after a sequence number, then follows live, and ends once', () => {
    const ch = channel();
    ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    ch.emit({ type: 'token', delta: 'a' });
    const late = collect(ch, 1);
    ch.emit({ type: 'token', delta: 'b' });
    ch.emit({ type: 'done', finish_reason: 'stop' });
    ch.emit({ type: 'token', delta: 'after the end' });
    expect(late.seen.map((e) => e.seq)).toEqual([2, 3, 4]);
    expect(late.ended()).toBe(1);
    expect(ch.lastSeq).toBe(4);
    const replay = collect(ch, 0);
    expect(replay.seen.map((e) => e.event.type)).toEqual(['conversation', 'token', 'token', 'done']);
    expect(replay.ended()).toBe(1);
  });

  it('rebuilds token frames on replay byte for byte, at every split point, across tool events', () => {
    const ch = channel();
    const live = collect(ch);
    const events: StreamEvent[] = [
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' },
      { type: 'token', delta: 'Hel' },
      { type: 'token', delta: 'lo "wörld"\n' },
      { type: 'tool_call', tool_call: { id: 'c1', name: 'search_knowledge', arguments: { query: 'x' } } },
      { type: 'tool_result', tool_result: { tool_call_id: 'c1', name: 'search_knowledge', output: [], is_error: false } },
      { type: 'token', delta: '😀' },
      { type: 'token', delta: '' },
      { type: 'token', delta: ' end' },
      { type: 'done', finish_reason: 'stop' },
    ];
    for (const e of events) ch.emit(e);
    expect(live.seen.map((s) => s.event)).toEqual(events);
    for (let after = 0; after <= events.length; after++) {
      const replay = collect(ch, after);
      expect(replay.seen).toEqual(live.seen.slice(after));
    }
    expect(live.seen[2]!.json).toBe('{"type":"token","delta":"lo \\"wörld\\"\\n"}');
  });

  it('keeps a token run as its text plus one offset per token, not a frame per token', () => {
    const ch = channel();
    for (let i = 0; i < 1000; i++) ch.emit({ type: 'token', delta: 'ab' });
    // 2 chars of text + 1 for the offset, per token
    expect(ch.retainedChars).toBe(3000);
  });

  it('a throwing subscriber is dropped without affecting the others', () => {
    const ch = channel();
    ch.subscribe({ onEvent: () => { throw new Error('socket gone'); }, onEnd: () => {} });
    const ok = collect(ch);
    ch.emit({ type: 'token', delta: 'x' });
    ch.emit({ type: 'token', delta: 'y' });
    expect(ok.seen.length).toBe(2);
    expect(ch.subscriberCount).toBe(1);
  });

  it('past its cap it stops keeping events: live subscribers go on, a late subscriber is refused', () => {
    const ch = channel(100);
    const live = collect(ch);
    ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    expect(ch.isReplayable).toBe(true);
    for (let i = 0; i < 10; i++) ch.emit({ type: 'token', delta: '0123456789' });
    expect(ch.isReplayable).toBe(false);
    expect(ch.retainedChars).toBe(0);
    ch.emit({ type: 'done', finish_reason: 'stop' });
    expect(live.seen).toHaveLength(12);
    expect(live.ended()).toBe(1);
    expect(ch.subscribe({ onEvent: () => {}, onEnd: () => {} }, 3)).toBeUndefined();
    // Asking for nothing before the end still works (nothing to replay).
    expect(ch.subscribe({ onEvent: () => {}, onEnd: () => {} }, ch.lastSeq)).toBeTypeOf('function');
  });

  it('calls onEnded once, after the subscribers saw the terminal event', () => {
    const order: string[] = [];
    const ch = channel(1_000_000, () => order.push('ended'));
    ch.subscribe({ onEvent: (_s, e) => order.push(e.type), onEnd: () => order.push('sub end') });
    ch.emit({ type: 'error', error: { type: 'api_error', code: 'internal_error', message: 'x' } });
    ch.emit({ type: 'done', finish_reason: 'stop' });
    expect(order).toEqual(['error', 'sub end', 'ended']);
  });
});

describe('TurnRegistry', () => {
  afterEach(() => { vi.useRealTimers(); });

  const turnLike = (reg: TurnRegistry, id: string) => {
    const ch = reg.channelFor(id, 'conv_1', 'org_1');
    const turn = { id, channel: ch } as never;
    reg.add(turn);
    return ch;
  };
  const finishWith = (ch: TurnChannel, text: string) => {
    ch.emit({ type: 'token', delta: text });
    ch.emit({ type: 'done', finish_reason: 'stop' });
  };

  it('moves an ended turn from running to the replay set', () => {
    const reg = new TurnRegistry({ replayMs: 60_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const ch = turnLike(reg, 'turn_a');
    expect(reg.size).toBe(1);
    expect(reg.get('turn_a')).toBeDefined();
    finishWith(ch, 'hello');
    expect(reg.size).toBe(0);
    expect(reg.get('turn_a')).toBeUndefined();
    expect(reg.channel('turn_a')).toBe(ch);
    expect(reg.retained.channels).toBe(1);
    reg.close();
  });

  it('evicts the oldest finished channels when their total passes the budget', () => {
    // Each channel below keeps 81 characters of token text and 38 of the `done` event: 2 x 119 bytes plus
    // 1,024 of overhead = 1,262 bytes; two fit in 3,000 bytes, three do not.
    const reg = new TurnRegistry({ replayMs: 60_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 3_000 });
    const a = turnLike(reg, 'turn_a');
    const b = turnLike(reg, 'turn_b');
    const c = turnLike(reg, 'turn_c');
    finishWith(a, 'x'.repeat(80));
    finishWith(b, 'y'.repeat(80));
    expect(reg.channel('turn_a')).toBe(a);
    finishWith(c, 'z'.repeat(80));
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(a.isReplayable).toBe(false);
    expect(reg.channel('turn_b')).toBe(b);
    expect(reg.channel('turn_c')).toBe(c);
    expect(reg.retained).toEqual({ channels: 2, bytes: 2_524 });
    reg.close();
  });

  it('drops finished channels after replayMs', () => {
    vi.useFakeTimers();
    const reg = new TurnRegistry({ replayMs: 5_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const a = turnLike(reg, 'turn_a');
    finishWith(a, 'x');
    vi.advanceTimersByTime(4_000);
    expect(reg.channel('turn_a')).toBe(a);
    vi.advanceTimersByTime(6_000); // the sweep at t=10 s finds it 10 s old
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(reg.retained).toEqual({ channels: 0, bytes: 0 });
    reg.close();
  });

  it('a discarded (withdrawn) turn leaves nothing to replay', () => {
    const reg = new TurnRegistry({ replayMs: 60_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const a = turnLike(reg, 'turn_a');
    reg.discard('turn_a');
    finishWith(a, 'x');
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(reg.retained.channels).toBe(0);
    reg.close();
  });
});
