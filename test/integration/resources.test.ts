/**
 * Resource lifecycles over real HTTP (API.md "Agents", "Knowledge bases", "Conventions" lists and
 * "Operations"): agent CRUD and defaults, cursor pagination, knowledge bases, document ingestion
 * (ready and failed), search and deletion, the OpenAPI document against the routes actually served,
 * and the probes.
 */
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';
import { expectApiError } from '../helpers/raw-http.js';

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer(); });
afterAll(async () => { await srv?.close(); });

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

interface Agent {
  id: string; name: string; description: string; instructions: string; published: boolean; public_key: string | null;
  model: { provider: string; name: string }; knowledge_base_ids: string[]; tools: string[];
  safety: { blocked_phrases: string[]; redact_pii: boolean; blocked_message: string };
  created_at: string; updated_at: string;
}
interface Doc { id: string; knowledge_base_id: string; title: string; content_type: string; status: 'processing' | 'ready' | 'failed'; error: string | null; chunk_count: number; bytes: number }
interface Page<T> { data: T[]; has_more: boolean }

async function json<T>(res: Response | Promise<Response>, status: number): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, `expected ${status}, got ${r.status}: ${text}`).toBe(status);
  return JSON.parse(text) as T;
}

/** Polls the document until it leaves `processing`. */
function settledDoc(kbId: string, docId: string, key?: string): Promise<Doc> {
  return waitFor(async () => {
    const d = await json<Doc>(srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`, key ? { key } : {}), 200);
    return d.status === 'processing' ? undefined : d;
  }, 10_000, `document ${docId}`);
}

describe('agents CRUD', () => {
  let created: Agent;

  it('POST creates with the documented defaults (201)', async () => {
    created = await json<Agent>(srv.api('/v1/agents', { body: { name: 'Support bot' } }), 201);
    expect(created.id).toMatch(/^agt_[0-9A-Za-z]+$/);
    expect(created).toMatchObject({
      name: 'Support bot', description: '', published: false, public_key: null,
      model: { provider: 'builtin' }, knowledge_base_ids: [], tools: ['search_knowledge'],
      safety: { blocked_phrases: [], redact_pii: true },
    });
    expect(typeof created.model.name).toBe('string');
    expect(created.safety.blocked_message.length).toBeGreaterThan(0);
    expect(created.created_at).toMatch(RFC3339_UTC);
    expect(created.updated_at).toMatch(RFC3339_UTC);
    expect(Object.keys(created)).not.toContain('org_id');
  });

  it('POST keeps every given field', async () => {
    const a = await json<Agent>(srv.api('/v1/agents', {
      body: {
        name: 'Full', description: 'd', instructions: 'Be brief.', model: { provider: 'builtin', name: 'builtin' }, tools: [],
        safety: { blocked_phrases: ['secret'], redact_pii: false, blocked_message: 'Nope.' },
      },
    }), 201);
    expect(a).toMatchObject({ name: 'Full', description: 'd', instructions: 'Be brief.', tools: [], safety: { blocked_phrases: ['secret'], redact_pii: false, blocked_message: 'Nope.' } });
    expect((await srv.api(`/v1/agents/${a.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('GET returns the same agent; the list shows it with the API.md fields', async () => {
    expect(await json<Agent>(srv.api(`/v1/agents/${created.id}`), 200)).toEqual(created);
    const list = await json<Page<Agent>>(srv.api('/v1/agents'), 200);
    const item = list.data.find((a) => a.id === created.id)!;
    expect(item).toBeDefined();
    for (const k of ['id', 'name', 'description', 'published', 'public_key', 'model', 'knowledge_base_ids', 'created_at']) expect(item).toHaveProperty(k);
    expect(item.model).toEqual({ provider: 'builtin', name: created.model.name });
  });

  it('PATCH updates name and safety and leaves the rest', async () => {
    const safety = { blocked_phrases: ['refund'], redact_pii: false, blocked_message: 'I cannot discuss that.' };
    const patched = await json<Agent>(srv.api(`/v1/agents/${created.id}`, { method: 'PATCH', body: { name: 'Renamed bot', safety } }), 200);
    expect(patched).toMatchObject({ id: created.id, name: 'Renamed bot', safety, description: created.description, model: created.model, tools: created.tools, created_at: created.created_at });
    expect(Date.parse(patched.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect(await json<Agent>(srv.api(`/v1/agents/${created.id}`), 200)).toEqual(patched);
    // A PATCH with only a name keeps the safety settings just set.
    const renamed = await json<Agent>(srv.api(`/v1/agents/${created.id}`, { method: 'PATCH', body: { name: 'Again' } }), 200);
    expect(renamed.safety).toEqual(safety);
  });

  it('DELETE -> 204 with no body, then GET/PATCH/DELETE -> 404 and the list no longer has it', async () => {
    const del = await srv.api(`/v1/agents/${created.id}`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    await expectApiError(await srv.api(`/v1/agents/${created.id}`), 404, 'not_found_error', 'not_found');
    await expectApiError(await srv.api(`/v1/agents/${created.id}`, { method: 'PATCH', body: { name: 'zombie' } }), 404, 'not_found_error', 'not_found');
    await expectApiError(await srv.api(`/v1/agents/${created.id}`, { method: 'DELETE' }), 404, 'not_found_error', 'not_found');
    const list = await json<Page<Agent>>(srv.api('/v1/agents?limit=100'), 200);
    expect(list.data.map((a) => a.id)).not.toContain(created.id);
  });
});

describe('list pagination', () => {
  it('5 agents, ?limit=2: pages of 2, 2, 1 following after=<last id>, newest first, no duplicates', async () => {
    const org = await srv.addOrganization('pagination org');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await json<Agent>(srv.api('/v1/agents', { key: org.apiKey, body: { name: `agent ${i}` } }), 201)).id);

    const pages: Page<Agent>[] = [];
    let after: string | undefined;
    for (let guard = 0; guard < 10; guard++) {
      const page = await json<Page<Agent>>(srv.api(`/v1/agents?limit=2${after ? `&after=${after}` : ''}`, { key: org.apiKey }), 200);
      pages.push(page);
      if (!page.has_more) break;
      after = page.data.at(-1)!.id;
    }
    expect(pages.map((p) => p.data.length)).toEqual([2, 2, 1]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
    const seen = pages.flatMap((p) => p.data.map((a) => a.id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...ids].reverse());
    expect(pages.flatMap((p) => p.data.map((a) => a.name))).toEqual(['agent 4', 'agent 3', 'agent 2', 'agent 1', 'agent 0']);

    // Exactly one full page: has_more false. Past the end: empty.
    expect(await json<Page<Agent>>(srv.api('/v1/agents?limit=5', { key: org.apiKey }), 200)).toMatchObject({ has_more: false });
    expect(await json<Page<Agent>>(srv.api(`/v1/agents?after=${ids[0]}`, { key: org.apiKey }), 200)).toEqual({ data: [], has_more: false });
    // The default page holds them all.
    expect((await json<Page<Agent>>(srv.api('/v1/agents', { key: org.apiKey }), 200)).data).toHaveLength(5);
  });
});

describe('knowledge bases and documents', () => {
  let kbId: string;

  it('create and list knowledge bases (newest first)', async () => {
    const org = await srv.addOrganization('kb org');
    const a = await json<{ id: string; name: string; created_at: string }>(srv.api('/v1/knowledge-bases', { key: org.apiKey, body: { name: 'First' } }), 201);
    const b = await json<{ id: string; name: string; created_at: string }>(srv.api('/v1/knowledge-bases', { key: org.apiKey, body: { name: 'Second' } }), 201);
    expect(a.id).toMatch(/^kb_/);
    expect(a.created_at).toMatch(RFC3339_UTC);
    const list = await json<Page<{ id: string; name: string }>>(srv.api('/v1/knowledge-bases', { key: org.apiKey }), 200);
    const empty = { document_count: 0, chunk_count: 0, bytes: 0 };
    expect(list).toEqual({ data: [{ id: b.id, name: 'Second', ...empty, created_at: b.created_at }, { id: a.id, name: 'First', ...empty, created_at: a.created_at }], has_more: false });
    const limited = await json<Page<{ id: string }>>(srv.api('/v1/knowledge-bases?limit=1', { key: org.apiKey }), 200);
    expect(limited.data.map((k) => k.id)).toEqual([b.id]);
    expect(limited.has_more).toBe(true);
  });

  let mdDoc: string;
  let jsonDoc: string;

  it('raw text/markdown with ?title= and JSON uploads -> 202 processing -> ready with chunks', async () => {
    kbId = (await json<{ id: string }>(srv.api('/v1/knowledge-bases', { body: { name: 'Docs' } }), 201)).id;
    const markdown = '# Volcanoes\n\nMagma rises through the crust and erupts as lava from the volcano.\n\n## Basalt\n\nBasalt forms when lava cools quickly.';
    const raw = await srv.api(`/v1/knowledge-bases/${kbId}/documents?title=${encodeURIComponent('Volcano guide')}`, { body: markdown, headers: { 'content-type': 'text/markdown; charset=utf-8' } });
    const rawAccepted = await json<{ id: string; status: string }>(raw, 202);
    expect(rawAccepted).toEqual({ id: expect.stringMatching(/^doc_/), status: 'processing' });
    mdDoc = rawAccepted.id;

    const viaJson = await json<{ id: string; status: string }>(srv.api(`/v1/knowledge-bases/${kbId}/documents`, {
      body: { title: 'Plant notes', content: 'Photosynthesis in chloroplasts turns sunlight into sugar.\n\nChlorophyll absorbs red and blue light.', content_type: 'text/plain' },
    }), 202);
    expect(viaJson).toEqual({ id: expect.stringMatching(/^doc_/), status: 'processing' });
    jsonDoc = viaJson.id;

    const [a, b] = await Promise.all([settledDoc(kbId, mdDoc), settledDoc(kbId, jsonDoc)]);
    expect(a).toMatchObject({ id: mdDoc, knowledge_base_id: kbId, title: 'Volcano guide', content_type: 'text/markdown', status: 'ready', error: null, bytes: Buffer.byteLength(markdown) });
    expect(a.chunk_count).toBeGreaterThan(0);
    expect(b).toMatchObject({ id: jsonDoc, title: 'Plant notes', content_type: 'text/plain', status: 'ready', error: null });
    expect(b.chunk_count).toBeGreaterThan(0);

    const docs = await json<Page<Doc>>(srv.api(`/v1/knowledge-bases/${kbId}/documents`), 200);
    expect(docs.data.map((d) => d.id)).toEqual([jsonDoc, mdDoc]);
  });

  it('an invalid document (bytes 0xff 0xfe as text/plain) fails with an error, while one uploaded alongside becomes ready', async () => {
    const headers = { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'text/plain' };
    const base = `${srv.url}/v1/knowledge-bases/${kbId}/documents`;
    const [bad, good] = await Promise.all([
      json<{ id: string; status: string }>(fetch(`${base}?title=broken`, { method: 'POST', headers, body: Buffer.from([0xff, 0xfe]) }), 202),
      json<{ id: string; status: string }>(fetch(`${base}?title=${encodeURIComponent('Glacier facts')}`, { method: 'POST', headers, body: 'Glaciers carve fjords as the ice moves downhill.' }), 202),
    ]);
    expect(bad.status).toBe('processing');
    const [badDoc, goodDoc] = await Promise.all([settledDoc(kbId, bad.id), settledDoc(kbId, good.id)]);
    expect(badDoc.status).toBe('failed');
    expect(typeof badDoc.error).toBe('string');
    expect(badDoc.error!.length).toBeGreaterThan(0);
    expect(badDoc.chunk_count).toBe(0);
    expect(goodDoc.status).toBe('ready');
    expect(goodDoc.error).toBeNull();
    expect(goodDoc.chunk_count).toBeGreaterThan(0);
    // The failed document is listed with its error and never searchable; the pool keeps working.
    const list = await json<Page<Doc>>(srv.api(`/v1/knowledge-bases/${kbId}/documents`), 200);
    expect(list.data.find((d) => d.id === bad.id)).toMatchObject({ status: 'failed', error: badDoc.error });
    const found = await json<{ data: { document_id: string }[] }>(srv.api(`/v1/knowledge-bases/${kbId}/search?q=glaciers%20fjords`), 200);
    expect(found.data[0]?.document_id).toBe(good.id);
  });

  it('search ?q= puts the right document first', async () => {
    const magma = await json<{ data: { document_id: string; chunk_id: string; title: string; text: string; score: number }[] }>(srv.api(`/v1/knowledge-bases/${kbId}/search?q=magma%20lava`), 200);
    expect(magma.data.length).toBeGreaterThan(0);
    expect(magma.data[0]).toMatchObject({ document_id: mdDoc, title: 'Volcano guide' });
    expect(magma.data[0]!.text.toLowerCase()).toContain('magma');
    const plants = await json<{ data: { document_id: string }[] }>(srv.api(`/v1/knowledge-bases/${kbId}/search?q=chlorophyll`), 200);
    expect(plants.data[0]?.document_id).toBe(jsonDoc);
    expect(plants.data.every((p) => p.document_id === jsonDoc)).toBe(true);
    const k1 = await json<{ data: unknown[] }>(srv.api(`/v1/knowledge-bases/${kbId}/search?q=lava%20basalt%20magma%20chlorophyll&k=1`), 200);
    expect(k1.data).toHaveLength(1);
    // FTS syntax in user text is plain text, not an operator or an error.
    expect((await srv.api(`/v1/knowledge-bases/${kbId}/search?q=${encodeURIComponent('"magma" OR NEAR( * ^')}`)).status).toBe(200);
  });

  it('DELETE document -> 204; it is gone from GET, the list and search', async () => {
    const del = await srv.api(`/v1/knowledge-bases/${kbId}/documents/${mdDoc}`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    await expectApiError(await srv.api(`/v1/knowledge-bases/${kbId}/documents/${mdDoc}`), 404, 'not_found_error', 'not_found');
    await expectApiError(await srv.api(`/v1/knowledge-bases/${kbId}/documents/${mdDoc}`, { method: 'DELETE' }), 404, 'not_found_error', 'not_found');
    const search = await json<{ data: { document_id: string }[] }>(srv.api(`/v1/knowledge-bases/${kbId}/search?q=magma%20lava%20basalt`), 200);
    expect(search.data.map((p) => p.document_id)).not.toContain(mdDoc);
    const list = await json<Page<Doc>>(srv.api(`/v1/knowledge-bases/${kbId}/documents`), 200);
    expect(list.data.map((d) => d.id)).not.toContain(mdDoc);
    // The other document is untouched.
    expect((await json<{ data: { document_id: string }[] }>(srv.api(`/v1/knowledge-bases/${kbId}/search?q=chlorophyll`), 200)).data[0]?.document_id).toBe(jsonDoc);
  });

  it('an agent may reference its own knowledge base but not another org\'s (400 validation_failed)', async () => {
    const own = await json<Agent>(srv.api('/v1/agents', { body: { name: 'kb agent', knowledge_base_ids: [kbId] } }), 201);
    expect(own.knowledge_base_ids).toEqual([kbId]);
    const other = await srv.addOrganization('other kb org');
    const res = await srv.api('/v1/agents', { key: other.apiKey, body: { name: 'borrower', knowledge_base_ids: [kbId] } });
    const body = await expectApiError(res, 400, 'invalid_request_error', 'validation_failed');
    expect(body.error.errors?.map((e) => e.path)).toContain('knowledge_base_ids');
    expect((await json<Page<Agent>>(srv.api('/v1/agents', { key: other.apiKey }), 200)).data).toEqual([]);
  });
});

describe('OpenAPI document', () => {
  type Op = { responses: Record<string, unknown>; security?: unknown[]; parameters?: { name: string; in: string }[] };
  let doc: { openapi: string; paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, { required?: string[]; properties?: Record<string, { type?: string; maxLength?: number; minLength?: number }>; additionalProperties?: unknown }> } };

  beforeAll(async () => {
    const res = await fetch(`${srv.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = await res.json() as typeof doc;
  });

  it('is OpenAPI 3.1.0 with the chat and messages paths', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/v1/agents/{agent_id}/chat']?.post).toBeDefined();
    expect(doc.paths['/v1/conversations/{conversation_id}/messages']?.get).toBeDefined();
  });

  type Schema = { $ref?: string; required?: string[]; properties?: Record<string, { type?: string; maxLength?: number; minLength?: number }>; additionalProperties?: unknown };
  /** The component `name` with `$ref`s followed; fails on a reference cycle. */
  function component(name: string): Schema {
    let schema = doc.components.schemas[name] as Schema | undefined;
    const seen = new Set<string>([name]);
    while (schema?.$ref !== undefined) {
      const next = schema.$ref.replace('#/components/schemas/', '');
      expect(seen.has(next), `components.schemas.${name} resolves to a $ref cycle: ${[...seen, next].join(' -> ')}`).toBe(false);
      seen.add(next);
      schema = doc.components.schemas[next] as Schema | undefined;
    }
    expect(schema, `components.schemas.${name}`).toBeDefined();
    return schema!;
  }

  it('ChatRequest requires message (1..32000) and refuses unknown fields', () => {
    expect(doc.paths['/v1/agents/{agent_id}/chat']!.post).toMatchObject({ requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/ChatRequest' } } } } });
    const chat = component('ChatRequest');
    expect(chat.required).toContain('message');
    expect(chat.required ?? []).not.toContain('stream');
    expect(chat.properties?.message).toMatchObject({ type: 'string', minLength: 1, maxLength: 32_000 });
    expect(chat.additionalProperties).toBe(false);
  });

  it('no component is a reference to itself (every named schema has a definition)', () => {
    const selfRefs = Object.entries(doc.components.schemas)
      .filter(([name, schema]) => (schema as Schema).$ref === `#/components/schemas/${name}`)
      .map(([name]) => name);
    expect(selfRefs).toEqual([]);
  });

  it('every $ref resolves to a component (none left pointing at #/$defs)', () => {
    const text = JSON.stringify(doc);
    const refs = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    const dangling = [...new Set(refs)].filter((r) => !r.startsWith('#/components/schemas/') || !(r.slice('#/components/schemas/'.length) in doc.components.schemas));
    expect(dangling).toEqual([]);
  });

  it('credentialed operations document 401; the probes and the document itself need none', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        // API.md "Credentials": login, refresh, logout, public paths, the document and the probes need none
        // (the socket ticket needs a person's token).
        const open = ['/healthz', '/readyz', '/v1/openapi.json', '/v1/auth/login', '/v1/auth/refresh', '/v1/auth/logout'].includes(path) || path.startsWith('/v1/public/');
        if (open) expect(op.security, `${method} ${path}`).toEqual([]);
        // The metrics are open unless the server sets PARLEY_METRICS_TOKEN: no credential, or that token.
        else if (path === '/metrics') expect([op.security, Object.keys(op.responses)], `${method} ${path}`).toEqual([[{}, { metricsToken: [] }], ['200', '401']]);
        else expect(op.responses, `${method} ${path}`).toHaveProperty(['401']);
      }
    }
  });

  /** Every path API.md names (REST and socket); the server may not serve all of them yet. */
  const API_MD_PATHS = [
    '/healthz', '/readyz', '/metrics', '/v1/openapi.json',
    '/v1/auth/login', '/v1/auth/refresh', '/v1/auth/logout', '/v1/auth/ws-ticket',
    '/v1/api-keys', '/v1/api-keys/{key_id}', '/v1/api-keys/{key_id}/rotate',
    '/v1/members', '/v1/me', '/v1/me/invitations/{invitation_id}/accept', '/v1/me/invitations/{invitation_id}/decline',
    '/v1/me/organizations/{org_id}',
    '/v1/agents', '/v1/agents/{agent_id}', '/v1/agents/{agent_id}/publish', '/v1/agents/{agent_id}/unpublish',
    '/v1/agents/{agent_id}/chat', '/v1/agents/{agent_id}/chat/ws',
    '/v1/public/agents/{public_key}/chat', '/v1/public/agents/{public_key}/ws',
    '/v1/public/agents/{public_key}/conversations/{conversation_id}/messages',
    '/v1/public/agents/{public_key}/conversations/{conversation_id}/handoff',
    '/v1/public/agents/{public_key}/conversations/{conversation_id}/ws',
    '/v1/public/agents/{public_key}/conversations/{conversation_id}/turns/{turn_id}/events',
    '/v1/conversations', '/v1/conversations/{conversation_id}', '/v1/conversations/{conversation_id}/messages',
    '/v1/conversations/{conversation_id}/turns/{turn_id}/events', '/v1/conversations/{conversation_id}/handoff',
    '/v1/conversations/{conversation_id}/takeover', '/v1/conversations/{conversation_id}/resolve',
    '/v1/conversations/{conversation_id}/close', '/v1/conversations/{conversation_id}/ws', '/v1/inbox/ws',
    '/v1/knowledge-bases', '/v1/knowledge-bases/{kb_id}', '/v1/knowledge-bases/{kb_id}/documents',
    '/v1/knowledge-bases/{kb_id}/documents/{doc_id}', '/v1/knowledge-bases/{kb_id}/search',
    '/v1/webhooks', '/v1/webhooks/events', '/v1/webhooks/{endpoint_id}', '/v1/webhooks/{endpoint_id}/rotate-secret',
    '/v1/webhooks/{endpoint_id}/deliveries', '/v1/webhooks/{endpoint_id}/deliveries/{delivery_id}',
    '/v1/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry', '/v1/webhooks/{endpoint_id}/test',
    '/v1/webhooks/{endpoint_id}/recover', '/v1/usage', '/v1/usage/thresholds',
  ];

  const instantiate = (template: string) => template.replace(/\{\w+\}/g, 'probe1');
  const templateRegex = (template: string) => new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+')}/?$`);

  /** Methods the server routes for a concrete path: OPTIONS is routed nowhere, so a served path answers 405 + Allow. */
  async function servedMethods(path: string): Promise<string[]> {
    const res = await fetch(`${srv.url}${path}`, { method: 'OPTIONS' });
    const text = await res.text();
    if (res.status === 404) return [];
    expect(res.status, `OPTIONS ${path}: ${text}`).toBe(405);
    return (res.headers.get('allow') ?? '').split(',').map((m) => m.trim().toUpperCase()).filter(Boolean).sort();
  }

  /** Methods OpenAPI documents for a concrete path (across every template that matches it). */
  function documentedMethods(path: string): string[] {
    const methods = new Set<string>();
    for (const [template, ops] of Object.entries(doc.paths)) {
      if (templateRegex(template).test(path)) for (const m of Object.keys(ops)) methods.add(m.toUpperCase());
    }
    return [...methods].sort();
  }

  it('every route the server answers appears in it, with the same methods (and nothing extra)', async () => {
    const concrete = new Set([...API_MD_PATHS, ...Object.keys(doc.paths)].map(instantiate));
    const mismatches: string[] = [];
    let served = 0;
    for (const path of concrete) {
      const s = await servedMethods(path);
      const d = documentedMethods(path);
      if (s.length) served++;
      if (JSON.stringify(s) !== JSON.stringify(d)) mismatches.push(`${path}: served [${s.join(', ')}] documented [${d.join(', ')}]`);
    }
    expect(served).toBeGreaterThanOrEqual(Object.keys(doc.paths).length);
    expect(mismatches).toEqual([]);
  });

  it('documents the list parameters of every list route', () => {
    for (const path of ['/v1/agents', '/v1/knowledge-bases', '/v1/conversations', '/v1/knowledge-bases/{kb_id}/documents', '/v1/conversations/{conversation_id}/messages']) {
      const names = (doc.paths[path]?.get?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      expect(names, path).toEqual(expect.arrayContaining(['limit', 'after']));
    }
  });
});

describe('operations endpoints', () => {
  it('/healthz 200 {status:"ok"}', async () => {
    expect(await json<{ status: string }>(fetch(`${srv.url}/healthz`), 200)).toEqual({ status: 'ok' });
  });

  it('/readyz 200 {status:"ready"}', async () => {
    expect(await json<{ status: string }>(fetch(`${srv.url}/readyz`), 200)).toMatchObject({ status: 'ready' });
  });

  it('/metrics is Prometheus text with parley_http_requests_total', async () => {
    await (await srv.api('/v1/agents')).arrayBuffer();
    const res = await fetch(`${srv.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('parley_http_requests_total');
    expect(text).toMatch(/^parley_http_requests_total\{[^}]*method="GET"[^}]*status="200"[^}]*\} \d+/m);
    // No credential ever appears in metrics.
    expect(text).not.toContain(srv.apiKey);
  });
});
