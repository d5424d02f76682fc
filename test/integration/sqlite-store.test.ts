/**
 * What only the SQLite adapter has, beyond the store contract (test/contract/): schema migrations on an
 * existing data directory, the group commit's savepoints and commit failures, and completeDocument's
 * slices (partial chunks never searchable, a crash part-way replaced by the next attempt). Real files in
 * temp dirs; no mocks; no wall-clock bounds.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS, openDatabase } from '../../src/store/sqlite/database.js';
import { GroupCommit } from '../../src/store/sqlite/group-commit.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Bm25Searcher, toChunkHit, type Bm25Search } from '../../src/store/sqlite/knowledge-search.js';
import { createMainThreadReader, createWorkerReader } from '../../src/store/sqlite/reader.js';
import { createKnowledge } from '../../src/store/sqlite/knowledge.js';
import { createWorkerWriter, type ConversationWriter } from '../../src/store/sqlite/writer.js';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DocumentRecord, NewChunk } from '../../src/store/records.js';

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:00:01.000Z';

const dirs: string[] = [];
const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'parley-sqlite-'));
  dirs.push(d);
  return d;
}

function store(dir: string, opts: Parameters<typeof createSqliteStore>[1] = {}) {
  const s = createSqliteStore(dir, opts);
  closers.push(() => s.close());
  return s;
}

/** A database file at schema version 1, exactly as users' data directories have it. */
function version1(dir: string): Database.Database {
  const db = new Database(join(dir, 'parley.db'));
  db.pragma('journal_mode = WAL');
  db.exec(MIGRATIONS[0]!);
  db.pragma('user_version = 1');
  return db;
}

/** A database file at schema `version` (migrations 1 to `version` applied, foreign keys off for the fixtures). */
function atVersion(dir: string, version: number): Database.Database {
  const db = version1(dir);
  db.pragma('foreign_keys = OFF');
  for (const m of MIGRATIONS.slice(1, version)) db.exec(m);
  db.pragma(`user_version = ${version}`);
  return db;
}

/** Knowledge base kb_1 with a ready document doc_1 titled 'Old' (the columns every schema version has). */
function readyOldDocument(db: Database.Database): void {
  db.prepare(`INSERT INTO knowledge_bases VALUES ('kb_1', 'org_A', 'Docs', ?)`).run(T0);
  db.prepare(`INSERT INTO documents (id, org_id, kb_id, title, content_type, status, error, chunk_count, bytes, created_at, updated_at)
    VALUES ('doc_1', 'org_A', 'kb_1', 'Old', 'text/plain', 'ready', NULL, 1, 10, ?, ?)`).run(T0, T0);
}

const insertV1Message = (db: Database.Database, seq: number, id: string, conv: string, turn: string | null, role: string, content: string) =>
  db.prepare(`INSERT INTO messages (seq, id, conversation_id, org_id, turn_id, role, content, citations, tool_runs, usage, status, finish_reason, error, created_at)
              VALUES (?, ?, ?, 'org_A', ?, ?, ?, '[]', '[]', NULL, 'completed', NULL, NULL, ?)`).run(seq, id, conv, turn, role, content, T0);

function doc(id: string): DocumentRecord {
  return {
    id, org_id: 'org_A', knowledge_base_id: 'kb_1', title: 'Big', content_type: 'text/plain', status: 'processing',
    error: null, error_code: null, chunk_count: 0, bytes: 3, created_at: T0, updated_at: T0,
  };
}

/** `n` chunks, each with the word `word` and its own number. */
const chunks = (n: number, word: string): NewChunk[] =>
  Array.from({ length: n }, (_, i) => ({ ord: i, heading: '', text: `${word} passage number ${i}` }));

