/**
 * Store ports (DESIGN.md "Store"): domain-shaped, async so that the SQLite and MongoDB adapters share
 * them. Every method is scoped by organization where the resource belongs to one; a record of another
 * organization is reported as absent (`undefined`), never as forbidden (API.md "Errors": 404).
 * Times are RFC 3339 UTC strings.
 */
import type { Passage } from '../models/port.js';
import type { SafetySettings } from '../moderation/safety-check.js';
import type { ChunkDraft, DocumentContentType } from '../knowledge/types.js';

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

/** Model choice of an agent: a provider configured on the server and that provider's model name. */
export interface ModelChoice {
  provider: string;
  name: string;
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

export type DocumentStatus = 'processing' | 'ready' | 'failed';

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

/** Conversation status values of API.md "Conversations and handoff". */
export type ConversationStatus = 'active' | 'pending_handoff' | 'handed_off' | 'closed';

export interface ConversationRecord {
  id: string;
  org_id: string;
  agent_id: string;
  status: ConversationStatus;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export type MessageRole = 'visitor' | 'agent' | 'operator';
export type MessageStatus = 'completed' | 'failed';

/** Citation as sent to clients (API.md "Chat"). */
export interface Citation {
  document_id: string;
  chunk_id: string;
  title: string;
  snippet: string;
  score: number;
}

/** One tool run of a turn: the call and what it returned. */
export interface ToolRun {
  id: string;
  name: string;
  arguments: unknown;
  output: unknown;
  is_error: boolean;
}

/** Token counts of a turn, tokens. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
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
  finish_reason: string | null;
  error: { type: string; code: string; message: string } | null;
  created_at: string;
}

export interface OrganizationsPort {
  create(rec: OrganizationRecord): Promise<void>;
  get(id: string): Promise<OrganizationRecord | undefined>;
  count(): Promise<number>;
}

export interface ApiKeysPort {
  create(rec: ApiKeyRecord): Promise<void>;
  /** The key whose hash is `keyHash`, revoked or not. */
  findByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  revoke(orgId: string, id: string, at: string): Promise<boolean>;
}

export interface AgentsPort {
  create(rec: AgentRecord): Promise<void>;
  get(orgId: string, id: string): Promise<AgentRecord | undefined>;
  list(orgId: string, page: PageRequest): Promise<Page<AgentRecord>>;
  update(orgId: string, id: string, patch: AgentPatch, at: string): Promise<AgentRecord | undefined>;
  delete(orgId: string, id: string): Promise<boolean>;
}

export interface KnowledgePort {
  createBase(rec: KnowledgeBaseRecord): Promise<void>;
  getBase(orgId: string, id: string): Promise<KnowledgeBaseRecord | undefined>;
  listBases(orgId: string, page: PageRequest): Promise<Page<KnowledgeBaseRecord>>;
  createDocument(rec: DocumentRecord): Promise<void>;
  getDocument(orgId: string, kbId: string, id: string): Promise<DocumentRecord | undefined>;
  listDocuments(orgId: string, kbId: string, page: PageRequest): Promise<Page<DocumentRecord>>;
  /** Stores the chunks and marks the document ready, atomically. False if the document is gone. */
  completeDocument(id: string, chunks: ChunkDraft[], at: string): Promise<boolean>;
  failDocument(id: string, error: string, at: string): Promise<void>;
  /** Deletes the document and its chunks. */
  deleteDocument(orgId: string, kbId: string, id: string): Promise<boolean>;
  /**
   * Full-text search (bm25) over the chunks of the given knowledge bases of `orgId`, best first, at most
   * `k`. Returns [] for a query with no searchable words.
   */
  search(orgId: string, kbIds: string[], query: string, k: number): Promise<Passage[]>;
}

export interface ConversationListFilter {
  agent_id?: string | undefined;
  status?: ConversationStatus | undefined;
}

export interface ConversationsPort {
  create(rec: ConversationRecord): Promise<void>;
  get(orgId: string, id: string): Promise<ConversationRecord | undefined>;
  list(orgId: string, filter: ConversationListFilter, page: PageRequest): Promise<Page<ConversationRecord>>;
  setStatus(id: string, status: ConversationStatus, at: string): Promise<void>;
  /** Appends a message (durable when the promise resolves) and touches the conversation. */
  appendMessage(rec: MessageRecord): Promise<void>;
  /** Messages of a conversation in the order they were stored. */
  listMessages(orgId: string, conversationId: string, page: PageRequest): Promise<Page<MessageRecord>>;
  /**
   * The last `limit` completed messages for model context, in turn order (a turn's visitor message
   * before its reply), so queued turns read as question/answer pairs.
   */
  history(conversationId: string, limit: number): Promise<MessageRecord[]>;
}

/** The whole store. */
export interface Store {
  readonly kind: 'sqlite' | 'mongodb';
  organizations: OrganizationsPort;
  apiKeys: ApiKeysPort;
  agents: AgentsPort;
  knowledge: KnowledgePort;
  conversations: ConversationsPort;
  /** Resolves when the store answers (readiness probe); rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
