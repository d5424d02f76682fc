/**
 * The MongoDB store's collections: their document shapes and their indexes.
 *
 * One collection per SQLite table, with the same names, and documents whose fields are the table's
 * columns (src/store/sqlite/database.ts), so that `parley store copy` maps one to the other field by field
 * (src/store/copy/row-mapping.ts). The differences: the primary key is `_id`; JSON text columns are
 * native BSON (objects, arrays); 0/1 flags are booleans; a vector is float32 BinData; and a few fields
 * exist for MongoDB alone, named where they are declared below (`dl`, `ready`, `active`, `expire_at`, ...).
 * Times stay RFC 3339 strings (they compare as text, like SQLite's); TTL indexes need a BSON date, so a
 * collection whose records expire carries one more field, `expire_at`.
 */
import type { Binary, Collection, CreateIndexesOptions, Db, IndexSpecification } from 'mongodb';
import type {
  AgentTool, Citation, EndpointDisabledReason, FeedChange, JwkRecord, MessageRole, MessageStatus, ModelChoice, Role, SafetySettings, ToolRun, Usage,
} from '../records.js';
import type { DocumentContentType, DocumentErrorCode, DocumentStatus } from '../../vocabulary/document.js';
import type { ConversationStatus } from '../../vocabulary/conversation.js';
import type { FinishReason, TurnError, TurnTiming } from '../../vocabulary/turn.js';
import type { DeliveryStatus } from '../../vocabulary/webhook.js';

/** An organization; `retention_days` absent or null: the server's default (PARLEY_RETENTION_DAYS). */
export interface OrganizationDoc { _id: string; name: string; created_at: string; retention_days?: number | null }

export interface ApiKeyDoc {
  _id: string; org_id: string; name: string; key_hash: string; last4: string; created_at: string;
  revoked_at: string | null; expires_at: string | null;
}

export interface UserDoc {
  _id: string; email: string; password_hash: string | null; access_valid_after: string | null; created_at: string; updated_at: string;
}

/** A membership; `_id` is `<org_id>/<user_id>` (one per person and organization). */
export interface MembershipDoc { _id: string; org_id: string; user_id: string; role: Role; created_at: string }

/** An invitation (InvitationsPort): at most one `pending` per organization and e-mail (a unique partial index). */
export interface InvitationDoc {
  _id: string; org_id: string; email: string; role: Role; status: 'pending' | 'accepted' | 'declined' | 'replaced';
  invited_by: string | null; created_at: string; expires_at: string; responded_at: string | null;
}

export interface RefreshFamilyDoc {
  _id: string; user_id: string; created_at: string; absolute_expires_at: string; revoked_at: string | null; revoked_reason: string | null;
  /** MongoDB only: the absolute expiry as a BSON date, for the TTL index. */
  expire_at: Date;
}

export interface RefreshTokenDoc {
  /** The token's SHA-256 hex. */
  _id: string; family_id: string; created_at: string; expires_at: string; used_at: string | null;
  /** MongoDB only: the family's absolute expiry as a BSON date (TTL). */
  expire_at: Date;
}

export interface SigningKeyDoc {
  /** The kid. */
  _id: string; algorithm: string; public_jwk: JwkRecord; private_jwk: JwkRecord; created_at: string; retired_at: string | null;
  /** MongoDB only: `true` on the active key and absent on retired ones; a unique partial index keeps one. */
  active?: true;
}

export interface SocketTicketDoc {
  /** The ticket's SHA-256 hex. */
  _id: string; user_id: string; org_id: string; session_id: string | null; created_at: string; expires_at: string; used_at: string | null;
  /** MongoDB only: `expires_at` as a BSON date (TTL). */
  expire_at: Date;
}

export interface AgentDoc {
  _id: string; org_id: string; name: string; description: string; instructions: string;
  model_provider: ModelChoice['provider']; model_name: string; knowledge_base_ids: string[]; tools: AgentTool[]; safety: SafetySettings;
  published: boolean; public_key: string | null; allowed_origins: string[]; created_at: string; updated_at: string;
}

export interface KnowledgeBaseDoc { _id: string; org_id: string; name: string; created_at: string }

