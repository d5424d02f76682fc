/**
 * Store ports (DESIGN.md "Store"): domain-shaped, async so that the SQLite and MongoDB adapters share
 * them, and behind one contract suite (test/contract/). Every method is scoped by organization where the
 * resource belongs to one; a record of another organization is reported as absent (`undefined`, false or
 * an empty list), never as forbidden (API.md "Errors": 404). Times are RFC 3339 UTC strings. The records
 * are the store's own (src/store/records.ts); the vocabulary they use is src/vocabulary/.
 *
 * Lists (API.md "Conventions"): `page.limit` records at most, `has_more` when more follow, `page.after`
 * an id cursor (exclusive). A cursor that names no record of the list's scope is refused: the list method
 * rejects with AppError `validation_failed` (400), `errors: [{ path: 'after', message: 'unknown cursor' }]`.
 */
import type { TurnError } from '../vocabulary/turn.js';
import type {
  AgentPatch, AgentRecord, ApiKeyRecord, ChunkHit, ConversationListFilter, ConversationRecord, ConversationStatus,
  DocumentRecord, InterruptedReply, InterruptedTurn, KnowledgeBaseRecord, KnowledgeBaseStats, MemberCheck, MemberRecord, MembershipRecord, MessageRecord, NewChunk,
  OrganizationRecord, Page, PageRequest, DocumentFailure, RefreshFamilyRecord, RefreshRotation, RefreshTokenRecord, RetentionSetting, Role,
  SigningKeyRecord, SocketTicketRecord, ToolRunRecord, UserOrganization, UserRecord,
  InvitationAcceptance, InvitationRecord, PendingInvitation,
  AttemptOutcome, ClaimedDelivery, ConversationLease, FeedChange, FeedEntry, Fence, LeaseOutcome, LeaseOwner, ProcessRecord, DeliveryRecord, DeliveryWithAttempts, EndpointDisabledReason, OutboxEvent, UsageDay,
  UsageThreshold, WebhookEndpointPatch, WebhookEndpointRecord,
} from './records.js';

export interface OrganizationsPort {
  create(rec: OrganizationRecord): Promise<void>;
  get(id: string): Promise<OrganizationRecord | undefined>;
  count(): Promise<number>;
  /** The organization's own `retention_days` (null: none set, the server's default applies), or undefined when there is no such organization. */
  retentionDays(id: string): Promise<number | null | undefined>;
  /** Sets (days, at least 1) or clears (null) the organization's `retention_days`; false when there is no such organization. */
  setRetentionDays(id: string, days: number | null): Promise<boolean>;
  /** Every organization's retention setting, by organization id (the retention sweep's list). */
  retentionSettings(): Promise<RetentionSetting[]>;
}

/** API keys. `revoke` and `rotate` record an `api_key` feed entry in their commit. */
export interface ApiKeysPort {
  create(rec: ApiKeyRecord): Promise<void>;
  /** The key whose hash is `keyHash`, revoked or not. */
  findByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /** The key `id` of `orgId`, revoked or not. */
  get(orgId: string, id: string): Promise<ApiKeyRecord | undefined>;
  /** The organization's keys, revoked and expired ones included, newest first. Unknown cursor: AppError `validation_failed`. */
  list(orgId: string, page: PageRequest): Promise<Page<ApiKeyRecord>>;
  /** Revokes a key of `orgId` that is not yet revoked; false when there is no such key or it already was. */
  revoke(orgId: string, id: string, at: string): Promise<boolean>;
  /**
   * Replaces key `id` of `orgId` by `next` in one conditional write: only a key that is still usable at
   * `at` (not revoked, no `expires_at` at or before `at`) is rotated. The old key ends at `graceEndsAt`
   * (its `expires_at`; an earlier `expires_at` it already had is kept), or, when `graceEndsAt` is null, is
   * revoked at `at`. False (and nothing stored) when there is no such usable key.
   */
  rotate(orgId: string, id: string, next: ApiKeyRecord, graceEndsAt: string | null, at: string): Promise<boolean>;
}

export interface UsersPort {
  /** Stores a new person; false (nothing stored) when `email` is already taken (emails compare exactly). */
  create(rec: UserRecord): Promise<boolean>;
  get(id: string): Promise<UserRecord | undefined>;
  findByEmail(email: string): Promise<UserRecord | undefined>;
  /**
   * Sets the password hash and moves `access_valid_after` to `at` (tokens issued before it are refused),
   * recording a `user` feed entry; false when there is no such person.
   */
  setPasswordHash(id: string, passwordHash: string, at: string): Promise<boolean>;
  /**
   * Deletes the person with their memberships, refresh-token families and socket tickets, in one
   * conditional write with a `user` feed entry: refused (`last_owner`, nothing deleted) when the person is
   * the only owner of an organization.
   */
  delete(id: string): Promise<'deleted' | 'not_found' | 'last_owner'>;
}

