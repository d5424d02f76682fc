import { afterEach, describe, expect, it, vi } from 'vitest';
import { subscribeFrom, TurnChannel, type ChannelSubscriber } from '../../src/runtime/turn/turn-channel.js';
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

/** A channel whose own client subscribes later (ChatService.send's channels). */
const ownChannel = (maxChars = 1_000_000) => new TurnChannel('turn_1', 'conv_1', 'org_1', { maxChars }, undefined, true);

/** A subscriber recording what it gets. */
const recorder = () => {
  const seen: Seen[] = [];
  let ended = 0;
  const sub: ChannelSubscriber = { onEvent: (seq, event, json) => seen.push({ seq, event, json }), onEnd: () => { ended++; } };
  return { sub, seen, ended: () => ended };
};

/** Subscribes as the turn's own client (subscribeOrigin). */
const collectOwn = (ch: TurnChannel) => {
  const r = recorder();
  const unsubscribe = ch.subscribeOrigin(r.sub);
  return { ...r, unsubscribe };
};

const CONVERSATION: StreamEvent = { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' };
const CONVERSATION_JSON = '{"type":"conversation","conversation_id":"conv_1","turn_id":"turn_1"}';
const DONE_JSON = '{"type":"done","finish_reason":"stop"}';

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

describe('TurnChannel: the turn\'s own client never depends on replay retention', () => {
  it('gets every event after the replay was dropped (the budget evicted it), and then the buffer is freed', () => {
    const ch = ownChannel();
    expect(ch.awaitsOrigin).toBe(true);
    ch.emit(CONVERSATION);
    ch.emit({ type: 'token', delta: 'Hel' });
    ch.emit({ type: 'token', delta: 'lo' });
    ch.emit({ type: 'done', finish_reason: 'stop' });
    ch.dropReplay();
    expect(ch.isReplayable).toBe(false);
    // A reader is refused: the replay is gone for everybody else.
    expect(ch.subscribe(recorder().sub, 0)).toBeUndefined();
    // Still held for the turn's own client alone: conversation (69) + "Hel" and "lo" with an offset each (7) + done (38).
    expect(ch.retainedChars).toBe(69 + 7 + 38);
    const own = collectOwn(ch);
    expect(own.seen).toEqual([
      { seq: 1, event: CONVERSATION, json: CONVERSATION_JSON },
      { seq: 2, event: { type: 'token', delta: 'Hel' }, json: '{"type":"token","delta":"Hel"}' },
      { seq: 3, event: { type: 'token', delta: 'lo' }, json: '{"type":"token","delta":"lo"}' },
      { seq: 4, event: { type: 'done', finish_reason: 'stop' }, json: DONE_JSON },
    ]);
    expect(own.ended()).toBe(1);
    expect(own.unsubscribe).toBeTypeOf('function');
    expect(ch.awaitsOrigin).toBe(false);
    expect(ch.retainedChars).toBe(0);
  });

  it('past the per-turn cap keeps the events for its own client, then stops keeping once the client has them', () => {
    const ch = ownChannel(100);
    ch.emit(CONVERSATION);
    for (let i = 0; i < 10; i++) ch.emit({ type: 'token', delta: '0123456789' });
    expect(ch.isReplayable).toBe(false);
    expect(ch.retainedChars).toBe(69 + 10 * 11);
    expect(ch.subscribe(recorder().sub, 0)).toBeUndefined();
    const own = collectOwn(ch);
    expect(own.seen.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(own.seen.slice(1).map((e) => e.event)).toEqual(Array(10).fill({ type: 'token', delta: '0123456789' }));
    expect(ch.retainedChars).toBe(0);
    // Live from here, nothing kept any more.
    ch.emit({ type: 'token', delta: 'z' });
    ch.emit({ type: 'done', finish_reason: 'stop' });
    expect(ch.retainedChars).toBe(0);
    expect(own.seen.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(own.seen.at(-1)!.json).toBe(DONE_JSON);
    expect(own.ended()).toBe(1);
  });

  it('while replayable, its own client subscribing changes nothing for readers', () => {
    const ch = ownChannel();
    ch.emit(CONVERSATION);
    ch.emit({ type: 'token', delta: 'ab' });
    const own = collectOwn(ch);
    ch.emit({ type: 'done', finish_reason: 'stop' });
    expect(own.seen.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(ch.isReplayable).toBe(true);
    expect(ch.retainedChars).toBe(69 + 3 + 38);
    expect(collect(ch, 1).seen.map((e) => e.seq)).toEqual([2, 3]);
    // The replay is dropped later as for any reader.
    ch.dropReplay();
    expect(ch.retainedChars).toBe(0);
  });

  it('releaseOrigin: what was kept for its own client alone is freed; a replayable buffer stays for readers', () => {
    const dropped = ownChannel();
    dropped.emit(CONVERSATION);
    dropped.dropReplay();
    expect(dropped.retainedChars).toBe(69);
    dropped.releaseOrigin();
    expect(dropped.awaitsOrigin).toBe(false);
    expect(dropped.retainedChars).toBe(0);
    dropped.emit({ type: 'token', delta: 'not kept' });
    expect(dropped.retainedChars).toBe(0);
    // Its own client, coming after all, is a reader like any other: refused.
    expect(dropped.subscribeOrigin(recorder().sub)).toBeUndefined();

    const kept = ownChannel();
    kept.emit(CONVERSATION);
    kept.releaseOrigin();
    expect(kept.retainedChars).toBe(69);
    expect(collect(kept).seen.map((e) => e.seq)).toEqual([1]);
    kept.dropReplay();
    expect(kept.retainedChars).toBe(0);
  });

  it('its own client subscribing twice: the second time is a reader from the start', () => {
    const ch = ownChannel(100);
    ch.emit(CONVERSATION);
    for (let i = 0; i < 4; i++) ch.emit({ type: 'token', delta: '0123456789' });
    expect(ch.isReplayable).toBe(false);
    expect(collectOwn(ch).seen).toHaveLength(5);
    expect(ch.subscribeOrigin(recorder().sub)).toBeUndefined();
  });

  it('a channel not made for an own client: subscribeOrigin is subscribe(sub, 0), and dropReplay frees at once', () => {
    const ch = channel();
    expect(ch.awaitsOrigin).toBe(false);
    ch.emit(CONVERSATION);
    expect(collectOwn(ch).seen.map((e) => e.seq)).toEqual([1]);
    ch.dropReplay();
    expect(ch.retainedChars).toBe(0);
    expect(ch.subscribeOrigin(recorder().sub)).toBeUndefined();
  });

  it('subscribeFrom: \'origin\' subscribes the own client, a number a reader after it', () => {
    const ch = ownChannel();
    ch.emit(CONVERSATION);
    ch.emit({ type: 'token', delta: 'a' });
    ch.dropReplay();
    const reader = recorder();
    expect(subscribeFrom(ch, reader.sub, 1)).toBeUndefined();
    expect(reader.seen).toEqual([]);
    const own = recorder();
    expect(subscribeFrom(ch, own.sub, 'origin')).toBeTypeOf('function');
    expect(own.seen.map((e) => e.seq)).toEqual([1, 2]);

    const readable = channel();
    readable.emit(CONVERSATION);
    readable.emit({ type: 'token', delta: 'a' });
    const after1 = recorder();
    subscribeFrom(readable, after1.sub, 1);
    expect(after1.seen.map((e) => e.seq)).toEqual([2]);
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

  it('a turn that ended before its own client subscribed, then evicted by the next (budget 0), still reaches that client whole', () => {
    const reg = new TurnRegistry({ replayMs: 60_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 0 });
    const a = turnLike(reg, 'turn_a');
    a.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_a' });
    finishWith(a, 'answer a');
    // The newest finished turn stays: 2 x (69 + 9 + 38) + 1,024 bytes.
    expect(reg.retained).toEqual({ channels: 1, bytes: 1_256 });
    const b = turnLike(reg, 'turn_b');
    b.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_b' });
    finishWith(b, 'answer bb');
    // B's end evicted A: no reader finds it, and only B is counted (2 x (69 + 10 + 38) + 1,024).
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(reg.channel('turn_b')).toBe(b);
    expect(a.isReplayable).toBe(false);
    expect(reg.retained).toEqual({ channels: 1, bytes: 1_258 });
    // A's own response attaches now: it gets every event, conversation to done.
    const own = collectOwn(a);
    expect(own.seen.map((e) => e.event)).toEqual([
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_a' },
      { type: 'token', delta: 'answer a' },
      { type: 'done', finish_reason: 'stop' },
    ]);
    expect(own.ended()).toBe(1);
    expect(a.retainedChars).toBe(0);
    expect(reg.retained).toEqual({ channels: 1, bytes: 1_258 });
    // B's own response too, and B stays replayable for readers.
    expect(collectOwn(b).seen.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(collect(b, 0).seen.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(reg.retained).toEqual({ channels: 1, bytes: 1_258 });
    reg.close();
  });

  it('a channel dropped by replayMs before its own client subscribed still reaches that client', () => {
    vi.useFakeTimers();
    const reg = new TurnRegistry({ replayMs: 1_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const a = turnLike(reg, 'turn_a');
    finishWith(a, 'late');
    vi.advanceTimersByTime(3_000);
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(reg.retained).toEqual({ channels: 0, bytes: 0 });
    expect(collectOwn(a).seen.map((e) => e.event)).toEqual([{ type: 'token', delta: 'late' }, { type: 'done', finish_reason: 'stop' }]);
    reg.close();
  });

  it('the channels it makes await their own client; with replayMs 0 nothing is kept for readers, all for that client', () => {
    const reg = new TurnRegistry({ replayMs: 0, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const a = turnLike(reg, 'turn_a');
    expect(a.awaitsOrigin).toBe(true);
    finishWith(a, 'x');
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(reg.retained).toEqual({ channels: 0, bytes: 0 });
    expect(collectOwn(a).seen.map((e) => e.seq)).toEqual([1, 2]);
    reg.close();
  });

  it('keeps finished channels whose total is exactly the budget', () => {
    // 2 x (81 + 38) + 1,024 = 1,262 bytes each, as above; the budget is exactly two of them.
    const reg = new TurnRegistry({ replayMs: 60_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 2_524 });
    const a = turnLike(reg, 'turn_a');
    const b = turnLike(reg, 'turn_b');
    finishWith(a, 'x'.repeat(80));
    finishWith(b, 'y'.repeat(80));
    expect(reg.retained).toEqual({ channels: 2, bytes: 2_524 });
    expect(reg.channel('turn_a')).toBe(a);
    reg.close();
  });

  it('sweeps once per replayMs: a channel exactly replayMs old stays, an older one goes, a younger one stays', () => {
    vi.useFakeTimers();
    const reg = new TurnRegistry({ replayMs: 5_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const a = turnLike(reg, 'turn_a');
    const b = turnLike(reg, 'turn_b');
    finishWith(a, 'x');
    vi.advanceTimersByTime(5_000); // the sweep at t=5 s: a is exactly 5 s old
    expect(reg.channel('turn_a')).toBe(a);
    vi.advanceTimersByTime(1_000);
    finishWith(b, 'y');
    vi.advanceTimersByTime(3_999); // no sweep between t=5 s and t=10 s
    expect(reg.channel('turn_a')).toBe(a);
    vi.advanceTimersByTime(1); // the sweep at t=10 s: a is 10 s old, b 4 s
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(reg.channel('turn_b')).toBe(b);
    expect(a.isReplayable).toBe(false);
    expect(reg.retained.channels).toBe(1);
    reg.close();
  });

  it('sweeps at least once a second when replayMs is shorter, and close stops the sweeps', () => {
    vi.useFakeTimers();
    const reg = new TurnRegistry({ replayMs: 10, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const a = turnLike(reg, 'turn_a');
    finishWith(a, 'x');
    vi.advanceTimersByTime(999);
    expect(reg.channel('turn_a')).toBe(a);
    vi.advanceTimersByTime(1);
    expect(reg.channel('turn_a')).toBeUndefined();
    expect(vi.getTimerCount()).toBe(1);
    reg.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('lists its running turns, and forgets them as they end', () => {
    const reg = new TurnRegistry({ replayMs: 60_000, perTurn: { maxChars: 10_000 }, maxRetainedBytes: 1_000_000 });
    const a = turnLike(reg, 'turn_a');
    turnLike(reg, 'turn_b');
    expect([...reg.all()].map((t) => t.id)).toEqual(['turn_a', 'turn_b']);
    finishWith(a, 'x');
    expect([...reg.all()].map((t) => t.id)).toEqual(['turn_b']);
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
