/**
 * Hostile and malformed input over real HTTP (API.md "Conventions" and "Errors"): invalid JSON,
 * unknown fields, wrong types, oversized bodies (Content-Length and chunked), unknown routes and
 * methods, unsupported media types, bad list parameters, and raw malformed HTTP on a socket. The
 * server must answer each with the documented error and keep serving.
 */
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectApiError, nodeRequest, sendRaw } from '../helpers/raw-http.js';

/** Default configuration (1 MiB JSON bodies). */
let srv: TestServer;
/** JSON bodies capped at 4096 bytes. */
let small: TestServer;
const SMALL_LIMIT = 4096;

beforeAll(async () => {
  [srv, small] = await Promise.all([startTestServer(), startTestServer({ PARLEY_BODY_LIMIT_BYTES: String(SMALL_LIMIT) })]);
});
afterAll(async () => { await Promise.all([srv?.close(), small?.close()]); });

const validationFailed = async (res: Response) => {
  const body = await expectApiError(res, 400, 'invalid_request_error', 'validation_failed');
  expect(Array.isArray(body.error.errors)).toBe(true);
  for (const e of body.error.errors!) {
    expect(typeof e.path).toBe('string');
    expect(typeof e.message).toBe('string');
  }
  return body.error.errors!.map((e) => e.path);
};

let agentId: string;
let kbId: string;
beforeAll(async () => {
  agentId = ((await (await srv.api('/v1/agents', { body: { name: 'input agent' } })).json()) as { id: string }).id;
  kbId = ((await (await srv.api('/v1/knowledge-bases', { body: { name: 'input kb' } })).json()) as { id: string }).id;
});

describe('JSON bodies', () => {
  it.each([
    ['truncated', '{"name":'],
    ['unquoted key', '{name:"x"}'],
    ['single quotes', "{'name':'x'}"],
    ['trailing comma', '{"name":"x",}'],
    ['two documents', '{"name":"x"}{"name":"y"}'],
    ['not JSON at all', 'name=x'],
  ])('invalid JSON (%s) -> 400 invalid_json', async (_label, text) => {
    await expectApiError(await srv.api('/v1/agents', { body: text }), 400, 'invalid_request_error', 'invalid_json');
  });

  it('a JSON body that is not valid UTF-8 -> 400 invalid_json (not silently turned into U+FFFD)', async () => {
    const bytes = Buffer.concat([Buffer.from('{"name":"bad '), Buffer.from([0xff, 0xfe, 0x80]), Buffer.from('"}')]);
    const res = await fetch(`${srv.url}/v1/agents`, { method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' }, body: bytes });
    if (res.status === 201) {
      // Clean up so later listings are unaffected, then fail.
      const created = await res.json() as { id: string; name: string };
      await srv.api(`/v1/agents/${created.id}`, { method: 'DELETE' });
      expect.fail(`201: invalid UTF-8 accepted and stored as ${JSON.stringify(created.name)}`);
    }
    await expectApiError(res, 400, 'invalid_request_error', 'invalid_json');
  });

  it('invalid JSON on chat -> 400 invalid_json (not 500, not a turn)', async () => {
    await expectApiError(await srv.api(`/v1/agents/${agentId}/chat`, { body: '{"message": "hi"' }), 400, 'invalid_request_error', 'invalid_json');
  });

  it.each([['[]'], ['null'], ['42'], ['"name"']])('a JSON body that is not an object (%s) -> validation_failed', async (text) => {
    const paths = await validationFailed(await srv.api('/v1/agents', { body: text }));
    expect(paths.length).toBeGreaterThan(0);
  });

  it('unknown top-level field -> validation_failed naming it', async () => {
    expect(await validationFailed(await srv.api('/v1/agents', { body: { name: 'x', colour: 'red' } }))).toContain('colour');
    expect(await validationFailed(await srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'hi', strem: true } }))).toContain('strem');
    expect(await validationFailed(await srv.api('/v1/knowledge-bases', { body: { name: 'kb', owner: 'me' } }))).toContain('owner');
    expect(await validationFailed(await srv.api(`/v1/agents/${agentId}`, { method: 'PATCH', body: { nmae: 'typo' } }))).toContain('nmae');
  });

  it('unknown nested field -> validation_failed at its dotted path (model.temprature)', async () => {
    const paths = await validationFailed(await srv.api('/v1/agents', { body: { name: 'x', model: { provider: 'builtin', name: 'builtin', temprature: 0.2 } } }));
    expect(paths).toContain('model.temprature');
    const safety = await validationFailed(await srv.api('/v1/agents', { body: { name: 'x', safety: { blocked_phrase: ['x'] } } }));
    expect(safety).toContain('safety.blocked_phrase');
    const patch = await validationFailed(await srv.api(`/v1/agents/${agentId}`, { method: 'PATCH', body: { model: { provider: 'builtin', name: 'b', temprature: 1 } } }));
    expect(patch).toContain('model.temprature');
  });

  it('every problem of a body is reported at once', async () => {
    const paths = await validationFailed(await srv.api('/v1/agents', { body: { name: 5, colour: 'red', tools: ['nope'] } }));
    expect(paths).toEqual(expect.arrayContaining(['name', 'colour', 'tools.0']));
  });

  it('nothing was created by the refused bodies', async () => {
    const list = await (await srv.api('/v1/agents?limit=100')).json() as { data: { name: string }[] };
    expect(list.data.map((a) => a.name)).toEqual(['input agent']);
  });
});