/**
 * Who belongs to which organization with which role. Every organization keeps at least one owner: the
 * writes that could take the last one away are conditional writes that refuse with `last_owner`. Every
 * write that changes a membership records a `member` feed entry in its commit.
 */
export interface MembershipsPort {
  /** Adds a membership; false (nothing stored) when the person already belongs to the organization. */
  add(rec: MembershipRecord): Promise<boolean>;
  /**
   * The check of a person token (one read; src/auth/access-cache.ts caches it): whether `userId` still
   * exists, their role in `orgId`, and their `access_valid_after`.
   */
  check(orgId: string, userId: string): Promise<MemberCheck>;
  /** The member `userId` of `orgId` with their e-mail, or undefined. */
  get(orgId: string, userId: string): Promise<MemberRecord | undefined>;
  /**
   * The organization's members, newest person first (descending user id). The cursor is a user id that
   * must name a member of the organization; otherwise AppError `validation_failed`.
   */
  list(orgId: string, page: PageRequest): Promise<Page<MemberRecord>>;
  /** Every organization of the person with their role there, by organization id. */
  organizationsOf(userId: string): Promise<UserOrganization[]>;
  /** Changes a member's role; `last_owner` (nothing changed) when that would leave `orgId` without an owner. */
  setRole(orgId: string, userId: string, role: Role): Promise<'updated' | 'not_found' | 'last_owner'>;
  /** Removes a member; `last_owner` (nothing changed) when they are the organization's only owner. */
  remove(orgId: string, userId: string): Promise<'removed' | 'not_found' | 'last_owner'>;
}

/**
 * Invitations to organizations (API.md "Auth endpoints"): membership comes only from accepting one
 * (the server's command line excepted). Matched by e-mail, so an invitation sent before its invitee has
 * an account works once the account exists. Every change is a conditional write.
 */
export interface InvitationsPort {
  /**
   * Stores `rec` (a `pending` invitation), in one conditional write: `already_member` (nothing stored)
   * when a person with `rec.email` already belongs to `rec.org_id`; otherwise a pending invitation of the
   * same e-mail to the same organization becomes `replaced` (at `rec.created_at`) and `rec` is stored.
   * The same work whether or not the e-mail has an account.
   */
  create(rec: InvitationRecord): Promise<'created' | 'already_member'>;
  /** The invitation `id`, whatever its status, or undefined. */
  get(id: string): Promise<InvitationRecord | undefined>;
  /**
   * The `pending` invitations of `email` that expire after `at`, with their organization's name, newest
   * first, at most `limit`.
   */
  pendingFor(email: string, at: string, limit: number): Promise<PendingInvitation[]>;
  /**
   * Accepts invitation `id` for the person `userId` whose e-mail is `email`, in one transaction: only a
   * `pending` invitation of that e-mail that expires after `at` becomes `accepted` (at `at`), and the
   * person becomes a member with its role (a person already a member keeps the role they have). Outcome
   * `not_found` (nothing changed) otherwise.
   */
  accept(id: string, email: string, userId: string, at: string): Promise<InvitationAcceptance>;
  /** Declines invitation `id` of `email` if it is pending and expires after `at`; false (nothing changed) otherwise. */
  decline(id: string, email: string, at: string): Promise<boolean>;
}

/**
 * Refresh-token families (RFC 9700 section 4.14.2): one family per login, one live token per family,
 * every exchange a conditional write so that of two concurrent exchanges of one token exactly one wins.
 * Every write that revokes a family records a `session` feed entry for it in its commit.
 */
export interface RefreshTokensPort {
  /** Stores a new family and its first token. */
  startFamily(family: RefreshFamilyRecord, first: RefreshTokenRecord): Promise<void>;
  /**
   * Exchanges the token whose hash is `tokenHash` at time `at`: spends it (a conditional write that only
   * a live token passes: unspent, `expires_at` after `at`, family neither revoked nor past its absolute
   * expiry) and stores `next` in its family, with `next.expires_at` clamped to the family's absolute
   * expiry (`next.family_id` is ignored). A token that was already spent revokes its family (reason
   * `reuse`) in the same transaction. See RefreshRotation for the outcomes.
   */
  rotate(tokenHash: string, next: Omit<RefreshTokenRecord, 'family_id' | 'used_at'>, at: string): Promise<RefreshRotation>;
  /**
   * Revokes the family of the token whose hash is `tokenHash` (spent or live) with `reason`; false when
   * the hash is unknown or the family was already revoked.
   */
  revokeFamilyOf(tokenHash: string, reason: string, at: string): Promise<boolean>;
  /** The id of the family of the token whose hash is `tokenHash` (spent or live), or undefined when unknown. */
  familyIdOf(tokenHash: string): Promise<string | undefined>;
  /** Revokes every live family of the person (e.g. after a password change); how many. */
  revokeAllOf(userId: string, reason: string, at: string): Promise<number>;
  /** The family with this id, or undefined. */
  getFamily(id: string): Promise<RefreshFamilyRecord | undefined>;
  /** Deletes families (with their tokens) past their absolute expiry before `before`; how many. */
  prune(before: string): Promise<number>;
}

