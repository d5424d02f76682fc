/**
 * Authentication and organization isolation over real HTTP (SPEC.md 5, API.md "Credentials" and
 * "Errors"): every 401 code with the API.md error body, keys never accepted in URLs, public paths
 * open, and another organization's resources answered with 404 not_found, never 403.
 */
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';
import { expectApiError } from '../helpers/raw-http.js';

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer(); });
afterAll(async () => { await srv?.close(); });

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `fetch` of `path` with exactly `headers` (no default credential). */
function raw(path: string, headers: Record<string, string> = {}, init: { method?: string; body?: string } = {}): Promise<Response> {
  return fetch(`${srv.url}${path}`, { method: init.method ?? 'GET', headers, ...(init.body === undefined ? {} : { body: init.body }) });
}

const authError = (res: Response, code: string) => expectApiError(res, 401, 'authentication_error', code);

describe('401 authentication errors', () => {
  it('no Authorization header -> missing_credentials', async () => {
    await authError(await raw('/v1/agents'), 'missing_credentials');
    await authError(await raw('/v1/knowledge-bases'), 'missing_credentials');
    await authError(await raw('/v1/agents', { 'content-type': 'application/json' }, { method: 'POST', body: '{"name":"x"}' }), 'missing_credentials');
  });

  it('an empty Authorization header -> missing_credentials', async () => {
    await authError(await raw('/v1/agents', { authorization: '' }), 'missing_credentials');
  });

  it('Basic credentials -> invalid_api_key', async () => {
    const basic = Buffer.from(`user:${srv.apiKey}`).toString('base64');
    await authError(await raw('/v1/agents', { authorization: `Basic ${basic}` }), 'invalid_api_key');
  });

  it('the key without the Bearer scheme -> invalid_api_key', async () => {
    await authError(await raw('/v1/agents', { authorization: srv.apiKey }), 'invalid_api_key');
    await authError(await raw('/v1/agents', { authorization: 'Bearer' }), 'invalid_api_key');
  });

  it('malformed keys (wrong length, bad checksum, bad characters, wrong prefix) -> invalid_api_key', async () => {
    const key = srv.apiKey;
    const last = key.at(-1)!;
    const flipped = key.slice(0, -1) + BASE62[(BASE62.indexOf(last) + 1) % 62];
    const malformed = [
      key.slice(0, -1), // 38 chars
      `${key}A`, // 40 chars
      flipped, // checksum mismatch
      `${key.slice(0, 10)}-${key.slice(11)}`, // not base62
      `pk_${key.slice(3)}`, // wrong prefix
      'sk_',
    ];
    for (const k of malformed) {
      await authError(await raw('/v1/agents', { authorization: `Bearer ${k}` }), 'invalid_api_key');
    }
  });

  it('a well-formed key that was never issued -> invalid_api_key', async () => {
    const unknown = generateApiKey();
    await authError(await raw('/v1/agents', { authorization: `Bearer ${unknown}` }), 'invalid_api_key');
  });

  it('a revoked key -> revoked_api_key, while the org\'s other keys keep working', async () => {
    const org = await srv.addOrganization('revocation org');
    expect((await srv.api('/v1/agents', { key: org.apiKey })).status).toBe(200);
    expect(await srv.parley.store.apiKeys.revoke(org.orgId, org.keyId, new Date().toISOString())).toBe(true);
    await authError(await srv.api('/v1/agents', { key: org.apiKey }), 'revoked_api_key');
    await authError(await srv.api('/v1/agents', { key: org.apiKey, body: { name: 'after revocation' } }), 'revoked_api_key');
    expect((await srv.api('/v1/agents')).status).toBe(200);
  });

  it('the Bearer scheme is case-insensitive (RFC 7235)', async () => {
    expect((await raw('/v1/agents', { authorization: `bearer ${srv.apiKey}` })).status).toBe(200);
  });

  it('a valid key in the query string is refused, with or without a valid header', async () => {
    await authError(await raw(`/v1/agents?api_key=${srv.apiKey}`), 'invalid_api_key');
    const both = await raw(`/v1/agents?api_key=${srv.apiKey}`, { authorization: `Bearer ${srv.apiKey}` });
    expect(both.status).toBe(401);
    const body = await authError(both, 'invalid_api_key');
    expect(body.error.message).not.toContain(srv.apiKey);
    // Under another parameter name too, inside a longer value, and as a parameter name.
    expect((await raw(`/v1/agents?key=${srv.apiKey}`, { authorization: `Bearer ${srv.apiKey}` })).status).toBe(401);
    await authError(await raw(`/v1/agents?auth=Bearer%20${srv.apiKey}`, { authorization: `Bearer ${srv.apiKey}` }), 'invalid_api_key');
    await authError(await raw(`/v1/agents?${srv.apiKey}`, { authorization: `Bearer ${srv.apiKey}` }), 'invalid_api_key');
  });

  it('a key that was never issued is refused in a URL too (the shape and checksum are what count)', async () => {
    await authError(await raw(`/v1/agents?q=${generateApiKey()}`, { authorization: `Bearer ${srv.apiKey}` }), 'invalid_api_key');
  });

  it('text that only looks like a key is an ordinary query: a search for "sk_ prefix", "sk_notakey" or a bad-checksum key', async () => {
    const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'key talk' } })).json() as { id: string };
    const last = srv.apiKey.at(-1)!;
    const badChecksum = srv.apiKey.slice(0, -1) + BASE62[(BASE62.indexOf(last) + 1) % 62];
    for (const q of ['sk_ prefix', 'sk_notakey', 'sk_', badChecksum]) {
      const res = await srv.api(`/v1/knowledge-bases/${kb.id}/search?q=${encodeURIComponent(q)}`);
      expect(res.status, `q=${q}`).toBe(200);
      expect(await res.json()).toEqual({ data: [] });
    }
  });

  it('the error never echoes the offered credential', async () => {
    const unknown = generateApiKey();
    const res = await raw('/v1/agents', { authorization: `Bearer ${unknown}` });
    expect(await res.text()).not.toContain(unknown);
  });
});

