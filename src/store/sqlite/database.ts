import Database from 'better-sqlite3';
import { dirname } from 'node:path';
import { ensureDataDir, ensurePrivateFile } from './data-dir.js';

/**
 * Schema migrations, applied in order; `PRAGMA user_version` records how many ran. A migration that has
 * been released has run on users' data: never edit one, append the next.
 */
export const MIGRATIONS: readonly string[] = [
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
  // 2: a message references its conversation; uploads are kept until the document is deleted; the FTS
  // index is merged by the store in bounded steps instead of by FTS5's automerge (src/store/sqlite/fts-merge.ts).
  // The messages table is rebuilt (SQLite cannot add a constraint in place) following the 12-step
  // procedure of https://www.sqlite.org/lang_altertable.html#otheralter: foreign keys are off while
  // migrations run, the copy keeps `seq` (the stored order), the index is recreated after the rename,
  // and openDatabase() runs PRAGMA foreign_key_check before the commit.
  `
  CREATE TABLE messages_new (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL REFERENCES conversations(id),
    org_id TEXT NOT NULL, turn_id TEXT, role TEXT NOT NULL, content TEXT NOT NULL, citations TEXT NOT NULL,
    tool_runs TEXT NOT NULL, usage TEXT, status TEXT NOT NULL, finish_reason TEXT, error TEXT, created_at TEXT NOT NULL);
  INSERT INTO messages_new (seq, id, conversation_id, org_id, turn_id, role, content, citations, tool_runs, usage, status, finish_reason, error, created_at)
    SELECT seq, id, conversation_id, org_id, turn_id, role, content, citations, tool_runs, usage, status, finish_reason, error, created_at
    FROM messages;
  DROP TABLE messages;
  ALTER TABLE messages_new RENAME TO messages;
  CREATE INDEX messages_conversation ON messages(conversation_id, seq);
  CREATE INDEX messages_turn ON messages(turn_id, role) WHERE turn_id IS NOT NULL;
  CREATE TABLE document_sources (
    doc_id TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    content BLOB NOT NULL, is_text INTEGER NOT NULL CHECK (is_text IN (0, 1)));
  CREATE INDEX documents_processing ON documents(created_at, id) WHERE status = 'processing';
  INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', 0);
  `,
  // 3: people sign in. Persons, their memberships (roles), refresh-token families and tokens (hashes
  // only), token signing keys (at most one active: the partial unique index), single-use socket tickets
  // (hashes only), and an end of grace period for rotated API keys. `members` is the member list as
  // the API shows it (user id as `id`, so the newest-first list helper pages it).
  `
  ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
  CREATE INDEX api_keys_org ON api_keys(org_id, id);
  CREATE TABLE users (
    id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, password_hash TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE TABLE memberships (
    org_id TEXT NOT NULL REFERENCES organizations(id), user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'operator')), created_at TEXT NOT NULL,
    PRIMARY KEY (org_id, user_id)) WITHOUT ROWID;
  CREATE INDEX memberships_user ON memberships(user_id);
  CREATE VIEW members AS
    SELECT m.user_id AS id, m.org_id, m.user_id, m.role, m.created_at, u.email FROM memberships m JOIN users u ON u.id = m.user_id;
  CREATE TABLE refresh_families (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, created_at TEXT NOT NULL,
    absolute_expires_at TEXT NOT NULL, revoked_at TEXT, revoked_reason TEXT);
  CREATE INDEX refresh_families_user ON refresh_families(user_id);
  CREATE INDEX refresh_families_expiry ON refresh_families(absolute_expires_at);
  CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY, family_id TEXT NOT NULL REFERENCES refresh_families(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL, expires_at TEXT NOT NULL, used_at TEXT) WITHOUT ROWID;
  CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
  CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY, algorithm TEXT NOT NULL, public_jwk TEXT NOT NULL, private_jwk TEXT NOT NULL,
    created_at TEXT NOT NULL, retired_at TEXT);
  CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys(retired_at IS NULL) WHERE retired_at IS NULL;
  CREATE TABLE socket_tickets (
    ticket_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, org_id TEXT NOT NULL,
    created_at TEXT NOT NULL, expires_at TEXT NOT NULL, used_at TEXT) WITHOUT ROWID;
  CREATE INDEX socket_tickets_expiry ON socket_tickets(expires_at);
  `,
  // 4: live channels. A published agent's allowed origins (CORS and the socket Origin check, `["*"]` by
  // default); the visitor token hash of a public conversation (checked on the row the chat reads anyway);
  // the sign-in a socket ticket was issued under (logout closes its sockets); conversations by status
  // for the operator lists.
  `
  ALTER TABLE agents ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '["*"]';
  ALTER TABLE conversations ADD COLUMN visitor_token_hash TEXT;
  ALTER TABLE socket_tickets ADD COLUMN session_id TEXT;
  CREATE INDEX conversations_org_status ON conversations(org_id, status, id);
  `,
  // 5: tool runs. One row per tool
  // call an agent made (built-in or HTTP), without arguments, headers or bodies (those stay in the agent
  // message's tool_runs), for the run history of a conversation.
  `
  CREATE TABLE tool_runs (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, agent_id TEXT NOT NULL, conversation_id TEXT NOT NULL, turn_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL, http_status INTEGER,
    error TEXT, duration_ms INTEGER NOT NULL, response_bytes INTEGER NOT NULL, created_at TEXT NOT NULL);
  CREATE INDEX tool_runs_conversation ON tool_runs(org_id, conversation_id, created_at, id);
  `,
  // 6: the page a chunk of a PDF starts on,
  // so that a citation can name it. NULL for formats without pages and for chunks stored before.
  `
  ALTER TABLE chunks ADD COLUMN page INTEGER;
  `,
  // 7: webhooks and usage. Endpoints (the secret is kept as is: it signs), the outbox of events, one
  // delivery per event and endpoint (claimed under a lease), each attempt of a delivery; token totals
  // per organization, day and agent, the organization's usage thresholds, and the mark of a threshold
  // that fired in a period (its primary key makes "once per period" a conditional insert).
  `
  CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, url TEXT NOT NULL, description TEXT, events TEXT NOT NULL,
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)), disabled_reason TEXT, secret TEXT NOT NULL,
    previous_secret TEXT, previous_secret_expires_at TEXT, failing_since TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE INDEX webhook_endpoints_org ON webhook_endpoints(org_id, id);
  CREATE TABLE webhook_events (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL);
  CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY, event_id TEXT NOT NULL REFERENCES webhook_events(id),
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE, org_id TEXT NOT NULL,
    event_type TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempt_count INTEGER NOT NULL DEFAULT 0, next_attempt_at TEXT,
    lease_owner TEXT, lease_expires_at TEXT, attempt_started_at TEXT,
    last_status INTEGER, last_body TEXT, last_duration_ms INTEGER, last_error TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, id);
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint_id, next_attempt_at, id) WHERE status = 'pending';
  CREATE INDEX webhook_deliveries_leased ON webhook_deliveries(lease_expires_at) WHERE lease_owner IS NOT NULL;
  CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE, number INTEGER NOT NULL,
    status INTEGER NOT NULL, body TEXT NOT NULL, error TEXT, duration_ms INTEGER NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (delivery_id, number)) WITHOUT ROWID;
  CREATE TABLE usage_daily (
    org_id TEXT NOT NULL, day TEXT NOT NULL, agent_id TEXT NOT NULL, input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL, turns INTEGER NOT NULL, PRIMARY KEY (org_id, day, agent_id)) WITHOUT ROWID;
  CREATE TABLE usage_thresholds (
    org_id TEXT NOT NULL, metric TEXT NOT NULL, value INTEGER NOT NULL, period TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (org_id, metric, value, period)) WITHOUT ROWID;
  CREATE TABLE usage_threshold_marks (
    org_id TEXT NOT NULL, metric TEXT NOT NULL, value INTEGER NOT NULL, period TEXT NOT NULL, period_start TEXT NOT NULL,
    event_id TEXT NOT NULL, fired_at TEXT NOT NULL,
    PRIMARY KEY (org_id, metric, value, period, period_start)) WITHOUT ROWID;
  `,
  // 8: the store writes a chunk's FTS row itself, in the statement after the chunk's insert, instead of
  // the AFTER INSERT trigger: the trigger made storing chunks about 3x slower (measured on the Node.js
  // docs: 2,994 chunks in one transaction, 156-230 ms through the trigger against 53-82 ms direct). The
  // AFTER DELETE trigger stays: deletes are rare and must never leave a stale FTS row.
  `
  DROP TRIGGER chunks_ai;
  `,
  // 9: optional embeddings (docs/knowledge-bases.md "Embeddings (optional)"): the name of the model that
  // made a chunk's vector and the vector as little-endian float32 bytes; NULL for chunks stored without
  // embeddings (every chunk stored before), which vector search skips. The model comes first in the row:
  // a vector (6 KiB at 1536 dimensions) spills into overflow pages, and a column after it could only be
  // read by walking them, for every row the scan filters.
  `
  ALTER TABLE chunks ADD COLUMN embedding_model TEXT;
  ALTER TABLE chunks ADD COLUMN embedding BLOB;
  `,
  // 10: access that ends everywhere (API.md "Auth endpoints": revocation closes sockets and refuses older
  // tokens within 1 s, on every process). A person's `access_valid_after` (tokens issued before it are
  // refused), and the feed: changes other processes must hear of (FeedPort), written in the commit of the
  // change, numbered in commit order (AUTOINCREMENT: a number is never reused, even after a prune).
  `
  ALTER TABLE users ADD COLUMN access_valid_after TEXT;
  CREATE TABLE feed (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL);
  CREATE INDEX feed_created ON feed(created_at);
  `,
  // 11: several processes on one store (DESIGN.md "Several processes"). The processes serving it (their
  // address and heartbeat), the secret of their internal requests, and one lease per conversation: its
  // owner, until when, and a fence that grows with every change of owner (every write of a turn checks it).
  `
  CREATE TABLE processes (
    id TEXT PRIMARY KEY, url TEXT NOT NULL, started_at TEXT NOT NULL, heartbeat_at TEXT NOT NULL, draining_at TEXT);
  CREATE TABLE cluster_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret TEXT NOT NULL, created_at TEXT NOT NULL);
  CREATE TABLE conversation_leases (
    conversation_id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, owner_url TEXT NOT NULL, fence INTEGER NOT NULL,
    expires_at TEXT NOT NULL, released INTEGER NOT NULL DEFAULT 0 CHECK (released IN (0, 1)));
  CREATE INDEX conversation_leases_owner ON conversation_leases(owner_id) WHERE released = 0;
  CREATE INDEX conversation_leases_abandoned ON conversation_leases(expires_at) WHERE released = 0;
  `,
  // 12: the public key a public conversation was started through; its visitor token works with that key
  // only, so an unpublish (which drops the key) ends the visitor tokens of the agent for good, also after a
  // new publish. Conversations stored before get their agent's current key (NULL when it is not
  // published: those tokens end now). Visitor token hashes get an index: a listen-only socket looks a
  // token up to tell a token of another conversation (4404) from an unknown one (4401).
  `
  ALTER TABLE conversations ADD COLUMN public_key TEXT;
  CREATE INDEX conversations_visitor_token ON conversations(visitor_token_hash) WHERE visitor_token_hash IS NOT NULL;
  UPDATE conversations SET public_key = (SELECT a.public_key FROM agents a WHERE a.id = conversations.agent_id)
    WHERE visitor_token_hash IS NOT NULL;
  `,
  // 13: conversation metadata follows Stripe's rules from now on (src/vocabulary/metadata.ts: at most 50
  // keys of 1-40 characters, string values of at most 500). Metadata stored before that breaks them (the
  // public chat took 90,000 keys) keeps what fits: its entries in key order, scalars as text (true,
  // false, numbers; objects and arrays as their JSON), nulls and entries past the limits dropped, at most
  // 50. Metadata that already fits is not touched.
  `
  UPDATE conversations SET metadata = (
    SELECT json_group_object(key, text) FROM (
      SELECT key, text FROM (
        SELECT key, CASE type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'text' THEN value ELSE CAST(value AS TEXT) END AS text
          FROM json_each(CASE WHEN json_valid(conversations.metadata) AND json_type(conversations.metadata) = 'object' THEN conversations.metadata ELSE '{}' END)
         WHERE type <> 'null' AND length(key) BETWEEN 1 AND 40)
       WHERE length(text) <= 500 ORDER BY key LIMIT 50))
  WHERE NOT json_valid(metadata) OR json_type(metadata) <> 'object'
     OR (SELECT count(*) FROM json_each(metadata)) > 50
     OR EXISTS (SELECT 1 FROM json_each(metadata) WHERE type <> 'text' OR length(key) NOT BETWEEN 1 AND 40 OR length(value) > 500);
  `,
  // 14: membership by invitation (API.md "Auth endpoints"). An invitation names an e-mail (an account may
  // come later) and a role; at most one is pending per organization and e-mail. Looked up by the
  // invitee's e-mail; members looked up by e-mail when inviting (the `members` view joins users).
  `
  CREATE TABLE invitations (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES organizations(id), email TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'operator')),
    status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'replaced')),
    invited_by TEXT, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, responded_at TEXT);
  CREATE UNIQUE INDEX invitations_pending ON invitations(org_id, email) WHERE status = 'pending';
  CREATE INDEX invitations_email ON invitations(email, created_at) WHERE status = 'pending';
  `,
  // 15: per-turn timing on agent messages (API.md "Chat", Timing: JSON, NULL on every other message and
  // on every message stored before), and agents by exact name within an organization (the `model` of the
  // OpenAI-compatible endpoints may be an agent's name).
  `
  ALTER TABLE messages ADD COLUMN timing TEXT;
  CREATE INDEX agents_org_name ON agents(org_id, name);
  `,
  // 16: fair, bounded ingestion (docs/knowledge-bases.md "Fair ingestion"): the stable code of a failed
  // document's error (`document_too_large`, ...), and the index that counts an organization's documents
  // still processing when an upload is stored (PARLEY_INGEST_MAX_PROCESSING_PER_ORG).
  `
  ALTER TABLE documents ADD COLUMN error_code TEXT;
  CREATE INDEX documents_org_processing ON documents(org_id) WHERE status = 'processing';
  `,
  // 17: ingestion jobs of several processes (DESIGN.md "Several processes"): the process that ingests a
  // document still processing (NULL for documents stored before). A process takes over only the documents
  // of a process that is gone (not registered any more), never a living neighbour's.
  `
  ALTER TABLE documents ADD COLUMN ingest_owner TEXT;
  CREATE INDEX documents_ingest_owner ON documents(ingest_owner) WHERE status = 'processing';
  `,
  // 18: erasure and retention (API.md "Conversations and handoff": DELETE, PATCH /v1/organization). An
  // organization's own retention_days (NULL: the server's default); a webhook event's conversation (from its
  // data, so an erasure finds its events without reading them all), filled in for the events stored before;
  // deliveries by event (their response bodies are scrubbed with the event); conversations by last activity
  // per organization (the retention sweep).
  `
  ALTER TABLE organizations ADD COLUMN retention_days INTEGER CHECK (retention_days IS NULL OR retention_days >= 1);
  ALTER TABLE webhook_events ADD COLUMN conversation_id TEXT;
  UPDATE webhook_events SET conversation_id = json_extract(data, '$.conversation_id') WHERE json_type(data, '$.conversation_id') = 'text';
  CREATE INDEX webhook_events_conversation ON webhook_events(conversation_id) WHERE conversation_id IS NOT NULL;
  CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
  CREATE INDEX conversations_org_updated ON conversations(org_id, updated_at);
  `,
];