describe('Content-Type of JSON bodies (415 unsupported_content_type)', () => {
  const post = (path: string, body: string, contentType: string | undefined, method = 'POST') => {
    const headers: Record<string, string> = { authorization: `Bearer ${srv.apiKey}` };
    if (contentType !== undefined) headers['content-type'] = contentType;
    return fetch(`${srv.url}${path}`, { method, headers, body });
  };
  const agentBody = (name: string) => JSON.stringify({ name });

  it.each([
    ['no Content-Type', undefined],
    ['text/plain', 'text/plain'],
    ['form encoding', 'application/x-www-form-urlencoded'],
    ['a look-alike type', 'application/jsonp'],
    ['JSON in another charset', 'application/json; charset=iso-8859-1'],
  ])('a JSON body with %s -> 415, nothing created', async (_label, contentType) => {
    await expectApiError(await post('/v1/agents', agentBody('refused type'), contentType), 415, 'unsupported_media_type_error', 'unsupported_content_type');
  });

  it('chat with a JSON body sent as text/plain -> 415 (no turn is started)', async () => {
    await expectApiError(await post(`/v1/agents/${agentId}/chat`, JSON.stringify({ message: 'hi' }), 'text/plain;charset=UTF-8'), 415, 'unsupported_media_type_error', 'unsupported_content_type');
  });

  it.each([
    ['Application/JSON', 'Application/JSON'],
    ['charset=UTF-8', 'application/json; charset=UTF-8'],
    ['a quoted charset, no space', 'application/json;charset="utf-8"'],
    ['another parameter', 'application/json; profile=x'],
  ])('application/json with %s is accepted', async (label, contentType) => {
    const res = await post('/v1/agents', agentBody(`typed ${label}`), contentType);
    expect(res.status, await res.clone().text()).toBe(201);
    await srv.api(`/v1/agents/${((await res.json()) as { id: string }).id}`, { method: 'DELETE' });
  });

  it('an empty body needs no Content-Type: PATCH with none is an empty patch (200), POST with none is validated (400)', async () => {
    const patched = await post(`/v1/agents/${agentId}`, '', undefined, 'PATCH');
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as { name: string }).name).toBe('input agent');
    expect(await validationFailed(await post('/v1/agents', '', undefined))).toContain('name');
  });
});

