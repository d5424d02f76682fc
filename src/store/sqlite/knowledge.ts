import type Database from 'better-sqlite3';
import type { KnowledgePort } from '../ports.js';
import type { ChunkHit, DocumentFailure, DocumentRecord, KnowledgeBaseRecord, KnowledgeBaseStats, NewChunk, OutboxEvent } from '../records.js';
import { writeOutbox } from './outbox-writes.js';
import { NewestFirstList, toPage } from './pagination.js';
import type { ConversationWriter } from './writer.js';
import { toChunkHit } from './knowledge-search.js';
import { createMainThreadReader, type KnowledgeReader } from './reader.js';
import type { Row } from './rows.js';
import { toFtsQuery } from './search-query.js';
import { bytesToVector, cosine, norm, TopK } from '../vectors.js';
import { lockedTransaction, writeTransaction } from './write-lock.js';

/**
 * Rows read per page of a vector scan (src/store/sqlite/knowledge.ts vectorSearch): at 1536 dimensions a
 * page is 384 KiB of vectors and well under a millisecond of arithmetic.
 */
export const VECTOR_PAGE_ROWS = 64;

/** A vector scan yields to the event loop once it has run this long without yielding, ms. */
export const VECTOR_SLICE_MS = 4;

/** Resolves on the event loop's next check phase: timers, I/O and other turns run in between. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Default size of one chunk-storing slice: at most this many chunks (and {@link SLICE_CHARS} characters of
 * text) go to the writer in one write. Measured on the Node.js docs: about 60 us a chunk with its FTS row,
 * so a slice holds the writer for 2-4 ms and a chat write queued behind it waits no longer than that.
 */
export const DEFAULT_CHUNK_SLICE_CHUNKS = 64;

/** Most characters of chunk text in one slice (a slice of very long chunks is cut short). */
const SLICE_CHARS = 96_000;

/** Budget of one `ftsMerge` write, ms. */
const MERGE_BUDGET_MS = 4;

/** Options of the SQLite knowledge port. */
export interface KnowledgeOptions {
  /** Most chunks stored per slice, an integer >= 1 (default DEFAULT_CHUNK_SLICE_CHUNKS); tests use 1. */
  chunkSliceChunks?: number;
  /** A vector scan yields to the event loop after running this long, ms (default {@link VECTOR_SLICE_MS}); tests use 0 (every page). */
  vectorSliceMs?: number;
  /** Where bm25 searches run (src/store/sqlite/reader.ts); default the main thread's connection `db`. */
  reader?: KnowledgeReader;
}

function knowledgeBaseFromRow(r: Row): KnowledgeBaseRecord {
  return { id: r.id as string, org_id: r.org_id as string, name: r.name as string, created_at: r.created_at as string };
}

function documentFromRow(r: Row): DocumentRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, knowledge_base_id: r.kb_id as string,
    title: r.title as string, content_type: r.content_type as DocumentRecord['content_type'],
    status: r.status as DocumentRecord['status'], error: (r.error as string | null) ?? null,
    error_code: (r.error_code as DocumentRecord['error_code']) ?? null,
    chunk_count: r.chunk_count as number, bytes: r.bytes as number,
    created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

/**
 * KnowledgePort on SQLite: tables `knowledge_bases`, `documents`, `document_sources` (the raw upload,
 * deleted with its document), `chunks` with the FTS5 index `chunks_fts` (external content: rows inserted
 * next to each chunk, deleted by the `chunks_ad` trigger).
 *
 * vectorSearch is a brute-force cosine scan of the `embedding` BLOBs (migration 9) on this connection, in
 * pages of {@link VECTOR_PAGE_ROWS} rows by rowid, yielding to the event loop whenever it has run for
 * {@link VECTOR_SLICE_MS} ms, then one read of the best chunks' text (docs/knowledge-bases.md gives the
 * measured cost per 10k chunks and where it stops scaling).
 *
 * createDocument commits the document and its upload through `writer` too (a few MB and an fsync off
 * the event loop). completeDocument stores chunks through `writer` (the SQLite writer thread by default, see
 * src/store/sqlite/writer.ts), one write per slice (src/store/sqlite/knowledge-writes.ts), each awaited
 * before the next, so chat writes issued meanwhile commit between slices and the FTS5 work never runs
 * on the event loop: chunksPrepare sets the document back to `processing` and deletes chunks left by an
 * earlier attempt, chunksInsert stores slices of {@link DEFAULT_CHUNK_SLICE_CHUNKS} chunks, chunksReady
 * marks it `ready` with its chunk_count and events; then ftsMerge writes merge the index in the
 * background. search() (bm25, src/store/sqlite/knowledge-search.ts) runs through `opts.reader`: the
 * reader thread in the server, so a slow full-text query never pauses the event loop. It joins
 * `documents` and returns chunks of `ready` documents only, so chunks of a document being stored are
 * never visible. Calls for the same document id run one after the other.
 *
 * The other writes here run on the main thread's connection as BEGIN IMMEDIATE transactions: a deferred
 * transaction that read before writing would fail with SQLITE_BUSY_SNAPSHOT when the writer thread
 * committed in between, instead of waiting for the lock (https://www.sqlite.org/lang_transaction.html).
 */
