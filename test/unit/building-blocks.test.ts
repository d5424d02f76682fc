import { describe, expect, it } from 'vitest';
import { newId } from '../../src/ids/ids.js';
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
  it('keeps the first 32 distinct words of a long text, in order', () => {
    const text = Array.from({ length: 5000 }, (_, i) => `w${i}`).join(' ');
    expect(toFtsQuery(text)).toBe(Array.from({ length: 32 }, (_, i) => `"w${i}"`).join(' OR '));
    expect(toFtsQuery('stream stream Stream STREAM reply')).toBe('"stream" OR "reply"');
  });
  it('asks for each Porter2 stem once, in the form first written, and keeps API names whole', () => {
    expect(toFtsQuery('listeners listening listen once')).toBe('"listeners" OR "once"');
    expect(toFtsQuery('Why does readFile not use streams when streaming?')).toBe('"readfile" OR "streams"');
  });
  it('drops words over 64 characters (a whitespace-free run of CJK is one word) and keeps 64', () => {
    expect(toFtsQuery('漢'.repeat(32_000))).toBe('');
    expect(toFtsQuery(`${'漢'.repeat(65)} tokens`)).toBe('"tokens"');
    expect(toFtsQuery('字'.repeat(64))).toBe(`"${'字'.repeat(64)}"`);
  });
});

describe('Router', () => {
  const route = (method: RouteDef['method'], path: string): RouteDef =>
    ({ method, path, summary: '', tag: '', access: { credentials: [], roles: null }, responses: [], handle: () => ({ kind: 'empty', status: 204 }) });
  const router = new Router([route('GET', '/v1/agents'), route('POST', '/v1/agents'), route('GET', '/v1/agents/{agent_id}'), route('POST', '/v1/agents/{agent_id}/chat')]);

  it('matches templates and decodes params', () => {
    const m = router.match('POST', '/v1/agents/agt_1%2Fx/chat');
    expect(m).toMatchObject({ ok: true, params: { agent_id: 'agt_1/x' } });
    expect(router.match('GET', '/v1/agents/')).toMatchObject({ ok: true, route: { path: '/v1/agents' } });
  });
  it('matches HEAD to the GET route of a path, and to nothing else', () => {
    expect(router.match('HEAD', '/v1/agents/agt_1')).toMatchObject({ ok: true, route: { method: 'GET', path: '/v1/agents/{agent_id}' }, params: { agent_id: 'agt_1' } });
    expect(router.match('HEAD', '/v1/agents/agt_1/chat')).toEqual({ ok: false, reason: 'method_not_allowed', allow: ['POST'] });
  });
  it('says 405 with the allowed methods when only the method is wrong, 404 otherwise', () => {
    expect(router.match('DELETE', '/v1/agents')).toEqual({ ok: false, reason: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] });
    expect(router.match('GET', '/v1/agents/agt_1/chat')).toEqual({ ok: false, reason: 'method_not_allowed', allow: ['POST'] });
    expect(router.match('GET', '/v1/agents/a/b/c')).toEqual({ ok: false, reason: 'not_found' });
    expect(router.match('GET', '/v1/agents/%E0%A4%A')).toEqual({ ok: false, reason: 'not_found' });
  });
});

describe('SSE framing', () => {
  it('frames an event as id + one data line + blank line', () => {
    expect(sseFrame('turn_9', 1, '{"type":"token","delta":"line1\\nline2"}')).toBe('id: turn_9:1\ndata: {"type":"token","delta":"line1\\nline2"}\n\n');
  });
});
