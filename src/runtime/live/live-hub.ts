import type { MessageRecord } from '../../store/records.js';
import type { ConversationStatus } from '../../vocabulary/conversation.js';
import type { Role } from '../../vocabulary/role.js';
import type { TurnChannel } from '../turn/turn-channel.js';

/**
 * What happens in a conversation, as live subscribers (sockets, operator views, the inbox) see it. The
 * objects are built only when someone subscribes to the conversation or its organization (see LiveHub).
 */
export type LiveEvent =
  /** A conversation started (first message stored). Organization topic only. */
  | { type: 'conversation.created'; orgId: string; conversationId: string; agentId: string }
  /** The conversation's status changed, after the change was stored. */
  | { type: 'conversation.status'; orgId: string; conversationId: string; status: ConversationStatus }
  /** A message was stored (visitor, agent or operator). `message` is the stored record: do not modify it. */
  | { type: 'message.created'; orgId: string; conversationId: string; message: MessageRecord }
  /**
   * A turn's channel was handed out (its visitor message is stored): an agent turn (`forwarded: false`)
   * or the three-event stream of a visitor message forwarded to people during a handoff (`forwarded: true`).
   * Subscribe to the channel to follow it; its events are replayable from the start.
   */
  | { type: 'turn.started'; orgId: string; conversationId: string; channel: TurnChannel; forwarded: boolean }
  /** A turn's stream ended: `done` with its finish reason, or `error` with its error code. Organization topic only. */
  | { type: 'turn.ended'; orgId: string; conversationId: string; turnId: string; finishReason: string | null; errorCode: string | null };

/** A live subscriber: `deliver` is called synchronously, in publish order; it must not throw (if it does, it is dropped). */
export interface LiveSubscriber {
  deliver(event: LiveEvent): void;
}

/**
 * The in-process pub/sub of live conversation events (API.md "WebSockets"), by conversation and by
 * organization, next to the domain event bus (src/events/event-bus.ts): the bus carries the durable
 * domain events for webhooks; the hub carries what open sockets need now, including turn channels,
 * which are not data.
 *
 * Cost on the chat path: each publish method first looks its topics up in two Maps and returns when
 * nobody listens, before building any event object, so a turn with no live watcher pays two Map
 * lookups per publish and allocates nothing.
 *
 * It also keeps access watchers: a socket watches the keys of what it was opened with (its sign-in,
 * person, membership, API key or public key: see {@link accessKeys}), and `accessChanged(key, change)`
 * (called by the feed follower when the store says that thing changed) tells each watcher, which closes
 * its socket or not.
 */
export class LiveHub {
  private readonly byConversation = new Map<string, Set<LiveSubscriber>>();
  private readonly byOrg = new Map<string, Set<LiveSubscriber>>();
  private readonly watchers = new Map<string, Set<(change: AccessChange) => void>>();

  /** Subscribes to one conversation's events; returns the unsubscribe function (idempotent). */
  subscribeConversation(conversationId: string, sub: LiveSubscriber): () => void {
    return add(this.byConversation, conversationId, sub);
  }

  /** Subscribes to every conversation event of an organization (the inbox); returns the unsubscribe function. */
  subscribeOrg(orgId: string, sub: LiveSubscriber): () => void {
    return add(this.byOrg, orgId, sub);
  }

  /** Subscribers of a conversation plus those of its organization (for tests and metrics). */
  listeners(orgId: string, conversationId: string): number {
    return (this.byConversation.get(conversationId)?.size ?? 0) + (this.byOrg.get(orgId)?.size ?? 0);
  }

  conversationCreated(orgId: string, conversationId: string, agentId: string): void {
    const org = this.byOrg.get(orgId);
    if (org === undefined) return;
    deliver(org, { type: 'conversation.created', orgId, conversationId, agentId });
  }

  statusChanged(orgId: string, conversationId: string, status: ConversationStatus): void {
    const conv = this.byConversation.get(conversationId);
    const org = this.byOrg.get(orgId);
    if (conv === undefined && org === undefined) return;
    const event: LiveEvent = { type: 'conversation.status', orgId, conversationId, status };
    if (conv !== undefined) deliver(conv, event);
    if (org !== undefined) deliver(org, event);
  }

