import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { IngestionPool } from '../../src/knowledge/ingestion-pool.js';
import { KnowledgeService } from '../../src/knowledge/knowledge-service.js';
import { EventBus, type DomainEvent } from '../../src/events/event-bus.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { DocumentRecord, KnowledgeBaseRecord } from '../../src/store/records.js';
import { chunkLength as lengthOf, queryTerms as qtermsOf, rank as bm25Rank, terms as termsOf } from '../../src/store/mongodb/bm25.js';
import { queryWords } from '../../src/store/search-terms.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const docsDir = path.join(projectRoot, 'docs');
const corpusDir = path.resolve(projectRoot, '../shared/corpus/nodejs-api');
const hasCorpus = existsSync(corpusDir);
if (!hasCorpus) console.warn('skipped: ../shared/corpus/nodejs-api not found');

const ORG = 'org_test';
const K = 10;
const TOP_DOCS = 3;

function markdownFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((n) => n.endsWith('.md')).sort().map((n) => path.join(dir, n));
}

/** Title the way the first-run bootstrap does: `child_process.md` -> `Child process`. */
function titleOf(file: string): string {
  return path.basename(file).replace(/\.md$/, '').replace(/[-_]+/g, ' ').replace(/^\w/, (c) => c.toUpperCase());
}

/** `docs/chat.md` / `nodejs/crypto.md`: file names are not unique across the two sets (errors.md). */
const keyOf = (file: string) => `${file.startsWith(corpusDir) ? 'nodejs' : 'docs'}/${path.basename(file)}`;

let tmpDir: string;
let store: ReturnType<typeof createSqliteStore>;
let pool: IngestionPool;
let knowledge: KnowledgeService;
let kb: KnowledgeBaseRecord;
const events: DomainEvent[] = [];
const keyByDocId = new Map<string, string>();
const uploaded: DocumentRecord[] = [];

/** The document keys of the top `TOP_DOCS` distinct documents among the best `K` passages. */
async function topDocuments(question: string): Promise<string[]> {
  const passages = await store.knowledge.search(ORG, [kb.id], question, K);
  const docs: string[] = [];
  for (const p of passages) {
    const key = keyByDocId.get(p.document_id) ?? `?${p.document_id}`;
    if (!docs.includes(key)) docs.push(key);
  }
  return docs.slice(0, TOP_DOCS);
}

async function ingest(files: string[]): Promise<{ bytes: number; ms: number; chunks: number }> {
  const started = performance.now();
  let bytes = 0;
  const records = await Promise.all(files.map((file) => {
    const content = new Uint8Array(readFileSync(file));
    bytes += content.byteLength;
    return knowledge.upload(kb, { title: titleOf(file), contentType: 'text/markdown', content });
  }));
  await knowledge.settled();
  const ms = performance.now() - started;
  records.forEach((rec, i) => { keyByDocId.set(rec.id, keyOf(files[i]!)); uploaded.push(rec); });
  let chunks = 0;
  for (const rec of records) chunks += (await store.knowledge.getDocument(ORG, kb.id, rec.id))?.chunk_count ?? 0;
  return { bytes, ms, chunks };
}

function report(label: string, r: { bytes: number; ms: number; chunks: number }, files: number): void {
  const mb = r.bytes / (1024 * 1024);
  console.log(
    `${label}: ${files} files, ${mb.toFixed(2)} MB, ${r.chunks} chunks, ingested in ${r.ms.toFixed(0)} ms ` +
      `(${(mb / (r.ms / 1000)).toFixed(2)} MB/s, 2 worker threads, SQLite FTS5)`,
  );
}

beforeAll(async () => {
  tmpDir = mkdtempSync(path.join(os.tmpdir(), 'parley-retrieval-'));
  store = createSqliteStore(tmpDir);
  pool = new IngestionPool({ processes: 2 });
  const logger = pino({ level: 'silent' });
  const bus = new EventBus((err) => { throw err; });
  bus.subscribe((e) => events.push(e));
  knowledge = new KnowledgeService(store, pool, bus, logger);
  kb = { id: 'kb_retrieval', org_id: ORG, name: 'Docs and Node.js API', created_at: new Date().toISOString() };
  await store.knowledge.createBase(kb);

  const docFiles = markdownFiles(docsDir);
  report('project docs', await ingest(docFiles), docFiles.length);
  if (hasCorpus) {
    const corpusFiles = markdownFiles(corpusDir);
    report('Node.js API corpus', await ingest(corpusFiles), corpusFiles.length);
  }
}, 120_000);

afterAll(async () => {
  await pool?.close();
  await store?.close();
  if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
});

describe('retrieval: ingestion', () => {
  it('every uploaded document becomes ready with chunks, and document.ready is published for each', async () => {
    expect(uploaded.length).toBeGreaterThanOrEqual(markdownFiles(docsDir).length);
    for (const rec of uploaded) {
      const doc = await store.knowledge.getDocument(ORG, kb.id, rec.id);
      expect(doc, keyByDocId.get(rec.id)).toBeDefined();
      expect({ key: keyByDocId.get(rec.id), status: doc!.status, error: doc!.error })
        .toEqual({ key: keyByDocId.get(rec.id), status: 'ready', error: null });
      expect(doc!.chunk_count).toBeGreaterThan(0);
    }
    const ready = events.filter((e) => e.type === 'document.ready').map((e) => e.data.document_id);
    expect(new Set(ready)).toEqual(new Set(uploaded.map((d) => d.id)));
    expect(events.filter((e) => e.type === 'document.failed')).toEqual([]);
  });
});

