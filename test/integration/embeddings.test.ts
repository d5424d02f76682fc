/**
 * Optional embeddings (docs/knowledge-bases.md "Embeddings (optional)"): the real server and SQLite store,
 * the mock upstream (a real HTTP server) answering /v1/embeddings with hashed bag-of-words vectors and a
 * small synonym table (test/helpers/mock-upstream.ts), so that a question sharing no word with a passage
 * can still be its nearest neighbour.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/events/event-bus.js';
import { startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';

const MODEL = 'mock-embed-64';
const BATCH = 4;

const CAR_DOC = `# Automobile upkeep

Automobile maintenance should happen every twelve months. Mechanics check the brakes, the tyres and the oil of the automobile, and replace worn belts before they snap.
`;
const BREAD_DOC = `# Sourdough

Sourdough bread rises slowly with wild yeast. Bakers feed the starter with flour and water each morning and bake loaves in a hot oven.
`;
const GARDEN_DOC = `# Garden

Tomatoes need sunlight and water. Gardeners stake the plants, pull weeds by hand and pick the fruit when it turns red in late summer.
`;
/** No word in common with CAR_DOC (nor a common stem), but `fix` and `car` are synonyms of its words in the mock. */
const QUESTION = 'Who can fix my car?';

/** A document of `n` sections, each long enough to be a chunk of its own. */
function sectionsDoc(n: number): string {
  const parts = ['# Long guide', ''];
  for (let i = 1; i <= n; i++) {
    parts.push(`## Part ${i}`, '', `Part ${i} describes step number ${i} of the long procedure in detail. `.repeat(5).trim(), '');
  }
  return parts.join('\n');
}

interface Hit { document_id: string; chunk_id: string; title: string; text: string; score: number }
interface Doc { id: string; status: string; error: string | null; chunk_count: number }

async function createBase(srv: TestServer, name: string, key?: string): Promise<string> {
  const r = await srv.api('/v1/knowledge-bases', { body: { name }, ...(key ? { key } : {}) });
  expect(r.status).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

async function upload(srv: TestServer, kbId: string, title: string, content: string, key?: string): Promise<string> {
  const r = await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title, content, content_type: 'text/markdown' }, ...(key ? { key } : {}) });
  expect(r.status).toBe(202);
  return ((await r.json()) as { id: string }).id;
}

