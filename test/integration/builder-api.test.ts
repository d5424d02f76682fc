/**
 * What the dashboard's builder pages need from the API (issue 40): knowledge bases with their counts
 * (documents, chunks, bytes) in the list and get responses, deleting a knowledge base (its documents go,
 * and agents stop listing it), and the conversation list leaving out playground conversations
 * (`exclude_source=playground`, the dashboard's inbox).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer(); });
afterAll(async () => { await srv?.close(); });

interface KnowledgeBase { id: string; name: string; document_count: number; chunk_count: number; bytes: number; created_at: string }
interface Page<T> { data: T[]; has_more: boolean }

async function json<T>(res: Response | Promise<Response>, status: number): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, `expected ${status}, got ${r.status}: ${text}`).toBe(status);
  return JSON.parse(text) as T;
}

async function upload(kbId: string, title: string, text: string): Promise<string> {
  const res = await fetch(`${srv.url}/v1/knowledge-bases/${kbId}/documents?title=${encodeURIComponent(title)}`, {
    method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'text/markdown' }, body: text,
  });
  return (await json<{ id: string }>(res, 202)).id;
}

function ready(kbId: string, docId: string): Promise<{ chunk_count: number }> {
  return waitFor(async () => {
    const d = await json<{ status: string; chunk_count: number }>(srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`), 200);
    return d.status === 'ready' ? d : undefined;
  }, 10_000, `document ${docId}`);
}

describe('knowledge base counts', () => {
  it('a new base has zeros; after two uploads the list and get show 2 documents, their chunks and bytes', async () => {
    const kb = await json<KnowledgeBase>(srv.api('/v1/knowledge-bases', { body: { name: 'Counted' } }), 201);
    expect(kb).toMatchObject({ name: 'Counted', document_count: 0, chunk_count: 0, bytes: 0 });
    const other = await json<KnowledgeBase>(srv.api('/v1/knowledge-bases', { body: { name: 'Empty neighbour' } }), 201);

    const a = '# Tides\n\nThe tide comes in twice a day along the northern coast.\n';
    const b = '# Winds\n\nThe wind turns west in the evening.\n\n## Storms\n\nStorms come from the south in autumn.\n';
    const [docA, docB] = [await upload(kb.id, 'Tides', a), await upload(kb.id, 'Winds', b)];
    const chunks = (await ready(kb.id, docA)).chunk_count + (await ready(kb.id, docB)).chunk_count;
    expect(chunks).toBeGreaterThanOrEqual(2);

    const got = await json<KnowledgeBase>(srv.api(`/v1/knowledge-bases/${kb.id}`), 200);
    expect(got).toEqual({ ...kb, document_count: 2, chunk_count: chunks, bytes: Buffer.byteLength(a) + Buffer.byteLength(b) });
    const list = await json<Page<KnowledgeBase>>(srv.api('/v1/knowledge-bases?limit=100'), 200);
    expect(list.data.find((k) => k.id === kb.id)).toEqual(got);
    expect(list.data.find((k) => k.id === other.id)).toMatchObject({ document_count: 0, chunk_count: 0, bytes: 0 });
  });

  it('another organization\'s base is 404 on get and delete', async () => {
    const kb = await json<KnowledgeBase>(srv.api('/v1/knowledge-bases', { body: { name: 'Mine' } }), 201);
    const stranger = await srv.addOrganization();
    expect((await srv.api(`/v1/knowledge-bases/${kb.id}`, { key: stranger.apiKey })).status).toBe(404);
    expect((await srv.api(`/v1/knowledge-bases/${kb.id}`, { method: 'DELETE', key: stranger.apiKey })).status).toBe(404);
    expect((await srv.api(`/v1/knowledge-bases/${kb.id}`)).status).toBe(200);
  });
});

describe('deleting a knowledge base', () => {
  it('removes it, its documents and its passages, and takes it out of the agents that used it', async () => {
    const kb = await json<KnowledgeBase>(srv.api('/v1/knowledge-bases', { body: { name: 'Doomed' } }), 201);
    const kept = await json<KnowledgeBase>(srv.api('/v1/knowledge-bases', { body: { name: 'Kept' } }), 201);
    const doc = await upload(kb.id, 'Lighthouse', '# Lighthouse\n\nThe lighthouse keeper lights the lamp at dusk.\n');
    await ready(kb.id, doc);
    const agent = await json<{ id: string }>(srv.api('/v1/agents', { body: { name: 'Keeper', knowledge_base_ids: [kb.id, kept.id] } }), 201);
    expect((await json<{ data: unknown[] }>(srv.api(`/v1/knowledge-bases/${kb.id}/search?q=lighthouse`), 200)).data).toHaveLength(1);

    expect((await srv.api(`/v1/knowledge-bases/${kb.id}`, { method: 'DELETE' })).status).toBe(204);

    expect((await srv.api(`/v1/knowledge-bases/${kb.id}`)).status).toBe(404);
    expect((await srv.api(`/v1/knowledge-bases/${kb.id}/documents/${doc}`)).status).toBe(404);
    expect((await srv.api(`/v1/knowledge-bases/${kb.id}`, { method: 'DELETE' })).status).toBe(404);
    const list = await json<Page<KnowledgeBase>>(srv.api('/v1/knowledge-bases?limit=100'), 200);
    expect(list.data.map((k) => k.id)).not.toContain(kb.id);
    expect((await json<{ knowledge_base_ids: string[] }>(srv.api(`/v1/agents/${agent.id}`), 200)).knowledge_base_ids).toEqual([kept.id]);
    // The agent's next answer searches nothing of the deleted base.
    const reply = await json<{ citations: unknown[] }>(srv.api(`/v1/agents/${agent.id}/chat`, { body: { message: 'When is the lighthouse lamp lit?' } }), 200);
    expect(reply.citations).toEqual([]);
  });
});

describe('conversation list: exclude_source', () => {
  it('leaves out conversations whose metadata.source is the given value, and keeps those without a source', async () => {
    const agent = await json<{ id: string }>(srv.api('/v1/agents', { body: { name: 'Playground subject' } }), 201);
    const plain = await json<{ conversation_id: string }>(srv.api(`/v1/agents/${agent.id}/chat`, { body: { message: 'hello' } }), 200);
    const playground = await json<{ conversation_id: string }>(srv.api(`/v1/agents/${agent.id}/chat`, { body: { message: 'hello', metadata: { source: 'playground' } } }), 200);
    const widget = await json<{ conversation_id: string }>(srv.api(`/v1/agents/${agent.id}/chat`, { body: { message: 'hello', metadata: { source: 'website' } } }), 200);

    const ids = async (q: string) => (await json<Page<{ id: string }>>(srv.api(`/v1/conversations?agent_id=${agent.id}${q}`), 200)).data.map((c) => c.id);
    expect(await ids('')).toEqual([widget.conversation_id, playground.conversation_id, plain.conversation_id]);
    expect(await ids('&exclude_source=playground')).toEqual([widget.conversation_id, plain.conversation_id]);
    expect(await ids('&exclude_source=website')).toEqual([playground.conversation_id, plain.conversation_id]);
    expect((await srv.api('/v1/conversations?exclude_source=')).status).toBe(400);
  });
});

describe('model providers', () => {
  it('lists the providers configured on this server: builtin alone without PARLEY_OPENAI_BASE_URL', async () => {
    const body = await json<{ data: unknown[] }>(srv.api('/v1/model-providers'), 200);
    expect(body).toEqual({ data: [{ id: 'builtin', default_model: 'builtin' }] });
  });
});