describe('JSON nesting depth and lone surrogates (400 validation_failed)', () => {
  /**
   * An agent body whose HTTP tool's `parameters` (any JSON Schema: an unknown keyword holds the arrays)
   * nest `levels` deep in total: the body object is level 1, `tools` 2, the tool 3, `parameters` 4.
   */
  const nestedAgent = (levels: number) => `{"name":"deep","tools":[{"type":"http","name":"deep","description":"d","url":"https://api.example.com/x","method":"GET",`
    + `"parameters":{"type":"object","x-deep":${'['.repeat(levels - 4)}1${']'.repeat(levels - 4)}}}]}`;

  it('64 levels are accepted; 65 are refused with the limit named', async () => {
    const ok = await srv.api('/v1/agents', { body: nestedAgent(64) });
    expect(ok.status, await ok.clone().text()).toBe(201);
    await ok.arrayBuffer();
    const refused = await expectApiError(await srv.api('/v1/agents', { body: nestedAgent(65) }), 400, 'invalid_request_error', 'validation_failed');
    expect(refused.error.errors).toEqual([{ path: 'body', message: 'nesting deeper than 64 levels' }]);
  });

  it('100,000 levels (a 200 KB body) are refused the same way, and the server keeps serving', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const refused = await expectApiError(await srv.api('/v1/agents', { body: deep }), 400, 'invalid_request_error', 'validation_failed');
    expect(refused.error.errors).toEqual([{ path: 'body', message: 'nesting deeper than 64 levels' }]);
    expect((await srv.api('/v1/agents')).status).toBe(200);
  });

  it('brackets inside strings do not count as nesting', async () => {
    const res = await srv.api('/v1/agents', { body: `{"name":"${'['.repeat(100)}"}` });
    expect(res.status).toBe(201);
    const created = await res.json() as { id: string; name: string };
    expect(created.name).toBe('['.repeat(100));
    await srv.api(`/v1/agents/${created.id}`, { method: 'DELETE' });
  });

  it.each([
    ['a lone high surrogate in a value', '{"name":"x\\ud800y"}', 'ud800'],
    ['a lone low surrogate in a value', '{"name":"\\uDC00"}', 'uDC00'],
    ['a high surrogate at the end of a string', '{"name":"abc\\ud83d"}', 'ud83d'],
    ['a high surrogate followed by a non-surrogate escape', '{"name":"\\ud83d\\u0041"}', 'ud83d'],
    ['a lone surrogate in a key', '{"name":"x","\\ud800":1}', 'ud800'],
  ])('%s -> 400, never silently changed', async (_label, text, escape) => {
    const refused = await expectApiError(await srv.api('/v1/agents', { body: text }), 400, 'invalid_request_error', 'validation_failed');
    expect(refused.error.errors).toHaveLength(1);
    expect(refused.error.errors![0]!.path).toBe('body');
    expect(refused.error.errors![0]!.message).toContain(`lone surrogate \\${escape}`);
  });

  it('a lone surrogate inside chat metadata keys -> 400 too', async () => {
    await expectApiError(await srv.api(`/v1/agents/${agentId}/chat`, { body: '{"message":"hi","metadata":{"\\udfff":true}}' }), 400, 'invalid_request_error', 'validation_failed');
  });

  it('a surrogate pair is a character (stored as such), and an escaped backslash before "u" is not an escape', async () => {
    const pair = await srv.api('/v1/agents', { body: '{"name":"smile \\ud83d\\ude00"}' });
    expect(pair.status).toBe(201);
    const a = await pair.json() as { id: string; name: string };
    expect(a.name).toBe('smile \u{1F600}');
    const literal = await srv.api('/v1/agents', { body: '{"name":"path \\\\ud800"}' });
    expect(literal.status).toBe(201);
    const b = await literal.json() as { id: string; name: string };
    expect(b.name).toBe('path \\ud800');
    for (const id of [a.id, b.id]) await srv.api(`/v1/agents/${id}`, { method: 'DELETE' });
  });
});

