import { describe, expect, it } from 'vitest';
import { newId } from '../../src/ids/ids.js';
import { TurnChannel, type ChannelEntry } from '../../src/runtime/turn-channel.js';
import { toFtsQuery } from '../../src/store/sqlite/search-query.js';
import { Router } from '../../src/transport/http/router.js';
import { sseFrame } from '../../src/transport/sse/sse-writer.js';
import type { RouteDef } from '../../src/transport/http/types.js';

describe('ids', () => {
  it('carry the prefix and sort in creation order, even within one millisecond', () => {
    const ids = Array.from({ length: 500 }, () => newId('msg'));
    for (const id of ids) expect(id).toMatch(/^msg_[0-9A-Z]{26}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('toFtsQuery', () => {
  it('quotes each word so user text cannot form FTS5 operators', () => {
    expect(toFtsQuery('How do I use NEAR(a b) OR "x"* -y?')).toBe('"near" OR "b" OR "x" OR "y"');
    expect(toFtsQuery('createHash sha256')).toBe('"createhash" OR "sha256"');
  });
  it('returns empty for text with only stopwords or punctuation', () => {
    expect(toFtsQuery('how do I?')).toBe('');
    expect(toFtsQuery('!!! ...')).toBe('');
  });
});

describe('Router', () => {
  const route = (method: RouteDef['method'], path: string): RouteDef =>
    ({ method, path, summary: '', tag: '', auth: 'none', responses: [], handle: () => ({ kind: 'empty', status: 204 }) });
  const router = new Router([route('GET', '/v1/agents'), route('POST', '/v1/agents'), route('GET', '/v1/agents/{agent_id}'), route('POST', '/v1/agents/{agent_id}/chat')]);

  it('matches templates and decodes params', () => {
    const m = router.match('POST', '/v1/agents/agt_1%2Fx/chat');
    expect(m).toMatchObject({ ok: true, params: { agent_id: 'agt_1/x' } });
    expect(router.match('GET', '/v1/agents/')).toMatchObject({ ok: true, route: { path: '/v1/agents' } });
  });
  it('says 405 with the allowed methods when only the method is wrong, 404 otherwise', () => {
    expect(router.match('DELETE', '/v1/agents')).toEqual({ ok: false, reason: 'method_not_allowed', allow: ['GET', 'POST'] });
    expect(router.match('GET', '/v1/agents/a/b/c')).toEqual({ ok: false, reason: 'not_found' });
    expect(router.match('GET', '/v1/agents/%E0%A4%A')).toEqual({ ok: false, reason: 'not_found' });
  });
});

describe('TurnChannel', () => {
  const collect = (ch: TurnChannel, after = 0) => {
    const seen: ChannelEntry[] = [];
    let ended = 0;
    ch.subscribe({ onEvent: (e) => seen.push(e), onEnd: () => { ended++; } }, after);
    return { seen, ended: () => ended };
  };

  it('replays after a sequence number, then follows live, and ends once', () => {
    const ch = new TurnChannel('turn_1', 'conv_1', 'org_1');
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

  it('a throwing subscriber is dropped without affecting the others', () => {
    const ch = new TurnChannel('turn_1', 'conv_1', 'org_1');
    ch.subscribe({ onEvent: () => { throw new Error('socket gone'); }, onEnd: () => {} });
    const ok = collect(ch);
    ch.emit({ type: 'token', delta: 'x' });
    ch.emit({ type: 'token', delta: 'y' });
    expect(ok.seen.length).toBe(2);
    expect(ch.subscriberCount).toBe(1);
  });

  it('frames SSE as id + one data line + blank line', () => {
    const ch = new TurnChannel('turn_9', 'conv_1', 'org_1');
    let frame = '';
    ch.subscribe({ onEvent: (e) => { frame = sseFrame('turn_9', e); }, onEnd: () => {} });
    ch.emit({ type: 'token', delta: 'line1\nline2' });
    expect(frame).toBe('id: turn_9:1\ndata: {"type":"token","delta":"line1\\nline2"}\n\n');
  });
});
