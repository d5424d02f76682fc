/**
 * The store's records: what the ports (src/store/ports.ts) take and return. Field names follow API.md
 * where the API shows the record; internal fields (`org_id`, hashes) are never shown by the API.
 */
import type { DocumentContentType, DocumentErrorCode, DocumentStatus } from '../vocabulary/document.js';
import type { ConversationStatus } from '../vocabulary/conversation.js';
import type { MessageRole, MessageStatus } from '../vocabulary/message.js';
import type { AgentTool, ModelChoice, SafetySettings } from '../vocabulary/agent.js';
import type { Role } from '../vocabulary/role.js';
import type { Citation, FinishReason, ToolRun, TurnError, TurnTiming, Usage } from '../vocabulary/turn.js';
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

/**
 * An organization's retention setting (OrganizationsPort): conversations with no activity for
 * `retention_days` days are erased; null: the server's default (PARLEY_RETENTION_DAYS; unset keeps everything).
 */
export interface RetentionSetting {
  org_id: string;
  retention_days: number | null;
}

/** The text that replaces what an erasure removes from stored webhook events and receivers' responses. */
export const ERASED_MARKER = '[erased]';

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
  /**
   * Access tokens and socket tickets of this person issued before this time are refused (set when the
   * password changes: UsersPort.setPasswordHash); null when nothing was ever voided.
   */
  access_valid_after: string | null;
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

/**
 * An invitation to an organization (API.md "Auth endpoints": membership by invitation). It names an
 * e-mail, not a person: whoever signs in with that e-mail (an account may be created after the
 * invitation) can accept it while it is `pending` and before `expires_at`.
 */
export interface InvitationRecord {
  /** `inv_...` */
  id: string;
  org_id: string;
  /** Normalized (trimmed, lower-case). */
  email: string;
  role: Role;
  /** `pending`; then `accepted`, `declined`, or `replaced` (a newer invitation of the same e-mail to the organization). */
  status: InvitationStatus;
  /** The person who invited, or null (the server's command line). */
  invited_by: string | null;
  created_at: string;
  expires_at: string;
  /** When it was accepted, declined or replaced; null while pending. */
  responded_at: string | null;
}

export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'replaced';

/** A pending invitation as its invitee sees it: with the organization's name. */
export interface PendingInvitation extends InvitationRecord {
  org_name: string;
}

/** What accepting an invitation did: the person is now a member (with the role they have there), or nothing matched. */
export type InvitationAcceptance = { status: 'accepted'; organization: UserOrganization } | { status: 'not_found' };

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
export type MemberCheck =
  | { status: 'no_user' }
  | { status: 'not_a_member'; access_valid_after: string | null }
  | { status: 'member'; role: Role; access_valid_after: string | null };

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

