import type Database from 'better-sqlite3';
import { newId } from '../../ids/ids.js';
import type { KnowledgePort } from '../ports.js';
import type { ChunkHit, DocumentRecord, KnowledgeBaseRecord, NewChunk, OutboxEvent, PendingDocument } from '../records.js';
import { writeOutbox } from './outbox-writes.js';
import { NewestFirstList, toPage } from './pagination.js';
import { withRelaxedSync, type SqliteSync } from './database.js';
import { FtsMerger } from './fts-merge.js';
import type { Row } from './rows.js';
import { toFtsQuery } from './search-query.js';

/**
 * Default work budget of one chunk-storing slice, ms. About 4 ms of inserts (≈20-40 chunks with their
 * FTS rows on this machine) then a yield to the event loop, so a large document does not stall streams,
 * timers or /healthz. Each slice is its own transaction.
 */
export const DEFAULT_CHUNK_SLICE_MS = 4;

/** Leftover chunks deleted per statement while a document's earlier attempt is cleared. */
const CLEAR_BATCH = 256;

/** Options of the SQLite knowledge port. */
export interface KnowledgeOptions {
  /** The connection's `synchronous` level (default FULL); intermediate chunk slices commit at NORMAL. */
  sync?: SqliteSync;
  /** Work budget of one completeDocument slice, ms (default DEFAULT_CHUNK_SLICE_MS); 0 = one unit of work per slice. */
  chunkSliceMs?: number;
}

function knowledgeBaseFromRow(r: Row): KnowledgeBaseRecord {
  return { id: r.id as string, org_id: r.org_id as string, name: r.name as string, created_at: r.created_at as string };
}

function documentFromRow(r: Row): DocumentRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, knowledge_base_id: r.kb_id as string,
    title: r.title as string, content_type: r.content_type as DocumentRecord['content_type'],
    status: r.status as DocumentRecord['status'], error: (r.error as string | null) ?? null,
    chunk_count: r.chunk_count as number, bytes: r.bytes as number,
    created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