/** Token signing keys: one active key signs; retired keys still verify the tokens they signed. */
export interface SigningKeysPort {
  /** The active key (the newest key that is not retired), or undefined when there is none yet. */
  active(): Promise<SigningKeyRecord | undefined>;
  /** The active key and every key retired after `retiredAfter`, newest first. */
  verifiable(retiredAfter: string): Promise<SigningKeyRecord[]>;
  /**
   * Makes `candidate` the active key unless there already is one (a conditional write, so two processes
   * starting at once agree on one key); returns the active key.
   */
  ensureActive(candidate: SigningKeyRecord): Promise<SigningKeyRecord>;
  /** Retires every active key at `at` and makes `next` the active one, in one transaction; the kids retired. */
  rotate(next: SigningKeyRecord, at: string): Promise<string[]>;
}

/** Single-use WebSocket tickets. */
export interface SocketTicketsPort {
  create(rec: SocketTicketRecord): Promise<void>;
  /**
   * Spends the ticket whose hash is `ticketHash` if it is unspent and `expires_at` is after `at` (a
   * conditional write: of concurrent calls exactly one gets it); its record, or undefined.
   */
  consume(ticketHash: string, at: string): Promise<SocketTicketRecord | undefined>;
  /** Deletes tickets that expired before `before`; how many. */
  prune(before: string): Promise<number>;
}

/**
 * Agents. `update`, `delete` and `setPublicKey` record an `agent` feed entry in their commit (with the
 * public key that stopped working, when one did).
 */
export interface AgentsPort {
  create(rec: AgentRecord): Promise<void>;
  get(orgId: string, id: string): Promise<AgentRecord | undefined>;
  /** The organization's agents, newest first. Unknown cursor: AppError `validation_failed`. */
  list(orgId: string, page: PageRequest): Promise<Page<AgentRecord>>;
  /** Applies `patch`; the updated record, or undefined when `orgId` has no such agent. */
  update(orgId: string, id: string, patch: AgentPatch, at: string): Promise<AgentRecord | undefined>;
  /** False when `orgId` has no such agent. */
  delete(orgId: string, id: string): Promise<boolean>;
  /**
   * The published agent whose public key is `publicKey`, in whatever organization (a public key names one
   * agent across the whole store: API.md "Credentials"), or undefined.
   */
  findByPublicKey(publicKey: string): Promise<AgentRecord | undefined>;
  /** The organization's agents whose name is exactly `name` (case and spaces count), oldest first. */
  findByName(orgId: string, name: string): Promise<AgentRecord[]>;
  /**
   * Publishes (`publicKey` a new `pk_...`) or unpublishes (`null`) the agent: sets `public_key`,
   * `published` and `updated_at` in one write. The updated record, or undefined when `orgId` has no
   * such agent.
   */
  setPublicKey(orgId: string, id: string, publicKey: string | null, at: string): Promise<AgentRecord | undefined>;
  /**
   * The organization of agent `id`, whichever it is, or undefined. Only for resolving the organization
   * of a WebSocket opened with a person's token (API.md "Credentials": on a socket the organization comes
   * from the agent); every other read is scoped.
   */
  orgOf(id: string): Promise<string | undefined>;
}

