/**
 * `metadata` follows Stripe's rules on every endpoint that takes it (security review, finding 3: the
 * public chat took metadata with 90,000 keys, 980 KB, and 20 such chats made a page of 20
 * conversations 19.6 MB and 1.2-1.5 s of the event loop): at most 50 keys, keys of 1-40 characters,
 * values strings of at most 500 characters, else 400 `validation_failed` (an error frame on sockets).
 * Lists return summaries of bounded size. A real server, real HTTP and real sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, errorCode, publish, wsUrl } from '../helpers/live.js';
import { expectApiError } from '../helpers/raw-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openSocket, type Frame, type TestSocket } from '../helpers/ws-client.js';

let srv: TestServer;
let agent: string;
let pk: string;
const opened: TestSocket[] = [];

beforeAll(async () => {
  srv = await startTestServer();
  agent = await createAgent(srv, { name: 'Metadata bot' });
  pk = await publish(srv, agent);
});
afterAll(async () => {
  for (const s of opened) s.drop();
  await srv?.close();
});

/** `n` keys `k00000`.. with values of `valueLength` characters. */
function metadata(n: number, valueLength = 10, keyLength = 6): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) out[`k${String(i).padStart(keyLength - 1, '0')}`] = 'v'.repeat(valueLength);
  return out;
}

const publicChat = (body: unknown) =>
  fetch(`${srv.url}/v1/public/agents/${pk}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const apiChat = (body: unknown) => srv.api(`/v1/agents/${agent}/chat`, { body });

async function socket(path: string): Promise<TestSocket> {
  const s = await openSocket(wsUrl(srv, path));
  opened.push(s);
  return s;
}

/** The first frame a socket answers a message frame with `meta`: its type and, for an error, its code and message. */
async function frameFor(s: TestSocket, meta: unknown): Promise<Frame> {
  s.send({ type: 'message', message: 'hi', metadata: meta });
  return s.next();
}

describe('metadata rules', () => {
  it('the public chat with 90,000 metadata keys (the review\'s 980 KB) is 400 validation_failed, with one small error', async () => {
    const huge: Record<string, string> = {};
    for (let i = 0; i < 90_000; i++) huge[String(i)] = '';
    const body = JSON.stringify({ message: 'hello', metadata: huge });
    expect(body.length).toBeGreaterThan(900_000);
    expect(body.length).toBeLessThan(1_048_576); // under the body cap: the rules refuse it, not the size
    const res = await fetch(`${srv.url}/v1/public/agents/${pk}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await res.clone().text();
    const error = await expectApiError(res, 400, 'invalid_request_error', 'validation_failed');
    expect(error.error.errors).toEqual([{ path: 'metadata', message: 'must have at most 50 keys' }]);
    expect(text.length).toBeLessThan(1000);
    // Nothing was stored.
    const list = await (await srv.api('/v1/conversations?limit=100')).json() as { data: unknown[] };
    expect(list.data).toEqual([]);
  });

  it.each([
    ['51 keys', metadata(51), 'metadata', 'must have at most 50 keys'],
    ['a key of 41 characters', { ['k'.repeat(41)]: 'v' }, `metadata.${'k'.repeat(41)}`, 'keys must have 1 to 40 characters'],
    ['an empty key', { '': 'v' }, 'metadata.', 'keys must have 1 to 40 characters'],
    ['a value of 501 characters', { note: 'x'.repeat(501) }, 'metadata.note', 'values must have at most 500 characters'],
    ['a number', { count: 3 }, 'metadata.count', 'values must be strings'],
    ['a nested object', { nested: { a: 'b' } }, 'metadata.nested', 'values must be strings'],
    ['an array', ['a'], 'metadata', 'Invalid input: expected record, received array'],
  ])('%s is 400 validation_failed on the API chat and the public chat', async (_name, meta, path, message) => {
    for (const send of [apiChat, publicChat]) {
      const error = await expectApiError(await send({ message: 'hi', metadata: meta }), 400, 'invalid_request_error', 'validation_failed');
      expect(error.error.errors).toEqual([{ path, message }]);
    }
  });

  it('is an error frame validation_failed on the chat socket and the public socket, and the socket stays open', async () => {
    const chat = await socket(`/v1/agents/${agent}/chat/ws?token=${encodeURIComponent((await srv.signIn({ role: 'operator' })).session.access_token)}`);
    const visitor = await socket(`/v1/public/agents/${pk}/ws`);
    for (const s of [chat, visitor]) {
      for (const meta of [metadata(51), { ['k'.repeat(41)]: 'v' }, { note: 'x'.repeat(501) }, { count: 3 }]) {
        const f = await frameFor(s, meta);
        expect(errorCode(f)).toBe('validation_failed');
        expect((f.error as { message: string }).message).toMatch(/^Invalid frame: metadata/);
      }
      s.send({ type: 'ping' });
      expect(await s.next()).toEqual({ type: 'pong' });
    }
  });

  it('takes the most the rules allow: 50 keys of 40 characters with values of 500, on every endpoint, and stores them', async () => {
    const most = metadata(50, 500, 40);
    const api = await apiChat({ message: 'hi', metadata: most });
    expect(api.status).toBe(200);
    const pub = await publicChat({ message: 'hi', metadata: most });
    expect(pub.status).toBe(200);
    const visitor = await socket(`/v1/public/agents/${pk}/ws`);
    const first = await frameFor(visitor, most);
    expect(first.type).toBe('conversation');
    for (const id of [(await api.json() as { conversation_id: string }).conversation_id, (await pub.json() as { conversation_id: string }).conversation_id, first.conversation_id as string]) {
      const c = await (await srv.api(`/v1/conversations/${id}`)).json() as { metadata: Record<string, string> };
      expect(c.metadata).toEqual(most);
    }
  });
});