describe('chat request validation', () => {
  const chat = (body: unknown) => srv.api(`/v1/agents/${agentId}/chat`, { body });

  it('missing message -> validation_failed at message', async () => {
    expect(await validationFailed(await chat({}))).toContain('message');
    expect(await validationFailed(await chat({ stream: false }))).toContain('message');
  });

  it('empty message -> validation_failed at message', async () => {
    expect(await validationFailed(await chat({ message: '' }))).toContain('message');
  });

  it('message of 32001 chars -> validation_failed at message; 32000 chars is accepted', async () => {
    expect(await validationFailed(await chat({ message: 'a'.repeat(32_001) }))).toContain('message');
    const ok = await chat({ message: 'hello world '.repeat(2667).slice(0, 32_000) });
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
  });

  it('wrong types -> validation_failed with each path', async () => {
    expect(await validationFailed(await chat({ message: 'hi', stream: 'true' }))).toContain('stream');
    expect(await validationFailed(await chat({ message: 42 }))).toContain('message');
    expect(await validationFailed(await chat({ message: 'hi', conversation_id: 123 }))).toContain('conversation_id');
    expect(await validationFailed(await chat({ message: 'hi', metadata: 'x' }))).toContain('metadata');
    const both = await validationFailed(await chat({ message: ['hi'], stream: 1 }));
    expect(both).toEqual(expect.arrayContaining(['message', 'stream']));
  });

  it('unknown agent id -> 404 not_found (well-formed and garbage ids)', async () => {
    for (const id of ['agt_00000000000000000000000000', 'nope', 'agt_%F0%9F%92%A9']) {
      await expectApiError(await srv.api(`/v1/agents/${id}/chat`, { body: { message: 'hi' } }), 404, 'not_found_error', 'not_found');
    }
    await expectApiError(await srv.api('/v1/agents/agt_00000000000000000000000000/chat', { body: { message: 'hi', stream: true } }), 404, 'not_found_error', 'not_found');
  });

  it('unknown conversation id -> 404 not_found', async () => {
    await expectApiError(await chat({ message: 'hi', conversation_id: 'conv_00000000000000000000000000' }), 404, 'not_found_error', 'not_found');
  });
});

describe('agent and knowledge-base validation', () => {
  it('unknown model provider -> 400 (create and update), agent unchanged', async () => {
    const res = await srv.api('/v1/agents', { body: { name: 'x', model: { provider: 'nope', name: 'x' } } });
    const body = await expectApiError(res, 400, 'invalid_request_error', 'unknown_provider');
    expect(body.error.message).toContain('nope');
    await expectApiError(await srv.api(`/v1/agents/${agentId}`, { method: 'PATCH', body: { model: { provider: 'nope', name: 'x' } } }), 400, 'invalid_request_error', 'unknown_provider');
    const agent = await (await srv.api(`/v1/agents/${agentId}`)).json() as { model: { provider: string } };
    expect(agent.model.provider).toBe('builtin');
  });

  it('missing or blank names -> validation_failed at name', async () => {
    expect(await validationFailed(await srv.api('/v1/agents', { body: {} }))).toContain('name');
    expect(await validationFailed(await srv.api('/v1/agents', { body: { name: '   ' } }))).toContain('name');
    expect(await validationFailed(await srv.api('/v1/knowledge-bases', { body: {} }))).toContain('name');
  });

  it('an unknown knowledge base id -> validation_failed', async () => {
    expect(await validationFailed(await srv.api('/v1/agents', { body: { name: 'x', knowledge_base_ids: ['kb_00000000000000000000000000'] } }))).toContain('knowledge_base_ids');
    expect(await validationFailed(await srv.api('/v1/agents', { body: { name: 'x', knowledge_base_ids: ['not-a-kb'] } }))).toContain('knowledge_base_ids.0');
  });
});