export interface KnowledgePort {
  createBase(rec: KnowledgeBaseRecord): Promise<void>;
  getBase(orgId: string, id: string): Promise<KnowledgeBaseRecord | undefined>;
  /** The organization's knowledge bases, newest first. Unknown cursor: AppError `validation_failed`. */
  listBases(orgId: string, page: PageRequest): Promise<Page<KnowledgeBaseRecord>>;
  /**
   * Knowledge bases whose id or name is exactly `ref`, across organizations (or of `orgId` only when
   * given), oldest first: how the command line (`kb import --kb <kb_id|name>`) finds a base.
   */
  findBases(ref: string, orgId?: string): Promise<KnowledgeBaseRecord[]>;
  /**
   * Document count, chunk count and upload bytes of each of the given knowledge bases of `orgId`, in one
   * grouped read; a base with no document (or of another organization) maps to zeros.
   */
  baseStats(orgId: string, kbIds: string[]): Promise<Map<string, KnowledgeBaseStats>>;
  /**
   * Deletes the knowledge base with its documents, their chunks and stored uploads, in one commit. False
   * when there is no such base. Documents still being ingested are dropped when their ingestion ends.
   */
  deleteBase(orgId: string, id: string): Promise<boolean>;
  /**
   * Stores the document record and its raw upload `content` together (one transaction): when this
   * resolves true both are durable, so an accepted upload (the 202 of API.md "Knowledge bases") survives a
   * crash and can be ingested again (pendingDocuments, documentSource). `content` comes back as the same type.
   *
   * With `maxProcessing`, the document is stored only while its organization has fewer than that many
   * documents `processing`, counted in the same transaction (so the bound holds across every process on
   * the store); resolves false, storing nothing, when it has that many already (the per-organization bound
   * of ingestion, PARLEY_INGEST_MAX_PROCESSING_PER_ORG). With `transfer`, the adapter may move the memory
   * of a whole-buffer `content` instead of copying it: the caller's array is then detached.
   */
  createDocument(rec: DocumentRecord, content: Uint8Array | string, opts?: { maxProcessing?: number; transfer?: boolean; owner?: string }): Promise<boolean>;
  getDocument(orgId: string, kbId: string, id: string): Promise<DocumentRecord | undefined>;
  /** The documents of one knowledge base, newest first. Unknown cursor (or one of another base): AppError `validation_failed`. */
  listDocuments(orgId: string, kbId: string, page: PageRequest): Promise<Page<DocumentRecord>>;
  /**
   * Every document still `processing`, across organizations, oldest first (created_at, then id): what a
   * restart must ingest again (each one's upload: documentSource).
   */
  pendingDocuments(): Promise<DocumentRecord[]>;
  /**
   * Several processes (DESIGN.md "Several processes": ingestion jobs are leased): makes `owner` the
   * process that ingests every document still `processing` that has no owner (stored before owners, or by
   * the command line), whose owner is one of `deadOwners`, or whose owner is not a registered process (a
   * process that is gone), and returns them, oldest first. A document of a living neighbour (registered) is
   * never taken. `createDocument`'s `opts.owner` names the process that will ingest a new document.
   */
  claimPending(owner: string, deadOwners: readonly string[]): Promise<DocumentRecord[]>;
  /**
   * The upload document `id` was created from, as the type it was stored as (string or bytes); null when
   * none was stored (documents created before the store kept uploads); undefined when there is no such
   * document. Read when ingestion starts, so that a document waiting its turn holds no memory.
   */
  documentSource(id: string): Promise<Uint8Array | string | null | undefined>;
  /**
   * Replaces the document's chunks with `chunks` and marks it `ready` with `chunk_count`; resolves true
   * once that is durable. Chunks of a document that is not `ready` are never searchable, so an adapter may
   * store them in several steps; a crash part-way leaves the document `processing`, and a later call for
   * the same id replaces whatever part was stored. False if the document is gone (also when it is
   * deleted part-way: nothing of it stays).
   */
  completeDocument(id: string, chunks: NewChunk[], at: string, events?: OutboxEvent[]): Promise<boolean>;
  /** Marks the document `failed` with `failure` as its `error_code` and `error` (and writes `events` to the outbox in the same commit). */
  failDocument(id: string, failure: DocumentFailure, at: string, events?: OutboxEvent[]): Promise<void>;
  /** Deletes the document, its chunks and its stored upload. False when there is no such document. */
  deleteDocument(orgId: string, kbId: string, id: string): Promise<boolean>;
  /**
   * Full-text search (bm25) over the chunks of the `ready` documents of the given knowledge bases of
   * `orgId`, best first, at most `k`. Returns [] for a query with no searchable words.
   */
  search(orgId: string, kbIds: string[], query: string, k: number): Promise<ChunkHit[]>;
  /**
   * Nearest chunks by cosine similarity to `query`, among the chunks of the `ready` documents of the given
   * knowledge bases of `orgId` that have an embedding of `model` (chunks without one, or of another model
   * or dimension, are skipped), best first, at most `k`; `score` is the cosine similarity in [-1, 1].
   * A brute-force scan: adapters scan in pages and yield to the event loop between them, so a large
   * scan never holds up other work for more than a few ms (docs/knowledge-bases.md gives its cost).
   */
  vectorSearch(orgId: string, kbIds: string[], model: string, query: Float32Array, k: number): Promise<ChunkHit[]>;
}

