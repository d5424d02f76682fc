import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TurnChannel } from '../../src/runtime/turn/turn-channel.js';
import { SSE_PING, SseHub, type SseSink } from '../../src/transport/sse/sse-writer.js';

/** A sink whose socket never takes anything: every byte written stays buffered. */
function stuckSink() {
  const sink = {
    written: [] as string[],
    ended: 0,
    aborted: 0,
    buffered: 0,
    write(chunk: string) { sink.written.push(chunk); sink.buffered += Buffer.byteLength(chunk); },
    end() { sink.ended++; },
    bufferedBytes() { return sink.buffered; },
    abort() { sink.aborted++; },
  };
  return sink satisfies SseSink;
}

const channel = () => new TurnChannel('turn_1', 'conv_1', 'org_1', { maxChars: 1_000_000 });

describe('SseHub slow-consumer bound', () => {
  let hub: SseHub | undefined;
  const warnings: unknown[][] = [];
  const logger = { warn: (...args: unknown[]) => { warnings.push(args); } } as never;

  beforeEach(() => { vi.useFakeTimers(); warnings.length = 0; });
  afterEach(() => { hub?.close(); vi.useRealTimers(); });

  it('counts heartbeats: a stuck idle stream is cut once its pings pass the bound', () => {
    hub = new SseHub({ heartbeatMs: 100, maxBufferedBytes: 3 * SSE_PING.length, logger });
    const ch = channel();
    const sink = stuckSink();
    hub.attach(sink, ch, 0);
    vi.advanceTimersByTime(350);
    expect(sink.written).toEqual([SSE_PING, SSE_PING, SSE_PING]);
    expect(sink.aborted).toBe(0);
    vi.advanceTimersByTime(100);
    expect(sink.written).toEqual([SSE_PING, SSE_PING, SSE_PING, SSE_PING]);
    expect(sink.aborted).toBe(1);
    expect(hub.size).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]![0]).toEqual({ turn_id: 'turn_1', buffered_bytes: 4 * SSE_PING.length, max_buffered_bytes: 3 * SSE_PING.length });
    // Nothing more reaches the cut stream, and the channel no longer holds it.
    vi.advanceTimersByTime(1000);
    ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    expect(sink.written).toHaveLength(4);
    expect(ch.subscriberCount).toBe(0);
  });

  it('cuts only the stuck subscriber; the turn and a reading subscriber go on to the end', () => {
    hub = new SseHub({ heartbeatMs: 60_000, maxBufferedBytes: 200, logger });
    const ch = channel();
    const stuck = stuckSink();
    const reading = stuckSink();
    reading.bufferedBytes = () => 0;
    hub.attach(stuck, ch, 0);
    hub.attach(reading, ch, 0);
    ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    for (let i = 0; i < 5; i++) ch.emit({ type: 'token', delta: 'x'.repeat(40) });
    ch.emit({ type: 'done', finish_reason: 'stop' });
    expect(stuck.aborted).toBe(1);
    expect(stuck.ended).toBe(0);
    // Events of one synchronous run go out as one write.
    expect(reading.written).toHaveLength(1);
    const frames = reading.written[0]!.split('\n\n').filter(Boolean);
    expect(frames).toHaveLength(7);
    expect(frames.at(-1)).toBe('id: turn_1:7\ndata: {"type":"done","finish_reason":"stop"}');
    expect(reading.ended).toBe(1);
    expect(reading.aborted).toBe(0);
    expect(warnings).toHaveLength(1);
  });

  it('can cut a stream during the replay of a late subscriber, and then holds no subscription', () => {
    hub = new SseHub({ heartbeatMs: 60_000, maxBufferedBytes: 100, logger });
    const ch = channel();
    ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    for (let i = 0; i < 5; i++) ch.emit({ type: 'token', delta: 'y'.repeat(40) });
    const late = stuckSink();
    hub.attach(late, ch, 0);
    expect(late.aborted).toBe(1);
    expect(ch.subscriberCount).toBe(0);
    expect(hub.size).toBe(0);
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => new SseHub({ heartbeatMs: 100, maxBufferedBytes: 0 })).toThrow(RangeError);
  });

  it('writes the events of one synchronous run together, and later ones in a later write', async () => {
    hub = new SseHub({ heartbeatMs: 60_000, maxBufferedBytes: 1_000_000 });
    const ch = channel();
    const sink = stuckSink();
    sink.bufferedBytes = () => 0;
    hub.attach(sink, ch, 0);
    ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    ch.emit({ type: 'token', delta: 'a' });
    expect(sink.written).toEqual([]);
    await Promise.resolve();
    expect(sink.written).toEqual([
      'id: turn_1:1\ndata: {"type":"conversation","conversation_id":"conv_1","turn_id":"turn_1"}\n\nid: turn_1:2\ndata: {"type":"token","delta":"a"}\n\n',
    ]);
    ch.emit({ type: 'token', delta: 'b' });
    await Promise.resolve();
    expect(sink.written).toHaveLength(2);
    expect(sink.written[1]).toBe('id: turn_1:3\ndata: {"type":"token","delta":"b"}\n\n');
  });
});