const chunkRows = (db: Database.Database, docId: string) =>
  (db.prepare('SELECT count(*) AS n FROM chunks WHERE doc_id = ?').get(docId) as { n: number }).n;

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('sqlite: migrations', () => {
  it('migrates a version-1 directory: messages keep their order and now reference their conversation', async () => {
    const dir = tempDir();
    const v1 = version1(dir);
    v1.prepare(`INSERT INTO conversations VALUES ('conv_1', 'org_A', 'agt_1', 'active', '{}', ?, ?)`).run(T0, T0);
    insertV1Message(v1, 1, 'msg_b', 'conv_1', 'turn_1', 'visitor', 'first');
    insertV1Message(v1, 2, 'msg_a', 'conv_1', 'turn_1', 'agent', 'second');
    insertV1Message(v1, 5, 'msg_c', 'conv_1', 'turn_2', 'visitor', 'third');
    v1.prepare(`INSERT INTO documents VALUES ('doc_old', 'org_A', 'kb_1', 'Old', 'text/plain', 'processing', NULL, 0, 3, ?, ?)`).run(T0, T0);
    v1.close();

    const s = store(dir);
    expect(s.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(s.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(s.db.pragma('foreign_key_check')).toEqual([]);
    expect(s.db.prepare(`SELECT "table", "from", "to" FROM pragma_foreign_key_list('messages')`).all())
      .toEqual([{ table: 'conversations', from: 'conversation_id', to: 'id' }]);
    expect(s.db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL ORDER BY name`).all())
      .toEqual([{ name: 'messages_conversation' }, { name: 'messages_turn' }]);
    expect(s.db.prepare('SELECT seq, id FROM messages ORDER BY seq').all())
      .toEqual([{ seq: 1, id: 'msg_b' }, { seq: 2, id: 'msg_a' }, { seq: 5, id: 'msg_c' }]);
    expect((await s.conversations.listMessages('org_A', 'conv_1', { limit: 10 })).data.map((m) => m.content)).toEqual(['first', 'second', 'third']);

    await expect(s.conversations.appendMessage({
      id: 'msg_x', conversation_id: 'conv_gone', org_id: 'org_A', turn_id: null, role: 'visitor', content: 'x', citations: [],
      tool_runs: [], usage: null, status: 'completed', finish_reason: null, error: null, timing: null, created_at: T1,
    })).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' });
    // A document from before the migration has no stored upload.
    expect(await s.knowledge.pendingDocuments()).toEqual([{ ...doc('doc_old'), title: 'Old' }]);
    expect(await s.knowledge.documentSource('doc_old')).toBeNull();
    // The FTS index is merged by the store, not by FTS5's automerge.
    expect(s.db.prepare(`SELECT v FROM chunks_fts_config WHERE k = 'automerge'`).get()).toEqual({ v: 0 });
  });

  it('refuses to migrate messages that name a missing conversation, and changes nothing', () => {
    const dir = tempDir();
    const v1 = version1(dir);
    insertV1Message(v1, 1, 'msg_orphan', 'conv_missing', null, 'visitor', 'lost');
    v1.close();

    expect(() => createSqliteStore(dir)).toThrow(
      'Schema migration 2 stopped: rows name a missing parent (messages -> conversations: 1 rows). Nothing was changed; ' +
      'repair or remove those rows (PRAGMA foreign_key_check lists them), then start again.');
    const after = new Database(join(dir, 'parley.db'));
    closers.push(() => after.close());
    expect(after.pragma('user_version', { simple: true })).toBe(1);
    expect(after.prepare('SELECT id FROM messages').all()).toEqual([{ id: 'msg_orphan' }]);
    expect(after.prepare(`SELECT name FROM sqlite_schema WHERE name IN ('messages_new', 'document_sources')`).all()).toEqual([]);
  });

  it('migrates a version-2 directory: its API keys keep working (no expires_at) and the people tables start empty', async () => {
    const dir = tempDir();
    const v2 = atVersion(dir, 2);
    v2.prepare(`INSERT INTO organizations VALUES ('org_A', 'Acme', ?)`).run(T0);
    v2.prepare(`INSERT INTO api_keys VALUES ('key_1', 'org_A', 'old', 'h1', 'abcd', ?, NULL)`).run(T0);
    v2.close();

    const s = store(dir);
    expect(s.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(await s.apiKeys.findByHash('h1')).toEqual({ id: 'key_1', org_id: 'org_A', name: 'old', key_hash: 'h1', last4: 'abcd', created_at: T0, revoked_at: null, expires_at: null });
    expect(await s.memberships.organizationsOf('usr_1')).toEqual([]);
    expect(await s.signingKeys.active()).toBeUndefined();
  });

  it('migrates a version-3 directory: agents allow every origin, conversations have no visitor token, tickets no sign-in', async () => {
    const dir = tempDir();
    const v3 = atVersion(dir, 3);
    v3.prepare(`INSERT INTO agents (id, org_id, name, description, instructions, model_provider, model_name, knowledge_base_ids, tools, safety, published, public_key, created_at, updated_at)
      VALUES ('agt_1', 'org_A', 'Old', '', '', 'builtin', 'builtin', '[]', '[]', '{"blocked_phrases":[],"redact_pii":true,"blocked_message":"No."}', 0, NULL, ?, ?)`).run(T0, T0);
    v3.prepare(`INSERT INTO conversations VALUES ('conv_1', 'org_A', 'agt_1', 'active', '{}', ?, ?)`).run(T0, T0);
    v3.close();

    const s = store(dir);
    expect(s.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect((await s.agents.get('org_A', 'agt_1'))?.allowed_origins).toEqual(['*']);
    expect((await s.conversations.get('org_A', 'conv_1'))?.visitor_token_hash).toBeNull();
    expect(s.db.prepare(`SELECT name FROM pragma_table_info('socket_tickets') WHERE name = 'session_id'`).all()).toEqual([{ name: 'session_id' }]);
  });

  it('migrates a version-4 directory: chunks stored before have no page, and new ones keep theirs', async () => {
    const dir = tempDir();
    const v4 = atVersion(dir, 4);
    readyOldDocument(v4);
    v4.prepare(`INSERT INTO chunks (id, doc_id, kb_id, org_id, ord, title, heading, body) VALUES ('chk_1', 'doc_1', 'kb_1', 'org_A', 0, 'Old', '', 'walrus migration notes')`).run();
    v4.close();

    const s = store(dir);
    expect(s.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(await s.knowledge.search('org_A', ['kb_1'], 'walrus', 5)).toEqual([
      expect.objectContaining({ chunk_id: 'chk_1', heading: '', page: null }),
    ]);
    await s.knowledge.createDocument({ ...doc('doc_2'), title: 'Manual' }, new Uint8Array([1]));
    expect(await s.knowledge.completeDocument('doc_2', [{ ord: 0, heading: 'Setup', text: 'walrus on page four', page: 4 }], T1)).toBe(true);
    expect((await s.knowledge.search('org_A', ['kb_1'], 'walrus page', 5)).map((h) => [h.title, h.heading, h.page])).toEqual([
      ['Manual', 'Setup', 4], ['Old', '', null],
    ]);
  });

  it('migrates a version-8 directory: its chunks stay searchable with no embedding, and new chunks keep theirs', async () => {
    const dir = tempDir();
    const v8 = atVersion(dir, 8);
    readyOldDocument(v8);
    const { lastInsertRowid } = v8.prepare(`INSERT INTO chunks (id, doc_id, kb_id, org_id, ord, title, heading, body, page)
      VALUES ('chk_1', 'doc_1', 'kb_1', 'org_A', 0, 'Old', '', 'narwhal tusk notes', NULL)`).run();
    v8.prepare('INSERT INTO chunks_fts (rowid, title, heading, body) VALUES (?, ?, ?, ?)').run(lastInsertRowid, 'Old', '', 'narwhal tusk notes');
    v8.close();

    const s = store(dir);
    expect(s.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(s.db.prepare(`SELECT id, embedding, embedding_model FROM chunks`).all()).toEqual([{ id: 'chk_1', embedding: null, embedding_model: null }]);
    expect((await s.knowledge.search('org_A', ['kb_1'], 'narwhal', 5)).map((h) => h.chunk_id)).toEqual(['chk_1']);
    expect(await s.knowledge.vectorSearch('org_A', ['kb_1'], 'm', new Float32Array([1, 0]), 5)).toEqual([]);
    await s.knowledge.createDocument({ ...doc('doc_2'), title: 'New' }, 'x');
    const vector = new Float32Array([0.25, -1.5]);
    expect(await s.knowledge.completeDocument('doc_2', [{ ord: 0, heading: '', text: 'narwhal pod', embedding: { model: 'm', vector } }], T1)).toBe(true);
    const row = s.db.prepare(`SELECT embedding, embedding_model FROM chunks WHERE doc_id = 'doc_2'`).get() as { embedding: Buffer; embedding_model: string };
    // Little-endian float32: 0.25 = 0x3E800000, -1.5 = 0xBFC00000.
    expect([...row.embedding]).toEqual([0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0xc0, 0xbf]);
    expect(row.embedding_model).toBe('m');
    expect((await s.knowledge.vectorSearch('org_A', ['kb_1'], 'm', new Float32Array([1, -6]), 5)).map((h) => [h.title, h.score])).toEqual([['New', 1]]);
  });

  it('migrates a version-9 directory: public conversations take their agent\'s current public key (none for an unpublished agent)', async () => {
    const dir = tempDir();
    const v9 = atVersion(dir, 9);
    const insertAgent = v9.prepare(`INSERT INTO agents (id, org_id, name, description, instructions, model_provider, model_name, knowledge_base_ids, tools, safety, published, public_key, created_at, updated_at)
      VALUES (?, 'org_A', 'Old', '', '', 'builtin', 'builtin', '[]', '[]', '{"blocked_phrases":[],"redact_pii":true,"blocked_message":"No."}', ?, ?, ?, ?)`);
    insertAgent.run('agt_live', 1, 'pk_live', T0, T0);
    insertAgent.run('agt_gone', 0, null, T0, T0);
    const insertConversation = v9.prepare(`INSERT INTO conversations (id, org_id, agent_id, status, metadata, visitor_token_hash, created_at, updated_at) VALUES (?, 'org_A', ?, 'active', '{}', ?, ?, ?)`);
    insertConversation.run('conv_public', 'agt_live', 'vth-1', T0, T0);
    insertConversation.run('conv_api', 'agt_live', null, T0, T0);
    insertConversation.run('conv_unpublished', 'agt_gone', 'vth-2', T0, T0);
    v9.close();

    const s = store(dir);
    expect(s.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    const keys = await Promise.all(['conv_public', 'conv_api', 'conv_unpublished'].map(async (id) => (await s.conversations.get('org_A', id))?.public_key));
    expect(keys).toEqual(['pk_live', null, null]);
  });

  it('migrates a version-10 directory: metadata past Stripe\'s rules keeps the 50 first fitting entries in key order, as text; metadata that fits is untouched', async () => {
    const dir = tempDir();
    const v10 = atVersion(dir, 10);
    const huge: Record<string, string> = {};
    for (let i = 0; i < 90_000; i++) huge[`k${String(i).padStart(5, '0')}`] = 'v';
    const insert = v10.prepare(`INSERT INTO conversations (id, org_id, agent_id, status, metadata, created_at, updated_at) VALUES (?, 'org_A', 'agt_1', 'active', ?, ?, ?)`);
    insert.run('conv_huge', JSON.stringify(huge), T0, T0);
    insert.run('conv_mixed', JSON.stringify({ n: 12, yes: true, no: false, gone: null, obj: { a: 1 }, long: 'x'.repeat(501), ['k'.repeat(41)]: 'v', ok: 'fine', '': 'empty' }), T0, T0);
    insert.run('conv_fits', '{"name":"Ada","email":"ada@example.com"}', T0, T0);
    v10.close();

    const s = store(dir);
    expect(s.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    const expected: Record<string, string> = {};
    for (let i = 0; i < 50; i++) expected[`k${String(i).padStart(5, '0')}`] = 'v';
    expect((await s.conversations.get('org_A', 'conv_huge'))?.metadata).toEqual(expected);
    expect((await s.conversations.get('org_A', 'conv_mixed'))?.metadata).toEqual({ n: '12', yes: 'true', no: 'false', obj: '{"a":1}', ok: 'fine' });
    expect(s.db.prepare(`SELECT metadata FROM conversations WHERE id = 'conv_fits'`).get()).toEqual({ metadata: '{"name":"Ada","email":"ada@example.com"}' });
  });

  it('opens an up-to-date directory again without migrating', () => {
    const dir = tempDir();
    store(dir).db.close();
    const again = store(dir);
    expect(again.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(again.db.pragma('foreign_keys', { simple: true })).toBe(1);
  });
});

describe('sqlite: group commit', () => {
  function commitDb() {
    const db = openDatabase(join(tempDir(), 'parley.db'));
    closers.push(() => db.close());
    const commits = new GroupCommit(db);
    const conv = (id: string) => () => {
      db.prepare(`INSERT INTO conversations (id, org_id, agent_id, status, metadata, created_at, updated_at) VALUES (?, 'org_A', 'agt_1', 'active', '{}', ?, ?)`).run(id, T0, T0);
      return id;
    };
    const ids = () => db.prepare('SELECT id FROM conversations ORDER BY id').all().map((r) => (r as { id: string }).id);
    return { db, commits, conv, ids };
  }

  it('rolls a failing write back to its savepoint alone, even what it wrote before it threw', async () => {
    const { db, commits, conv, ids } = commitDb();
    const results = await Promise.allSettled([
      commits.write(conv('conv_1')),
      commits.write(() => { conv('conv_2')(); throw new Error('boom after a write'); }),
      commits.write(conv('conv_3')),
    ]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 'conv_1' },
      { status: 'rejected', reason: new Error('boom after a write') },
      { status: 'fulfilled', value: 'conv_3' },
    ]);
    expect(ids()).toEqual(['conv_1', 'conv_3']);
    expect(db.inTransaction).toBe(false);
  });

  it('when the commit itself fails, every write of the batch rejects with that error and nothing is stored', async () => {
    const { db, commits, conv, ids } = commitDb();
    const writes = [
      commits.write(conv('conv_1')),
      // A deferred foreign key is checked at COMMIT: the statement passes, the commit fails.
      commits.write(() => {
        db.pragma('defer_foreign_keys = ON');
        db.prepare(`INSERT INTO api_keys (id, org_id, name, key_hash, last4, created_at) VALUES ('key_1', 'org_missing', 'k', 'hash', 'abcd', ?)`).run(T0);
      }),
      commits.write(() => { throw new Error('fails on its own'); }),
      commits.write(conv('conv_2')),
    ];
    const results = await Promise.allSettled(writes);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    const reasons = results.map((r) => (r as PromiseRejectedResult).reason as { code?: string; message: string });
    expect(reasons.map((e) => e.code ?? e.message)).toEqual([
      'SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'fails on its own', 'SQLITE_CONSTRAINT_FOREIGNKEY',
    ]);
    expect(reasons[0]).toBe(reasons[1]);
    expect(ids()).toEqual([]);
    expect(db.inTransaction).toBe(false);
    // The next batch commits normally.
    expect(await commits.write(conv('conv_3'))).toBe('conv_3');
    expect(ids()).toEqual(['conv_3']);
  });

  it('rejects every write when the database is closed before the batch runs', async () => {
    const { db, commits, conv } = commitDb();
    const writes = [commits.write(conv('conv_1')), commits.write(conv('conv_2'))];
    db.close();
    const results = await Promise.allSettled(writes);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});

describe('sqlite: completeDocument in slices', () => {
  // Searches on the main connection here: what a search sees is then exactly the state between two slices.
  async function withDocument(opts: Parameters<typeof createSqliteStore>[1] = { chunkSliceChunks: 1, reader: 'main' }) {
    const dir = tempDir();
    const s = store(dir, opts);
    await s.knowledge.createBase({ id: 'kb_1', org_id: 'org_A', name: 'kb', created_at: T0 });
    await s.knowledge.createDocument(doc('doc_1'), 'raw');
    return { dir, s };
  }

  it('stores chunks in slices through the writer while the event loop runs, and nothing is searchable before the document is ready', async () => {
    const { s } = await withDocument();
    let ticks = 0;
    let ticking = true;
    const count = () => { ticks++; if (ticking) setImmediate(count); };
    setImmediate(count);
    const done = s.knowledge.completeDocument('doc_1', chunks(40, 'quokka'), T1);
    let midway = 0;
    while ((midway = chunkRows(s.db, 'doc_1')) === 0) await tick();
    expect(midway).toBeLessThan(40);
    expect((await s.knowledge.getDocument('org_A', 'kb_1', 'doc_1'))?.status).toBe('processing');
    expect(await s.knowledge.search('org_A', ['kb_1'], 'quokka', 50)).toEqual([]);
    expect(await done).toBe(true);
    ticking = false;
    // One chunk per slice here: 40 slices, each awaited, and the event loop turned between them.
    expect(ticks).toBeGreaterThanOrEqual(40);
    expect(chunkRows(s.db, 'doc_1')).toBe(40);
    expect(await s.knowledge.search('org_A', ['kb_1'], 'quokka', 50)).toHaveLength(40);
    expect(await s.knowledge.getDocument('org_A', 'kb_1', 'doc_1')).toMatchObject({ status: 'ready', chunk_count: 40 });
  });

  it('slices by chunk count and by characters: a slice never holds more than the configured chunks', async () => {
    // The slices are recorded as the real writer thread receives them. (Polling the table between event-loop
    // turns could not tell them apart: the writer thread may commit the next slice before the poll runs.)
    const dir = tempDir();
    const file = join(dir, 'parley.db');
    const db = openDatabase(file, 'FULL');
    const inner = createWorkerWriter(file, 'FULL');
    closers.push(async () => { await inner.close(); db.close(); });
    const slices: number[] = [];
    const writer: ConversationWriter = {
      ...inner,
      run: (op, args) => {
        if (op === 'chunksInsert') slices.push((args as { chunks: NewChunk[] }).chunks.length);
        return inner.run(op, args);
      },
    };
    const k = createKnowledge(db, writer, { chunkSliceChunks: 5, reader: createMainThreadReader(db) });
    await k.createBase({ id: 'kb_1', org_id: 'org_A', name: 'kb', created_at: T0 });
    await k.createDocument(doc('doc_1'), 'raw');
    expect(await k.completeDocument('doc_1', chunks(23, 'wombat'), T1)).toBe(true);
    expect(slices).toEqual([5, 5, 5, 5, 3]);
    expect(chunkRows(db, 'doc_1')).toBe(23);
    // By characters: 40,000-character chunks, so two fit in a slice of 96,000 characters and a third does not.
    slices.length = 0;
    const big = Array.from({ length: 5 }, (_, i) => ({ ord: i, heading: '', text: `kangaroo ${i} `.padEnd(40_000, 'x') }));
    expect(await k.completeDocument('doc_1', big, T1)).toBe(true);
    expect(slices).toEqual([2, 2, 1]);
    expect(chunkRows(db, 'doc_1')).toBe(5);
    k.stop();
    expect(() => store(tempDir(), { chunkSliceChunks: 0 })).toThrow(/chunkSliceChunks must be an integer >= 1/);
  });

  it('a crash part-way leaves the document processing with partial chunks; the next attempt replaces them', async () => {
    const { dir, s } = await withDocument();
    const interrupted = s.knowledge.completeDocument('doc_1', chunks(30, 'numbat'), T1);
    while (chunkRows(s.db, 'doc_1') === 0) await tick();
    await s.close();
    await expect(interrupted).rejects.toThrow();

    const again = store(dir);
    const partial = chunkRows(again.db, 'doc_1');
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(30);
    expect(await again.knowledge.search('org_A', ['kb_1'], 'numbat', 50)).toEqual([]);
    expect((await again.knowledge.pendingDocuments()).map((p) => [p.id, p.status])).toEqual([['doc_1', 'processing']]);
    expect(await again.knowledge.documentSource('doc_1')).toBe('raw');

    expect(await again.knowledge.completeDocument('doc_1', chunks(12, 'numbat'), T1)).toBe(true);
    expect(chunkRows(again.db, 'doc_1')).toBe(12);
    expect(await again.knowledge.search('org_A', ['kb_1'], 'numbat', 50)).toHaveLength(12);
    expect(await again.knowledge.pendingDocuments()).toEqual([]);
    again.db.exec(`INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')`);
  });

  it('stops and returns false when the document is deleted part-way, leaving no chunk behind', async () => {
    const { s } = await withDocument();
    const done = s.knowledge.completeDocument('doc_1', chunks(30, 'bilby'), T1);
    await tick();
    await tick();
    expect(await s.knowledge.deleteDocument('org_A', 'kb_1', 'doc_1')).toBe(true);
    expect(await done).toBe(false);
    expect(chunkRows(s.db, 'doc_1')).toBe(0);
    expect(s.db.prepare('SELECT count(*) AS n FROM document_sources').get()).toEqual({ n: 0 });
  });

  it('deleting a knowledge base leaves no chunk, upload or full-text entry of its documents behind, also of one being completed', async () => {
    const { s } = await withDocument();
    await s.knowledge.createDocument(doc('doc_2'), 'raw');
    expect(await s.knowledge.completeDocument('doc_1', chunks(5, 'quokka'), T1)).toBe(true);
    const done = s.knowledge.completeDocument('doc_2', chunks(30, 'quokka'), T1);
    await tick();
    expect(await s.knowledge.deleteBase('org_A', 'kb_1')).toBe(true);
    expect(await done).toBe(false);
    expect(chunkRows(s.db, 'doc_1') + chunkRows(s.db, 'doc_2')).toBe(0);
    expect(s.db.prepare('SELECT count(*) AS n FROM document_sources').get()).toEqual({ n: 0 });
    expect(s.db.prepare('SELECT count(*) AS n FROM documents').get()).toEqual({ n: 0 });
    s.db.exec(`INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')`);
    expect(s.db.prepare(`SELECT count(*) AS n FROM chunks_fts WHERE chunks_fts MATCH 'quokka'`).get()).toEqual({ n: 0 });
  });

  it('runs two calls for the same document one after the other: the later one wins', async () => {
    const { s } = await withDocument();
    const first = s.knowledge.completeDocument('doc_1', chunks(15, 'dingo'), T1);
    const second = s.knowledge.completeDocument('doc_1', chunks(7, 'dingo'), T1);
    expect(await Promise.all([first, second])).toEqual([true, true]);
    expect(chunkRows(s.db, 'doc_1')).toBe(7);
    expect(await s.knowledge.getDocument('org_A', 'kb_1', 'doc_1')).toMatchObject({ status: 'ready', chunk_count: 7 });
  });

  it('keeps the full-text index consistent through many slices, merges, replacements and deletes (default budget)', async () => {
    const { s } = await withDocument({});
    await s.knowledge.createDocument(doc('doc_2'), 'raw');
    expect(await s.knowledge.completeDocument('doc_1', chunks(600, 'emu'), T1)).toBe(true);
    expect(await s.knowledge.completeDocument('doc_2', chunks(300, 'emu'), T1)).toBe(true);
    expect(await s.knowledge.completeDocument('doc_1', chunks(200, 'cassowary'), T1)).toBe(true);
    expect(await s.knowledge.deleteDocument('org_A', 'kb_1', 'doc_2')).toBe(true);
    await tick();
    s.db.exec(`INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')`);
    expect(await s.knowledge.search('org_A', ['kb_1'], 'emu', 1000)).toEqual([]);
    expect(await s.knowledge.search('org_A', ['kb_1'], 'cassowary', 1000)).toHaveLength(200);
  });
});

describe('sqlite: vector scan', () => {
  /** A unit vector of `dims` dimensions pointing mostly along axis `i % dims`. */
  const unit = (i: number, dims: number): Float32Array => {
    const v = new Float32Array(dims).fill(0.01);
    v[i % dims] = 1;
    return v;
  };

  it('scans page by page, letting the event loop run between pages, and finds the same best chunks as one pass would', async () => {
    const s = store(tempDir(), { vectorSliceMs: 0 });
    await s.knowledge.createBase({ id: 'kb_1', org_id: 'org_A', name: 'Docs', created_at: T0 });
    await s.knowledge.createDocument(doc('doc_1'), 'x');
    const dims = 32;
    const n = 10 * 64 + 5;
    const drafts: NewChunk[] = Array.from({ length: n }, (_, i) => ({ ord: i, heading: '', text: `chunk ${i}`, embedding: { model: 'm', vector: unit(i, dims) } }));
    expect(await s.knowledge.completeDocument('doc_1', drafts, T1)).toBe(true);
    let ticks = 0;
    let ticking = true;
    const tickLoop = () => { if (ticking) { ticks++; setImmediate(tickLoop); } };
    setImmediate(tickLoop);
    const hits = await s.knowledge.vectorSearch('org_A', ['kb_1'], 'm', unit(7, dims), 25);
    ticking = false;
    // 11 pages: the scan yielded after each full page but the last, so the ticker ran in between.
    expect(ticks).toBeGreaterThanOrEqual(10);
    // Chunks 7, 39, 71, ... point along axis 7 (n / dims = 20 of them, plus chunk 647 is past n): all tie at the top.
    const along = drafts.filter((_, i) => i % dims === 7).length;
    expect(hits.slice(0, along).map((h) => h.text)).toEqual(drafts.filter((_, i) => i % dims === 7).map((d) => d.text));
    expect(hits).toHaveLength(25);
    expect(hits[along]!.score).toBeLessThan(hits[0]!.score);
  });
});

describe('sqlite: writer thread start', () => {
  /** This process's threads (Linux). */
  const threads = () => readdirSync('/proc/self/task').length;

  it('start-up recovery and an idle lease sweep only read: no writer thread starts until there is a write to commit', async () => {
    const s = store(tempDir());
    const before = threads();
    const now = new Date().toISOString();
    // At start-up (every foreign lease expired) and as the periodic sweep: nothing leased, nothing to release.
    expect(await s.webhooks.releaseExpiredLeases(now, ['proc_gone'])).toEqual([]);
    expect(await s.webhooks.releaseExpiredLeases(now, [])).toEqual([]);
    // After a clean stop: no turn was cut short.
    expect(await s.conversations.failInterruptedTurns({ type: 'api_error', code: 'interrupted', message: 'x' }, now, undefined, 'unleased')).toEqual([]);
    expect(threads()).toBe(before);
    // The first real write starts it (so the count above could have seen it).
    await s.usage.setThresholds('org_1', [{ metric: 'total_tokens', value: 100, period: 'month' }], now);
    expect(threads()).toBe(before + 1);
  });

  it('an upload is committed by the writer thread, not on the event loop: storing a document starts it', async () => {
    const s = store(tempDir());
    s.db.prepare(`INSERT INTO knowledge_bases VALUES ('kb_1', 'org_A', 'Docs', ?)`).run(T0);
    const before = threads();
    await s.knowledge.createDocument({ ...doc('doc_1'), bytes: 3 }, new Uint8Array([7, 8, 9]));
    expect(threads()).toBe(before + 1);
    // Durable as given, and listed as processing.
    expect(s.db.prepare('SELECT content, is_text FROM document_sources WHERE doc_id = ?').get('doc_1')).toEqual({ content: Buffer.from([7, 8, 9]), is_text: 0 });
    expect((await s.knowledge.getDocument('org_A', 'kb_1', 'doc_1'))?.status).toBe('processing');
    // A failed insert (the same id again) reaches the caller.
    await expect(s.knowledge.createDocument(doc('doc_1'), 'again')).rejects.toThrow(/UNIQUE/);
  });
});

describe('sqlite: reader thread (knowledge search)', () => {
  /** This process's threads (Linux). */
  const threads = () => readdirSync('/proc/self/task').length;
  const bm25 = (match: string): Bm25Search => ({ match, orgId: 'org_A', kbIds: ['kb_1'], k: 10 });

  /** A store (reader thread by default) with a ready document of chunks about quokkas in kb_1. */
  async function withChunks(opts: Parameters<typeof createSqliteStore>[1] = {}) {
    const dir = tempDir();
    const s = store(dir, opts);
    await s.knowledge.createBase({ id: 'kb_1', org_id: 'org_A', name: 'kb', created_at: T0 });
    await s.knowledge.createDocument(doc('doc_1'), 'raw');
    const drafts: NewChunk[] = [
      { ord: 0, heading: 'Animals > Quokka', text: 'The quokka is a small wallaby that smiles.' },
      { ord: 1, heading: 'Animals > Wombat', text: 'A wombat digs burrows; a quokka does not dig.' },
      { ord: 2, heading: 'Plants', text: 'Eucalyptus trees shed their bark.' },
    ];
    expect(await s.knowledge.completeDocument('doc_1', drafts, T1)).toBe(true);
    return { dir, s };
  }

  it('a search runs in the reader thread on its own connection: the first one starts it, and it still answers with the main connection closed', async () => {
    const { s } = await withChunks();
    const before = threads();
    const hits = await s.knowledge.search('org_A', ['kb_1'], 'quokka', 10);
    expect(threads()).toBe(before + 1);
    // Same rows, same order and scores as the statement on the main thread's connection.
    const main = createMainThreadReader(s.db);
    expect(hits).toEqual((await main.search(bm25('"quokka"'))).map(toChunkHit));
    expect(hits.map((h) => h.text)).toEqual(['The quokka is a small wallaby that smiles.', 'A wombat digs burrows; a quokka does not dig.']);
    expect(hits[0]).toMatchObject({ document_id: 'doc_1', title: 'Big', heading: 'Animals > Quokka', page: null });
    s.db.close();
    expect((await s.knowledge.search('org_A', ['kb_1'], 'eucalyptus bark', 10)).map((h) => h.heading)).toEqual(['Plants']);
  });

  it('PARLEY_SQLITE_READER=main searches on the main connection: no thread starts', async () => {
    const { s } = await withChunks({ reader: 'main' });
    const before = threads();
    expect((await s.knowledge.search('org_A', ['kb_1'], 'wombat', 10)).map((h) => h.heading)).toEqual(['Animals > Wombat']);
    expect(threads()).toBe(before);
  });

  it('a search SQLite rejects fails alone with its SQLite error; the thread goes on serving', async () => {
    const { dir } = await withChunks();
    const reader = createWorkerReader(join(dir, 'parley.db'));
    closers.push(() => reader.close());
    const bad = reader.search(bm25('"unterminated'));
    const good = reader.search(bm25('"wombat"'));
    await expect(bad).rejects.toMatchObject({ code: 'SQLITE_ERROR', message: expect.stringMatching(/unterminated string/) });
    expect((await good).map((r) => r[3])).toEqual(['Animals > Wombat']);
  });

  it('a reader thread that dies rejects the searches in flight, and the next search starts a new thread', async () => {
    const { dir } = await withChunks();
    const reader = createWorkerReader(join(dir, 'parley.db'));
    closers.push(() => reader.close());
    const before = threads();
    // A malformed request makes the thread throw outside any search: it exits.
    const malformed = reader.search({ ...bm25('"quokka"'), k: 'ten' } as unknown as Bm25Search);
    const queued = reader.search(bm25('"quokka"'));
    await expect(malformed).rejects.toThrow(/malformed request/);
    await expect(queued).rejects.toThrow(/malformed request/);
    // At once, before the dead thread's exit is reported: that late exit must not touch the new thread's searches.
    expect((await reader.search(bm25('"quokka"'))).map((r) => r[3])).toEqual(['Animals > Quokka', 'Animals > Wombat']);
    expect((await reader.search(bm25('"bark"'))).map((r) => r[3])).toEqual(['Plants']);
    while (threads() > before + 1) await tick();
    expect(threads()).toBe(before + 1);
  });

  it('close() lets the searches in flight finish, stops the thread, and later searches reject', async () => {
    const { dir } = await withChunks();
    const before = threads();
    const reader = createWorkerReader(join(dir, 'parley.db'));
    const inFlight = [reader.search(bm25('"bark"')), reader.search(bm25('"wombat"'))];
    const closed = reader.close();
    expect((await Promise.all(inFlight)).map((rows) => rows.map((r) => r[3]))).toEqual([['Plants'], ['Animals > Wombat']]);
    await closed;
    expect(threads()).toBe(before);
    await expect(reader.search(bm25('"bark"'))).rejects.toThrow(/closed/);
    const main = createMainThreadReader(new Database(join(dir, 'parley.db')));
    await main.close();
    await expect(main.search(bm25('"bark"'))).rejects.toThrow(/closed/);
  });

  it('searches the knowledge bases named, of the organization named; scores are bm25 relevance, best first', async () => {
    const s = store(tempDir(), { reader: 'main' });
    for (const kb of ['kb_1', 'kb_2', 'kb_3']) await s.knowledge.createBase({ id: kb, org_id: 'org_A', name: kb, created_at: T0 });
    const filler = (i: number) => `Gardening note ${i}: water the tomatoes in the morning.`;
    const put = async (id: string, kb: string, texts: string[]) => {
      await s.knowledge.createDocument({ ...doc(id), knowledge_base_id: kb }, 'raw');
      expect(await s.knowledge.completeDocument(id, texts.map((text, ord) => ({ ord, heading: '', text })), T1)).toBe(true);
    };
    // One quokka chunk among ten per knowledge base, so "quokka" is a rare (high-weight) term.
    await put('doc_1', 'kb_1', ['A quokka smiles at a quokka.', ...Array.from({ length: 9 }, (_, i) => filler(i))]);
    await put('doc_2', 'kb_2', ['One quokka.', ...Array.from({ length: 9 }, (_, i) => filler(10 + i))]);
    await put('doc_3', 'kb_3', ['The quokka of kb_3.', ...Array.from({ length: 9 }, (_, i) => filler(20 + i))]);
    const both = await s.knowledge.search('org_A', ['kb_1', 'kb_2'], 'quokka', 10);
    expect(both.map((h) => h.text)).toEqual(['A quokka smiles at a quokka.', 'One quokka.']);
    expect(both[0]!.score).toBeGreaterThan(both[1]!.score);
    for (const h of both) {
      expect(h.score).toBeGreaterThan(0.5);
      expect(h.score).toBeLessThan(100);
      expect(Math.round(h.score * 1000)).toBeCloseTo(h.score * 1000, 6);
    }
    expect((await s.knowledge.search('org_A', ['kb_3'], 'quokka', 10)).map((h) => h.document_id)).toEqual(['doc_3']);
    expect(await s.knowledge.search('org_B', ['kb_1', 'kb_2', 'kb_3'], 'quokka', 10)).toEqual([]);
    expect(await s.knowledge.search('org_A', ['kb_1', 'kb_2', 'kb_3'], 'quokka', 2)).toHaveLength(2);
  });

  it('prepares the search statement once per number of knowledge bases, and keeps at most 32 of them', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE documents (id TEXT PRIMARY KEY, status TEXT);
      CREATE TABLE chunks (rowid INTEGER PRIMARY KEY, id TEXT, doc_id TEXT, kb_id TEXT, org_id TEXT, title TEXT, heading TEXT, body TEXT, page INTEGER);
      CREATE VIRTUAL TABLE chunks_fts USING fts5(title, heading, body, content='chunks', content_rowid='rowid');`);
    let prepared = 0;
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => { prepared++; return prepare(sql); }) as typeof db.prepare;
    const searcher = new Bm25Searcher(db);
    const run = (n: number) => searcher.run({ match: '"x"', orgId: 'org_A', kbIds: Array.from({ length: n }, (_, i) => `kb_${i}`), k: 5 });
    run(1); run(1); run(2); run(2); run(32); run(32);
    expect(prepared).toBe(3);
    run(33); run(33);
    expect(prepared).toBe(5);
    db.close();
  });

  it('the main-thread reader turns an SQLite error into a rejected promise, not a throw', async () => {
    const { s } = await withChunks({ reader: 'main' });
    const main = createMainThreadReader(s.db);
    const bad = main.search(bm25('"unterminated'));
    await expect(bad).rejects.toMatchObject({ code: 'SQLITE_ERROR' });
  });

  it('an idle reader thread does not keep the process alive', async () => {
    const { dir } = await withChunks();
    const root = join(fileURLToPath(import.meta.url), '..', '..', '..');
    const script = `import { createWorkerReader } from ${JSON.stringify(join(root, 'dist/src/store/sqlite/reader.js'))};
      const r = createWorkerReader(${JSON.stringify(join(dir, 'parley.db'))});
      const rows = await r.search({ match: '"quokka"', orgId: 'org_A', kbIds: ['kb_1'], k: 10 });
      console.log(rows.length);`;
    const file = join(dir, 'search-once.mjs');
    writeFileSync(file, script);
    // Without close(): the process must still end by itself once the search is answered.
    const out = execFileSync(process.execPath, [file], { encoding: 'utf8', timeout: 15_000 });
    expect(out.trim()).toBe('2');
  });
});