export interface ConversationsPort {
  create(rec: ConversationRecord): Promise<void>;
  /**
   * Creates a conversation together with its first message, in one commit (the chat hot path: the first
   * event a client sees waits for it). Durable when the promise resolves; nothing is stored if it rejects.
   * `extra.lease`: the conversation's first lease (fence 1) for the process that will run it.
   * `extra.earlier`: messages stored before `firstMessage` in that same commit, in order: a history the
   * conversation starts with (the earlier messages of an OpenAI-compatible request, with `turn_id` null,
   * so that recovery never takes them for turns cut short).
   */
  start(
    conversation: ConversationRecord, firstMessage: MessageRecord, events?: OutboxEvent[],
    extra?: { lease?: { owner: LeaseOwner; until: string } | undefined; earlier?: MessageRecord[] | undefined },
  ): Promise<void>;
  get(orgId: string, id: string): Promise<ConversationRecord | undefined>;
  /**
   * The conversation whose visitor token hash is `visitorTokenHash` (SHA-256 hex), whatever its
   * organization, or undefined: how a listen-only socket tells a visitor token of another conversation
   * (404) from an unknown one (401). An indexed read.
   */
  findByVisitorTokenHash(visitorTokenHash: string): Promise<ConversationRecord | undefined>;
  /**
   * The organization's conversations matching `filter`, newest first. The cursor must name a conversation
   * of the organization (the filter does not narrow that); otherwise AppError `validation_failed`.
   */
  list(orgId: string, filter: ConversationListFilter, page: PageRequest): Promise<Page<ConversationRecord>>;
  /**
   * Sets the status and `updated_at` (durable when the promise resolves; a write of the writer thread).
   * Fenced writes (`fence` given, here and below) first check that `fence` still holds the conversation's
   * lease (records.ts ConversationLease), and otherwise reject with an Error whose `code` is `lease_lost`,
   * storing nothing. A fenced write (and `start` with a lease) also records its feed entry (FeedChange
   * `status`, `message`, `conversation`) in its commit, with the fence's owner as `origin`.
   */
  setStatus(id: string, status: ConversationStatus, at: string, events?: OutboxEvent[], fence?: Fence): Promise<void>;
  /**
   * The organization of conversation `id`, whichever it is, or undefined (see AgentsPort.orgOf: only for
   * the WebSocket of a conversation opened with a person's token).
   */
  orgOf(id: string): Promise<string | undefined>;
  /**
   * Takes visitor message `messageId` out of its turn (`turn_id` = null), so start-up recovery
   * (failInterruptedTurns) never counts it as a turn cut short: for a message that was queued for the
   * agent when a person took the conversation over, and was forwarded to them instead. A write of the
   * writer thread; resolves once durable (also when there is no such message).
   */
  detachFromTurn(messageId: string, fenced?: { conversationId: string; fence: Fence }): Promise<void>;
  /**
   * Appends a message (durable when the promise resolves) and touches the conversation. Rejects when the
   * conversation does not exist (a message always references its conversation).
   *
   * An agent message with `usage` also adds its tokens to the day's usage of the conversation's agent
   * (UsagePort.daily) and checks the organization's thresholds in the same commit: each threshold the
   * period's total reaches for the first time in that period is marked fired (a conditional write, so
   * it fires once however many turns end at once) and a `usage.threshold` event is written to the outbox.
   * Resolves with those events (usually none), for the caller to announce.
   */
  appendMessage(rec: MessageRecord, events?: OutboxEvent[], fence?: Fence): Promise<OutboxEvent[]>;
  /**
   * Messages of a conversation in the order they were stored. The cursor must name a message of this
   * conversation; otherwise AppError `validation_failed`.
   */
  listMessages(orgId: string, conversationId: string, page: PageRequest): Promise<Page<MessageRecord>>;
  /**
   * Erases conversation `id` of `orgId` for good (API.md "Conversations and handoff": DELETE), in one commit:
   * the conversation, its messages and its tool runs are deleted; in its stored webhook events (those whose
   * `data.conversation_id` is `id`) every field that can hold text (everything but ids, roles, statuses,
   * times, names, kinds and numbers) becomes records.ts ERASED_MARKER, and so do the response bodies its
   * receivers answered to their deliveries (each delivery's last body and every attempt's). Usage totals
   * (UsagePort.daily) stay. Its lease ends for good (released, fence moved on), so a late write of a turn that
   * was running is refused (`lease_lost`), and a FeedChange `erased` is recorded with the fence's owner as
   * origin. `events` (its `conversation.deleted`) are written to the outbox in the same commit, after the
   * scrubbing. With `fence`, refused like every fenced write (`lease_lost`, nothing changed) unless it still
   * holds the lease. False (nothing changed) when `orgId` has no such conversation.
   *
   * What stays on disk is the adapter's to document (SQLite: secure_delete overwrites the freed space;
   * docs/operations.md "Erasure and retention").
   */
  erase(orgId: string, id: string, at: string, events?: OutboxEvent[], fence?: Fence): Promise<boolean>;
  /**
   * Ids of `orgId`'s conversations with no activity since `before` (`updated_at` earlier than it), least
   * recently active first, at most `limit`: what the retention sweep erases.
   */
  idleSince(orgId: string, before: string, limit: number): Promise<string[]>;
  /** Message `id` of `orgId`, or undefined (a socket of another process follows a conversation: FeedChange `message`). */
  getMessage(orgId: string, id: string): Promise<MessageRecord | undefined>;
  /**
   * The last `limit` completed messages (by stored order) for model context, in turn order: the messages
   * of a turn sit where its visitor message was stored, its visitor message before its reply, so queued
   * turns read as question/answer pairs; a message of no turn (an operator's, an imported history's, one
   * forwarded during a handoff) sits where it was stored.
   */
  history(conversationId: string, limit: number): Promise<MessageRecord[]>;
  /**
   * Closes the turns a crash cut short: for every visitor message with a `turn_id` and no agent message
   * of that turn, appends (all in one transaction) a `failed` agent message of that turn carrying `error`
   * (API.md "Chat": code `interrupted`), `created_at` = `at`, and returns what it appended, in the order
   * the visitor messages were stored.
   *
   * `events`, when given, is called once per reply before anything is written, with the reply and its
   * conversation's agent; the outbox events it returns (the reply's `message.created`) are stored in that
   * same transaction, so a webhook subscriber hears of the failed reply exactly as of any other
   * (API.md "Webhooks": durability). It must not throw.
   *
   * Which turns (DESIGN.md "Several processes": recovery is done by the living, never of a living
   * neighbour's work): with `scope.conversationId`, that conversation's only, as a write fenced by
   * `scope.fence` (the process that just took its lease over: `lease_lost` if it lost it again); with
   * `'unleased'`, those of conversations that have no lease at all (stored before leases existed).
   */
  failInterruptedTurns(
    error: TurnError, at: string, events: ((reply: InterruptedReply) => OutboxEvent[] | undefined) | undefined,
    scope: { conversationId: string; fence: Fence } | 'unleased',
  ): Promise<InterruptedTurn[]>;
}

