import type Database from 'better-sqlite3';
import { join } from 'node:path';
import { newId } from '../../ids/ids.js';
import type { Store } from '../ports.js';
import type {
  AgentPatch, AgentRecord, ApiKeyRecord, ChunkHit, ConversationListFilter, ConversationRecord, ConversationStatus,
  DocumentRecord, KnowledgeBaseRecord, MessageRecord, NewChunk, OrganizationRecord, Page, PageRequest,
} from '../records.js';
import { openDatabase, type SqliteSync } from './database.js';
import { GroupCommit } from './group-commit.js';
import { toPage } from './pagination.js';
import { toFtsQuery } from './search-query.js';

type Row = Record<string, unknown>;

const json = (v: unknown): string => JSON.stringify(v);
const parse = <T>(v: unknown): T => JSON.parse(v as string) as T;

function agentFromRow(r: Row): AgentRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, name: r.name as string,
    description: r.description as string, instructions: r.instructions as string,
    model: { provider: r.model_provider as string, name: r.model_name as string },
    knowledge_base_ids: parse(r.knowledge_base_ids), tools: parse(r.tools), safety: parse(r.safety),
    published: r.published === 1, public_key: (r.public_key as string | null) ?? null,
    created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
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

function conversationFromRow(r: Row): ConversationRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, agent_id: r.agent_id as string,
    status: r.status as ConversationStatus, metadata: parse(r.metadata),
    created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

function messageFromRow(r: Row): MessageRecord {
  return {
    id: r.id as string, conversation_id: r.conversation_id as string, org_id: r.org_id as string,
    turn_id: (r.turn_id as string | null) ?? null, role: r.role as MessageRecord['role'],
    content: r.content as string, citations: parse(r.citations), tool_runs: parse(r.tool_runs),
    usage: r.usage == null ? null : parse(r.usage), status: r.status as MessageRecord['status'],
    finish_reason: (r.finish_reason as MessageRecord['finish_reason']) ?? null,
    error: r.error == null ? null : parse(r.error), created_at: r.created_at as string,
  };
}

/** Newest-first page of an org-scoped table keyed by time-sortable ids (Stripe list order). */
function newestFirst(db: Database.Database, table: string, extraWhere: string, params: unknown[], page: PageRequest): Row[] {
  const after = page.after === undefined ? '' : ' AND id < ?';
  const sql = `SELECT * FROM ${table} WHERE org_id = ?${extraWhere}${after} ORDER BY id DESC LIMIT ?`;
  const args = page.after === undefined ? [...params, page.limit + 1] : [...params, page.after, page.limit + 1];
  return db.prepare(sql).all(...args) as Row[];
}

/**
 * The embedded store: one SQLite file `<dataDir>/parley.db` (WAL). better-sqlite3 is synchronous, so
 * every method has completed its write (durable per `sync`) before its promise resolves; conversation
 * and message writes are group-committed (one transaction per event-loop turn, see GroupCommit).
 */
