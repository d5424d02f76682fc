/**
 * What `parley store copy` copies: the tables of the SQLite store (src/store/sqlite/database.ts), which
 * are also the collections of the MongoDB store (src/store/mongodb/schema.ts), in an order where a row
 * comes after the rows it refers to. A row travels as the SQLite row (column name -> TEXT as a string,
 * INTEGER as a number, BLOB as bytes, NULL); row-mapping.ts turns it into a MongoDB document and back.
 *
 * Not copied, on purpose: what belongs to the processes serving a store, not to its data. The feed
 * (`feed`: recent changes for the processes that follow it), the processes and their secret
 * (`processes`, `cluster_secret` / `settings`) and the conversation leases (`conversation_leases`): a copy
 * that carried them would make a server started on it take the source's processes for neighbours, and
 * forward its conversations to them. A server on the copy starts with none, as after a clean stop, and
 * stores the turns the snapshot caught mid-way as interrupted. The full-text index (`chunks_fts`) is
 * rebuilt from the chunks.
 */

/** One copied table (and collection). */
export interface CopiedTable {
  /** The SQLite table and the MongoDB collection. */
  name: string;
  /**
   * The primary key's columns. One column becomes the document's `_id` (and is not a field of its own);
   * several are kept as fields and joined with `/` into the `_id`.
   */
  key: readonly string[];
  /** Columns holding JSON text in SQLite and native values in MongoDB. */
  json?: readonly string[];
  /** Columns holding 0/1 in SQLite and booleans in MongoDB. */
  bool?: readonly string[];
}

export const COPIED_TABLES: readonly CopiedTable[] = [
  { name: 'organizations', key: ['id'] },
  { name: 'users', key: ['id'] },
  { name: 'api_keys', key: ['id'] },
  { name: 'memberships', key: ['org_id', 'user_id'] },
  { name: 'invitations', key: ['id'] },
  { name: 'refresh_families', key: ['id'] },
  { name: 'refresh_tokens', key: ['token_hash'] },
  { name: 'signing_keys', key: ['kid'], json: ['public_jwk', 'private_jwk'] },
  { name: 'socket_tickets', key: ['ticket_hash'] },
  { name: 'agents', key: ['id'], json: ['knowledge_base_ids', 'tools', 'safety', 'allowed_origins'], bool: ['published'] },
  { name: 'knowledge_bases', key: ['id'] },
  { name: 'documents', key: ['id'] },
  { name: 'document_sources', key: ['doc_id'], bool: ['is_text'] },
  { name: 'chunks', key: ['id'] },
  { name: 'conversations', key: ['id'], json: ['metadata'] },
  { name: 'messages', key: ['id'], json: ['citations', 'tool_runs', 'usage', 'error', 'timing'] },
  { name: 'tool_runs', key: ['id'] },
  { name: 'webhook_endpoints', key: ['id'], json: ['events'], bool: ['enabled'] },
  { name: 'webhook_events', key: ['id'], json: ['data'] },
  { name: 'webhook_deliveries', key: ['id'] },
  { name: 'webhook_attempts', key: ['delivery_id', 'number'] },
  { name: 'usage_daily', key: ['org_id', 'day', 'agent_id'] },
  { name: 'usage_thresholds', key: ['org_id', 'metric', 'value', 'period'] },
  { name: 'usage_threshold_marks', key: ['org_id', 'metric', 'value', 'period', 'period_start'] },
];

/** A row as it travels: column name -> value. */
export type CopyRow = Record<string, string | number | Uint8Array | null | undefined>;