/**
 * The outbox (`events` arguments of the conversation and knowledge writes): a write given events stores
 * each event and, in the same commit, one `pending` delivery (due at once) per enabled endpoint of the
 * event's organization subscribed to its type (or to `*`). So a change and its events are durable
 * together or not at all (API.md "Webhooks": durability).
 *
 * Webhook endpoints, deliveries and their attempts. Deliveries are claimed under a lease: a claimed
 * delivery is not claimed again until its attempt is recorded or the lease ends (then the sweep,
 * releaseExpiredLeases, records the attempt as interrupted and makes it due again).
 */
export interface WebhooksPort {
  createEndpoint(rec: WebhookEndpointRecord): Promise<void>;
  getEndpoint(orgId: string, id: string): Promise<WebhookEndpointRecord | undefined>;
  /** The endpoint `id` whatever its organization (the dispatcher's own reads), or undefined. */
  endpointById(id: string): Promise<WebhookEndpointRecord | undefined>;
  /** The organization's endpoints, newest first. Unknown cursor: AppError `validation_failed`. */
  listEndpoints(orgId: string, page: PageRequest): Promise<Page<WebhookEndpointRecord>>;
  /**
   * Applies `patch`; `enabled: true` also clears `disabled_reason` and `failing_since`, `enabled: false`
   * sets `disabled_reason` `manual`. The updated record, or undefined when `orgId` has no such endpoint.
   */
  updateEndpoint(orgId: string, id: string, patch: WebhookEndpointPatch, at: string): Promise<WebhookEndpointRecord | undefined>;
  /** Deletes the endpoint with its deliveries and their attempts; false when `orgId` has no such endpoint. */
  deleteEndpoint(orgId: string, id: string): Promise<boolean>;
  /**
   * Makes `secret` the current secret; the old one keeps signing until `previousExpiresAt` (null: it
   * stops at once). The updated record, or undefined when `orgId` has no such endpoint.
   */
  rotateSecret(orgId: string, id: string, secret: string, previousExpiresAt: string | null, at: string): Promise<WebhookEndpointRecord | undefined>;
  /** Disables endpoint `id` with `reason` (a no-op when it is already disabled). */
  disableEndpoint(id: string, reason: EndpointDisabledReason, at: string): Promise<void>;
  /** Organizations that have at least one enabled endpoint, by id. */
  orgsWithEndpoints(): Promise<string[]>;
  /** Every enabled endpoint (the dispatcher starts an actor for each). */
  enabledEndpoints(): Promise<WebhookEndpointRecord[]>;
  /**
   * Writes `events` to the outbox in a commit of their own: for changes that have no store write of
   * their own. Same fan-out as the `events` of the other writes.
   */
  recordEvents(events: OutboxEvent[]): Promise<void>;
  /**
   * Stores `event` and one pending delivery of it to endpoint `endpointId` of `orgId` (whatever the
   * endpoint subscribes to: the test delivery). The delivery, or undefined when there is no such endpoint.
   */
  enqueueTo(orgId: string, endpointId: string, event: OutboxEvent): Promise<DeliveryRecord | undefined>;
  /**
   * Claims up to `limit` pending deliveries of endpoint `endpointId` due at `now` and not under a lease,
   * oldest due first, for `owner` until `leaseUntil`. Of concurrent claims each delivery goes to one.
   */
  claimDue(endpointId: string, owner: string, now: string, leaseUntil: string, limit: number): Promise<ClaimedDelivery[]>;
  /** When the earliest pending delivery of the endpoint not under a lease is due, or null when none waits. */
  nextDueAt(endpointId: string): Promise<string | null>;
  /**
   * Records an attempt of delivery `deliveryId` claimed by `owner`: appends it to the history, counts it,
   * moves the delivery to `outcome.next`, ends the lease, and updates the endpoint's failing streak
   * (`failing_since` null on success; set to `at` on failure unless already set). False (nothing stored)
   * when the delivery is not under `owner`'s lease any more (the sweep took it back).
   */
  recordAttempt(deliveryId: string, owner: string, outcome: AttemptOutcome): Promise<boolean>;
  /**
   * The sweep: every delivery whose lease ended before `now`, or is held by one of `deadOwners` (processes
   * known to be gone: src/cluster/process-registry.ts), gets an attempt recorded with status 0 and error
   * `interrupted` (its outcome is unknown), and is due again at `now`. Returns the endpoint ids concerned.
   * A living process's unexpired lease is never touched.
   */
  releaseExpiredLeases(now: string, deadOwners: readonly string[]): Promise<string[]>;
  /** The endpoint's deliveries, newest first. Unknown cursor: AppError `validation_failed`. */
  listDeliveries(orgId: string, endpointId: string, page: PageRequest): Promise<Page<DeliveryRecord>>;
  /** One delivery with its attempts, or undefined. */
  getDelivery(orgId: string, endpointId: string, id: string): Promise<DeliveryWithAttempts | undefined>;
  /**
   * Makes a delivery that is not under a lease pending and due at `at` (its attempt count and history
   * stay). The delivery, or undefined when there is no such delivery or it is being attempted.
   */
  retryDelivery(orgId: string, endpointId: string, id: string, at: string): Promise<DeliveryRecord | undefined>;
  /** Makes every `failed` delivery of the endpoint created at or after `since` pending and due at `at`; how many. */
  recoverSince(orgId: string, endpointId: string, since: string, at: string): Promise<number>;
  /** The event `id` of `orgId`, or undefined. */
  getEvent(orgId: string, id: string): Promise<OutboxEvent | undefined>;
}