describe('document uploads', () => {
  const upload = (path: string, body: string | Buffer, contentType: string | undefined) => {
    const headers: Record<string, string> = { authorization: `Bearer ${srv.apiKey}` };
    if (contentType !== undefined) headers['content-type'] = contentType;
    return fetch(`${srv.url}/v1/knowledge-bases/${kbId}/documents${path}`, { method: 'POST', headers, body });
  };

  it('Content-Type application/msword (the old .doc format) -> 415 unsupported_content_type', async () => {
    await expectApiError(await upload('?title=Manual', Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), 'application/msword'), 415, 'unsupported_media_type_error', 'unsupported_content_type');
  });

  it('other unsupported types (image/png, octet-stream, none) -> 415', async () => {
    await expectApiError(await upload('?title=x', Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'image/png'), 415, 'unsupported_media_type_error', 'unsupported_content_type');
    await expectApiError(await upload('?title=x', Buffer.from('hello'), 'application/octet-stream'), 415, 'unsupported_media_type_error', 'unsupported_content_type');
    await expectApiError(await upload('?title=x', Buffer.from('hello'), undefined), 415, 'unsupported_media_type_error', 'unsupported_content_type');
  });

  it('raw text/markdown without ?title -> 400 validation_failed', async () => {
    expect(await validationFailed(await upload('', '# Hello\n\nWorld', 'text/markdown'))).toContain('title');
    expect(await validationFailed(await upload('?title=', '# Hello\n\nWorld', 'text/markdown'))).toContain('title');
  });

  it('raw upload with an empty body -> 400 validation_failed', async () => {
    await validationFailed(await upload('?title=Empty', '', 'text/plain'));
  });

  it('JSON upload: invalid JSON, unknown field, wrong content_type -> 400', async () => {
    await expectApiError(await upload('', '{"title":', 'application/json'), 400, 'invalid_request_error', 'invalid_json');
    expect(await validationFailed(await upload('', JSON.stringify({ title: 't', content: 'c', author: 'me' }), 'application/json'))).toContain('author');
    expect(await validationFailed(await upload('', JSON.stringify({ title: 't', content: 'c', content_type: 'application/pdf' }), 'application/json'))).toContain('content_type');
    expect(await validationFailed(await upload('', JSON.stringify({ title: 't' }), 'application/json'))).toContain('content');
  });

  it('unknown knowledge base -> 404', async () => {
    const res = await srv.api('/v1/knowledge-bases/kb_00000000000000000000000000/documents', { body: { title: 't', content: 'c' } });
    await expectApiError(res, 404, 'not_found_error', 'not_found');
  });

  it.each([
    ['10,000 nested block quotes on one line', '> '.repeat(10_000) + 'deep'],
    ['10,000 nested list items on one line', '- '.repeat(10_000) + 'deep'],
    ['2,000 lines, each one quote deeper (2 MB; exhausted a 1 GB heap before)', Array.from({ length: 2000 }, (_, i) => `${'>'.repeat(i + 1)} level ${i}`).join('\n')],
    ['1,000 list levels by indentation', Array.from({ length: 1000 }, (_, i) => `${'  '.repeat(i)}- item ${i}`).join('\n')],
  ])('Markdown with %s fails ingestion with a clear error, and the workers keep serving', async (_label, text) => {
    const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'deep' } })).json() as { id: string };
    const res = await srv.api(`/v1/knowledge-bases/${kb.id}/documents?title=deep`, { body: text, headers: { 'content-type': 'text/markdown' } });
    expect(res.status).toBe(202);
    const { id } = await res.json() as { id: string };
    await srv.parley.knowledge.settled();
    const doc = await (await srv.api(`/v1/knowledge-bases/${kb.id}/documents/${id}`)).json() as { status: string; error: string | null };
    expect(doc).toMatchObject({ status: 'failed', error: 'document nests deeper than 64 levels (block quotes or lists)' });
    const ok = await srv.api(`/v1/knowledge-bases/${kb.id}/documents?title=fine`, { body: `${'> '.repeat(64)}sixty-four levels are fine`, headers: { 'content-type': 'text/markdown' } });
    const fine = await ok.json() as { id: string };
    await srv.parley.knowledge.settled();
    const after = await (await srv.api(`/v1/knowledge-bases/${kb.id}/documents/${fine.id}`)).json() as { status: string; chunk_count: number };
    expect(after).toMatchObject({ status: 'ready', chunk_count: 1 });
  });

  it('no document was created by the refused uploads', async () => {
    const docs = await (await srv.api(`/v1/knowledge-bases/${kbId}/documents`)).json() as { data: unknown[] };
    expect(docs.data).toEqual([]);
  });
});