/** Each question with the documents any of which counts as right. */
const DOC_QUESTIONS: Array<[string, string[]]> = [
  ['How do I stream a reply?', ['docs/chat.md']],
  ['What is the format of an API key?', ['docs/authentication.md']],
];

const NODE_QUESTIONS: Array<[string, string[]]> = [
  ['How do I compute a SHA-256 hash of a string?', ['nodejs/crypto.md']],
  ['How do I spawn a child process and read its output?', ['nodejs/child_process.md']],
  ['How do I read a file line by line?', ['nodejs/readline.md', 'nodejs/fs.md']],
  ['How do I create an HTTP server that listens on a port?', ['nodejs/http.md']],
  ['How do I compress data with gzip?', ['nodejs/zlib.md']],
  ['How do I resolve a hostname to an IP address?', ['nodejs/dns.md']],
  ['How do I run JavaScript in a worker thread?', ['nodejs/worker_threads.md']],
  ['How do I schedule a function to run after a delay?', ['nodejs/timers.md']],
];

describe('retrieval: project docs questions', () => {
  it.each(DOC_QUESTIONS)('%s -> %j in the top 3 documents', async (question, expected) => {
    const top = await topDocuments(question);
    console.log(`"${question}" -> ${top.join(', ')}`);
    expect(top.some((d) => expected.includes(d)), `top ${TOP_DOCS} for "${question}": ${top.join(', ')}`).toBe(true);
  });
});

describe.skipIf(!hasCorpus)('retrieval: Node.js API corpus questions', () => {
  it.each(NODE_QUESTIONS)('%s -> %j in the top 3 documents', async (question, expected) => {
    const top = await topDocuments(question);
    console.log(`"${question}" -> ${top.join(', ')}`);
    expect(top.some((d) => expected.includes(d)), `top ${TOP_DOCS} for "${question}": ${top.join(', ')}`).toBe(true);
  });
});

/**
 * How close MongoDB's ranking is to SQLite's on the same chunks (docs/knowledge-bases.md "MongoDB"): the
 * MongoDB store ranks `$text` candidates with BM25 computed in the application (src/store/mongodb/bm25.ts).
 * Here every chunk containing a query term is a candidate (what `$text` would find with no limit) and the
 * corpus statistics are those of all chunks, as FTS5's are; what is compared is the formula and the
 * tokenizer (Porter2 in the application, Porter in FTS5), for each question: the share of SQLite's best
 * 10 passages that are also among the application's best 10, and whether the best passage is the same.
 * The `$text` candidate limits themselves need a MongoDB server (test/contract/mongodb.contract.test.ts).
 */
describe('retrieval: BM25 in the application (the MongoDB ranking) against SQLite FTS5 on the same chunks', () => {
  it('overlap of the best 10 passages and the same best passage, on every question', async () => {
    const chunks = store.db.prepare('SELECT id, title, heading, body FROM chunks').all() as Array<{ id: string; title: string; heading: string; body: string }>;
    const termSets = chunks.map((c) => new Set(termsOf(`${c.title} ${c.heading} ${c.body}`)));
    const avgLength = chunks.reduce((n, c) => n + lengthOf(c), 0) / chunks.length;
    const questions = [...DOC_QUESTIONS, ...(hasCorpus ? NODE_QUESTIONS : [])].map(([q]) => q);
    let overlapSum = 0;
    let sameBest = 0;
    for (const q of questions) {
      const sqlite = (await store.knowledge.search(ORG, [kb.id], q, K)).map((h) => h.chunk_id);
      const qterms = qtermsOf(queryWords(q)).map((t) => t.term);
      const docFreq = new Map(qterms.map((t) => [t, termSets.filter((s) => s.has(t)).length]));
      const candidates = chunks.filter((_, i) => qterms.some((t) => termSets[i]!.has(t)));
      const ours = bm25Rank(candidates, qterms, { rows: chunks.length, avgLength, docFreq }, K).map((r) => r.item.id);
      const overlap = ours.filter((id) => sqlite.includes(id)).length / Math.max(1, sqlite.length);
      overlapSum += overlap;
      if (ours[0] === sqlite[0]) sameBest++;
      console.log(`bm25 app vs FTS5 "${q}": overlap@${K} ${overlap.toFixed(2)}, same best passage: ${ours[0] === sqlite[0]}`);
    }
    const mean = overlapSum / questions.length;
    console.log(`bm25 app vs FTS5 over ${questions.length} questions, ${chunks.length} chunks: mean overlap@${K} ${mean.toFixed(2)}, same best passage ${sameBest}/${questions.length}`);
    expect(mean).toBeGreaterThanOrEqual(0.8);
    expect(sameBest / questions.length).toBeGreaterThanOrEqual(0.8);
  });
});