export function createKnowledge(db: Database.Database, writer: ConversationWriter, opts: KnowledgeOptions = {}): KnowledgePort & { stop(): void } {
  const sliceChunks = opts.chunkSliceChunks ?? DEFAULT_CHUNK_SLICE_CHUNKS;
  if (!Number.isInteger(sliceChunks) || sliceChunks < 1) throw new RangeError(`chunkSliceChunks must be an integer >= 1, got ${String(sliceChunks)}`);
  const vectorSliceMs = opts.vectorSliceMs ?? VECTOR_SLICE_MS;
  const sql = {
    insertBase: db.prepare('INSERT INTO knowledge_bases (id, org_id, name, created_at) VALUES (?, ?, ?, ?)'),
    baseById: db.prepare('SELECT * FROM knowledge_bases WHERE org_id = ? AND id = ?'),
    basesByRef: db.prepare('SELECT * FROM knowledge_bases WHERE (id = @ref OR name = @ref) AND (@org IS NULL OR org_id = @org) ORDER BY created_at, id'),
    documentById: db.prepare('SELECT * FROM documents WHERE org_id = ? AND kb_id = ? AND id = ?'),
    pending: db.prepare(`SELECT * FROM documents WHERE status = 'processing' ORDER BY created_at, id`),
    markFailed: db.prepare(`UPDATE documents SET status = 'failed', error = ?, error_code = ?, updated_at = ? WHERE id = ?`),
    deleteDocument: db.prepare('DELETE FROM documents WHERE org_id = ? AND kb_id = ? AND id = ?'),
    deleteChunks: db.prepare('DELETE FROM chunks WHERE doc_id = ?'),
    deleteBase: db.prepare('DELETE FROM knowledge_bases WHERE org_id = ? AND id = ?'),
    deleteBaseChunks: db.prepare('DELETE FROM chunks WHERE doc_id IN (SELECT id FROM documents WHERE kb_id = ? AND org_id = ?)'),
    deleteBaseDocuments: db.prepare('DELETE FROM documents WHERE kb_id = ? AND org_id = ?'),
  };
  /** Prepared stats statements by number of bases asked about. */
  const statsByCount = new Map<number, Database.Statement>();
  const bases = new NewestFirstList(db, 'knowledge_bases', 'org_id = ?', 'knowledge base');
  const documents = new NewestFirstList(db, 'documents', 'org_id = ? AND kb_id = ?', 'document');
  const reader = opts.reader ?? createMainThreadReader(db);
  /** Prepared vector-scan page statements, likewise. */
  const vectorPages = new Map<number, Database.Statement>();
  const hitsByRowid = new Map<number, Database.Statement>();

  const deleteBase = lockedTransaction(db, (orgId: string, id: string): boolean => {
    if (sql.deleteBase.run(orgId, id).changes === 0) return false;
    sql.deleteBaseChunks.run(id, orgId);
    sql.deleteBaseDocuments.run(id, orgId);
    return true;
  });
  const deleteDocument = lockedTransaction(db, (orgId: string, kbId: string, id: string): boolean => {
    if (sql.deleteDocument.run(orgId, kbId, id).changes === 0) return false;
    sql.deleteChunks.run(id);
    return true;
  });
  /** The background merge run, if one is going; a second request while it runs just extends it. */
  let merging: Promise<void> | undefined;
  let mergeAgain = false;
  let stopped = false;
  /** Merges the FTS index through the writer until nothing is left (after a document is completed or deleted). */
  const drain = (): void => {
    if (merging !== undefined) { mergeAgain = true; return; }
    merging = (async () => {
      do {
        mergeAgain = false;
        while (!stopped && (await writer.run('ftsMerge', { budgetMs: MERGE_BUDGET_MS })));
      } while (mergeAgain && !stopped);
    })()
      .catch(() => { /* the store is closing, or a merge failed: crisismerge still bounds the index, the next write drains again */ })
      .finally(() => { merging = undefined; });
  };

  const failed = lockedTransaction(db, (id: string, failure: DocumentFailure, at: string, events: OutboxEvent[] | undefined): void => {
    sql.markFailed.run(failure.message, failure.code, at, id);
    writeOutbox(db, events);
  });

  async function completeInSlices(id: string, chunks: NewChunk[], at: string, events: OutboxEvent[] | undefined): Promise<boolean> {
    // A slice that fails rejects the call; what earlier slices stored stays (the document is still
    // `processing`, so none of it is searchable) until the next call replaces it.
    for (;;) {
      const state = await writer.run('chunksPrepare', { id });
      if (state === 'gone') return false;
      if (state === 'cleared') break;
    }
    for (let next = 0; next < chunks.length;) {
      let end = next + 1;
      let chars = chunks[next]!.text.length;
      while (end < chunks.length && end - next < sliceChunks && chars + chunks[end]!.text.length <= SLICE_CHARS) chars += chunks[end++]!.text.length;
      if ((await writer.run('chunksInsert', { id, chunks: chunks.slice(next, end) })) === 'gone') return false;
      next = end;
    }
    if (!(await writer.run('chunksReady', { id, count: chunks.length, at, events }))) return false;
    // Index housekeeping left over from the inserts: in the background, it does not change what is stored.
    drain();
    return true;
  }

  /** The run in progress per document id: a second call for the same id waits for it, then replaces its chunks. */
  const running = new Map<string, Promise<boolean>>();

  return {
    /** Stops background index merging (the store is closing). */
    stop() {
      stopped = true;
    },
    async createBase(kb) {
      writeTransaction(db, () => sql.insertBase.run(kb.id, kb.org_id, kb.name, kb.created_at));
    },
    async getBase(orgId, id) {
      const r = sql.baseById.get(orgId, id) as Row | undefined;
      return r ? knowledgeBaseFromRow(r) : undefined;
    },
    async findBases(ref, orgId) {
      return (sql.basesByRef.all({ ref, org: orgId ?? null }) as Row[]).map(knowledgeBaseFromRow);
    },
    async listBases(orgId, page) {
      return toPage(bases.rows([orgId], page), page, knowledgeBaseFromRow);
    },
    async baseStats(orgId, kbIds) {
      const out = new Map<string, KnowledgeBaseStats>(kbIds.map((id) => [id, { document_count: 0, chunk_count: 0, bytes: 0 }]));
      if (kbIds.length === 0) return out;
      let stmt = statsByCount.get(kbIds.length);
      if (stmt === undefined) {
        // documents_kb (kb_id, id) serves the IN list; one row per base that has documents.
        stmt = db.prepare(`SELECT kb_id, COUNT(*) AS documents, COALESCE(SUM(chunk_count), 0) AS chunks, COALESCE(SUM(bytes), 0) AS bytes
          FROM documents WHERE kb_id IN (${kbIds.map(() => '?').join(', ')}) AND org_id = ? GROUP BY kb_id`);
        statsByCount.set(kbIds.length, stmt);
      }
      for (const r of stmt.all(...kbIds, orgId) as Array<{ kb_id: string; documents: number; chunks: number; bytes: number }>) {
        out.set(r.kb_id, { document_count: r.documents, chunk_count: r.chunks, bytes: r.bytes });
      }
      return out;
    },
    async deleteBase(orgId, id) {
      const deleted = deleteBase(orgId, id);
      if (deleted) drain();
      return deleted;
    },
    async createDocument(d, content, opts = {}) {
      // A whole-buffer upload moves to the writer thread instead of being copied on the event loop.
      const transfer = opts.transfer === true && content instanceof Uint8Array && content.buffer instanceof ArrayBuffer
        && content.byteOffset === 0 && content.byteLength === content.buffer.byteLength ? [content.buffer] : undefined;
      return writer.run('documentCreate', { doc: d, content, maxProcessing: opts.maxProcessing, owner: opts.owner }, transfer);
    },
    async claimPending(owner, deadOwners) {
      const ids = new Set(await writer.run('documentsClaim', { owner, dead: deadOwners }));
      if (ids.size === 0) return [];
      return (sql.pending.all() as Row[]).filter((r) => ids.has(r.id as string)).map(documentFromRow);
    },
    async getDocument(orgId, kbId, id) {
      const r = sql.documentById.get(orgId, kbId, id) as Row | undefined;
      return r ? documentFromRow(r) : undefined;
    },
    async listDocuments(orgId, kbId, page) {
      return toPage(documents.rows([orgId, kbId], page), page, documentFromRow);
    },
    async pendingDocuments(): Promise<DocumentRecord[]> {
      return (sql.pending.all() as Row[]).map(documentFromRow);
    },
    async documentSource(id) {
      // Through the reader: a stored upload is several MB, read off the event loop by the reader thread.
      const row = await reader.source(id);
      return row == null ? row : row.content;
    },
    completeDocument(id, chunks, at, events) {
      const before = running.get(id);
      const run = before === undefined
        ? completeInSlices(id, chunks, at, events)
        : before.catch(() => false).then(() => completeInSlices(id, chunks, at, events));
      running.set(id, run);
      const forget = () => { if (running.get(id) === run) running.delete(id); };
      run.then(forget, forget);
      return run;
    },
    async failDocument(id, failure, at, events) {
      failed(id, failure, at, events);
    },
    async deleteDocument(orgId, kbId, id) {
      const deleted = deleteDocument(orgId, kbId, id);
      if (deleted) drain();
      return deleted;
    },
    async search(orgId, kbIds, query, k): Promise<ChunkHit[]> {
      const match = toFtsQuery(query);
      if (!match || kbIds.length === 0 || k <= 0) return [];
      return (await reader.search({ match, orgId, kbIds, k })).map(toChunkHit);
    },
    async vectorSearch(orgId, kbIds, model, query, k): Promise<ChunkHit[]> {
      const queryNorm = norm(query);
      if (kbIds.length === 0 || k <= 0 || query.length === 0 || queryNorm === 0) return [];
      let page = vectorPages.get(kbIds.length);
      if (page === undefined) {
        // Pages by rowid: each page is its own short read, so the writer thread commits between pages and
        // no statement stays open across the awaits (better-sqlite3 allows none while one iterates).
        // Raw rows ([rowid, embedding]): no object per row. (A `doc_id IN (ready documents)` subquery
        // instead of the join measured about 2x slower: it is built again for every page.)
        page = db.prepare(
          `SELECT c.rowid, c.embedding FROM chunks c JOIN documents d ON d.id = c.doc_id
           WHERE c.rowid > ? AND c.org_id = ? AND c.kb_id IN (${kbIds.map(() => '?').join(', ')})
             AND c.embedding_model = ? AND d.status = 'ready'
           ORDER BY c.rowid LIMIT ${VECTOR_PAGE_ROWS}`).raw(true);
        if (kbIds.length <= 32) vectorPages.set(kbIds.length, page);
      }
      const best = new TopK<number>(k);
      const bytes = query.length * 4;
      let after = 0;
      let sliceStart = performance.now();
      for (;;) {
        const rows = page.all(after, orgId, ...kbIds, model) as Array<[number, Buffer | null]>;
        for (const [rowid, embedding] of rows) {
          if (embedding !== null && embedding.byteLength === bytes) best.offer(rowid, cosine(query, bytesToVector(embedding), queryNorm));
        }
        if (rows.length < VECTOR_PAGE_ROWS) break;
        after = rows[rows.length - 1]![0];
        if (performance.now() - sliceStart >= vectorSliceMs) {
          await nextTurn();
          sliceStart = performance.now();
        }
      }
      const top = best.sorted();
      if (top.length === 0) return [];
      let fetch = hitsByRowid.get(top.length);
      if (fetch === undefined) {
        fetch = db.prepare(
          `SELECT c.rowid AS rowid, c.id, c.doc_id, c.title, c.heading, c.body, c.page FROM chunks c JOIN documents d ON d.id = c.doc_id
           WHERE c.rowid IN (${top.map(() => '?').join(', ')}) AND d.status = 'ready'`);
        if (top.length <= 64) hitsByRowid.set(top.length, fetch);
      }
      // A document deleted during the scan drops out here.
      const byRowid = new Map((fetch.all(...top.map((t) => t.item)) as Row[]).map((r) => [r.rowid as number, r]));
      const hits: ChunkHit[] = [];
      for (const t of top) {
        const r = byRowid.get(t.item);
        if (r === undefined) continue;
        hits.push({
          document_id: r.doc_id as string, chunk_id: r.id as string, title: r.title as string,
          heading: r.heading as string, text: r.body as string, page: (r.page as number | null) ?? null,
          score: Math.round(t.score * 1e6) / 1e6,
        });
      }
      return hits;
    },
  };
}