export function createSqliteStore(dataDir: string, opts: { sync?: SqliteSync } = {}): Store & { db: Database.Database } {
  const db = openDatabase(join(dataDir, 'parley.db'), opts.sync ?? 'FULL');

  const stmt = {
    insertMessage: db.prepare(
      `INSERT INTO messages (id, conversation_id, org_id, turn_id, role, content, citations, tool_runs, usage, status, finish_reason, error, created_at)
       VALUES (@id, @conversation_id, @org_id, @turn_id, @role, @content, @citations, @tool_runs, @usage, @status, @finish_reason, @error, @created_at)`),
    touchConversation: db.prepare('UPDATE conversations SET updated_at = ? WHERE id = ?'),
    getConversation: db.prepare('SELECT * FROM conversations WHERE org_id = ? AND id = ?'),
    getAgent: db.prepare('SELECT * FROM agents WHERE org_id = ? AND id = ?'),
    keyByHash: db.prepare('SELECT * FROM api_keys WHERE key_hash = ?'),
    history: db.prepare(
      `SELECT * FROM (SELECT * FROM messages WHERE conversation_id = ? AND status = 'completed' ORDER BY seq DESC LIMIT ?)
       ORDER BY turn_id IS NULL, turn_id, CASE role WHEN 'visitor' THEN 0 ELSE 1 END, seq`),
    insertChunk: db.prepare(
      'INSERT INTO chunks (id, doc_id, kb_id, org_id, ord, title, heading, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
  };

  const commits = new GroupCommit(db);
  const insertConversation = db.prepare(
    'INSERT INTO conversations (id, org_id, agent_id, status, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const updateStatus = db.prepare('UPDATE conversations SET status = ?, updated_at = ? WHERE id = ?');

  const completeDocument = db.transaction((id: string, chunks: NewChunk[], at: string): boolean => {
    const doc = db.prepare('SELECT * FROM documents WHERE id = ?').get(id) as Row | undefined;
    if (!doc) return false;
    db.prepare('DELETE FROM chunks WHERE doc_id = ?').run(id);
    for (const c of chunks) {
      stmt.insertChunk.run(newId('chk'), id, doc.kb_id, doc.org_id, c.ord, doc.title, c.heading, c.text);
    }
    db.prepare(`UPDATE documents SET status = 'ready', error = NULL, chunk_count = ?, updated_at = ? WHERE id = ?`)
      .run(chunks.length, at, id);
    return true;
  });

  const deleteDocument = db.transaction((orgId: string, kbId: string, id: string): boolean => {
    const res = db.prepare('DELETE FROM documents WHERE org_id = ? AND kb_id = ? AND id = ?').run(orgId, kbId, id);
    if (res.changes === 0) return false;
    db.prepare('DELETE FROM chunks WHERE doc_id = ?').run(id);
    return true;
  });

  return {
    kind: 'sqlite',
    db,
    organizations: {
      async create(o: OrganizationRecord) {
        db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run(o.id, o.name, o.created_at);
      },
      async get(id) {
        return db.prepare('SELECT * FROM organizations WHERE id = ?').get(id) as OrganizationRecord | undefined;
      },
      async count() {
        return (db.prepare('SELECT count(*) AS n FROM organizations').get() as { n: number }).n;
      },
    },
    apiKeys: {
      async create(k: ApiKeyRecord) {
        db.prepare('INSERT INTO api_keys (id, org_id, name, key_hash, last4, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(k.id, k.org_id, k.name, k.key_hash, k.last4, k.created_at, k.revoked_at);
      },
      async findByHash(hash) {
        return stmt.keyByHash.get(hash) as ApiKeyRecord | undefined;
      },
      async revoke(orgId, id, at) {
        return db.prepare('UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND id = ? AND revoked_at IS NULL')
          .run(at, orgId, id).changes > 0;
      },
    },
    agents: {
      async create(a: AgentRecord) {
        db.prepare(
          `INSERT INTO agents (id, org_id, name, description, instructions, model_provider, model_name, knowledge_base_ids, tools, safety, published, public_key, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(a.id, a.org_id, a.name, a.description, a.instructions, a.model.provider, a.model.name,
          json(a.knowledge_base_ids), json(a.tools), json(a.safety), a.published ? 1 : 0, a.public_key, a.created_at, a.updated_at);
      },
      async get(orgId, id) {
        const r = stmt.getAgent.get(orgId, id) as Row | undefined;
        return r ? agentFromRow(r) : undefined;
      },
      async list(orgId, page) {
        return toPage(newestFirst(db, 'agents', '', [orgId], page), page, agentFromRow);
      },
      async update(orgId, id, patch: AgentPatch, at) {
        const cur = stmt.getAgent.get(orgId, id) as Row | undefined;
        if (!cur) return undefined;
        const next: AgentRecord = { ...agentFromRow(cur), ...patch, updated_at: at };
        db.prepare(
          `UPDATE agents SET name = ?, description = ?, instructions = ?, model_provider = ?, model_name = ?,
           knowledge_base_ids = ?, tools = ?, safety = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
        ).run(next.name, next.description, next.instructions, next.model.provider, next.model.name,
          json(next.knowledge_base_ids), json(next.tools), json(next.safety), at, orgId, id);
        return next;
      },
      async delete(orgId, id) {
        return db.prepare('DELETE FROM agents WHERE org_id = ? AND id = ?').run(orgId, id).changes > 0;
      },
    },
    knowledge: {
      async createBase(kb: KnowledgeBaseRecord) {
        db.prepare('INSERT INTO knowledge_bases (id, org_id, name, created_at) VALUES (?, ?, ?, ?)').run(kb.id, kb.org_id, kb.name, kb.created_at);
      },
      async getBase(orgId, id) {
        return db.prepare('SELECT * FROM knowledge_bases WHERE org_id = ? AND id = ?').get(orgId, id) as KnowledgeBaseRecord | undefined;
      },
      async listBases(orgId, page) {
        return toPage(newestFirst(db, 'knowledge_bases', '', [orgId], page), page, (r) => r as unknown as KnowledgeBaseRecord);
      },
      async createDocument(d: DocumentRecord) {
        db.prepare(
          `INSERT INTO documents (id, org_id, kb_id, title, content_type, status, error, chunk_count, bytes, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(d.id, d.org_id, d.knowledge_base_id, d.title, d.content_type, d.status, d.error, d.chunk_count, d.bytes, d.created_at, d.updated_at);
      },
      async getDocument(orgId, kbId, id) {
        const r = db.prepare('SELECT * FROM documents WHERE org_id = ? AND kb_id = ? AND id = ?').get(orgId, kbId, id) as Row | undefined;
        return r ? documentFromRow(r) : undefined;
      },
      async listDocuments(orgId, kbId, page) {
        return toPage(newestFirst(db, 'documents', ' AND kb_id = ?', [orgId, kbId], page), page, documentFromRow);
      },
      async completeDocument(id, chunks, at) {
        return completeDocument(id, chunks, at);
      },
      async failDocument(id, error, at) {
        db.prepare(`UPDATE documents SET status = 'failed', error = ?, updated_at = ? WHERE id = ?`).run(error, at, id);
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
    },
    conversations: {
      create(c: ConversationRecord) {
        return commits.write(() => {
          insertConversation.run(c.id, c.org_id, c.agent_id, c.status, json(c.metadata), c.created_at, c.updated_at);
        });
      },
      async get(orgId, id) {
        const r = stmt.getConversation.get(orgId, id) as Row | undefined;
        return r ? conversationFromRow(r) : undefined;
      },
      async list(orgId, filter: ConversationListFilter, page) {
        let where = '';
        const params: unknown[] = [orgId];
        if (filter.agent_id !== undefined) { where += ' AND agent_id = ?'; params.push(filter.agent_id); }
        if (filter.status !== undefined) { where += ' AND status = ?'; params.push(filter.status); }
        return toPage(newestFirst(db, 'conversations', where, params, page), page, conversationFromRow);
      },
      setStatus(id, status, at) {
        return commits.write(() => { updateStatus.run(status, at, id); });
      },
      appendMessage(rec) {
        return commits.write(() => {
          stmt.insertMessage.run({
            ...rec, citations: json(rec.citations), tool_runs: json(rec.tool_runs),
            usage: rec.usage === null ? null : json(rec.usage), error: rec.error === null ? null : json(rec.error),
          });
          stmt.touchConversation.run(rec.created_at, rec.conversation_id);
        });
      },
      async listMessages(orgId, conversationId, page): Promise<Page<MessageRecord>> {
        const after = page.after === undefined ? '' : ' AND seq > coalesce((SELECT seq FROM messages WHERE id = ?), 0)';
        const params: unknown[] = [orgId, conversationId];
        if (page.after !== undefined) params.push(page.after);
        const rows = db.prepare(
          `SELECT * FROM messages WHERE org_id = ? AND conversation_id = ?${after} ORDER BY seq LIMIT ?`,
        ).all(...params, page.limit + 1) as Row[];
        return toPage(rows, page, messageFromRow);
      },
      async history(conversationId, limit) {
        return (stmt.history.all(conversationId, limit) as Row[]).map(messageFromRow);
      },
    },
    async ping() {
      db.prepare('SELECT 1').get();
    },
    async close() {
      commits.flush();
      if (db.open) db.close();
    },
  };
}