describe('SseHub with a framer (another wire format, e.g. OpenAI chunks)', () => {
  it('writes what the framer makes of each event; an event framed as nothing schedules no write', async () => {
    const hub = new SseHub({ heartbeatMs: 60_000 });
    try {
      const ch = channel();
      const sink = stuckSink();
      sink.bufferedBytes = () => 0;
      const seen: Array<[number, string, string]> = [];
      hub.attach(sink, ch, 0, {
        frame(seq, event, json) {
          seen.push([seq, event.type, json]);
          return event.type === 'token' ? `data: ${event.delta}\n\n` : event.type === 'done' ? 'data: [END]\n\n' : '';
        },
      });
      ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
      await Promise.resolve();
      expect(sink.written).toEqual([]);
      ch.emit({ type: 'token', delta: 'a' });
      ch.emit({ type: 'token', delta: 'b' });
      await Promise.resolve();
      expect(sink.written).toEqual(['data: a\n\ndata: b\n\n']);
      ch.emit({ type: 'message', message_id: 'msg_1' });
      ch.emit({ type: 'done', finish_reason: 'stop' });
      expect(sink.written).toEqual(['data: a\n\ndata: b\n\n', 'data: [END]\n\n']);
      expect(sink.ended).toBe(1);
      expect(seen).toEqual([
        [1, 'conversation', '{"type":"conversation","conversation_id":"conv_1","turn_id":"turn_1"}'],
        [2, 'token', '{"type":"token","delta":"a"}'], [3, 'token', '{"type":"token","delta":"b"}'],
        [4, 'message', '{"type":"message","message_id":"msg_1"}'], [5, 'done', '{"type":"done","finish_reason":"stop"}'],
      ]);
    } finally {
      hub.close();
    }
  });
});

describe('SseHub: the turn\'s own response', () => {
  it('from \'origin\' writes every event of a turn whose replay was dropped before it attached; a reader from 0 gets nothing', () => {
    const hub = new SseHub({ heartbeatMs: 60_000 });
    try {
      const ch = new TurnChannel('turn_1', 'conv_1', 'org_1', { maxChars: 1_000_000 }, undefined, true);
      ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
      ch.emit({ type: 'token', delta: 'a' });
      ch.emit({ type: 'done', finish_reason: 'stop' });
      ch.dropReplay(); // the budget evicted it
      const reader = stuckSink();
      hub.attach(reader, ch, 0);
      expect(reader.written).toEqual([]);
      expect(reader.ended).toBe(1);
      const own = stuckSink();
      own.bufferedBytes = () => 0;
      hub.attach(own, ch, 'origin');
      expect(own.written).toEqual([
        'id: turn_1:1\ndata: {"type":"conversation","conversation_id":"conv_1","turn_id":"turn_1"}\n\n'
        + 'id: turn_1:2\ndata: {"type":"token","delta":"a"}\n\nid: turn_1:3\ndata: {"type":"done","finish_reason":"stop"}\n\n',
      ]);
      expect(own.ended).toBe(1);
      expect(hub.size).toBe(0);
    } finally {
      hub.close();
    }
  });
});
