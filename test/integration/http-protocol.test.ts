/**
 * HTTP-level conventions over real sockets (API.md "Conventions"): HEAD works on every GET route
 * (same status and headers, no body), two Authorization headers are refused with 400
 * malformed_request, and no response discloses the server software (`uWebSockets: 20`).
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendRaw } from '../helpers/raw-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';

let srv: TestServer;
/** Real ids for every path parameter of the API. */
const ids: Record<string, string> = {};
/** Authorization and X-Org-Id of a signed-in owner, for the routes an API key may not call. */
let personHeaders: Record<string, string> = {};
/** The public conversation's ids, used on /v1/public/ paths, and its visitor token. */
const publicIds: Record<string, string> = {};
let visitorHeaders: Record<string, string> = {};

beforeAll(async () => {
  srv = await startTestServer();
  const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'protocol kb' } })).json() as { id: string };
  const doc = await (await srv.api(`/v1/knowledge-bases/${kb.id}/documents`, { body: { title: 'Doc', content: 'Heads and gets.' } })).json() as { id: string };
  await srv.parley.knowledge.settled();
  const agent = await (await srv.api('/v1/agents', { body: { name: 'protocol agent', knowledge_base_ids: [kb.id] } })).json() as { id: string };
  const { events } = await readSse(`${srv.url}/v1/agents/${agent.id}/chat`, {
    method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'What about heads?', stream: true }),
  });
  const first = events[0]!.data as unknown as { conversation_id: string; turn_id: string };
  Object.assign(ids, { agent_id: agent.id, model: agent.id, kb_id: kb.id, doc_id: doc.id, conversation_id: first.conversation_id, turn_id: first.turn_id });
  const owner = await srv.signIn({ role: 'owner' });
  personHeaders = owner.headers;
  ids.key_id = (await (await srv.api('/v1/api-keys', { headers: owner.headers, body: { name: 'protocol key' } })).json() as { id: string }).id;
  ids.user_id = owner.userId;
  // A disabled webhook endpoint with a queued (never sent) test delivery: nothing changes between GET and HEAD.
  const endpoint = await (await srv.api('/v1/webhooks', { body: { url: 'https://hooks.example.com/protocol', events: ['*'] } })).json() as { id: string };
  await srv.api(`/v1/webhooks/${endpoint.id}`, { method: 'PATCH', body: { enabled: false } });
  ids.endpoint_id = endpoint.id;
  ids.delivery_id = (await (await srv.api(`/v1/webhooks/${endpoint.id}/test`, { method: 'POST' })).json() as { delivery_id: string }).delivery_id;
  // The public twins: a published agent and a visitor's conversation, read with its visitor token.
  const published = await (await srv.api(`/v1/agents/${agent.id}/publish`, { body: {} })).json() as { public_key: string };
  const visitor = await readSse(`${srv.url}/v1/public/agents/${published.public_key}/chat`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'Heads from outside?', stream: true }),
  });
  const opened = visitor.events[0]!.data as unknown as { conversation_id: string; turn_id: string; visitor_token: string };
  ids.public_key = published.public_key;
  publicIds.conversation_id = opened.conversation_id;
  publicIds.turn_id = opened.turn_id;
  visitorHeaders = { 'x-visitor-token': opened.visitor_token };
});
afterAll(async () => { await srv?.close(); });

interface Exchange { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }

/** One request through node:http with the seeded key (or `headers`); the whole response. */
function call(method: string, path: string, headers: Record<string, string> = { authorization: `Bearer ${srv.apiKey}` }): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: srv.parley.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Headers that legitimately differ between two responses, or between GET and HEAD (framing). */
const VARYING = new Set(['date', 'x-request-id', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);
const stable = (h: Exchange['headers']) => Object.fromEntries(Object.entries(h).filter(([k]) => !VARYING.has(k)));

describe('HEAD works wherever GET does', () => {
  it('on every GET path of the OpenAPI document: same status and headers, Content-Length of the GET body, no body', async () => {
    const openapi = await (await fetch(`${srv.url}/v1/openapi.json`)).json() as { paths: Record<string, Record<string, { security?: Array<Record<string, unknown>> }>> };
    const getPaths = Object.entries(openapi.paths).filter(([, ops]) => 'get' in ops).map(([p]) => p);
    expect(getPaths.length).toBeGreaterThanOrEqual(14);
    for (const template of getPaths) {
      const isPublic = template.startsWith('/v1/public/');
      const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
        const id = (isPublic ? publicIds[name] : undefined) ?? ids[name];
        expect(id, `no id for {${name}}`).toBeDefined();
        return id!;
      }) + (template.endsWith('/search') ? '?q=heads' : '');
      // Routes an API key may not call (people and keys management) are called as a signed-in owner.
      const security = openapi.paths[template]!.get!.security ?? [];
      const headers = isPublic ? visitorHeaders : security.length === 0 || security.some((s) => 'apiKey' in s) ? undefined : personHeaders;
      const get = await call('GET', path, headers);
      const head = await call('HEAD', path, headers);
      expect(get.status, `GET ${path}: ${get.body.toString().slice(0, 200)}`).toBe(200);
      expect(head.status, `HEAD ${path}`).toBe(200);
      expect(head.body.length, `HEAD ${path} body`).toBe(0);
      expect(stable(head.headers), `HEAD ${path} headers`).toEqual(stable(get.headers));
      expect(head.headers['x-request-id']).toMatch(/^req_/);
      if (String(get.headers['content-type']).startsWith('text/event-stream')) {
        expect(head.headers['content-length'], `HEAD ${path}`).toBeUndefined();
      } else if (template !== '/metrics') {
        // /metrics counts requests, so its length changes from one call to the next.
        expect(head.headers['content-length'], `HEAD ${path}`).toBe(String(get.body.length));
      }
    }
  });

  it('errors too: HEAD of an unknown resource is 404 with the JSON error headers and no body', async () => {
    const get = await call('GET', '/v1/agents/agt_00000000000000000000000000');
    const head = await call('HEAD', '/v1/agents/agt_00000000000000000000000000');
    expect([get.status, head.status]).toEqual([404, 404]);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-type']).toBe('application/json');
    expect(head.headers['content-length']).toBe(String(get.body.length));
    const unauthenticated = await sendRaw(srv.parley.port, 'HEAD /v1/agents HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.text.endsWith('\r\n\r\n')).toBe(true);
  });

  it('leaves nothing on a keep-alive connection: a request pipelined after HEAD is answered cleanly', async () => {
    const r = await sendRaw(srv.parley.port,
      `HEAD /v1/agents/${ids.agent_id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.apiKey}\r\n\r\n`
      + 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const [headPart, getPart] = r.text.split(/(?=HTTP\/1\.1 )/);
    expect(headPart).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n$/);
    expect(getPart).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n\{"status":"ok"\}$/);
  });

  it('405 answers list HEAD wherever GET is allowed', async () => {
    const res = await srv.api('/v1/agents', { method: 'PUT' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    await res.arrayBuffer();
  });
});

describe('two Authorization headers -> 400 malformed_request', () => {
  const twice = (a: string, b: string, path = '/v1/agents') =>
    sendRaw(srv.parley.port, `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${a}\r\nAuthorization: ${b}\r\n\r\n`);

  it.each([
    ['the same valid key twice', () => [`Bearer ${srv.apiKey}`, `Bearer ${srv.apiKey}`]],
    ['a valid key, then a wrong one', () => [`Bearer ${srv.apiKey}`, 'Bearer sk_wrong']],
    ['a wrong key, then a valid one', () => ['Bearer sk_wrong', `Bearer ${srv.apiKey}`]],
  ])('%s', async (_label, pair) => {
    const [a, b] = pair();
    const r = await twice(a!, b!);
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    const body = JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4)) as { error: { type: string; code: string; message: string } };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'malformed_request' });
    expect(body.error.message).toContain('more than one Authorization header');
    expect(r.text).not.toContain(srv.apiKey);
  });

  it('on a route that needs no credential too, and the server keeps serving', async () => {
    expect((await twice('Bearer a', 'Bearer b', '/healthz')).status).toBe(400);
    expect((await srv.api('/v1/agents')).status).toBe(200);
  });

  it('a POST with two Authorization headers is refused before its body is read', async () => {
    const body = JSON.stringify({ name: 'two keys' });
    const r = await sendRaw(srv.parley.port,
      `POST /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.apiKey}\r\nAuthorization: Bearer ${srv.apiKey}\r\n`
      + `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    expect(r.status).toBe(400);
    const list = await (await srv.api('/v1/agents')).json() as { data: { name: string }[] };
    expect(list.data.map((a) => a.name)).not.toContain('two keys');
  });
});

describe('no server software disclosure', () => {
  it('no response carries a uWebSockets header: JSON, errors, early 413, HEAD, malformed, SSE', async () => {
    const port = srv.parley.port;
    const auth = `Authorization: Bearer ${srv.apiKey}\r\n`;
    const exchanges = await Promise.all([
      sendRaw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, `GET /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
      sendRaw(port, 'GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 99999999\r\n\r\n`),
      sendRaw(port, `HEAD /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
      sendRaw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n'),
      sendRaw(port, `GET /v1/conversations/${ids.conversation_id}/turns/${ids.turn_id}/events HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
    ]);
    expect(exchanges.map((e) => e.status)).toEqual([200, 200, 404, 413, 200, 400, 200]);
    for (const e of exchanges) {
      expect(e.text).toMatch(/\r\nDate: /);
      expect(e.text).not.toMatch(/uwebsockets/i);
    }
  });
});

describe('X-Content-Type-Options: nosniff on every response (security review, finding 12)', () => {
  it('JSON, errors, early 413, HEAD, malformed, SSE, the dashboard and the widget, a refused socket upgrade: exactly one nosniff each', async () => {
    const port = srv.parley.port;
    const auth = `Authorization: Bearer ${srv.apiKey}\r\n`;
    const upgrade = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    const exchanges = await Promise.all([
      sendRaw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, `GET /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
      sendRaw(port, 'GET /v1/agents HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, 'GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 99999999\r\n\r\n`),
      sendRaw(port, `HEAD /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
      sendRaw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n'),
      sendRaw(port, `GET /v1/conversations/${ids.conversation_id}/turns/${ids.turn_id}/events HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
      sendRaw(port, 'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, 'GET /dashboard/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, 'GET /widget.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      sendRaw(port, `GET /v1/public/agents/${ids.public_key}/ws HTTP/1.1\r\nHost: x\r\nAuthorization: a\r\nAuthorization: b\r\n${upgrade}\r\n`),
      sendRaw(port, `OPTIONS /v1/public/agents/${ids.public_key}/chat HTTP/1.1\r\nHost: x\r\nOrigin: https://shop.example\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n`),
    ]);
    expect(exchanges.map((e) => e.status)).toEqual([200, 200, 401, 404, 413, 200, 400, 200, 200, 200, 200, 400, 204]);
    for (const e of exchanges) {
      const head = e.text.slice(0, e.text.indexOf('\r\n\r\n'));
      expect(head.match(/\r\nX-Content-Type-Options: nosniff(?=\r\n|$)/gi), head).toHaveLength(1);
    }
  });
});
