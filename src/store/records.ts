/**
 * The store's records: what the ports (src/store/ports.ts) take and return. Field names follow API.md
 * where the API shows the record; internal fields (`org_id`, hashes) are never shown by the API.
 */
import type { DocumentContentType, DocumentErrorCode, DocumentStatus } from '../vocabulary/document.js';
import type { ConversationStatus } from '../vocabulary/conversation.js';
import type { MessageRole, MessageStatus } from '../vocabulary/message.js';
import type { AgentTool, ModelChoice, SafetySettings } from '../vocabulary/agent.js';
import type { Role } from '../vocabulary/role.js';
import type { Citation, FinishReason, ToolRun, TurnError, Usage } from '../vocabulary/turn.js';
import type { DeliveryStatus, EndpointDisabledReason, UsageMetric, UsagePeriod } from '../vocabulary/webhook.js';

export type { ConversationStatus, DocumentStatus, MessageRole, MessageStatus, Citation, ToolRun, Usage, ModelChoice, SafetySettings, Role, AgentTool };
export type { DeliveryStatus, EndpointDisabledReason, UsageMetric, UsagePeriod };

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
  /**
   * End of the grace period of a rotated key: the key works until this time (exclusive), then counts as
   * revoked. Null when the key was never rotated with a grace period.
   */
  expires_at: string | null;
}

/** A person who can sign in. */
export interface UserRecord {
  id: string;
  /** Normalized by the caller (src/auth/passwords.ts normalizeEmail: trimmed, lower-case); unique. */
  email: string;
  /** argon2id PHC string (src/auth/passwords.ts), or null: the person cannot sign in until one is set. */
  password_hash: string | null;
  created_at: string;
  updated_at: string;
}

/** A person's role in an organization. */
export interface MembershipRecord {
  org_id: string;
  user_id: string;
  role: Role;
  created_at: string;
}

/** A membership with the person's e-mail, as member lists show it. */
export interface MemberRecord extends MembershipRecord {
  email: string;
}

/** One of a person's organizations with the person's role there. */
export interface UserOrganization {
  id: string;
  name: string;
  role: Role;
}

/**
 * What the store knows of a person token's subject in an organization (MembershipsPort.check): the person
 * no longer exists, exists but is not a member, or is a member with `role`.
 */
export type MemberCheck = { status: 'no_user' } | { status: 'not_a_member' } | { status: 'member'; role: Role };

/**
 * A refresh-token family: every refresh token that descends, by rotation, from one login (RFC 9700
 * section 4.14.2). Revoking the family ends the session.
 */
export interface RefreshFamilyRecord {
  id: string;
  user_id: string;
  created_at: string;
  /** No token of the family is accepted at or after this time (the absolute lifetime). */
  absolute_expires_at: string;
  revoked_at: string | null;
  /** Why it was revoked: `logout`, `reuse` (a spent token came back), `password` (password changed). */
  revoked_reason: string | null;
}

/** One refresh token of a family; only its SHA-256 hex is stored. */
export interface RefreshTokenRecord {
  token_hash: string;
  family_id: string;
  created_at: string;
  /** Idle lifetime: not accepted at or after this time (never later than the family's absolute expiry). */
  expires_at: string;
  /** When it was exchanged (spent); null while it is the family's live token. */
  used_at: string | null;
}

/**
 * What RefreshTokensPort.rotate did: `rotated` (the token was live; it is now spent and `next` is the
 * family's live token), or why it refused: `unknown` hash, family already `revoked`, token or family
 * `expired`, or `reused`: the token was already spent, so the family has just been revoked (RFC 9700
 * section 4.14.2).
 */
export type RefreshRotation =
  | { status: 'rotated'; family: RefreshFamilyRecord; token: RefreshTokenRecord }
  | { status: 'unknown' | 'revoked' | 'expired' }
  | { status: 'reused'; family_id: string };

/** A public JSON Web Key or a private one (RFC 7517), as exported by jose. */
export type JwkRecord = Record<string, string>;