describe('public paths need no credential', () => {
  it.each(['/healthz', '/readyz', '/v1/openapi.json', '/metrics'])('%s -> 200 without Authorization', async (path) => {
    const res = await raw(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    await res.arrayBuffer();
  });

  it('every response, success included, carries a fresh X-Request-Id', async () => {
    const a = await srv.api('/v1/agents');
    const b = await srv.api('/v1/agents');
    expect(a.headers.get('x-request-id')).toMatch(/^req_/);
    expect(b.headers.get('x-request-id')).toMatch(/^req_/);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });
});

describe('organization isolation: another org\'s resources are 404 not_found', () => {
  let other: { orgId: string; apiKey: string };
  let agentId: string;
  let kbId: string;
  let docId: string;
  let conversationId: string;
  let turnId: string;
  let otherAgentId: string;

  beforeAll(async () => {
    other = await srv.addOrganization('org B');
    const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'A kb' } })).json() as { id: string };
    kbId = kb.id;
    const doc = await (await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title: 'A secret', content: '# Refunds\n\nRefunds take fourteen days.' } })).json() as { id: string };
    docId = doc.id;
    await waitFor(async () => {
      const d = await (await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`)).json() as { status: string };
      return d.status === 'processing' ? undefined : d.status;
    }, 10_000, 'document ingestion').then((status) => expect(status).toBe('ready'));
    const agent = await (await srv.api('/v1/agents', { body: { name: 'A agent', knowledge_base_ids: [kbId] } })).json() as { id: string };
    agentId = agent.id;
    const chat = await srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'How long do refunds take?' } });
    expect(chat.status).toBe(200);
    conversationId = ((await chat.json()) as { conversation_id: string }).conversation_id;
    const msgs = await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json() as { data: { turn_id: string | null }[] };
    turnId = msgs.data.find((m) => m.turn_id)!.turn_id!;
    const otherAgent = await (await srv.api('/v1/agents', { key: other.apiKey, body: { name: 'B agent' } })).json() as { id: string };
    otherAgentId = otherAgent.id;
  });

  const notFound = (res: Response) => expectApiError(res, 404, 'not_found_error', 'not_found');

  it('agent: get, update, delete, chat (one-shot and stream)', async () => {
    const k = { key: other.apiKey };
    await notFound(await srv.api(`/v1/agents/${agentId}`, k));
    await notFound(await srv.api(`/v1/agents/${agentId}`, { ...k, method: 'PATCH', body: { name: 'taken over' } }));
    await notFound(await srv.api(`/v1/agents/${agentId}`, { ...k, method: 'DELETE' }));
    await notFound(await srv.api(`/v1/agents/${agentId}/chat`, { ...k, body: { message: 'hi' } }));
    await notFound(await srv.api(`/v1/agents/${agentId}/chat`, { ...k, body: { message: 'hi', stream: true } }));
    // Nothing changed for the owner.
    const mine = await (await srv.api(`/v1/agents/${agentId}`)).json() as { name: string };
    expect(mine.name).toBe('A agent');
  });

  it('the 404 is the same as for an id that does not exist (existence is not leaked)', async () => {
    const strip = (b: { error: Record<string, unknown> }) => ({ ...b.error, request_id: undefined });
    const foreign = await notFound(await srv.api(`/v1/agents/${agentId}`, { key: other.apiKey }));
    const missing = await notFound(await srv.api('/v1/agents/agt_00000000000000000000000000', { key: other.apiKey }));
    expect(strip(foreign)).toEqual(strip(missing));
  });

  it('knowledge base, its documents and search', async () => {
    const k = { key: other.apiKey };
    await notFound(await srv.api(`/v1/knowledge-bases/${kbId}/documents`, k));
    await notFound(await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`, k));
    await notFound(await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`, { ...k, method: 'DELETE' }));
    await notFound(await srv.api(`/v1/knowledge-bases/${kbId}/search?q=refunds`, k));
    await notFound(await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { ...k, body: { title: 'injected', content: 'planted text' } }));
    await notFound(await srv.api(`/v1/knowledge-bases/${kbId}/documents?title=injected`, { ...k, body: 'planted text', headers: { 'content-type': 'text/plain' } }));
    // Still there for the owner.
    expect((await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`)).status).toBe(200);
    const docs = await (await srv.api(`/v1/knowledge-bases/${kbId}/documents`)).json() as { data: { title: string }[] };
    expect(docs.data.map((d) => d.title)).toEqual(['A secret']);
  });

  it('conversation, its messages and its turn events', async () => {
    const k = { key: other.apiKey };
    await notFound(await srv.api(`/v1/conversations/${conversationId}`, k));
    await notFound(await srv.api(`/v1/conversations/${conversationId}/messages`, k));
    await notFound(await srv.api(`/v1/conversations/${conversationId}/turns/${turnId}/events`, k));
    // Continuing A's conversation through B's own agent.
    await notFound(await srv.api(`/v1/agents/${otherAgentId}/chat`, { ...k, body: { message: 'hi', conversation_id: conversationId } }));
    await notFound(await srv.api(`/v1/agents/${otherAgentId}/chat`, { ...k, body: { message: 'hi', conversation_id: conversationId, stream: true } }));
    // The owner's conversation did not grow.
    const msgs = await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json() as { data: unknown[] };
    expect(msgs.data).toHaveLength(2);
  });

  it('org B\'s lists do not contain org A\'s resources', async () => {
    const k = { key: other.apiKey };
    const agents = await (await srv.api('/v1/agents?limit=100', k)).json() as { data: { id: string }[] };
    expect(agents.data.map((a) => a.id)).toEqual([otherAgentId]);
    const kbs = await (await srv.api('/v1/knowledge-bases?limit=100', k)).json() as { data: { id: string }[] };
    expect(kbs.data).toEqual([]);
    const convs = await (await srv.api('/v1/conversations?limit=100', k)).json() as { data: { id: string }[] };
    expect(convs.data.map((c) => c.id)).not.toContain(conversationId);
    const filtered = await (await srv.api(`/v1/conversations?agent_id=${agentId}`, k)).json() as { data: unknown[] };
    expect(filtered.data).toEqual([]);
    // While org A sees them.
    const mine = await (await srv.api('/v1/conversations?limit=100')).json() as { data: { id: string }[] };
    expect(mine.data.map((c) => c.id)).toContain(conversationId);
  });

  it('org B cannot attach org A\'s knowledge base to its agent', async () => {
    const res = await srv.api('/v1/agents', { key: other.apiKey, body: { name: 'leech', knowledge_base_ids: [kbId] } });
    await expectApiError(res, 400, 'invalid_request_error', 'validation_failed');
    const patch = await srv.api(`/v1/agents/${otherAgentId}`, { key: other.apiKey, method: 'PATCH', body: { knowledge_base_ids: [kbId] } });
    await expectApiError(patch, 400, 'invalid_request_error', 'validation_failed');
  });
});
