/**
 * The store's records: what the ports (src/store/ports.ts) take and return. Field names follow API.md
 * where the API shows the record; internal fields (`org_id`, hashes) are never shown by the API.
 */
import type { DocumentContentType, DocumentStatus } from '../vocabulary/document.js';
import type { ConversationStatus } from '../vocabulary/conversation.js';
import type { MessageRole, MessageStatus } from '../vocabulary/message.js';
import type { ModelChoice, SafetySettings } from '../vocabulary/agent.js';
import type { Citation, FinishReason, ToolRun, TurnError, Usage } from '../vocabulary/turn.js';

export type { ConversationStatus, DocumentStatus, MessageRole, MessageStatus, Citation, ToolRun, Usage, ModelChoice, SafetySettings };

/** A page request: `limit` 1..100, `after` an id cursor (exclusive). */
export interface PageRequest {
  limit: number;
  after?: string | undefined;
}

/** A page of records in API.md list form. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
}

export interface OrganizationRecord {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  org_id: string;
  name: string;
  /** SHA-256 hex of the key (src/auth/api-keys.ts). */
  key_hash: string;
  /** Last 4 characters of the key, for display. */
  last4: string;
  created_at: string;
  revoked_at: string | null;
}

export interface AgentRecord {
  id: string;
  org_id: string;
  name: string;
  description: string;
  instructions: string;
  model: ModelChoice;
  knowledge_base_ids: string[];
  /** Tool names the agent may call, e.g. `search_knowledge`. */
  tools: string[];
  safety: SafetySettings;
  published: boolean;
  public_key: string | null;
  created_at: string;
  updated_at: string;
}

export type AgentPatch = Partial<Pick<AgentRecord, 'name' | 'description' | 'instructions' | 'model' | 'knowledge_base_ids' | 'tools' | 'safety'>>;

export interface KnowledgeBaseRecord {
  id: string;
  org_id: string;
  name: string;
  created_at: string;
}

export interface DocumentRecord {
  id: string;
  org_id: string;
  knowledge_base_id: string;
  title: string;
  content_type: DocumentContentType;
  status: DocumentStatus;
  error: string | null;
  chunk_count: number;
  /** Size of the upload, bytes. */
  bytes: number;
  created_at: string;
  updated_at: string;
}

export interface ConversationRecord {
  id: string;
  org_id: string;
  agent_id: string;
  status: ConversationStatus;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface MessageRecord {
  id: string;
  conversation_id: string;
  org_id: string;
  /** The turn the message belongs to: a visitor message and the agent reply share it. */
  turn_id: string | null;
  role: MessageRole;
  content: string;
  citations: Citation[];
  tool_runs: ToolRun[];
  usage: Usage | null;
  status: MessageStatus;
  /** The `done` finish reason of the turn this message ended; null for visitor and operator messages and failed replies. */
  finish_reason: FinishReason | null;
  error: TurnError | null;
  created_at: string;
}


/** A chunk to store for a document: `ord` is 0-based document order; `heading` its section path ('' at top). */
export interface NewChunk {
  ord: number;
  heading: string;
  text: string;
}

/** A search hit: one chunk with its document's title; `score` is higher-is-better (bm25, sign flipped). */
export interface ChunkHit {
  document_id: string;
  chunk_id: string;
  title: string;
  heading: string;
  text: string;
  score: number;
}

/**
 * A document still `processing` with the upload it was created from (KnowledgePort.pendingDocuments):
 * `content` comes back as the type it was stored as (string or bytes); null when none was stored
 * (documents created before the store kept uploads).
 */
export interface PendingDocument {
  document: DocumentRecord;
  content: Uint8Array | string | null;
}

/** A turn found cut short (ConversationsPort.failInterruptedTurns) and the failed agent message stored for it. */
export interface InterruptedTurn {
  org_id: string;
  conversation_id: string;
  turn_id: string;
  /** The id of the `failed` agent message appended for the turn. */
  message_id: string;
}

/** Filter of a conversation list. */
export interface ConversationListFilter {
  agent_id?: string | undefined;
  status?: ConversationStatus | undefined;
}