/** A token signing key pair (Ed25519, RFC 8037), identified by `kid`. */
export interface SigningKeyRecord {
  kid: string;
  /** JWS algorithm, `EdDSA`. */
  algorithm: string;
  public_jwk: JwkRecord;
  private_jwk: JwkRecord;
  created_at: string;
  /** When a newer key replaced it for signing; null for the active key. */
  retired_at: string | null;
}

/** A single-use WebSocket ticket (`wst_...`), stored as its SHA-256 hex. */
export interface SocketTicketRecord {
  ticket_hash: string;
  user_id: string;
  org_id: string;
  /**
   * The sign-in (refresh-token family id) whose access token asked for the ticket, or null: a socket opened
   * with the ticket is closed when that sign-in ends (logout, refresh-token reuse).
   */
  session_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface AgentRecord {
  id: string;
  org_id: string;
  name: string;
  description: string;
  instructions: string;
  model: ModelChoice;
  knowledge_base_ids: string[];
  /** Tools the agent may call: built-in tool names (`search_knowledge`) and HTTP tools. */
  tools: AgentTool[];
  safety: SafetySettings;
  published: boolean;
  /** `pk_...` while published (unique across organizations), else null. */
  public_key: string | null;
  /**
   * Origins a published agent may be used from (API.md "WebSockets": CORS and the socket Origin check):
   * `["*"]` (any, the default) or exact origins such as `https://shop.example`.
   */
  allowed_origins: string[];
  created_at: string;
  updated_at: string;
}

export type AgentPatch = Partial<Pick<AgentRecord, 'name' | 'description' | 'instructions' | 'model' | 'knowledge_base_ids' | 'tools' | 'safety' | 'allowed_origins'>>;

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
  /** Why a `failed` document failed, one line; null otherwise. */
  error: string | null;
  /** The stable code of `error` (API.md "Knowledge bases": `document_too_large`, ...); null unless `failed`. */
  error_code: DocumentErrorCode | null;
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
  /**
   * SHA-256 hex of the visitor token (`vt_...`) of a conversation started through a public key; null for
   * conversations started with an API key or a person's token. Never shown by the API.
   */
  visitor_token_hash: string | null;
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
  /** 1-based page of a PDF chunk; null (or absent) for formats without pages. */
  page?: number | null;
  /**
   * The chunk's embedding and the model that made it (docs/knowledge-bases.md "Embeddings (optional)");
   * absent or null when embeddings are off. Only chunks of the same model are compared by vectorSearch.
   */
  embedding?: ChunkEmbedding | null;
}

/** An embedding vector and the name of the model that computed it. */
export interface ChunkEmbedding {
  model: string;
  vector: Float32Array;
}

/** A search hit: one chunk with its document's title; `score` is higher-is-better (bm25, sign flipped). */
export interface ChunkHit {
  document_id: string;
  chunk_id: string;
  title: string;
  heading: string;
  text: string;
  score: number;
  /** 1-based page the chunk starts on (PDF documents); null for formats without pages. */
  page: number | null;
}

/** Why a document failed: the stable code and the one-line reason (DocumentRecord `error_code` and `error`). */
export interface DocumentFailure {
  code: DocumentErrorCode;
  message: string;
}