/** A stored upload as it was given: TEXT (is_text 1) as a string, BLOB as a Uint8Array; null when none was stored. */
function sourceFromRow(content: unknown, isText: unknown): Uint8Array | string | null {
  if (content == null) return null;
  if (isText === 1) return content as string;
  const buf = content as Buffer;
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * KnowledgePort on SQLite: tables `knowledge_bases`, `documents`, `document_sources` (the raw upload,
 * deleted with its document), `chunks` with the FTS5 index `chunks_fts` (external content: rows inserted
 * here next to each chunk, deleted by the `chunks_ad` trigger).
 *
 * completeDocument stores chunks in slices (each its own transaction, `chunkSliceMs` of work, then a
 * setImmediate yield): the first slices set the document back to `processing` and delete chunks left by
 * an earlier attempt, the next insert the new chunks, and the last one marks the document `ready` with
 * its chunk_count. search() joins `documents` and returns chunks of `ready` documents only, so chunks of a
 * document being stored are never visible. Calls for the same document id run one after the other.
 *
 * Every transaction here is BEGIN IMMEDIATE: the conversation writes may commit from the writer thread
 * (src/store/sqlite/writer.ts), and a deferred transaction that read before writing would then fail with
 * SQLITE_BUSY_SNAPSHOT instead of waiting for the lock (https://www.sqlite.org/lang_transaction.html).
 */
export function createKnowledge(db: Database.Database, opts: KnowledgeOptions = {}): KnowledgePort & { stop(): void } {
  const sliceMs = opts.chunkSliceMs ?? DEFAULT_CHUNK_SLICE_MS;
  const sync = opts.sync ?? 'FULL';
  const sql = {
    insertBase: db.prepare('INSERT INTO knowledge_bases (id, org_id, name, created_at) VALUES (?, ?, ?, ?)'),
    baseById: db.prepare('SELECT * FROM knowledge_bases WHERE org_id = ? AND id = ?'),
    basesByRef: db.prepare('SELECT * FROM knowledge_bases WHERE (id = @ref OR name = @ref) AND (@org IS NULL OR org_id = @org) ORDER BY created_at, id'),
    insertDocument: db.prepare(
      `INSERT INTO documents (id, org_id, kb_id, title, content_type, status, error, chunk_count, bytes, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    insertSource: db.prepare('INSERT INTO document_sources (doc_id, content, is_text) VALUES (?, ?, ?)'),
    documentById: db.prepare('SELECT * FROM documents WHERE org_id = ? AND kb_id = ? AND id = ?'),
    documentForChunks: db.prepare('SELECT org_id, kb_id, title FROM documents WHERE id = ?'),
    pending: db.prepare(
      `SELECT d.*, s.content AS source_content, s.is_text AS source_is_text
       FROM documents d LEFT JOIN document_sources s ON s.doc_id = d.id
       WHERE d.status = 'processing' ORDER BY d.created_at, d.id`),
    restart: db.prepare(`UPDATE documents SET status = 'processing', error = NULL WHERE id = ? AND status <> 'processing'`),
    clearBatch: db.prepare(`DELETE FROM chunks WHERE rowid IN (SELECT rowid FROM chunks WHERE doc_id = ? LIMIT ${CLEAR_BATCH})`),
    insertChunk: db.prepare(
      'INSERT INTO chunks (id, doc_id, kb_id, org_id, ord, title, heading, body, page) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    // Migration 8: no insert trigger; every chunk insert is followed by this one, in the same transaction.
    insertChunkFts: db.prepare('INSERT INTO chunks_fts (rowid, title, heading, body) VALUES (?, ?, ?, ?)'),
    markReady: db.prepare(`UPDATE documents SET status = 'ready', error = NULL, chunk_count = ?, updated_at = ? WHERE id = ?`),
    markFailed: db.prepare(`UPDATE documents SET status = 'failed', error = ?, updated_at = ? WHERE id = ?`),
    deleteDocument: db.prepare('DELETE FROM documents WHERE org_id = ? AND kb_id = ? AND id = ?'),
    deleteChunks: db.prepare('DELETE FROM chunks WHERE doc_id = ?'),
  };
  const bases = new NewestFirstList(db, 'knowledge_bases', 'org_id = ?', 'knowledge base');
  const documents = new NewestFirstList(db, 'documents', 'org_id = ? AND kb_id = ?', 'document');
  /** Prepared search statements by the number of knowledge bases searched (up to 32 kept). */
  const searches = new Map<number, Database.Statement>();

  const createDocument = db.transaction((d: DocumentRecord, content: Uint8Array | string) => {
    sql.insertDocument.run(d.id, d.org_id, d.knowledge_base_id, d.title, d.content_type, d.status, d.error,
      d.chunk_count, d.bytes, d.created_at, d.updated_at);
    sql.insertSource.run(d.id, content, typeof content === 'string' ? 1 : 0);
  });

  const deleteDocument = db.transaction((orgId: string, kbId: string, id: string): boolean => {
    if (sql.deleteDocument.run(orgId, kbId, id).changes === 0) return false;
    sql.deleteChunks.run(id);
    return true;
  });
  const relax = <T>(fn: () => T): T => withRelaxedSync(db, sync, fn);
  const merger = new FtsMerger(db, relax);

  /** Where a completeDocument run stands between slices. */
  interface Progress { restarted: boolean; cleared: boolean; next: number }

  /**
   * One slice of storing a document's chunks (its own transaction): at least one unit of work (the status
   * reset, a batch of leftover deletes, or one insert) and more while three quarters of `sliceMs` last,
   * then merge steps of the FTS index for the rest. 'stored' once every chunk is in. 'gone' when the
   * document no longer exists.
   */
  const storeSlice = db.transaction((id: string, chunks: NewChunk[], p: Progress): 'gone' | 'more' | 'stored' => {
    const doc = sql.documentForChunks.get(id) as { org_id: string; kb_id: string; title: string } | undefined;
    if (!doc) return 'gone';
    const start = performance.now();
    const workUntil = start + sliceMs * 0.75;
    if (!p.restarted) { sql.restart.run(id); p.restarted = true; }
    while (!p.cleared) {
      if (sql.clearBatch.run(id).changes < CLEAR_BATCH) p.cleared = true;
      if (performance.now() >= workUntil) break;
    }
    if (p.cleared) {
      while (p.next < chunks.length) {
        const c = chunks[p.next]!;
        const { lastInsertRowid } = sql.insertChunk.run(newId('chk'), id, doc.kb_id, doc.org_id, c.ord, doc.title, c.heading, c.text, c.page ?? null);
        sql.insertChunkFts.run(lastInsertRowid, doc.title, c.heading, c.text);
        p.next++;
        if (performance.now() >= workUntil) break;
      }
    }
    merger.step(start + sliceMs);
    return p.cleared && p.next === chunks.length ? 'stored' : 'more';
  });

  /** The last slice, at the configured sync level: its commit makes the earlier (relaxed) slices durable too. */
  const readySlice = db.transaction((id: string, count: number, at: string, events: OutboxEvent[] | undefined): boolean => {
    if (sql.markReady.run(count, at, id).changes === 0) return false;
    writeOutbox(db, events);
    return true;
  });
  const failed = db.transaction((id: string, error: string, at: string, events: OutboxEvent[] | undefined): void => {
    sql.markFailed.run(error, at, id);
    writeOutbox(db, events);
  });

  async function completeInSlices(id: string, chunks: NewChunk[], at: string, events: OutboxEvent[] | undefined): Promise<boolean> {
    // A slice that throws rolls its transaction back and rejects the call; what earlier slices stored stays
    // (the document is still `processing`, so none of it is searchable) until the next call replaces it.
    const progress: Progress = { restarted: false, cleared: false, next: 0 };
    for (;;) {
      const state = relax(() => storeSlice.immediate(id, chunks, progress));
      if (state === 'gone') return false;
      await yieldToEventLoop();
      if (state === 'stored') break;
    }
    if (!readySlice.immediate(id, chunks.length, at, events)) return false;
    // Index housekeeping left over from the inserts: in the background, it does not change what is stored.
    merger.drain(sliceMs).catch(() => { /* crisismerge still bounds the index; the next write drains again */ });
    return true;
  }

  /** The run in progress per document id: a second call for the same id waits for it, then replaces its chunks. */
  const running = new Map<string, Promise<boolean>>();

  return {
    /** Stops background index merging (the store is closing). */
    stop() {
      merger.stop();
    },
    async createBase(kb) {
      sql.insertBase.run(kb.id, kb.org_id, kb.name, kb.created_at);
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
    async createDocument(d, content) {
      createDocument.immediate(d, content);
    },
    async getDocument(orgId, kbId, id) {
      const r = sql.documentById.get(orgId, kbId, id) as Row | undefined;
      return r ? documentFromRow(r) : undefined;
    },
    async listDocuments(orgId, kbId, page) {
      return toPage(documents.rows([orgId, kbId], page), page, documentFromRow);
    },
    async pendingDocuments(): Promise<PendingDocument[]> {
      return (sql.pending.all() as Row[]).map((r) => ({
        document: documentFromRow(r), content: sourceFromRow(r.source_content, r.source_is_text),
      }));
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
    async failDocument(id, error, at, events) {
      failed.immediate(id, error, at, events);
    },
    async deleteDocument(orgId, kbId, id) {
      const deleted = deleteDocument.immediate(orgId, kbId, id);
      if (deleted) merger.drain(sliceMs).catch(() => { /* as in completeInSlices */ });
      return deleted;
    },
    async search(orgId, kbIds, query, k): Promise<ChunkHit[]> {
      const match = toFtsQuery(query);
      if (!match || kbIds.length === 0 || k <= 0) return [];
      let stmt = searches.get(kbIds.length);
      if (stmt === undefined) {
        stmt = db.prepare(
          `SELECT c.id, c.doc_id, c.title, c.heading, c.body, c.page, bm25(chunks_fts, 4.0, 2.0, 1.0) AS rank
           FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid JOIN documents d ON d.id = c.doc_id
           WHERE chunks_fts MATCH ? AND c.org_id = ? AND c.kb_id IN (${kbIds.map(() => '?').join(', ')}) AND d.status = 'ready'
           ORDER BY rank, c.rowid LIMIT ?`);
        if (kbIds.length <= 32) searches.set(kbIds.length, stmt);
      }
      const rows = stmt.all(match, orgId, ...kbIds, k) as Row[];
      return rows.map((r) => ({
        document_id: r.doc_id as string, chunk_id: r.id as string, title: r.title as string,
        heading: r.heading as string, text: r.body as string, page: (r.page as number | null) ?? null,
        score: Math.round(-(r.rank as number) * 1000) / 1000,
      }));
    },
  };
}
