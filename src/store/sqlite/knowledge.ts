import type Database from 'better-sqlite3';
import { newId } from '../../ids/ids.js';
import type { KnowledgePort } from '../ports.js';
import type { ChunkHit, DocumentRecord, KnowledgeBaseRecord, NewChunk, PendingDocument } from '../records.js';
import { NewestFirstList, toPage } from './pagination.js';
import type { Row } from './rows.js';
import { toFtsQuery } from './search-query.js';

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

/**
 * KnowledgePort on SQLite: tables `knowledge_bases`, `documents`, `document_sources` (the raw upload,
 * deleted with its document), `chunks` with the FTS5 index `chunks_fts` kept by triggers.
 */
export function createKnowledge(db: Database.Database): KnowledgePort {
  const sql = {
    insertBase: db.prepare('INSERT INTO knowledge_bases (id, org_id, name, created_at) VALUES (?, ?, ?, ?)'),
    baseById: db.prepare('SELECT * FROM knowledge_bases WHERE org_id = ? AND id = ?'),
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
    insertChunk: db.prepare(
      'INSERT INTO chunks (id, doc_id, kb_id, org_id, ord, title, heading, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    markReady: db.prepare(`UPDATE documents SET status = 'ready', error = NULL, chunk_count = ?, updated_at = ? WHERE id = ?`),
    markFailed: db.prepare(`UPDATE documents SET status = 'failed', error = ?, updated_at = ? WHERE id = ?`),
    deleteDocument: db.prepare('DELETE FROM documents WHERE org_id = ? AND kb_id = ? AND id = ?'),
    deleteChunks: db.prepare('DELETE FROM chunks WHERE doc_id = ?'),
  };

  const bases = new NewestFirstList(db, 'knowledge_bases', 'org_id = ?', 'knowledge base');
  const documents = new NewestFirstList(db, 'documents', 'org_id = ? AND kb_id = ?', 'document');

  const createDocument = db.transaction((d: DocumentRecord, content: Uint8Array | string) => {
    sql.insertDocument.run(d.id, d.org_id, d.knowledge_base_id, d.title, d.content_type, d.status, d.error,
      d.chunk_count, d.bytes, d.created_at, d.updated_at);
    sql.insertSource.run(d.id, content, typeof content === 'string' ? 1 : 0);
  });

  const completeDocument = db.transaction((id: string, chunks: NewChunk[], at: string): boolean => {
    const doc = sql.documentForChunks.get(id) as { org_id: string; kb_id: string; title: string } | undefined;
    if (!doc) return false;
    sql.deleteChunks.run(id);
    for (const c of chunks) sql.insertChunk.run(newId('chk'), id, doc.kb_id, doc.org_id, c.ord, doc.title, c.heading, c.text);
    sql.markReady.run(chunks.length, at, id);
    return true;
  });

  const deleteDocument = db.transaction((orgId: string, kbId: string, id: string): boolean => {
    if (sql.deleteDocument.run(orgId, kbId, id).changes === 0) return false;
    sql.deleteChunks.run(id);
    return true;
  });

  return {
    async createBase(kb) {
      sql.insertBase.run(kb.id, kb.org_id, kb.name, kb.created_at);
    },
    async getBase(orgId, id) {
      const r = sql.baseById.get(orgId, id) as Row | undefined;
      return r ? knowledgeBaseFromRow(r) : undefined;
    },
    async listBases(orgId, page) {
      return toPage(bases.rows([orgId], page), page, knowledgeBaseFromRow);
    },
    async createDocument(d, content) {
      createDocument(d, content);
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
    async completeDocument(id, chunks, at) {
      return completeDocument(id, chunks, at);
    },
    async failDocument(id, error, at) {
      sql.markFailed.run(error, at, id);
    },
    async deleteDocument(orgId, kbId, id) {
      return deleteDocument(orgId, kbId, id);
    },
    async search(orgId, kbIds, query, k): Promise<ChunkHit[]> {
      const match = toFtsQuery(query);
      if (!match || kbIds.length === 0 || k <= 0) return [];
      const marks = kbIds.map(() => '?').join(', ');
      const rows = db.prepare(
        `SELECT c.id, c.doc_id, c.title, c.heading, c.body, bm25(chunks_fts, 4.0, 2.0, 1.0) AS rank
         FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
         WHERE chunks_fts MATCH ? AND c.org_id = ? AND c.kb_id IN (${marks})
         ORDER BY rank LIMIT ?`,
      ).all(match, orgId, ...kbIds, k) as Row[];
      return rows.map((r) => ({
        document_id: r.doc_id as string, chunk_id: r.id as string, title: r.title as string,
        heading: r.heading as string, text: r.body as string,
        score: Math.round(-(r.rank as number) * 1000) / 1000,
      }));
    },
  };
}