export interface DocumentDoc {
  _id: string; org_id: string; kb_id: string; title: string; content_type: DocumentContentType; status: DocumentStatus;
  error: string | null; chunk_count: number; bytes: number; created_at: string; updated_at: string;
  /** Absent on documents stored before codes (read as null). */
  error_code?: DocumentErrorCode | null;
  /** The process that ingests the document while it is `processing` (KnowledgePort.claimPending); null or absent: none. */
  ingest_owner?: string | null;
}

/** The raw upload of a document (`_id` the document id): a string (`is_text`) or bytes. */
export interface DocumentSourceDoc { _id: string; content: string | Binary; is_text: boolean }

export interface ChunkDoc {
  _id: string; doc_id: string; kb_id: string; org_id: string; ord: number; title: string; heading: string; body: string;
  page: number | null; embedding_model: string | null;
  /**
   * The vector as BSON's float32 vector BinData (subtype 9, `Binary.fromFloat32Array`: the form Atlas
   * Vector Search indexes), or null.
   */
  embedding: Binary | null;
  /**
   * MongoDB only: whether the chunk's document is `ready` (kept by the writes that change its status), so a
   * search needs no join to leave out chunks of documents being stored or failed.
   */
  ready: boolean;
  /** MongoDB only: the chunk's length in index tokens (title, heading and body), BM25's document length. */
  dl: number;
}

export interface ConversationDoc {
  _id: string; org_id: string; agent_id: string; status: ConversationStatus; metadata: Record<string, unknown>;
  visitor_token_hash: string | null; created_at: string; updated_at: string;
  /** The public key a public conversation was started through (ConversationRecord.public_key); absent or null otherwise. */
  public_key?: string | null;
  /** MongoDB only: the `seq` of the conversation's newest message (0 before the first). */
  message_seq: number;
}

export interface MessageDoc {
  _id: string; conversation_id: string; org_id: string; turn_id: string | null; role: MessageRole; content: string;
  citations: Citation[]; tool_runs: ToolRun[]; usage: Usage | null; status: MessageStatus; finish_reason: FinishReason | null;
  error: TurnError | null; created_at: string;
  /** Where the turn's time went (MessageRecord.timing); absent or null on every message but a turn's agent message. */
  timing?: TurnTiming | null;
  /** The message's place in its conversation, 1, 2, ... (unique with `conversation_id`). */
  seq: number;
}

export interface ToolRunDoc {
  _id: string; org_id: string; agent_id: string; conversation_id: string; turn_id: string; tool_call_id: string; name: string;
  kind: 'builtin' | 'http' | 'unknown'; status: 'succeeded' | 'failed'; http_status: number | null; error: string | null;
  duration_ms: number; response_bytes: number; created_at: string;
}

export interface WebhookEndpointDoc {
  _id: string; org_id: string; url: string; description: string | null; events: string[]; enabled: boolean;
  disabled_reason: EndpointDisabledReason | null; secret: string; previous_secret: string | null; previous_secret_expires_at: string | null;
  failing_since: string | null; created_at: string; updated_at: string;
}

/** A webhook event; `conversation_id` is its data's (null when it has none), so an erasure finds a conversation's events. */
export interface WebhookEventDoc { _id: string; org_id: string; type: string; data: Record<string, unknown>; created_at: string; conversation_id?: string | null }

export interface WebhookDeliveryDoc {
  _id: string; event_id: string; endpoint_id: string; org_id: string; event_type: string; status: DeliveryStatus;
  attempt_count: number; next_attempt_at: string | null; lease_owner: string | null; lease_expires_at: string | null;
  attempt_started_at: string | null; last_status: number | null; last_body: string | null; last_duration_ms: number | null;
  last_error: string | null; created_at: string; updated_at: string;
}

/** One attempt of a delivery; `_id` is `<delivery_id>/<number>`. */
export interface WebhookAttemptDoc {
  _id: string; delivery_id: string; number: number; status: number; body: string; error: string | null; duration_ms: number; at: string;
}

/** Token totals of one agent on one day; `_id` is `<org_id>/<day>/<agent_id>`. */
export interface UsageDailyDoc { _id: string; org_id: string; day: string; agent_id: string; input_tokens: number; output_tokens: number; turns: number }

/** A usage threshold; `_id` is `<org_id>/<metric>/<value>/<period>`. */
export interface UsageThresholdDoc { _id: string; org_id: string; metric: string; value: number; period: string; created_at: string }