describe('list and query parameters', () => {
  it.each(['/v1/agents', '/v1/knowledge-bases', '/v1/conversations'])('%s: ?limit=0, 101, abc, 1.5 -> 400 at limit; 1 and 100 are fine', async (path) => {
    for (const bad of ['0', '101', 'abc', '1.5', '-1']) {
      expect(await validationFailed(await srv.api(`${path}?limit=${bad}`))).toContain('limit');
    }
    for (const ok of ['1', '100']) expect((await srv.api(`${path}?limit=${ok}`)).status).toBe(200);
  });

  it('unknown query parameter -> 400', async () => {
    expect(await validationFailed(await srv.api('/v1/agents?limt=5'))).toContain('limt');
  });

  it('search without q, or with k out of range -> 400', async () => {
    expect(await validationFailed(await srv.api(`/v1/knowledge-bases/${kbId}/search`))).toContain('q');
    expect(await validationFailed(await srv.api(`/v1/knowledge-bases/${kbId}/search?q=x&k=0`))).toContain('k');
  });
});

describe('routes and methods', () => {
  it.each([['GET', '/v1/nope'], ['GET', '/nope'], ['POST', '/v1/agents/x/y/z'], ['GET', '/v1'], ['GET', '/']])('%s %s -> 404 not_found JSON', async (method, path) => {
    await expectApiError(await srv.api(path, { method }), 404, 'not_found_error', 'not_found');
  });

  it.each([
    ['PUT', '/v1/agents', ['GET', 'HEAD', 'POST']],
    ['DELETE', '/v1/agents', ['GET', 'HEAD', 'POST']],
    ['POST', '/v1/agents/agt_x', ['GET', 'HEAD', 'PATCH', 'DELETE']],
    ['GET', '/v1/agents/agt_x/chat', ['POST']],
    ['PATCH', '/healthz', ['GET', 'HEAD']],
    ['POST', '/v1/openapi.json', ['GET', 'HEAD']],
  ])('%s %s -> 405 with Allow', async (method, path, allow) => {
    const res = await srv.api(path, { method });
    const allowHeader = res.headers.get('allow');
    await expectApiError(res, 405, 'invalid_request_error', 'method_not_allowed');
    expect(allowHeader).not.toBeNull();
    expect(allowHeader!.split(',').map((m) => m.trim()).sort()).toEqual([...allow].sort());
  });
});