/** Token usage (API.md "Usage"): totals per agent and day, and the organization's thresholds. */
export interface UsagePort {
  /** Totals per agent and UTC day for days `from`..`to` (`YYYY-MM-DD`, inclusive), by day then agent id. */
  daily(orgId: string, from: string, to: string, agentId?: string): Promise<UsageDay[]>;
  /** Replaces the organization's thresholds (marks of thresholds that stay are kept). */
  setThresholds(orgId: string, thresholds: UsageThreshold[], at: string): Promise<void>;
  thresholds(orgId: string): Promise<UsageThreshold[]>;
}

/** The whole store. */
/**
 * Tool runs (records.ts ToolRunRecord): one row per tool call an agent made. `record` stores a run (ids
 * are unique; a second record with the same id throws); `listForConversation` gives a conversation's
 * runs of `orgId`, oldest first (created_at, then id), at most `limit` (default 100).
 */
export interface ToolRunsPort {
  /**
   * Stores one tool run, durable when the promise resolves, with its outbox `events` (the run's `tool.run`)
   * in the same commit (API.md "Webhooks": durability). Rejects on a duplicate id, storing neither; with
   * `fence`, rejects with code `lease_lost` (storing nothing) unless it still holds the conversation's lease.
   */
  record(run: ToolRunRecord, events?: OutboxEvent[], fence?: Fence): Promise<void>;
  listForConversation(orgId: string, conversationId: string, limit?: number): Promise<ToolRunRecord[]>;
}

/**
 * The feed (DESIGN.md "Several processes"): changes every process sharing the store must hear of
 * (records.ts FeedChange), in commit order. The writes that make such a change (a membership removed, a key
 * revoked, a sign-in ended, an agent unpublished, ...) record its entry themselves, in the same commit; a
 * process follows the feed from `head()` with `read` (src/runtime/feed-follower.ts) and drops what the
 * change made stale: cached access checks, open sockets, cached agents and endpoints.
 *
 * Entries are numbered by `seq`, dense and in commit order as this process sees them: a number missing
 * between two entries read means entries were lost to this process (pruned before it read them, or, on
 * MongoDB, a change stream that lost its place in the oplog), and the follower drops its caches. An entry
 * is readable once the adapter has it: at once on SQLite (a read of the table), shortly after the commit
 * on MongoDB (whose entries reach each process through its change stream, numbered by that process:
 * src/store/mongodb/feed.ts).
 */