/** `synchronous` levels: FULL syncs the WAL on every commit (survives power loss); NORMAL survives process crashes only. */
export type SqliteSync = 'FULL' | 'NORMAL';

/**
 * Opens (creating if needed: its directory 0700, the file 0600, and so its `-wal` and `-shm` files too,
 * src/store/sqlite/data-dir.ts) the SQLite database at `file` in WAL mode, applies pending migrations and
 * turns foreign keys on. `secure_delete` is on (https://www.sqlite.org/pragma.html#pragma_secure_delete),
 * as on every connection that writes (writer.worker.ts): what a delete frees is overwritten with zeros, so an
 * erased conversation's text does not linger in the file's free pages (docs/operations.md "Erasure and
 * retention"). Each migration runs in its own transaction with foreign keys off (they cannot
 * be switched inside a transaction, and rebuilding a table needs them off: SQLite's ALTER TABLE
 * procedure), and commits only if `PRAGMA foreign_key_check` finds no row naming a missing parent.
 * Throws what better-sqlite3 throws when the file cannot be opened or a migration fails (the database is
 * then closed and left at the last migration that committed), and an Error naming the offending tables
 * when a migration would leave such rows.
 */
export function openDatabase(file: string, sync: SqliteSync = 'FULL'): Database.Database {
  ensureDataDir(dirname(file));
  ensurePrivateFile(file);
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${sync}`);
    db.pragma('busy_timeout = 5000');
    db.pragma('secure_delete = ON');
    migrate(db);
    db.pragma('foreign_keys = ON');
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

function migrate(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version >= MIGRATIONS.length) return;
  db.pragma('foreign_keys = OFF');
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      const broken = db.pragma('foreign_key_check') as Array<{ table: string; parent: string }>;
      if (broken.length > 0) {
        const counts = new Map<string, number>();
        for (const b of broken) counts.set(`${b.table} -> ${b.parent}`, (counts.get(`${b.table} -> ${b.parent}`) ?? 0) + 1);
        const list = [...counts].map(([k, n]) => `${k}: ${n} rows`).join(', ');
        throw new Error(`Schema migration ${v + 1} stopped: rows name a missing parent (${list}). Nothing was changed; ` +
          'repair or remove those rows (PRAGMA foreign_key_check lists them), then start again.');
      }
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