/** The mark of a threshold fired in a period; `_id` is the threshold's id and `/<period_start>`. */
export interface UsageThresholdMarkDoc {
  _id: string; org_id: string; metric: string; value: number; period: string; period_start: string; event_id: string; fired_at: string;
}

/** A feed entry (FeedPort): the change, when it was written, and the commit that wrote it. */
export interface FeedDoc {
  _id?: unknown;
  change: FeedChange;
  created_at: string;
  /** A random id per transaction: entries of one commit share it (FeedPort.onAppend fires once per commit). */
  commit: string;
  /** When the entry was written (server-independent wall clock of the writer), for the TTL index. */
  written_at: Date;
}

export interface ProcessDoc {
  _id: string; url: string; started_at: string; heartbeat_at: string; draining_at: string | null;
  /** MongoDB only: the process's change-stream position at its last heartbeat (docs/operations.md "Change-stream lag"). */
  feed_seen_at?: string | null;
}

/**
 * A conversation's lease (`_id` the conversation id). MongoDB only: `writes` counts the fenced writes
 * (each one updates the lease: see leases.ts checkFence) and `renewal` marks the last renewal.
 */
export interface LeaseDoc { _id: string; owner_id: string; owner_url: string; fence: number; expires_at: string; released: boolean; writes?: number; renewal?: string }

/** A document written inside transactions only to make them conflict (see transactions.ts `lock`). */
export interface LockDoc { _id: string; n: number }

/** The cluster secret (`_id` `cluster`). */
export interface SettingDoc { _id: string; secret: string; created_at: string }

/** Every collection of the store, typed. */
export interface Collections {
  organizations: Collection<OrganizationDoc>;
  api_keys: Collection<ApiKeyDoc>;
  users: Collection<UserDoc>;
  memberships: Collection<MembershipDoc>;
  invitations: Collection<InvitationDoc>;
  refresh_families: Collection<RefreshFamilyDoc>;
  refresh_tokens: Collection<RefreshTokenDoc>;
  signing_keys: Collection<SigningKeyDoc>;
  socket_tickets: Collection<SocketTicketDoc>;
  agents: Collection<AgentDoc>;
  knowledge_bases: Collection<KnowledgeBaseDoc>;
  documents: Collection<DocumentDoc>;
  document_sources: Collection<DocumentSourceDoc>;
  chunks: Collection<ChunkDoc>;
  conversations: Collection<ConversationDoc>;
  messages: Collection<MessageDoc>;
  tool_runs: Collection<ToolRunDoc>;
  webhook_endpoints: Collection<WebhookEndpointDoc>;
  webhook_events: Collection<WebhookEventDoc>;
  webhook_deliveries: Collection<WebhookDeliveryDoc>;
  webhook_attempts: Collection<WebhookAttemptDoc>;
  usage_daily: Collection<UsageDailyDoc>;
  usage_thresholds: Collection<UsageThresholdDoc>;
  usage_threshold_marks: Collection<UsageThresholdMarkDoc>;
  feed: Collection<FeedDoc>;
  processes: Collection<ProcessDoc>;
  conversation_leases: Collection<LeaseDoc>;
  locks: Collection<LockDoc>;
  settings: Collection<SettingDoc>;
}

/** The collection names, in the order `store copy` writes them (parents before children). */
export const COLLECTION_NAMES = [
  'organizations', 'api_keys', 'users', 'memberships', 'invitations', 'refresh_families', 'refresh_tokens', 'signing_keys', 'socket_tickets',
  'agents', 'knowledge_bases', 'documents', 'document_sources', 'chunks', 'conversations', 'messages', 'tool_runs',
  'webhook_endpoints', 'webhook_events', 'webhook_deliveries', 'webhook_attempts', 'usage_daily', 'usage_thresholds',
  'usage_threshold_marks', 'feed', 'processes', 'conversation_leases', 'locks', 'settings',
] as const satisfies ReadonlyArray<keyof Collections>;

/** The typed collections of `db`. */
export function collections(db: Db): Collections {
  return Object.fromEntries(COLLECTION_NAMES.map((n) => [n, db.collection(n)])) as unknown as Collections;
}

/** One index: the collection, its key, its options (a `name` always: createIndexes is then idempotent). */
export interface IndexDefinition {
  collection: keyof Collections;
  key: IndexSpecification;
  options: CreateIndexesOptions & { name: string };
}

