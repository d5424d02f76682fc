/**
 * Knowledge formats end to end: HTML, PDF and DOCX parsed in the real ingestion workers (the compiled
 * worker of `npm run build`), broken files failing alone with their reason, the per-document time and
 * memory bounds, `document.failed` on the bus, and through the real server: uploads of each format
 * become searchable and an answer cites them with page number or heading path.
 *
 * Fixtures: test/fixtures (made from docs/ by scripts/make-fixtures.mjs); broken files are made here
 * (test/helpers/broken-files.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus, type DomainEvent } from '../../src/events/event-bus.js';
import { IngestionPool } from '../../src/knowledge/ingestion-pool.js';
import { KnowledgeService } from '../../src/knowledge/knowledge-service.js';
import type { IngestResult, IngestTask } from '../../src/knowledge/types.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import {
  encryptedPdf, fixtureDocx, fixturePdf, HTML_PAGE, randomBytes, truncatedPdf, zipOf,
} from '../helpers/broken-files.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const PDF = 'application/pdf';
const utf8 = (text: string) => new TextEncoder().encode(text);

function chunksOf(result: IngestResult) {
  if (!result.ok) throw new Error(`expected ok, got error ${result.error}`);
  return result.chunks;
}

describe('formats in the ingestion workers', () => {
  let pool: IngestionPool;
  beforeAll(() => { pool = new IngestionPool({ processes: 2 }); });
  afterAll(async () => { await pool?.close(); });

  it('PDF: text per page, the page number on every chunk, headings from the larger type', async () => {
    const chunks = chunksOf(await pool.run({ title: 'Operations', contentType: PDF, content: fixturePdf() }));
    const pages = chunks.map((c) => c.page);
    expect(pages[0]).toBe(1);
    expect(Math.max(...(pages as number[]))).toBe(4); // scripts/make-fixtures.mjs lays docs/operations.md out on 4 pages
    expect(pages).toEqual([...pages].sort((a, b) => a! - b!)); // document order
    const sigterm = chunks.find((c) => c.text.includes('When Parley receives SIGTERM'));
    expect(sigterm).toMatchObject({ page: 2, heading: 'Operations > Graceful shutdown on SIGTERM' });
    const metrics = chunks.find((c) => c.heading === 'Operations > Metrics: /metrics');
    expect(metrics?.page).toBe(3);
    expect(metrics?.text).toContain('Prometheus');
  });

  it('DOCX: Word heading styles become the heading path; bullets and paragraphs are text', async () => {
    const chunks = chunksOf(await pool.run({ title: 'Agents', contentType: DOCX, content: fixtureDocx() }));
    expect(chunks.every((c) => c.page === null)).toBe(true);
    const headings = chunks.map((c) => c.heading);
    expect(headings).toEqual(expect.arrayContaining([
      'Agents and models > Create an agent', 'Agents and models > The builtin model', 'Agents and models > Use an OpenAI-compatible model',
    ]));
    const create = chunks.find((c) => c.heading === 'Agents and models > Create an agent');
    expect(create?.text).toContain('To create an agent, send POST /v1/agents');
  });

  it('HTML: the readable article under its title; scripts, styles, navigation, header and footer dropped', async () => {
    const chunks = chunksOf(await pool.run({ title: 'Loyalty', contentType: 'text/html', content: utf8(HTML_PAGE) }));
    const all = chunks.map((c) => `${c.heading}\n${c.text}`).join('\n');
    for (const junk of ['spyware-beacon-load', 'inline-script-text', 'font-family', 'Navigation menu entry', 'sitewide-header', 'footer-boilerplate']) {
      expect(all).not.toContain(junk);
    }
    expect(chunks.find((c) => c.text.includes('Stamps expire eighteen months'))?.heading).toBe('Loyalty programme > Expiry of stamps');
    expect(all).toContain('Members of the loyalty programme collect one stamp');
    expect(all).toContain('Stamps cannot be exchanged for cash.\nLost cards are replaced at the counter.');
  });

  it('an HTML fragment without an article is walked whole; JSON-style string content works for HTML', async () => {
    const chunks = chunksOf(await pool.run({
      title: 'Fragment', contentType: 'text/html',
      content: '<h2>Opening hours</h2><p>We open at <b>seven</b> and close at nine.</p><table><tr><th>Day</th><th>Hours</th></tr><tr><td>Sunday</td><td>closed</td></tr></table>',
    }));
    const all = chunks.map((c) => c.text).join('\n');
    expect(all).toContain('We open at seven and close at nine.');
    expect(all).toContain('Day | Hours\nSunday | closed');
    expect(chunks[0]!.heading).toMatch(/Opening hours$/);
  });

  it('each kind of broken file fails alone with its reason while the good files of the same batch succeed', async () => {
    const tasks: Array<[string, IngestTask]> = [
      ['truncated pdf', { title: 't', contentType: PDF, content: truncatedPdf() }],
      ['encrypted pdf', { title: 'e', contentType: PDF, content: await encryptedPdf() }],
      ['random bytes as pdf', { title: 'r', contentType: PDF, content: randomBytes(4096) }],
      ['empty pdf', { title: 'z', contentType: PDF, content: new Uint8Array(0) }],
      ['good pdf', { title: 'g', contentType: PDF, content: fixturePdf() }],
      ['zip that is not a docx', { title: 'n', contentType: DOCX, content: zipOf({ 'notes.txt': 'a zip, not a Word file' }) }],
      ['random bytes as docx', { title: 'r', contentType: DOCX, content: randomBytes(4096, 7) }],
      ['empty docx', { title: 'z', contentType: DOCX, content: new Uint8Array(0) }],
      ['good docx', { title: 'g', contentType: DOCX, content: fixtureDocx() }],
      ['empty html', { title: 'z', contentType: 'text/html', content: utf8(' \n ') }],
      ['html without text', { title: 's', contentType: 'text/html', content: utf8('<html><head><script>var a = 1;</script></head><body><nav>Home</nav></body></html>') }],
      ['html in latin-1', { title: 'l', contentType: 'text/html', content: new Uint8Array([0x3c, 0x70, 0x3e, 0xe9, 0x74, 0xe9]) }],
      ['good html', { title: 'g', contentType: 'text/html', content: utf8(HTML_PAGE) }],
    ];
    const results = await Promise.all(tasks.map(([, task]) => pool.run(task)));
    const byName = Object.fromEntries(tasks.map(([name], i) => [name, results[i]!]));
    expect(byName['truncated pdf']).toEqual({ ok: false, code: 'invalid_document', error: 'document is not a valid PDF (corrupt or truncated)' });
    expect(byName['encrypted pdf']).toEqual({ ok: false, code: 'invalid_document', error: 'document is encrypted (password-protected PDF)' });
    expect(byName['random bytes as pdf']).toEqual({ ok: false, code: 'invalid_document', error: 'document is not a valid PDF (corrupt or truncated)' });
    expect(byName['empty pdf']).toEqual({ ok: false, code: 'invalid_document', error: 'document is empty' });
    expect(byName['zip that is not a docx']).toEqual({ ok: false, code: 'invalid_document', error: expect.stringMatching(/^document is not a valid DOCX file: .*main document part/) });
    expect(byName['random bytes as docx']).toEqual({ ok: false, code: 'invalid_document', error: expect.stringMatching(/^document is not a valid DOCX file: .*zip/i) });
    expect(byName['empty docx']).toEqual({ ok: false, code: 'invalid_document', error: 'document is empty' });
    expect(byName['empty html']).toEqual({ ok: false, code: 'invalid_document', error: 'document is empty' });
    expect(byName['html without text']).toEqual({ ok: false, code: 'invalid_document', error: 'document has no indexable text' });
    expect(byName['html in latin-1']).toEqual({ ok: false, code: 'invalid_document', error: 'document is not valid UTF-8 text' });
    for (const good of ['good pdf', 'good docx', 'good html']) expect(chunksOf(byName[good]!).length).toBeGreaterThan(0);
  });

  it('a document past the time limit fails with that reason; the other document and later ones succeed', async () => {
    // About 8 MB of Markdown: seconds of lexing, far past 100 ms.
    const big = `# Big\n\n${'Many words in a paragraph that goes on for a while. '.repeat(20)}\n\n`.repeat(8000);
    const [slow, other] = await Promise.all([
      pool.run({ title: 'big', contentType: 'text/markdown', content: big }, { timeoutMs: 100 }),
      pool.run({ title: 'small', contentType: 'text/markdown', content: '# Small\n\nStill ingested while the other one is stopped.' }),
    ]);
    expect(slow).toEqual({ ok: false, code: 'ingestion_timeout', error: 'document took longer than 100 ms to parse (the ingestion time limit)' });
    expect(chunksOf(other)[0]!.text).toBe('Still ingested while the other one is stopped.');
    expect(chunksOf(await pool.run({ title: 'after', contentType: 'text/plain', content: 'The pool still serves.' }))[0]!.text).toBe('The pool still serves.');
  }, 60_000);

  it('a document past the memory limit ends its worker and fails with that reason; the others succeed', async () => {
    const small = new IngestionPool({ processes: 2, memoryMb: 16 });
    try {
      const big = `# Big\n\n${'Many words in a paragraph that goes on for a while. '.repeat(20)}\n\n`.repeat(8000);
      const [hungry, other] = await Promise.all([
        small.run({ title: 'big', contentType: 'text/markdown', content: big }),
        small.run({ title: 'small', contentType: 'text/markdown', content: '# Small\n\nIngested beside the one that ran out of memory.' }),
      ]);
      expect(hungry).toEqual({ ok: false, code: 'document_too_large', error: 'document needs more than 16 MB of memory to parse (the ingestion memory limit)' });
      expect(chunksOf(other)[0]!.text).toBe('Ingested beside the one that ran out of memory.');
      const after = await small.run({ title: 'after', contentType: 'text/plain', content: 'A new worker took over.' });
      expect(chunksOf(after)[0]!.text).toBe('A new worker took over.');
    } finally {
      await small.close();
    }
  }, 60_000);
});

describe('KnowledgeService: a failed document is recorded and published alone', () => {
  it('broken uploads end failed with their error and a document.failed event; the good ones ready with document.ready', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-formats-'));
    const store = createSqliteStore(dir);
    const pool = new IngestionPool({ processes: 2 });
    const events: DomainEvent[] = [];
    const bus = new EventBus(() => undefined);
    bus.subscribe((e) => events.push(e));
    const knowledge = new KnowledgeService(store, pool, bus, pino({ level: 'silent' }));
    try {
      const kb = { id: 'kb_1', org_id: 'org_1', name: 'Formats', created_at: new Date().toISOString() };
      await store.knowledge.createBase(kb);
      const uploads = [
        { title: 'Encrypted', contentType: PDF, content: await encryptedPdf() },
        { title: 'Operations', contentType: PDF, content: fixturePdf() },
        { title: 'Not a docx', contentType: DOCX, content: zipOf({ 'a.txt': 'x' }) },
        { title: 'Agents', contentType: DOCX, content: fixtureDocx() },
      ] as const;
      const docs = [];
      for (const u of uploads) docs.push(await knowledge.upload(kb, { ...u }));
      await knowledge.settled();
      const [encrypted, operations, notDocx, agents] = await Promise.all(docs.map((d) => store.knowledge.getDocument('org_1', 'kb_1', d.id)));
      expect(encrypted).toMatchObject({ status: 'failed', error: 'document is encrypted (password-protected PDF)', error_code: 'invalid_document', chunk_count: 0 });
      expect(notDocx).toMatchObject({ status: 'failed', error: expect.stringMatching(/^document is not a valid DOCX file/), error_code: 'invalid_document' });
      expect(operations).toMatchObject({ status: 'ready', error: null });
      expect(agents).toMatchObject({ status: 'ready', error: null });
      expect(events.filter((e) => e.type === 'document.failed').map((e) => e.data)).toEqual(expect.arrayContaining([
        { document_id: docs[0]!.id, knowledge_base_id: 'kb_1', error: 'document is encrypted (password-protected PDF)', error_code: 'invalid_document' },
        { document_id: docs[2]!.id, knowledge_base_id: 'kb_1', error: expect.stringMatching(/^document is not a valid DOCX file/), error_code: 'invalid_document' },
      ]));
      expect(events.filter((e) => e.type === 'document.ready').map((e) => e.data.document_id).sort()).toEqual([docs[1]!.id, docs[3]!.id].sort());
      const hits = await store.knowledge.search('org_1', ['kb_1'], 'SIGTERM drains', 3);
      expect(hits[0]).toMatchObject({ document_id: docs[1]!.id, page: 2 });
    } finally {
      await pool.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('formats through the server: uploaded, searchable, cited', () => {
  let srv: TestServer;
  let kbId: string;
  let agentId: string;
  const ids: Record<string, string> = {};

  async function upload(title: string, contentType: string, body: Uint8Array): Promise<string> {
    const res = await fetch(`${srv.url}/v1/knowledge-bases/${kbId}/documents?title=${encodeURIComponent(title)}`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': contentType }, body,
    });
    expect(res.status, await res.clone().text()).toBe(202);
    return ((await res.json()) as { id: string }).id;
  }

  async function settle(id: string): Promise<{ status: string; error: string | null; chunk_count: number }> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const doc = (await (await srv.api(`/v1/knowledge-bases/${kbId}/documents/${id}`)).json()) as { status: string; error: string | null; chunk_count: number };
      if (doc.status !== 'processing' || Date.now() > deadline) return doc;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  beforeAll(async () => {
    srv = await startTestServer();
    kbId = ((await (await srv.api('/v1/knowledge-bases', { body: { name: 'Formats' } })).json()) as { id: string }).id;
    ids.pdf = await upload('Running Parley', PDF, fixturePdf());
    ids.docx = await upload('Agents guide', `${DOCX}`, fixtureDocx());
    ids.html = await upload('Loyalty page', 'text/html; charset=utf-8', utf8(HTML_PAGE));
    ids.broken = await upload('Broken', PDF, truncatedPdf());
    const agent = await srv.api('/v1/agents', { body: { name: 'Formats bot', knowledge_base_ids: [kbId] } });
    expect(agent.status).toBe(201);
    agentId = ((await agent.json()) as { id: string }).id;
  }, 60_000);
  afterAll(async () => { await srv?.close(); });

  it('every format becomes ready; the broken PDF fails with its reason', async () => {
    for (const key of ['pdf', 'docx', 'html']) {
      const doc = await settle(ids[key]!);
      expect([key, doc.status, doc.error]).toEqual([key, 'ready', null]);
      expect(doc.chunk_count).toBeGreaterThan(0);
    }
    expect(await settle(ids.broken!)).toMatchObject({ status: 'failed', error: 'document is not a valid PDF (corrupt or truncated)' });
  }, 60_000);

  it('search shows the page of PDF passages and null for the others', async () => {
    const res = await srv.api(`/v1/knowledge-bases/${kbId}/search?q=${encodeURIComponent('reverse proxy nginx')}&k=3`);
    const hits = ((await res.json()) as { data: Array<{ document_id: string; page: number | null; heading: string }> }).data;
    expect(hits[0]).toMatchObject({ document_id: ids.pdf, heading: 'Operations > Run Parley behind a reverse proxy' });
    expect([2, 3]).toContain(hits[0]!.page); // the section starts on page 2 and runs onto page 3
    const loyalty = ((await (await srv.api(`/v1/knowledge-bases/${kbId}/search?q=stamps%20expire&k=1`)).json()) as { data: Array<{ document_id: string; page: number | null }> }).data;
    expect(loyalty).toEqual([expect.objectContaining({ document_id: ids.html, page: null, heading: 'Loyalty programme > Expiry of stamps' })]);
  });

  const ask = async (message: string) => {
    const res = await srv.api(`/v1/agents/${agentId}/chat`, { body: { message } });
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as { content: string; citations: Array<{ document_id: string; title: string; snippet: string; score: number; heading?: string; page?: number }> };
  };

  it('an answer cites the PDF with its page number', async () => {
    const answer = await ask('What does Parley do when it receives SIGTERM?');
    const cited = answer.citations.find((c) => c.document_id === ids.pdf);
    // Which section the built-in model quotes depends on its sentence choice; the citation must name the
    // PDF's page (the fixture has 4) and the heading path of the section quoted.
    expect(cited, JSON.stringify(answer)).toMatchObject({ title: 'Running Parley', heading: expect.stringMatching(/^Operations > /) });
    expect([1, 2, 3, 4]).toContain(cited!.page);
    expect(answer.content).toContain('SIGTERM');
    expect(cited!.snippet.length).toBeGreaterThan(0);
    expect(typeof cited!.score).toBe('number');
  });

  it('an answer cites the DOCX with its heading path (no page)', async () => {
    const answer = await ask('How do I create an agent with POST /v1/agents?');
    const cited = answer.citations.find((c) => c.document_id === ids.docx);
    expect(cited).toMatchObject({ title: 'Agents guide', heading: expect.stringMatching(/^Agents and models > /) });
    expect(cited).not.toHaveProperty('page');
  });

  it('an answer cites the HTML page with its heading path', async () => {
    const answer = await ask('When do loyalty stamps expire?');
    const cited = answer.citations.find((c) => c.document_id === ids.html);
    expect(cited).toMatchObject({ title: 'Loyalty page', heading: 'Loyalty programme > Expiry of stamps' });
    expect(answer.content).toContain('eighteen months');
  });

  it('a JSON upload takes the text formats and refuses PDF and DOCX (they are binary)', async () => {
    const ok = await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title: 'Snippet', content: '<p>Parking is free after six.</p>', content_type: 'text/html' } });
    expect(ok.status).toBe(202);
    expect(await settle(((await ok.json()) as { id: string }).id)).toMatchObject({ status: 'ready' });
    const pdf = await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title: 'No', content: '%PDF-1.7', content_type: PDF } });
    expect(pdf.status).toBe(400);
    expect(((await pdf.json()) as { error: { code: string } }).error.code).toBe('validation_failed');
  });

  it('another media type is still refused with 415', async () => {
    const res = await fetch(`${srv.url}/v1/knowledge-bases/${kbId}/documents?title=x`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/msword' }, body: 'x',
    });
    expect(res.status).toBe(415);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('unsupported_content_type');
    expect(body.error.message).toContain('application/pdf');
  });
});
