/**
 * Issue 35, finding 6: one organization's slow documents held up everyone's ingestion (one parser, a
 * queue without bound or fairness: two slow documents of one organization made another's 29-byte text
 * wait 120 s). Through the real server over HTTP, with the review's kind of slow documents (made in
 * test/helpers/bombs.ts): HTML nested 850,000 `<div>`s deep (9 MB) and a PDF of 58,000 pages. With one
 * parser and a time limit of T, organization A's three slow documents would hold B's text for 3T in
 * arrival order; fair, B waits for at most the one A document being parsed. And the per-organization
 * bound: A's upload past it gets 429 `rate_limited` with `Retry-After`, B's still goes through. Then the
 * same fairness after a restart (documents left `processing`, queued again by resumePending).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events/event-bus.js';
import { IngestionPool } from '../../src/knowledge/ingestion-pool.js';
import { KnowledgeService } from '../../src/knowledge/knowledge-service.js';
import type { DocumentRecord } from '../../src/store/records.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { manyPagesPdf, nestedHtml } from '../helpers/bombs.js';
import { waitFor } from '../helpers/sse-client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** The time limit of one document here, ms: every slow document is cut at it. */
const T = 6000;
const SMALL_TEXT = 'A short note from another org';

describe('fair ingestion between organizations (issue 35, finding 6)', () => {
  let srv: TestServer;
  let b: { orgId: string; apiKey: string };
  let kbA: string;
  let kbB: string;

  beforeAll(async () => {
    srv = await startTestServer({ PARLEY_INGEST_WORKERS: '1', PARLEY_INGEST_TIMEOUT_MS: String(T), PARLEY_INGEST_MAX_PROCESSING_PER_ORG: '3' });
    b = await srv.addOrganization('Other');
    kbA = ((await (await srv.api('/v1/knowledge-bases', { body: { name: 'A' } })).json()) as { id: string }).id;
    kbB = ((await (await srv.api('/v1/knowledge-bases', { body: { name: 'B' }, key: b.apiKey })).json()) as { id: string }).id;
  });
  afterAll(async () => { await srv?.close(); });

  async function upload(key: string, kb: string, title: string, contentType: string, body: Uint8Array | string): Promise<Response> {
    return fetch(`${srv.url}/v1/knowledge-bases/${kb}/documents?title=${encodeURIComponent(title)}`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType }, body,
    });
  }
  async function statusOf(key: string, kb: string, id: string): Promise<{ status: string; error_code: string | null }> {
    return (await (await srv.api(`/v1/knowledge-bases/${kb}/documents/${id}`, { key })).json()) as { status: string; error_code: string | null };
  }

  it('another organization\'s small text waits for at most one slow document; past the bound an upload gets 429 with Retry-After', async () => {
    const html = nestedHtml(850_000);
    expect(html.byteLength).toBeGreaterThan(9e6);
    const pdf = manyPagesPdf(58_000);
    const slow: string[] = [];
    // Three slow documents of A: as many as its bound allows.
    for (const [title, type, body] of [['nested', 'text/html', html], ['report', 'application/pdf', pdf], ['nested again', 'text/html', html]] as const) {
      const res = await upload(srv.apiKey, kbA, title, type, new Uint8Array(body));
      expect(res.status).toBe(202);
      slow.push(((await res.json()) as { id: string }).id);
    }
    // A's first document is being parsed now (the parser is free); B's text arrives behind A's other two.
    const started = performance.now();
    const small = await upload(b.apiKey, kbB, 'note', 'text/plain', SMALL_TEXT);
    expect(small.status).toBe(202);
    const smallId = ((await small.json()) as { id: string }).id;
    const done = await waitFor(async () => {
      const d = await statusOf(b.apiKey, kbB, smallId);
      return d.status === 'processing' ? undefined : d;
    }, 4 * T, 'B\'s small text');
    const waitedMs = performance.now() - started;
    console.log(`B's ${SMALL_TEXT.length}-byte text ready after ${waitedMs.toFixed(0)} ms behind A's slow documents (time limit ${T} ms)`);
    expect(done.status).toBe('ready');
    // At most the one A document being parsed (T), plus its parser's replacement and B's own parse.
    expect(waitedMs).toBeLessThan(T + 4000);
    // A's later slow documents still wait: B went first.
    expect((await statusOf(srv.apiKey, kbA, slow[2]!)).status).toBe('processing');

    // The bound (3): A has two documents processing; a third is accepted, a fourth refused with nothing
    // stored; B is not affected.
    expect((await upload(srv.apiKey, kbA, 'fourth', 'text/plain', 'Fourth.')).status).toBe(202);
    const refused = await upload(srv.apiKey, kbA, 'fifth', 'text/plain', 'Fifth.');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { error: { type: string; code: string } }).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    const listed = ((await (await srv.api(`/v1/knowledge-bases/${kbA}/documents?limit=100`)).json()) as { data: Array<{ title: string }> }).data;
    expect(listed.map((d) => d.title).sort()).toEqual(['fourth', 'nested', 'nested again', 'report']);
    expect((await upload(b.apiKey, kbB, 'another note', 'text/plain', 'Another note.')).status).toBe(202);

    // A's slow documents end at the time limit, one after the other.
    const first = await waitFor(async () => {
      const d = await statusOf(srv.apiKey, kbA, slow[0]!);
      return d.status === 'processing' ? undefined : d;
    }, 4 * T, 'A\'s first document');
    expect(first).toMatchObject({ status: 'failed', error_code: 'ingestion_timeout' });
  }, 60_000);
});