/** A failed agent reply that ConversationsPort.failInterruptedTurns is about to append, and its conversation's agent. */
export interface InterruptedReply {
  message: MessageRecord;
  agent_id: string;
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

/**
 * One run of an agent's tool (table `tool_runs`; docs/agents-and-models.md "HTTP tools"): what was
 * called, for which turn, and how it ended. Arguments and outputs stay in the agent message's
 * `tool_runs`; this record holds no argument, header or body. Durations in ms, sizes in bytes.
 */
export interface ToolRunRecord {
  id: string;
  org_id: string;
  agent_id: string;
  conversation_id: string;
  turn_id: string;
  /** The model's id of the call (`call_...`). */
  tool_call_id: string;
  name: string;
  /** `builtin` (search_knowledge, handoff_to_human) or `http` (an agent's HTTP tool); `unknown` for a name the agent does not have. */
  kind: 'builtin' | 'http' | 'unknown';
  /** `failed` also when the arguments broke the tool's schema (nothing was sent; `error` starts `invalid arguments`). */
  status: 'succeeded' | 'failed';
  /** HTTP status of an HTTP tool's answer; null when there was none (or not an HTTP tool). */
  http_status: number | null;
  /** Why it failed; null on success. Never holds a secret. */
  error: string | null;
  duration_ms: number;
  response_bytes: number;
  created_at: string;
}

/**
 * An outbound event as stored in the outbox (API.md "Webhooks": the envelope `{id, type, created_at,
 * org_id, data}`). Written in the same commit as the change that caused it; its id never changes.
 */
export interface OutboxEvent {
  /** `evt_...` */
  id: string;
  /** One of the nine events (src/vocabulary/webhook.ts), or `webhook.test` for a test delivery. */
  type: string;
  org_id: string;
  created_at: string;
  /** JSON object. */
  data: Record<string, unknown>;
}

/** A webhook endpoint (API.md "Webhooks"). The secret is kept as is: it must be usable to sign. */
export interface WebhookEndpointRecord {
  /** `whe_...` */
  id: string;
  org_id: string;
  url: string;
  description: string | null;
  /** Event names subscribed to, or `["*"]` for all nine. */
  events: string[];
  enabled: boolean;
  /** Why it is disabled (null while enabled). */
  disabled_reason: EndpointDisabledReason | null;
  /** The current signing secret `whsec_...`. */
  secret: string;
  /** The secret before the last rotation, still signing until `previous_secret_expires_at`; null when none. */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  /** First failure of the current failing streak (null when the last attempt succeeded or none failed). */
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

/** Fields of an endpoint its owner may change. `enabled: true` also clears `disabled_reason` and `failing_since`. */
export type WebhookEndpointPatch = Partial<Pick<WebhookEndpointRecord, 'url' | 'description' | 'events' | 'enabled'>>;

/** The response part of an attempt: HTTP status (0 when no response came), first 4 KiB of the body, ms. */
export interface AttemptResponse {
  status: number;
  body: string;
  duration_ms: number;
}

/** One delivery of one event to one endpoint (API.md "Webhooks"). */
export interface DeliveryRecord {
  /** `dlv_...` */
  id: string;
  event_id: string;
  event_type: string;
  endpoint_id: string;
  org_id: string;
  status: DeliveryStatus;
  attempt_count: number;
  /** When the next attempt is due (pending only). */
  next_attempt_at: string | null;
  /** The last attempt's response, or null before any attempt. */
  last_response: AttemptResponse | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** One attempt of a delivery, as recorded. */
export interface AttemptRecord {
  /** 1-based attempt number within its delivery. */
  number: number;
  /** HTTP status, 0 when no response came (timeout, refused destination, crash). */
  status: number;
  /** First 4 KiB of the response body (UTF-8, may be cut in a character). */
  body: string;
  error: string | null;
  duration_ms: number;
  /** When the attempt started. */
  at: string;
}

/** A delivery with its attempts, oldest first. */
export interface DeliveryWithAttempts extends DeliveryRecord {
  attempts: AttemptRecord[];
}

/** A delivery claimed for an attempt (under a lease), with its event. */
export interface ClaimedDelivery {
  delivery_id: string;
  endpoint_id: string;
  /** Attempts made before this one. */
  attempt_count: number;
  event: OutboxEvent;
}

/** How an attempt ended, for WebhooksPort.recordAttempt. */
export interface AttemptOutcome {
  response: AttemptResponse;
  error: string | null;
  /** When the attempt started. */
  at: string;
  /** The delivery's next state: `pending` with `next_attempt_at` (a retry), or final. */
  next: { status: 'pending'; next_attempt_at: string } | { status: 'succeeded' | 'failed' };
  /** true: a 2xx (ends the endpoint's failing streak); false: a failure (starts one at `at`). */
  success: boolean;
}

/** Token totals of one agent on one UTC day (API.md "Usage"). */
export interface UsageDay {
  agent_id: string;
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** Agent replies counted. */
  turns: number;
}

/** A usage threshold of an organization (API.md "Usage"). */
export interface UsageThreshold {
  metric: UsageMetric;
  /** Tokens. */
  value: number;
  period: UsagePeriod;
}