describe('body size limit (PARLEY_BODY_LIMIT_BYTES=4096)', () => {
  const headers = () => ({ authorization: `Bearer ${small.apiKey}`, 'content-type': 'application/json' });
  const tooBig = () => Buffer.from(JSON.stringify({ name: 'x'.repeat(5000 - 11) }));

  const expect413 = (r: { status: number; headers: Record<string, unknown>; text: string }) => {
    expect(r.status, r.text).toBe(413);
    const body = JSON.parse(r.text) as { error: { type: string; code: string; request_id: string } };
    expect(body.error).toMatchObject({ type: 'payload_too_large_error', code: 'body_too_large', request_id: r.headers['x-request-id'] });
  };

  it('5000 bytes with Content-Length -> 413 body_too_large (before the body is read)', async () => {
    const body = tooBig();
    expect(body.length).toBe(5000);
    expect413(await nodeRequest({ port: small.parley.port, method: 'POST', path: '/v1/agents', headers: headers(), body, mode: 'content-length', waitMs: 1000 }));
  });

  it('5000 bytes chunked (no Content-Length) -> 413 body_too_large', async () => {
    const r = await nodeRequest({ port: small.parley.port, method: 'POST', path: '/v1/agents', headers: headers(), body: tooBig(), mode: 'chunked', waitMs: 1000 });
    expect413(r);
  });

  it('5000 bytes through fetch -> 413 on chat too', async () => {
    const res = await fetch(`${small.url}/v1/agents/agt_x/chat`, { method: 'POST', headers: headers(), body: JSON.stringify({ message: 'x'.repeat(5000) }) });
    await expectApiError(res, 413, 'payload_too_large_error', 'body_too_large');
  });

  it('a small chunked body is read normally (chunked is supported, not refused wholesale)', async () => {
    const r = await nodeRequest({ port: small.parley.port, method: 'POST', path: '/v1/agents', headers: headers(), body: Buffer.from('{"name":"chunky"}'), mode: 'chunked', waitMs: 10 });
    expect(r.status, r.text).toBe(201);
    expect((JSON.parse(r.text) as { name: string }).name).toBe('chunky');
  });

  it('a body of exactly the limit is read (and then validated), one byte more is refused', async () => {
    const exact = JSON.stringify({ name: 'x'.repeat(SMALL_LIMIT - 11) });
    expect(Buffer.byteLength(exact)).toBe(SMALL_LIMIT);
    expect(await validationFailed(await small.api('/v1/agents', { body: exact }))).toContain('name');
    const over = JSON.stringify({ name: 'x'.repeat(SMALL_LIMIT - 10) });
    await expectApiError(await small.api('/v1/agents', { body: over }), 413, 'payload_too_large_error', 'body_too_large');
  });

  it('a JSON document upload over the JSON limit -> 413; the same text raw is accepted (document limit)', async () => {
    const kb = await (await small.api('/v1/knowledge-bases', { body: { name: 'big' } })).json() as { id: string };
    const text = 'lorem ipsum dolor sit amet '.repeat(200);
    const json = await small.api(`/v1/knowledge-bases/${kb.id}/documents`, { body: { title: 'big', content: text } });
    await expectApiError(json, 413, 'payload_too_large_error', 'body_too_large');
    const rawUpload = await small.api(`/v1/knowledge-bases/${kb.id}/documents?title=big`, { body: text, headers: { 'content-type': 'text/plain' } });
    expect(rawUpload.status).toBe(202);
    await rawUpload.arrayBuffer();
    await small.parley.knowledge.settled();
  });

  it('the default limit is 1 MiB', async () => {
    const over = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    await expectApiError(await srv.api('/v1/agents', { body: over }), 413, 'payload_too_large_error', 'body_too_large');
  });

  it('the server keeps serving after refusing bodies', async () => {
    expect((await small.api('/v1/agents')).status).toBe(200);
  });
});