describe('lists return summaries of bounded size', () => {
  it('20 conversations with the largest metadata make a page of 20 under 700 KB (the review saw 19.6 MB)', async () => {
    const most = metadata(50, 500, 40);
    for (let i = 0; i < 20; i++) expect((await publicChat({ message: `hi ${i}`, metadata: most })).status).toBe(200);
    const res = await srv.api('/v1/conversations?limit=20');
    const text = await res.text();
    expect(res.status).toBe(200);
    expect((JSON.parse(text) as { data: unknown[] }).data).toHaveLength(20);
    expect(text.length).toBeLessThan(700_000);
  });

  it('the agent list has no instructions, tools or safety settings (GET of one agent has them)', async () => {
    const tool = {
      type: 'http', name: 'lookup', description: 'Looks an order up', url: 'https://api.example.com/orders', method: 'GET',
      parameters: { type: 'object', properties: { id: { type: 'string', description: 'x'.repeat(8000) } } },
    };
    const id = await createAgent(srv, { name: 'Heavy', instructions: 'i'.repeat(20_000), tools: [tool] });
    const list = await (await srv.api('/v1/agents?limit=100')).json() as { data: Array<Record<string, unknown>> };
    const item = list.data.find((a) => a.id === id)!;
    expect(Object.keys(item).sort()).toEqual(['allowed_origins', 'created_at', 'description', 'id', 'knowledge_base_ids', 'model', 'name', 'public_key', 'published', 'updated_at']);
    const one = await (await srv.api(`/v1/agents/${id}`)).json() as { instructions: string; tools: unknown[] };
    expect(one.instructions).toHaveLength(20_000);
    expect(one.tools).toHaveLength(1);
  });

  it('an HTTP tool\'s parameters are at most 16384 characters of JSON, and it names at most 20 headers', async () => {
    const tool = (parameters: unknown, headers?: Record<string, string>) => ({
      type: 'http', name: 'lookup', description: 'd', url: 'https://api.example.com/x', method: 'GET', parameters, ...(headers ? { headers_from_env: headers } : {}),
    });
    const big = { type: 'object', description: 'x'.repeat(16_400) };
    const tooBig = await expectApiError(await srv.api('/v1/agents', { body: { name: 'x', tools: [tool(big)] } }), 400, 'invalid_request_error', 'validation_failed');
    expect(tooBig.error.errors).toEqual([{ path: 'tools.0.parameters', message: 'must be at most 16384 characters as JSON' }]);
    const headers = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, `PARLEY_TOOL_SECRET_H${i}`]));
    const many = await expectApiError(await srv.api('/v1/agents', { body: { name: 'x', tools: [tool({ type: 'object' }, headers)] } }), 400, 'invalid_request_error', 'validation_failed');
    expect(many.error.errors).toEqual([{ path: 'tools.0.headers_from_env', message: 'must name at most 20 headers' }]);
  });
});

describe('validation errors stay small whatever the body', () => {
  it('at most 20 problems are listed (then a count of the rest), and a long key is cut in the path', async () => {
    const body: Record<string, unknown> = { name: 'x' };
    for (let i = 0; i < 1000; i++) body[`extra${i}`] = 1;
    const many = await expectApiError(await srv.api('/v1/agents', { body }), 400, 'invalid_request_error', 'validation_failed');
    expect(many.error.errors).toHaveLength(21);
    expect(many.error.errors!.slice(0, 2)).toEqual([{ path: 'extra0', message: 'unknown field' }, { path: 'extra1', message: 'unknown field' }]);
    expect(many.error.errors![20]).toEqual({ path: 'body', message: 'and 980 more problems' });
    const long = await expectApiError(await srv.api('/v1/agents', { body: { name: 'x', ['y'.repeat(100_000)]: 1 } }), 400, 'invalid_request_error', 'validation_failed');
    expect(long.error.errors).toEqual([{ path: `${'y'.repeat(64)}…`, message: 'unknown field' }]);
  });
});
