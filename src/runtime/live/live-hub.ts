import type { MessageRecord } from '../../store/records.js';
import type { ConversationStatus } from '../../vocabulary/conversation.js';
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
 * It also keeps revocation hooks: a socket registers `onRevoked(key, close)` under the credential it
 * was opened with (`session:<sid>`, `public:<pk>`), and `revoke(key)` (logout, unpublish) closes them all.
 */
export class LiveHub {
  private readonly byConversation = new Map<string, Set<LiveSubscriber>>();
  private readonly byOrg = new Map<string, Set<LiveSubscriber>>();
  private readonly closers = new Map<string, Set<() => void>>();

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

  /** Registers `close` to run when `key` is revoked; returns the function that unregisters it. */
  onRevoked(key: string, close: () => void): () => void {
    let set = this.closers.get(key);
    if (set === undefined) this.closers.set(key, (set = new Set()));
    set.add(close);
    return () => {
      const s = this.closers.get(key);
      if (s === undefined) return;
      s.delete(close);
      if (s.size === 0) this.closers.delete(key);
    };
  }

  /** Runs (and forgets) every closer registered under `key`; returns how many ran. A closer that throws does not stop the others. */
  revoke(key: string): number {
    const set = this.closers.get(key);
    if (set === undefined) return 0;
    this.closers.delete(key);
    for (const close of set) {
      try { close(); } catch { /* a broken socket must not keep the others open */ }
    }
    return set.size;
  }
}

/** The revocation key of a sign-in (its refresh-token family id). */
export const sessionKey = (sessionId: string): string => `session:${sessionId}`;
/** The revocation key of a public key. */
export const publicKeyKey = (publicKey: string): string => `public:${publicKey}`;

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