/** Seconds a record whose time is up stays before the TTL monitor deletes it (the ports' prune methods run before). */
export const TTL_GRACE_SECONDS = 86_400;

/**
 * The store's indexes. `ttl` false leaves out the TTL indexes (the contract tests write records that
 * expired in 2025 on purpose; a TTL pass must not delete them under the test).
 *
 * The text index on chunks has `kb_id` as an equality prefix: a `$text` query names one knowledge base,
 * and reads only that base's part of the index (src/store/mongodb/knowledge-search.ts). Its weights are the
 * column weights of the SQLite bm25 ranking (title 4, heading 2, body 1), its language English (Snowball
 * stemming, like the Porter stemmer of SQLite's FTS5 index, and stopwords).
 */
export function indexDefinitions(opts: { ttl: boolean }): IndexDefinition[] {
  const defs: IndexDefinition[] = [
    { collection: 'api_keys', key: { key_hash: 1 }, options: { name: 'key_hash', unique: true } },
    { collection: 'api_keys', key: { org_id: 1, _id: -1 }, options: { name: 'org_newest' } },
    { collection: 'users', key: { email: 1 }, options: { name: 'email', unique: true } },
    { collection: 'memberships', key: { org_id: 1, user_id: -1 }, options: { name: 'org_user', unique: true } },
    { collection: 'memberships', key: { user_id: 1 }, options: { name: 'user' } },
    { collection: 'invitations', key: { org_id: 1, email: 1 }, options: { name: 'one_pending', unique: true, partialFilterExpression: { status: 'pending' } } },
    { collection: 'invitations', key: { email: 1, created_at: -1 }, options: { name: 'email_newest', partialFilterExpression: { status: 'pending' } } },
    { collection: 'refresh_families', key: { user_id: 1 }, options: { name: 'user' } },
    { collection: 'refresh_families', key: { absolute_expires_at: 1 }, options: { name: 'absolute_expiry' } },
    { collection: 'refresh_tokens', key: { family_id: 1 }, options: { name: 'family' } },
    { collection: 'signing_keys', key: { active: 1 }, options: { name: 'one_active', unique: true, partialFilterExpression: { active: true } } },
    { collection: 'socket_tickets', key: { expires_at: 1 }, options: { name: 'expiry' } },
    { collection: 'agents', key: { org_id: 1, _id: -1 }, options: { name: 'org_newest' } },
    { collection: 'agents', key: { org_id: 1, name: 1, created_at: 1 }, options: { name: 'org_name' } },
    { collection: 'agents', key: { public_key: 1 }, options: { name: 'public_key', unique: true, partialFilterExpression: { public_key: { $type: 'string' } } } },
    { collection: 'knowledge_bases', key: { org_id: 1, _id: -1 }, options: { name: 'org_newest' } },
    { collection: 'knowledge_bases', key: { name: 1 }, options: { name: 'name' } },
    { collection: 'documents', key: { org_id: 1, kb_id: 1, _id: -1 }, options: { name: 'kb_newest' } },
    { collection: 'documents', key: { status: 1, created_at: 1, _id: 1 }, options: { name: 'status_age' } },
    { collection: 'chunks', key: { doc_id: 1 }, options: { name: 'doc' } },
    { collection: 'chunks', key: { kb_id: 1, ready: 1, dl: 1 }, options: { name: 'kb_lengths' } },
    { collection: 'chunks', key: { org_id: 1, kb_id: 1, embedding_model: 1, ready: 1, _id: 1 }, options: { name: 'vectors' } },
    {
      collection: 'chunks', key: { kb_id: 1, title: 'text', heading: 'text', body: 'text' },
      options: { name: 'kb_text', weights: { title: 4, heading: 2, body: 1 }, default_language: 'english', language_override: 'text_language' },
    },
    { collection: 'conversations', key: { org_id: 1, _id: -1 }, options: { name: 'org_newest' } },
    { collection: 'conversations', key: { org_id: 1, status: 1, _id: -1 }, options: { name: 'org_status_newest' } },
    { collection: 'conversations', key: { org_id: 1, agent_id: 1, _id: -1 }, options: { name: 'org_agent_newest' } },
    { collection: 'conversations', key: { visitor_token_hash: 1 }, options: { name: 'visitor_token', partialFilterExpression: { visitor_token_hash: { $type: 'string' } } } },
    { collection: 'conversations', key: { org_id: 1, updated_at: 1, _id: 1 }, options: { name: 'org_updated' } },
    { collection: 'messages', key: { conversation_id: 1, seq: 1 }, options: { name: 'conversation_seq', unique: true } },
    { collection: 'messages', key: { turn_id: 1, role: 1 }, options: { name: 'turn', partialFilterExpression: { turn_id: { $type: 'string' } } } },
    { collection: 'tool_runs', key: { org_id: 1, conversation_id: 1, created_at: 1, _id: 1 }, options: { name: 'conversation' } },
    { collection: 'webhook_endpoints', key: { org_id: 1, _id: -1 }, options: { name: 'org_newest' } },
    { collection: 'webhook_endpoints', key: { enabled: 1, org_id: 1 }, options: { name: 'enabled' } },
    { collection: 'webhook_deliveries', key: { org_id: 1, endpoint_id: 1, _id: -1 }, options: { name: 'endpoint_newest' } },
    { collection: 'webhook_deliveries', key: { endpoint_id: 1, status: 1, lease_owner: 1, next_attempt_at: 1, _id: 1 }, options: { name: 'due' } },
    { collection: 'webhook_deliveries', key: { lease_owner: 1, lease_expires_at: 1 }, options: { name: 'leased', partialFilterExpression: { lease_owner: { $type: 'string' } } } },
    { collection: 'webhook_events', key: { conversation_id: 1, org_id: 1 }, options: { name: 'conversation', partialFilterExpression: { conversation_id: { $type: 'string' } } } },
    { collection: 'webhook_deliveries', key: { event_id: 1 }, options: { name: 'event' } },
    { collection: 'webhook_attempts', key: { delivery_id: 1, number: 1 }, options: { name: 'delivery_number', unique: true } },
    { collection: 'usage_daily', key: { org_id: 1, day: 1, agent_id: 1 }, options: { name: 'org_day_agent', unique: true } },
    { collection: 'usage_thresholds', key: { org_id: 1 }, options: { name: 'org' } },
    { collection: 'feed', key: { created_at: 1 }, options: { name: 'created' } },
    { collection: 'conversation_leases', key: { owner_id: 1 }, options: { name: 'owner', partialFilterExpression: { released: false } } },
    { collection: 'conversation_leases', key: { expires_at: 1 }, options: { name: 'abandoned', partialFilterExpression: { released: false } } },
  ];
  if (opts.ttl) {
    defs.push(
      { collection: 'socket_tickets', key: { expire_at: 1 }, options: { name: 'ttl', expireAfterSeconds: TTL_GRACE_SECONDS } },
      { collection: 'refresh_families', key: { expire_at: 1 }, options: { name: 'ttl', expireAfterSeconds: TTL_GRACE_SECONDS } },
      { collection: 'refresh_tokens', key: { expire_at: 1 }, options: { name: 'ttl', expireAfterSeconds: TTL_GRACE_SECONDS } },
      { collection: 'feed', key: { written_at: 1 }, options: { name: 'ttl', expireAfterSeconds: TTL_GRACE_SECONDS } },
    );
  }
  return defs;
}

/**
 * Creates the collections that do not exist yet (48 NamespaceExists from a process starting at the same
 * time is fine) and every collection's indexes (createIndexes of an index that exists with the same name and
 * options does nothing, so every start runs this). One createIndexes command per collection, one after
 * the other. Throws what the driver throws (an index of the same name with other options: IndexOptionsConflict).
 */
export async function ensureIndexes(db: Db, opts: { ttl: boolean }): Promise<void> {
  // Every collection exists before the first transaction writes to it (a transaction creating a collection
  // implicitly is refused by servers before 4.4 and on sharded clusters).
  const existing = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const name of COLLECTION_NAMES) {
    if (!existing.has(name)) await db.createCollection(name).catch((err: unknown) => { if ((err as { code?: unknown }).code !== 48) throw err; });
  }
  const byCollection = new Map<string, IndexDefinition[]>();
  for (const d of indexDefinitions(opts)) byCollection.set(d.collection, [...(byCollection.get(d.collection) ?? []), d]);
  for (const [name, defs] of byCollection) {
    await db.collection(name).createIndexes(defs.map((d) => ({ key: d.key as Record<string, 1 | -1 | 'text'>, ...d.options })));
  }
}