async function settled(srv: TestServer, kbId: string, docId: string, key?: string): Promise<Doc> {
  return waitFor(async () => {
    const doc = (await (await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`, key ? { key } : {})).json()) as Doc;
    return doc.status === 'processing' ? undefined : doc;
  }, 20_000, `document ${docId} settled`);
}

async function search(srv: TestServer, kbId: string, q: string, k = 5, key?: string): Promise<Hit[]> {
  const r = await srv.api(`/v1/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}&k=${k}`, key ? { key } : {});
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: Hit[] }).data;
}

/** The store's SQLite connection (the test server always runs the SQLite store). */
const dbOf = (srv: TestServer) => (srv.parley.store as unknown as { db: import('better-sqlite3').Database }).db;

describe('embeddings', () => {
  let mock: MockUpstream;
  let withEmb: TestServer;
  let without: TestServer;
  let kbWith: string;
  let kbWithout: string;
  const docIds = new Map<string, string>();
  const events: DomainEvent[] = [];

  beforeAll(async () => {
    mock = await startMockUpstream();
    withEmb = await startTestServer({
      PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_EMBEDDINGS_MODEL: MODEL, PARLEY_EMBEDDINGS_BATCH: String(BATCH),
    }, { captureLogs: true });
    without = await startTestServer({ PARLEY_OPENAI_BASE_URL: mock.url });
    withEmb.parley.events.subscribe((e) => { events.push(e); });
    kbWith = await createBase(withEmb, 'Mixed');
    kbWithout = await createBase(without, 'Mixed');
    for (const [title, content] of [['Automobile upkeep', CAR_DOC], ['Sourdough', BREAD_DOC], ['Garden', GARDEN_DOC]] as const) {
      const id = await upload(withEmb, kbWith, title, content);
      docIds.set(title, id);
      expect((await settled(withEmb, kbWith, id)).status).toBe('ready');
      expect((await settled(without, kbWithout, await upload(without, kbWithout, title, content))).status).toBe('ready');
    }
  });

  afterAll(async () => {
    await withEmb?.close();
    await without?.close();
    await mock?.close();
  });

  it('embeds a document\'s chunks at ingestion in batches: ceil(n / batch) requests, each vector stored with its model', async () => {
    mock.reset();
    const id = await upload(withEmb, kbWith, 'Long guide', sectionsDoc(10));
    const doc = await settled(withEmb, kbWith, id);
    expect(doc.status).toBe('ready');
    const n = doc.chunk_count;
    expect(n).toBeGreaterThan(BATCH * 2);
    expect(mock.embeddingRequests).toHaveLength(Math.ceil(n / BATCH));
    expect(mock.embeddingRequests.map((r) => r.inputs.length)).toEqual(
      Array.from({ length: Math.ceil(n / BATCH) }, (_, i) => Math.min(BATCH, n - i * BATCH)));
    expect(mock.embeddingRequests.every((r) => r.body.model === MODEL && r.status === 200)).toBe(true);
    // Each input carries the document title and its chunk's heading path.
    expect(mock.embeddingRequests[0]!.inputs[0]).toMatch(/^Long guide\n/);
    const rows = dbOf(withEmb).prepare('SELECT embedding_model AS model, length(embedding) AS bytes FROM chunks WHERE doc_id = ?').all(id);
    expect(rows).toHaveLength(n);
    expect(rows.every((r) => (r as { model: string }).model === MODEL && (r as { bytes: number }).bytes === 64 * 4)).toBe(true);
    // Without embeddings configured, nothing is sent to /embeddings and chunks have no vector.
    mock.reset();
    const plain = await upload(without, kbWithout, 'Long guide', sectionsDoc(10));
    expect((await settled(without, kbWithout, plain)).status).toBe('ready');
    expect(mock.embeddingRequests).toEqual([]);
    expect(dbOf(without).prepare('SELECT count(*) AS n FROM chunks WHERE embedding IS NOT NULL').get()).toEqual({ n: 0 });
  });

  it('finds a passage that shares no word with the question only when embeddings are on', async () => {
    expect(await search(without, kbWithout, QUESTION)).toEqual([]);
    const hits = await search(withEmb, kbWith, QUESTION);
    expect(hits.length).toBeGreaterThan(0);
    expect(hits[0]!.document_id).toBe(docIds.get('Automobile upkeep'));
    // The fused score: 1st of the vector ranking, in no bm25 ranking.
    expect(hits[0]!.score).toBe(Math.round(1e6 / 61) / 1e6);
  });

  it('fuses both rankings: a question bm25 and vectors agree on ranks that passage first with both contributions', async () => {
    const hits = await search(withEmb, kbWith, 'automobile maintenance');
    expect(hits[0]!.document_id).toBe(docIds.get('Automobile upkeep'));
    expect(hits[0]!.score).toBe(Math.round(1e6 * (2 / 61)) / 1e6);
    // bm25 alone on the server without embeddings: the same passage, with its bm25 score.
    const plain = await search(without, kbWithout, 'automobile maintenance');
    expect(plain.map((h) => h.title)).toEqual(['Automobile upkeep']);
    expect(plain[0]!.score).toBeGreaterThan(1);
  });

  it('retrieves by meaning for a chat turn: the passages sent to the model hold the synonym match', async () => {
    const agent = await withEmb.api('/v1/agents', { body: { name: 'Garage', model: { provider: 'openai', name: 'mock' }, knowledge_base_ids: [kbWith] } });
    expect(agent.status).toBe(201);
    const agentId = ((await agent.json()) as { id: string }).id;
    mock.reset();
    const r = await withEmb.api(`/v1/agents/${agentId}/chat`, { body: { message: QUESTION } });
    expect(r.status).toBe(200);
    expect(mock.embeddingRequests.map((q) => q.inputs)).toEqual([[QUESTION]]);
    const system = (mock.requests.at(-1)!.body.messages ?? []).filter((m) => m.role === 'system').map((m) => String(m.content)).join('\n');
    expect(system).toContain('Automobile maintenance should happen every twelve months');
  });

  it('a document whose chunks cannot be embedded fails with the reason after 2 retries, and document.failed is published', async () => {
    mock.reset();
    mock.failEmbeddings();
    try {
      const id = await upload(withEmb, kbWith, 'Doomed', CAR_DOC);
      const doc = await settled(withEmb, kbWith, id);
      expect(doc.status).toBe('failed');
      expect(doc.error).toBe('embedding failed: embeddings upstream returned HTTP 500: mock embeddings failure');
      expect(mock.embeddingRequests.map((r) => r.status)).toEqual([500, 500, 500]);
      expect(dbOf(withEmb).prepare('SELECT count(*) AS n FROM chunks WHERE doc_id = ?').get(id)).toEqual({ n: 0 });
      await waitFor(() => events.find((e) => e.type === 'document.failed' && (e.data as { document_id?: string }).document_id === id), 5000, 'document.failed');
      expect(events.find((e) => e.type === 'document.failed' && (e.data as { document_id?: string }).document_id === id)?.data).toMatchObject({ error: doc.error });
    } finally {
      mock.failEmbeddings(0);
    }
  });

  it('a batch that fails once is retried and the document becomes ready; a 400 is not retried', async () => {
    mock.reset();
    mock.failEmbeddings(1, 503);
    const id = await upload(withEmb, kbWith, 'Retried', BREAD_DOC);
    expect((await settled(withEmb, kbWith, id)).status).toBe('ready');
    expect(mock.embeddingRequests.map((r) => r.status)).toEqual([503, 200]);

    mock.reset();
    mock.failEmbeddings(1, 400);
    const bad = await upload(withEmb, kbWith, 'Refused', GARDEN_DOC);
    const doc = await settled(withEmb, kbWith, bad);
    expect(doc).toMatchObject({ status: 'failed', error: 'embedding failed: embeddings upstream returned HTTP 400: mock embeddings failure' });
    expect(mock.embeddingRequests.map((r) => r.status)).toEqual([400]);
  });

  it('falls back to bm25 alone (with a warning) when the question cannot be embedded', async () => {
    mock.failEmbeddings();
    try {
      expect(await search(withEmb, kbWith, QUESTION)).toEqual([]);
      const hits = await search(withEmb, kbWith, 'automobile maintenance');
      expect(hits[0]!.title).toBe('Automobile upkeep');
      // A bm25 score, not a fused one (fused scores are at most 2/61).
      expect(hits[0]!.score).toBeGreaterThan(1);
    } finally {
      mock.failEmbeddings(0);
    }
    expect(withEmb.logs().filter((l) => l.msg === 'could not embed the search question: bm25 search only').length).toBeGreaterThanOrEqual(2);
  });
});

describe('embeddings: switched on for data stored without them', () => {
  it('keeps chunks stored without vectors searchable by bm25, and vectors only for documents ingested after', async () => {
    const mock = await startMockUpstream();
    const first = await startTestServer({ PARLEY_OPENAI_BASE_URL: mock.url });
    const dataDir = first.dataDir;
    let second: TestServer | undefined;
    try {
      const kb = await createBase(first, 'Before');
      const old = await upload(first, kb, 'Automobile upkeep', CAR_DOC);
      expect((await settled(first, kb, old)).status).toBe('ready');
      await first.parley.close();

      second = await startTestServer({ PARLEY_DATA_DIR: dataDir, PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_EMBEDDINGS_MODEL: MODEL });
      const key = first.apiKey;
      expect(dbOf(second).prepare('SELECT count(*) AS n FROM chunks WHERE embedding IS NULL').get()).toEqual({ n: 1 });
      // The old chunk has no vector: bm25 finds it, the synonym question does not.
      expect((await search(second, kb, 'automobile maintenance', 5, key)).map((h) => h.document_id)).toEqual([old]);
      expect(await search(second, kb, QUESTION, 5, key)).toEqual([]);
      const fresh = await upload(second, kb, 'Upkeep again', CAR_DOC, key);
      expect((await settled(second, kb, fresh, key)).status).toBe('ready');
      expect((await search(second, kb, QUESTION, 5, key)).map((h) => h.document_id)).toEqual([fresh]);
    } finally {
      await second?.close();
      await first.close();
      await mock.close();
    }
  });
});