describe('malformed HTTP on a raw socket', () => {
  const auth = () => `Authorization: Bearer ${srv.apiKey}\r\n`;

  it('garbage and malformed requests never get a success and do not take the server down', async () => {
    const port = srv.parley.port;
    const cases: Record<string, string | Buffer> = {
      garbage: 'THIS IS NOT HTTP\r\n\r\n',
      headerWithoutColon: 'GET /healthz HTTP/1.1\r\nHost: x\r\nBadHeader\r\n\r\n',
      nonNumericContentLength: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{"name":"x"}`,
      negativeContentLength: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: -5\r\n\r\n{"name":"x"}`,
      hugeContentLength: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 99999999999999999999999\r\n\r\n{"name":"x"}`,
      contentLengthAndChunked: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 12\r\nTransfer-Encoding: chunked\r\n\r\nc\r\n{"name":"x"}\r\n0\r\n\r\n`,
      badChunkSize: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{"name":"x"}\r\n0\r\n\r\n`,
      nulInTarget: 'GET /heal\u0000thz HTTP/1.1\r\nHost: x\r\n\r\n',
      spaceInTarget: 'GET /v1/a gents HTTP/1.1\r\nHost: x\r\n\r\n',
      tlsClientHello: Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x00, 0xff]),
      badPercentEncoding: `GET /v1/agents/%E0%A4%A HTTP/1.1\r\nHost: x\r\n${auth()}\r\n`,
      truncatedBody: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`,
    };
    const results = await Promise.all(Object.entries(cases).map(async ([name, bytes]) => [name, await sendRaw(port, bytes, 600)] as const));
    // Refused, closed or left unanswered: never a success or a server error.
    const answeredBadly = results.filter(([, r]) => r.status !== undefined && (r.status < 400 || r.status >= 500));
    expect(answeredBadly.map(([name, r]) => `${name}: ${r.status} ${r.text.slice(0, 200)}`)).toEqual([]);
    // Not a vacuous check: at least one of them is answered (with a 4xx), not merely dropped.
    expect(results.filter(([, r]) => r.status !== undefined).length).toBeGreaterThanOrEqual(1);
    // Sanity: the raw client sees a well-formed request's answer.
    const good = await sendRaw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(good.status).toBe(200);
    expect((await fetch(`${srv.url}/healthz`)).status).toBe(200);
    expect((await srv.api('/v1/agents')).status).toBe(200);
  });

  it('a header section over 4 KiB that arrives in pieces gets the connection closed without an answer; under it, an answer (docs/errors.md)', async () => {
    const port = srv.parley.port;
    // The same request with a long query, written in two pieces 40 ms apart (as a network delivers it).
    const request = (queryChars: number) => {
      const bytes = `GET /v1/agents?limit=${'9'.repeat(queryChars)} HTTP/1.1\r\nHost: x\r\n${auth()}Connection: close\r\n\r\n`;
      return [bytes.slice(0, 200), bytes.slice(200)];
    };
    const under = await sendRaw(port, request(3_500));
    expect(under.status, under.text.slice(0, 200)).toBe(400);
    expect(under.text).toContain('"code":"validation_failed"');
    // uWebSockets.js 20.30 keeps at most 4 KiB of an unfinished header section. A build that answers this
    // with 431 instead fails here: then docs/errors.md and docs/architecture.md should say so.
    const over = await sendRaw(port, request(4_500));
    expect(over).toEqual({ text: '', ended: 'closed', status: undefined });
    expect((await srv.api('/v1/agents')).status).toBe(200);
  });

  it('a client that disconnects mid-body does not hurt the server', async () => {
    const port = srv.parley.port;
    await sendRaw(port, `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":"half`, 100);
    await sendRaw(port, `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"nam`, 100);
    expect((await srv.api('/v1/agents')).status).toBe(200);
  });

  it('conflicting duplicate Content-Length headers are refused with 400 (RFC 9112 6.3)', async () => {
    const port = srv.parley.port;
    const r = await sendRaw(port, `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 12\r\nContent-Length: 13\r\n\r\n{"name":"x"}`, 600);
    // Closing without an answer is acceptable too; creating the agent is not.
    expect(r.status === 400 || (r.status === undefined && r.ended === 'closed'), `got ${r.status} ${r.ended}: ${r.text.slice(0, 200)}`).toBe(true);
  });
});

describe('after everything', () => {
  it('the server still serves normal requests', async () => {
    const res = await srv.api('/v1/agents');
    expect(res.status).toBe(200);
    const list = await res.json() as { data: unknown[]; has_more: boolean };
    expect(Array.isArray(list.data)).toBe(true);
    expect((await small.api('/v1/agents')).status).toBe(200);
  });
});