export interface FeedPort {
  /** The `seq` of the newest entry ever written (0 when none): follow from here to see only what comes next. */
  head(): Promise<number>;
  /** Entries with `seq` greater than `after`, oldest first, at most `limit`. */
  read(after: number, limit: number): Promise<FeedEntry[]>;
  /** Records `changes` in a commit of their own (for a change the store does not see itself). */
  append(changes: FeedChange[], at: string): Promise<void>;
  /** Deletes entries written before `before`; how many. */
  prune(before: string): Promise<number>;
  /**
   * Calls `listener` once for each commit of this process that wrote feed entries, once they are readable,
   * so this process's own changes take effect at once instead of at the next poll (MongoDB calls it for
   * every commit its change stream delivers, other processes' too); returns the function that removes it.
   */
  onAppend(listener: () => void): () => void;
}

/**
 * The processes serving the store (records.ts ProcessRecord) and the secret they authenticate their
 * internal requests with (src/cluster/internal-auth.ts).
 */
export interface ProcessesPort {
  /** Stores (or replaces) a process's record. */
  register(rec: ProcessRecord): Promise<void>;
  /** Moves the heartbeat of process `id` to `at`; false when its record is gone (it was taken for dead). */
  heartbeat(id: string, at: string): Promise<boolean>;
  /** Every registered process, by id. */
  list(): Promise<ProcessRecord[]>;
  /** Removes process `id`'s record (it stopped, or was found dead). */
  remove(id: string): Promise<void>;
  /** Marks process `id` as draining since `at` (it refuses connections, yet is alive until its record goes). */
  markDraining(id: string, at: string): Promise<void>;
  /**
   * The cluster secret: `candidate` stored if none is yet (a conditional write, so processes starting at
   * once agree on one), else the one stored. Never shown by the API.
   */
  clusterSecret(candidate: string): Promise<string>;
}

/**
 * Conversation ownership (records.ts ConversationLease; DESIGN.md "Several processes"). Times are
 * RFC 3339 strings compared as text (all UTC with milliseconds). Lease writes need not survive a power
 * loss (adapters may commit them without an fsync): a lost lease is one nobody holds.
 */
export interface LeasesPort {
  /**
   * Takes the lease of `conversationId` for `owner` until `until`, at time `now`: when there is none
   * (fence 1), it is released or expired at `now` (fence + 1), or `owner` already holds it (renewed,
   * same fence); also when `deadOwner` is given and holds it (a process known to be dead: fence + 1).
   * Otherwise not acquired, with the current lease. One conditional write: of concurrent acquires, one wins.
   */
  acquire(conversationId: string, owner: LeaseOwner, now: string, until: string, deadOwner?: string): Promise<LeaseOutcome>;
  /**
   * Extends every lease `ownerId` holds that has not expired at `now` to `until`; returns the conversation
   * ids renewed. A lease that expired meanwhile is not renewed (its owner must take it again).
   */
  renew(ownerId: string, now: string, until: string): Promise<string[]>;
  /** Releases the lease of `conversationId` if `fence` still holds it (clean hand-back: nothing to recover). */
  release(conversationId: string, fence: Fence): Promise<void>;
  /** The lease of `conversationId`, or undefined when it never had one. */
  get(conversationId: string): Promise<ConversationLease | undefined>;
  /** Leases expired at `now` and not released (their owner died or stalled), oldest first, at most `limit`. */
  abandoned(now: string, limit: number): Promise<ConversationLease[]>;
  /** Leases held by `ownerId` and not released (a dead process's conversations, to take over). */
  heldBy(ownerId: string, limit: number): Promise<ConversationLease[]>;
}

export interface Store {
  readonly kind: 'sqlite' | 'mongodb';
  feed: FeedPort;
  processes: ProcessesPort;
  leases: LeasesPort;
  organizations: OrganizationsPort;
  apiKeys: ApiKeysPort;
  users: UsersPort;
  memberships: MembershipsPort;
  invitations: InvitationsPort;
  refreshTokens: RefreshTokensPort;
  signingKeys: SigningKeysPort;
  socketTickets: SocketTicketsPort;
  agents: AgentsPort;
  knowledge: KnowledgePort;
  conversations: ConversationsPort;
  toolRuns: ToolRunsPort;
  webhooks: WebhooksPort;
  usage: UsagePort;
  /** Resolves when the store answers (readiness probe); rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * SQLite only: transactions the conversation writer committed since start, by `PRAGMA synchronous`
   * level (`full` fsyncs the WAL at commit, `normal` does not). Exposed as `parley_sqlite_commits_total`.
   */
  commits?(): { full: number; normal: number };
  /**
   * MongoDB only: the connection pool of the main client since start (src/store/mongodb/pool-stats.ts):
   * checkouts, the seconds they waited in all, and those that gave up after `waitQueueTimeoutMS`.
   * Exposed as `parley_mongodb_pool_*` (docs/operations.md "What to monitor").
   */
  pool?(): PoolStats;
}

/** Connection checkouts since start (Store.pool). */
export interface PoolStats {
  checkouts: number;
  waitSeconds: number;
  timeouts: number;
}