  messageCreated(message: MessageRecord): void {
    const conv = this.byConversation.get(message.conversation_id);
    const org = this.byOrg.get(message.org_id);
    if (conv === undefined && org === undefined) return;
    const event: LiveEvent = { type: 'message.created', orgId: message.org_id, conversationId: message.conversation_id, message };
    if (conv !== undefined) deliver(conv, event);
    if (org !== undefined) deliver(org, event);
  }

  turnStarted(channel: TurnChannel, forwarded: boolean): void {
    const conv = this.byConversation.get(channel.conversationId);
    const org = this.byOrg.get(channel.orgId);
    if (conv === undefined && org === undefined) return;
    const event: LiveEvent = { type: 'turn.started', orgId: channel.orgId, conversationId: channel.conversationId, channel, forwarded };
    if (conv !== undefined) deliver(conv, event);
    if (org !== undefined) deliver(org, event);
  }

  /** Called once per channel when its terminal event was emitted (TurnRegistry's end hook). */
  turnEnded(channel: TurnChannel): void {
    const org = this.byOrg.get(channel.orgId);
    if (org === undefined) return;
    const last = channel.terminal;
    deliver(org, {
      type: 'turn.ended', orgId: channel.orgId, conversationId: channel.conversationId, turnId: channel.turnId,
      finishReason: last?.type === 'done' ? last.finish_reason : null, errorCode: last?.type === 'error' ? last.error.code : null,
    });
  }

  /**
   * Calls `listener` with every change of `key` from now on; returns the function that stops it
   * (idempotent). A socket watches while it is open and stops when it closes.
   */
  watchAccess(key: string, listener: (change: AccessChange) => void): () => void {
    let set = this.watchers.get(key);
    if (set === undefined) this.watchers.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      const s = this.watchers.get(key);
      if (s === undefined) return;
      s.delete(listener);
      if (s.size === 0) this.watchers.delete(key);
    };
  }

  /**
   * Tells every watcher of `key` of `change`; returns how many were told. A watcher that throws does not
   * stop the others.
   */
  accessChanged(key: string, change: AccessChange): number {
    const set = this.watchers.get(key);
    if (set === undefined) return 0;
    const told = [...set];
    for (const listener of told) {
      try { listener(change); } catch { /* a broken socket must not keep the others open */ }
    }
    return told.length;
  }

  /** Watchers of `key` (tests). */
  watching(key: string): number {
    return this.watchers.get(key)?.size ?? 0;
  }
}

/**
 * A change to what a socket was opened with (src/runtime/access-changes.ts sends them):
 * - `ended`: it no longer grants anything (`reason` is the error code a new request would get:
 *   `session_ended`, `invalid_token`, `revoked_api_key`, `unpublished`; or `erased`: the conversation a
 *   socket follows was erased);
 * - `role`: the person's role in the organization is now `role` (null: no longer a member).
 */
export type AccessChange =
  | { kind: 'ended'; reason: 'session_ended' | 'invalid_token' | 'revoked_api_key' | 'unpublished' | 'erased' }
  | { kind: 'role'; role: Role | null };

/** The access key of a sign-in (its refresh-token family id): logout, reuse, password change. */
export const sessionKey = (sessionId: string): string => `session:${sessionId}`;
/** The access key of a person: deleted, or their password changed. */
export const userKey = (userId: string): string => `user:${userId}`;
/** The access key of a person's membership of one organization: role changed or removed. */
export const memberKey = (orgId: string, userId: string): string => `member:${orgId}:${userId}`;
/** The access key of an API key: revoked, or past the grace period of a rotation. */
export const apiKeyKey = (keyId: string): string => `api_key:${keyId}`;
/** The access key of a public key: the agent was unpublished (or republished under another key) or deleted. */
export const publicKeyKey = (publicKey: string): string => `public:${publicKey}`;
/** The key of a conversation that sockets follow (listen-only, operator view): it was erased. */
export const conversationKey = (conversationId: string): string => `conversation:${conversationId}`;


function add(map: Map<string, Set<LiveSubscriber>>, key: string, sub: LiveSubscriber): () => void {
  let set = map.get(key);
  if (set === undefined) map.set(key, (set = new Set()));
  set.add(sub);
  return () => {
    const s = map.get(key);
    if (s === undefined || !s.delete(sub)) return;
    if (s.size === 0) map.delete(key);
  };
}

function deliver(set: Set<LiveSubscriber>, event: LiveEvent): void {
  for (const sub of set) {
    try { sub.deliver(event); } catch { set.delete(sub); }
  }
}