/** What a knowledge base holds: its documents (any status), their chunks, and their upload sizes in bytes. */
export interface KnowledgeBaseStats {
  document_count: number;
  chunk_count: number;
  bytes: number;
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
  /**
   * The public key (`pk_...`) the conversation was started through: its visitor token works with this key
   * only, so unpublishing the agent (the key is dropped) ends every visitor token of it for good, also
   * after a new publish (a new key). Absent or null for conversations started with an API key or a
   * person's token, and for public conversations of an agent unpublished before this was stored.
   */
  public_key?: string | null;
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
  /**
   * Where the turn's time went (API.md "Chat", Timing), on agent messages stored by a turn (replies and
   * failed replies); null on every other message (visitor, operator, imported history, replies stored by
   * start-up recovery).
   */
  timing: TurnTiming | null;
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
  /** Leave out conversations whose `metadata.source` is this (the dashboard's playground: `playground`). */
  exclude_source?: string | undefined;
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
  /** One of the events of src/vocabulary/webhook.ts, or `webhook.test` for a test delivery. */
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
  /** Event names subscribed to, or `["*"]` for all of them. */
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

/**
 * A change other processes sharing the store must hear of (DESIGN.md "Several processes"): what an
 * access check, a cache or an open socket depends on. The store writes the entry in the same commit as the
 * change itself, so every process that follows the feed (FeedPort) sees it once the change is durable.
 * - `user`: a person was deleted, or their password set (their `access_valid_after` moved);
 * - `member`: a membership was added, changed role or removed;
 * - `session`: a sign-in (refresh-token family) was revoked (logout, reuse, password change);
 * - `api_key`: a key was revoked or rotated (its `expires_at` set);
 * - `agent`: an agent changed, was published, unpublished or deleted (`public_key`: the key it had
 *   before, when that key stopped working);
 * - `webhooks`: an organization's webhook endpoints changed (created, updated, disabled, deleted);
 * - `conversation`, `status`, `message`: a conversation was created, changed status, or got a message,
 *   written by its owner (`origin`, a process id): how sockets on other processes follow it live
 *   (src/runtime/placement/remote-events.ts). A visitor message with a `turn_id` means that turn started
 *   on `origin`.
 */
export type FeedChange =
  | { kind: 'user'; user_id: string }
  | { kind: 'member'; org_id: string; user_id: string }
  | { kind: 'session'; session_id: string; user_id: string }
  | { kind: 'api_key'; org_id: string; key_id: string }
  | { kind: 'agent'; org_id: string; agent_id: string; public_key?: string | undefined }
  | { kind: 'webhooks'; org_id: string }
  | { kind: 'conversation'; org_id: string; conversation_id: string; agent_id: string; origin: string }
  | { kind: 'status'; org_id: string; conversation_id: string; status: ConversationStatus; origin: string }
  | { kind: 'message'; org_id: string; conversation_id: string; message_id: string; role: MessageRole; turn_id: string | null; origin: string }
  /** A conversation was erased (ConversationsPort.erase): sockets following it close, mirrors of its turns go. */
  | { kind: 'erased'; org_id: string; conversation_id: string; origin: string };

/** A FeedChange as stored: `seq` grows with every entry, in commit order; `at` is when it was written. */
export type FeedEntry = FeedChange & { seq: number; at: string };

/**
 * A Parley process serving the store (DESIGN.md "Several processes"): its id (`proc_...`, new at every
 * start), the address its neighbours reach it at (PARLEY_ADVERTISE_URL), and its last heartbeat. A process
 * whose heartbeat is older than the lease time is taken for dead: its work (webhook deliveries, documents
 * being ingested, conversations) may be taken over.
 */
export interface ProcessRecord {
  id: string;
  url: string;
  started_at: string;
  heartbeat_at: string;
  /** When it began a drain (SIGTERM: it no longer accepts connections, its turns finish), or null. */
  draining_at: string | null;
}

/** Who holds a lease: a process id and the address to forward to. */
export interface LeaseOwner {
  id: string;
  url: string;
}

/**
 * The owner of a conversation (DESIGN.md "Several processes"): the process that runs its actor and its
 * turns until `expires_at`. `fence` grows by one with every change of owner; every write of a turn carries
 * the fence it was started under, and a write whose fence is not the lease's current one, or whose lease
 * has expired, is refused (`lease_lost`), so a stale owner's late write never lands. `released`: the owner
 * gave it up cleanly (nothing of it needs recovering); an expired lease that was not released belonged
 * to a process that died or stalled.
 */
export interface ConversationLease {
  conversation_id: string;
  owner_id: string;
  owner_url: string;
  fence: number;
  expires_at: string;
  released: boolean;
}

/** The fence a turn's writes carry (ConversationLease). */
export interface Fence {
  owner_id: string;
  fence: number;
}

/**
 * What LeasesPort.acquire did: took the lease (`acquired`; `took_over_from`: the owner of an expired,
 * unreleased lease, whose cut turns the caller must now store as interrupted; null when the lease was
 * free, released or already ours), or found it held by another live owner.
 */
export type LeaseOutcome =
  | { acquired: true; lease: ConversationLease; took_over_from: Fence | null }
  | { acquired: false; lease: ConversationLease };
