/**
 * The writes that store a document's chunks, as plain functions of a connection and structured-cloneable
 * arguments (like src/store/sqlite/conversation-writes.ts, whose table includes these): they run in the
 * SQLite writer thread (src/store/sqlite/writer.worker.ts) by default, so the FTS5 indexing of an upload
 * and its commits never hold up the event loop that streams tokens. Each runs inside the caller's
 * transaction and savepoint (src/store/sqlite/group-commit.ts); src/store/sqlite/knowledge.ts drives them
 * one slice at a time, so conversation writes queued meanwhile commit in between.
 */
import type Database from 'better-sqlite3';
import { newId } from '../../ids/ids.js';
import type { DocumentRecord, NewChunk, OutboxEvent } from '../records.js';
import { vectorToBytes } from '../vectors.js';
import { FtsMerger } from './fts-merge.js';
import { writeOutbox } from './outbox-writes.js';
import { statementCache } from './statement-cache.js';

/** Leftover chunks deleted by one chunksPrepare call while a document's earlier attempt is cleared. */
export const CLEAR_BATCH = 256;

function prepare(db: Database.Database) {
  return {
    insertDocument: db.prepare(
      `INSERT INTO documents (id, org_id, kb_id, title, content_type, status, error, chunk_count, bytes, created_at, updated_at, ingest_owner)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    claimPending: db.prepare(
      `UPDATE documents SET ingest_owner = @owner
       WHERE status = 'processing' AND (ingest_owner IS NULL OR ingest_owner IN (SELECT value FROM json_each(@dead))
         OR (ingest_owner <> @owner AND ingest_owner NOT IN (SELECT id FROM processes)))
       RETURNING id`),
    insertSource: db.prepare('INSERT INTO document_sources (doc_id, content, is_text) VALUES (?, ?, ?)'),
    processingOfOrg: db.prepare(`SELECT COUNT(*) AS n FROM documents WHERE org_id = ? AND status = 'processing'`),
    documentForChunks: db.prepare('SELECT org_id, kb_id, title FROM documents WHERE id = ?'),
    restart: db.prepare(`UPDATE documents SET status = 'processing', error = NULL, error_code = NULL WHERE id = ? AND status <> 'processing'`),
    clearBatch: db.prepare(`DELETE FROM chunks WHERE rowid IN (SELECT rowid FROM chunks WHERE doc_id = ? LIMIT ${CLEAR_BATCH})`),
    insertChunk: db.prepare(
      `INSERT INTO chunks (id, doc_id, kb_id, org_id, ord, title, heading, body, page, embedding, embedding_model)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    // Migration 8: no insert trigger; every chunk insert is followed by this one, in the same savepoint.
    insertChunkFts: db.prepare('INSERT INTO chunks_fts (rowid, title, heading, body) VALUES (?, ?, ?, ?)'),
    markReady: db.prepare(`UPDATE documents SET status = 'ready', error = NULL, error_code = NULL, chunk_count = ?, updated_at = ? WHERE id = ?`),
    merger: new FtsMerger(db),
  };
}

const statements = statementCache(prepare);

/**
 * Writes no client is ever told about on their own: the slices of a document's chunks and their
 * preparation, and FTS index merging. A document becomes `ready` (and its `document.ready` event is
 * stored) only by `chunksReady`, which is not one of them; until then none of its chunks is searchable,
 * and a document still `processing` after a restart is ingested again from its stored upload
 * (KnowledgeService.resumePending), its leftover chunks deleted first. So a batch made only of these
 * needs no fsync of its own (see {@link batchSynchronous}).
 */
export const UNACKNOWLEDGED_WRITES: ReadonlySet<string> = new Set([
  'chunksPrepare', 'chunksInsert', 'ftsMerge',
  // Leases and process heartbeats (lease-writes.ts): a lost one is a lease nobody holds, or a heartbeat
  // missed, and a later FULL commit makes them durable with it.
  'leaseAcquire', 'leaseRenew', 'leaseRelease', 'processRegister', 'processHeartbeat', 'processRemove', 'processDraining',
  // Feed pruning: entries deleted again after a power loss are deleted by the next prune.
  'feedPrune',
]);

/**
 * The SQLite `synchronous` level to commit a batch of writes `ops` at, when the connection's is
 * `configured` (PARLEY_SQLITE_SYNCHRONOUS): `NORMAL` for a batch made only of {@link UNACKNOWLEDGED_WRITES},
 * else `configured`. In WAL mode NORMAL skips the commit's fsync of the WAL but never risks corruption;
 * the next FULL commit's fsync makes the skipped frames durable with it, since they lie before its own in
 * the same file (https://www.sqlite.org/pragma.html#pragma_synchronous, https://www.sqlite.org/wal.html).
 * Measured on this project's 2-core machine (2026-11-27, after de638fd made the writer thread really
 * commit chat writes at FULL), 4 interleaved runs each through the server with 2 workers: no difference
 * clear of the noise (first corpus 628-821 ms this way, 635-808 ms all FULL; second 351-390 and 329-367
 * ms). The 358 against 321 ms measured before came with that bug: its faster arm committed everything at NORMAL.
 * An empty batch keeps `configured`.
 */
export function batchSynchronous(ops: readonly string[], configured: 'FULL' | 'NORMAL'): 'FULL' | 'NORMAL' {
  if (configured === 'NORMAL' || ops.length === 0) return configured;
  return ops.every((op) => UNACKNOWLEDGED_WRITES.has(op)) ? 'NORMAL' : 'FULL';
}

/** The chunk-storing writes, by name (spread into CONVERSATION_WRITES). */
export const KNOWLEDGE_WRITES = {
  /**
   * Stores a new document record (`processing`) with its upload as given (`content`: a string is stored
   * as TEXT with is_text 1, bytes as a BLOB), so ingestion can start again from it after a crash; true.
   * With `maxProcessing`, stores nothing and returns false when the document's organization already has
   * that many documents `processing` (counted inside this write's transaction: exact across processes).
   * Throws what SQLite throws (a duplicate id, a knowledge base that is gone: SQLITE_CONSTRAINT_*).
   * Runs in the writer thread: an upload of a few MB and its fsync never hold up the event loop.
   */
  documentCreate(db: Database.Database, args: { doc: DocumentRecord; content: Uint8Array | string; maxProcessing?: number | undefined; owner?: string | undefined }): boolean {
    const sql = statements(db);
    const d = args.doc;
    if (args.maxProcessing !== undefined && (sql.processingOfOrg.get(d.org_id) as { n: number }).n >= args.maxProcessing) return false;
    sql.insertDocument.run(d.id, d.org_id, d.knowledge_base_id, d.title, d.content_type, d.status, d.error,
      d.chunk_count, d.bytes, d.created_at, d.updated_at, args.owner ?? null);
    sql.insertSource.run(d.id, args.content, typeof args.content === 'string' ? 1 : 0);
    return true;
  },
  /** KnowledgePort.claimPending: the ids of the documents now ingested by `owner`. */
  documentsClaim(db: Database.Database, args: { owner: string; dead: readonly string[] }): string[] {
    return (statements(db).claimPending.all({ owner: args.owner, dead: JSON.stringify(args.dead) }) as Array<{ id: string }>).map((r) => r.id);
  },
  /**
   * Starts (or continues) storing document `id`: sets it back to `processing` and deletes up to
   * {@link CLEAR_BATCH} chunks left by an earlier attempt. 'cleared' when none are left, 'more' when the
   * caller must call again, 'gone' when the document no longer exists.
   */
  chunksPrepare(db: Database.Database, args: { id: string }): 'gone' | 'more' | 'cleared' {
    const sql = statements(db);
    if (sql.documentForChunks.get(args.id) === undefined) return 'gone';
    sql.restart.run(args.id);
    return sql.clearBatch.run(args.id).changes < CLEAR_BATCH ? 'cleared' : 'more';
  },
  /**
   * Inserts `chunks` of document `id` with their FTS rows (the chunks carry the document's knowledge base,
   * organization and title) and their embeddings when they have one (little-endian float32 bytes). 'stored', or 'gone' (nothing written) when the document no longer exists.
   */
  chunksInsert(db: Database.Database, args: { id: string; chunks: NewChunk[] }): 'gone' | 'stored' {
    const sql = statements(db);
    const doc = sql.documentForChunks.get(args.id) as { org_id: string; kb_id: string; title: string } | undefined;
    if (doc === undefined) return 'gone';
    for (const c of args.chunks) {
      const e = c.embedding ?? null;
      const { lastInsertRowid } = sql.insertChunk.run(newId('chk'), args.id, doc.kb_id, doc.org_id, c.ord, doc.title, c.heading, c.text,
        c.page ?? null, e === null ? null : vectorToBytes(e.vector), e === null ? null : e.model);
      sql.insertChunkFts.run(lastInsertRowid, doc.title, c.heading, c.text);
    }
    return 'stored';
  },
  /** Marks document `id` ready with `count` chunks, with its events (document.ready); false when it is gone. */
  chunksReady(db: Database.Database, args: { id: string; count: number; at: string; events?: OutboxEvent[] | undefined }): boolean {
    if (statements(db).markReady.run(args.count, args.at, args.id).changes === 0) return false;
    writeOutbox(db, args.events);
    return true;
  },
  /**
   * Merges the FTS index for about `budgetMs` (at least one merge step, src/store/sqlite/fts-merge.ts);
   * true when more merging is left.
   */
  ftsMerge(db: Database.Database, args: { budgetMs: number }): boolean {
    return statements(db).merger.step(performance.now() + args.budgetMs);
  },
} as const;