describe('fair ingestion after a restart (resumePending)', () => {
  it('documents left processing are queued again per organization: the other organization\'s goes second, not last', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-resume-'));
    const store = createSqliteStore(dir);
    const pool = new IngestionPool({ processes: 1, timeoutMs: 2000 });
    const knowledge = new KnowledgeService(store, pool, new EventBus(() => undefined), pino({ level: 'silent' }));
    try {
      const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
      const record = (id: string, org: string, kb: string, contentType: DocumentRecord['content_type'], n: number): DocumentRecord => ({
        id, org_id: org, knowledge_base_id: kb, title: id, content_type: contentType, status: 'processing', error: null, error_code: null,
        chunk_count: 0, bytes: 1, created_at: at(n), updated_at: at(n),
      });
      await store.knowledge.createBase({ id: 'kb_a', org_id: 'org_a', name: 'A', created_at: at(0) });
      await store.knowledge.createBase({ id: 'kb_b', org_id: 'org_b', name: 'B', created_at: at(0) });
      // As a crash leaves them: A's three slow documents first, B's small one last.
      const html = new Uint8Array(nestedHtml(850_000));
      for (const n of [1, 2, 3]) await store.knowledge.createDocument(record(`doc_a${n}`, 'org_a', 'kb_a', 'text/html', n), html);
      await store.knowledge.createDocument(record('doc_b', 'org_b', 'kb_b', 'text/plain', 4), SMALL_TEXT);

      const started = performance.now();
      expect((await knowledge.resumePending()).resumed).toBe(4);
      const ready = await waitFor(async () => {
        const d = await store.knowledge.getDocument('org_b', 'kb_b', 'doc_b');
        return d?.status === 'processing' ? undefined : d;
      }, 20_000, 'B\'s document');
      expect(ready?.status).toBe('ready');
      expect(performance.now() - started).toBeLessThan(2000 + 2500);
      expect((await store.knowledge.getDocument('org_a', 'kb_a', 'doc_a3'))?.status).toBe('processing');
      await knowledge.settled();
      expect((await store.knowledge.getDocument('org_a', 'kb_a', 'doc_a3'))).toMatchObject({ status: 'failed', error_code: 'ingestion_timeout' });
    } finally {
      await knowledge.settled();
      await pool.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('shutdown leaves waiting documents for the next start (stopWaiting)', () => {
  it('settles after the documents being parsed; the waiting ones stay processing and the next start resumes them', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-stop-'));
    const store = createSqliteStore(dir);
    const pool = new IngestionPool({ processes: 1, timeoutMs: 1500 });
    const knowledge = new KnowledgeService(store, pool, new EventBus(() => undefined), pino({ level: 'silent' }));
    try {
      const kb = { id: 'kb_a', org_id: 'org_a', name: 'A', created_at: new Date().toISOString() };
      await store.knowledge.createBase(kb);
      const html = new Uint8Array(nestedHtml(850_000));
      const docs = [];
      for (const title of ['one', 'two', 'three']) docs.push(await knowledge.upload(kb, { title, contentType: 'text/html', content: html.slice() }));
      expect(knowledge.waiting('org_a')).toBe(2);
      knowledge.stopWaiting();
      expect(knowledge.waiting('org_a')).toBe(0);
      const started = performance.now();
      await knowledge.settled();
      expect(performance.now() - started).toBeLessThan(1500 + 1500); // the one being parsed, not all three
      const statuses = await Promise.all(docs.map(async (d) => (await store.knowledge.getDocument('org_a', 'kb_a', d.id))?.status));
      expect(statuses).toEqual(['failed', 'processing', 'processing']);
      expect((await store.knowledge.pendingDocuments()).map((d) => d.title)).toEqual(['two', 'three']);
    } finally {
      await pool.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
