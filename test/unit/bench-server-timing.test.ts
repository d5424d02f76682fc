/** Reading a Parley stream's timing back from a raw response body (bench/lib/server-timing.ts). */
import { describe, expect, it } from 'vitest';
import { firstTokenSplit, timingOf } from '../../bench/lib/server-timing.js';

const T = { queued_ms: 0.01, setup_ms: 0.4, upstream_first_byte_ms: 20.5, first_token_ms: 20.6, total_ms: 25 };

describe('timingOf', () => {
  it('reads the last timing object of a raw body, native SSE or OpenAI chunks, chunk-size lines and all', () => {
    const native = `7a\r\nid: t:1\ndata: {"type":"conversation"}\n\n\r\n90\r\nid: t:5\ndata: {"type":"usage","usage":{"input_tokens":1},"timing":${JSON.stringify(T)}}\n\n\r\n0\r\n\r\n`;
    expect(timingOf(native)).toEqual(T);
    const openai = `data: {"choices":[{"delta":{}}],"parley":{"conversation_id":"c","timing":{"queued_ms":1,"setup_ms":2,"upstream_first_byte_ms":null,"first_token_ms":null,"total_ms":3}}}\n\n`
      + `data: {"parley":{"timing":${JSON.stringify(T)}}}\n\ndata: [DONE]\n\n`;
    expect(timingOf(openai)).toEqual(T);
  });

  it('is undefined without a timing object, or for one that is not a timing', () => {
    expect(timingOf('data: {"type":"done"}\n\n')).toBeUndefined();
    expect(timingOf('"timing":null')).toBeUndefined();
    expect(timingOf('"timing":{"queued_ms":1}')).toBeUndefined();
    expect(timingOf(`"timing":${JSON.stringify({ ...T, setup_ms: '0.4' })}`)).toBeUndefined();
    expect(timingOf('"timing":{"queued_ms":1,oops}')).toBeUndefined();
    expect(timingOf(`"timing":${JSON.stringify({ ...T, total_ms: null })}`)).toEqual({ ...T, total_ms: null });
  });
});

describe('firstTokenSplit', () => {
  it('splits the first token into the model\'s share, Parley\'s, and the way to the client', () => {
    const split = firstTokenSplit(T, 21)!;
    expect(split.model).toBeCloseTo(20.1, 9);
    expect(split.parley).toBeCloseTo(0.5, 9);
    expect(split.clientMinusServer).toBeCloseTo(0.4, 9);
  });

  it('is undefined when a step did not happen (no upstream: the builtin model; no token: a failure)', () => {
    expect(firstTokenSplit({ ...T, upstream_first_byte_ms: null }, 21)).toBeUndefined();
    expect(firstTokenSplit({ ...T, first_token_ms: null }, 21)).toBeUndefined();
    expect(firstTokenSplit({ ...T, setup_ms: null }, 21)).toBeUndefined();
  });
});
