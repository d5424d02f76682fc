import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** Schema migrations, applied in order; `PRAGMA user_version` records how many ran. */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE organizations (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL);
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES organizations(id), name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE, last4 TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT);
  CREATE TABLE agents (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
    instructions TEXT NOT NULL, model_provider TEXT NOT NULL, model_name TEXT NOT NULL,
    knowledge_base_ids TEXT NOT NULL, tools TEXT NOT NULL, safety TEXT NOT NULL,
    published INTEGER NOT NULL DEFAULT 0, public_key TEXT UNIQUE,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE INDEX agents_org ON agents(org_id, id);
  CREATE TABLE knowledge_bases (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, name TEXT NOT NULL, created_at TEXT NOT NULL);
  CREATE INDEX knowledge_bases_org ON knowledge_bases(org_id, id);
  CREATE TABLE documents (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, kb_id TEXT NOT NULL, title TEXT NOT NULL,
    content_type TEXT NOT NULL, status TEXT NOT NULL, error TEXT, chunk_count INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE INDEX documents_kb ON documents(kb_id, id);
  CREATE TABLE chunks (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL, kb_id TEXT NOT NULL,
    org_id TEXT NOT NULL, ord INTEGER NOT NULL, title TEXT NOT NULL, heading TEXT NOT NULL, body TEXT NOT NULL);
  CREATE INDEX chunks_doc ON chunks(doc_id);
  CREATE VIRTUAL TABLE chunks_fts USING fts5(
    title, heading, body, content='chunks', content_rowid='rowid', tokenize='porter unicode61');
  CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, title, heading, body) VALUES (new.rowid, new.title, new.heading, new.body);
  END;
  CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, heading, body) VALUES ('delete', old.rowid, old.title, old.heading, old.body);
  END;
  CREATE TABLE conversations (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, agent_id TEXT NOT NULL, status TEXT NOT NULL,
    metadata TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE INDEX conversations_org ON conversations(org_id, id);
  CREATE TABLE messages (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, org_id TEXT NOT NULL,
    turn_id TEXT, role TEXT NOT NULL, content TEXT NOT NULL, citations TEXT NOT NULL, tool_runs TEXT NOT NULL,
    usage TEXT, status TEXT NOT NULL, finish_reason TEXT, error TEXT, created_at TEXT NOT NULL);
  CREATE INDEX messages_conversation ON messages(conversation_id, seq);
  `,
];

/** `synchronous` levels: FULL syncs the WAL on every commit (survives power loss); NORMAL survives process crashes only. */
export type SqliteSync = 'FULL' | 'NORMAL';

/**
 * Opens (creating if needed) the SQLite database at `file` in WAL mode and applies pending migrations.
 * Throws what better-sqlite3 throws when the file cannot be opened.
 */
export function openDatabase(file: string, sync: SqliteSync = 'FULL'): Database.Database {
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const version = db.pragma('user_version', { simple: true }) as number;
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
  return db;
}
