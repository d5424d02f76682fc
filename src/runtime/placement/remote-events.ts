/**
 * Conversations run by other processes, as this process's live subscribers see them (DESIGN.md "Several
 * processes": events reach sockets on every process). The owner of a conversation records a feed entry
 * with every stored change (FeedChange `conversation`, `status`, `message`); this module turns the
 * entries other processes wrote into the same LiveHub events a local conversation publishes, so an
 * operator's view, the inbox and a visitor's listen socket on this process work unchanged:
 *
 * - `conversation` -> `conversation.created`; `status` -> `conversation.status`;
 * - `message` -> `message.created` (the stored message, read from the store); a visitor message that
 *   starts a turn is then followed: a mirror of the owner's turn channel (remote-turns.ts), published as
 *   `turn.started` with every token, and `turn.ended` when it ends.
 *
 * Nothing is read or followed for a conversation nobody here listens to (neither it nor its
 * organization). The entries of one conversation are handled one after the other, in feed order, so its
 * events keep their order; entries this process wrote itself are skipped (its subscribers had them first-hand).
 */
import type { Logger } from '../../log/logger.js';
import type { Store } from '../../store/ports.js';
import type { FeedEntry } from '../../store/records.js';
import type { FeedFollower } from '../feed-follower.js';
import type { LiveHub } from '../live/live-hub.js';
import type { TurnChannel } from '../turn/turn-channel.js';
import type { RemoteTurns } from './remote-turns.js';

/** What remote events need. */
export interface RemoteEventDeps {
  /** This process's id: its own entries are skipped. */
  selfId: string;
  live: LiveHub;
  store: Pick<Store, 'conversations' | 'leases'>;
  remote: RemoteTurns;
  /** The address of a live process by id (the registry), when known. */
  urlOf: (processId: string) => string | undefined;
  logger: Logger;
}

/** Follows the feed's conversation entries of other processes into `deps.live` (see the module comment). */
export function followRemoteEvents(follower: FeedFollower, deps: RemoteEventDeps): void {
  /** The work queued per conversation, so its events are published in feed order. */
  const chains = new Map<string, Promise<void>>();
  const enqueue = (conversationId: string, work: () => Promise<void>) => {
    const prev = chains.get(conversationId) ?? Promise.resolve();
    const next = prev.then(work).catch((err: unknown) => deps.logger.warn({ err, conversation_id: conversationId }, 'could not relay a conversation event of another process'));
    chains.set(conversationId, next);
    void next.then(() => { if (chains.get(conversationId) === next) chains.delete(conversationId); });
  };

  follower.onEntry((e: FeedEntry) => {
    if (e.kind !== 'conversation' && e.kind !== 'status' && e.kind !== 'message') return;
    if (e.origin === deps.selfId || deps.live.listeners(e.org_id, e.conversation_id) === 0) return;
    switch (e.kind) {
      case 'conversation':
        enqueue(e.conversation_id, async () => deps.live.conversationCreated(e.org_id, e.conversation_id, e.agent_id));
        break;
      case 'status':
        enqueue(e.conversation_id, async () => deps.live.statusChanged(e.org_id, e.conversation_id, e.status));
        break;
      case 'message':
        enqueue(e.conversation_id, async () => {
          const message = await deps.store.conversations.getMessage(e.org_id, e.message_id);
          if (message !== undefined) deps.live.messageCreated(message);
          if (e.role !== 'visitor' || e.turn_id === null) return;
          const mirror = await follow(e.org_id, e.conversation_id, e.turn_id, e.origin);
          if (mirror === undefined) return;
          deps.live.turnStarted(mirror, false);
          announceEnd(mirror);
        });
        break;
    }
  });

  /** The mirror of a turn started by `origin` (or by the conversation's owner, when `origin` is not known alive). */
  async function follow(orgId: string, conversationId: string, turnId: string, origin: string): Promise<TurnChannel | undefined> {
    let url = deps.urlOf(origin);
    if (url === undefined) {
      const lease = await deps.store.leases.get(conversationId);
      url = lease?.owner_url;
    }
    if (url === undefined) return undefined;
    return deps.remote.follow(url, orgId, turnId);
  }

  /** Publishes `turn.ended` when a followed mirror ends (as the local TurnRegistry does for local turns). */
  function announceEnd(mirror: TurnChannel): void {
    if (mirror.ended) {
      deps.live.turnEnded(mirror);
      return;
    }
    mirror.subscribe({ onEvent: () => {}, onEnd: () => deps.live.turnEnded(mirror) });
  }
}
