import type { AccessCache } from '../auth/access-cache.js';
import type { Logger } from '../log/logger.js';
import type { Store } from '../store/ports.js';
import type { FeedEntry } from '../store/records.js';
import type { AgentDirectory } from './agent-directory.js';
import type { FeedFollower } from './feed-follower.js';
import { apiKeyKey, memberKey, publicKeyKey, sessionKey, userKey, type LiveHub } from './live/live-hub.js';

/** What the access changes of the feed act on. */
export interface AccessChangeTargets {
  store: Pick<Store, 'apiKeys'>;
  /** Cached person checks (dropped on `user`, `member`, `session`). */
  access: AccessCache;
  /** Cached API-key lookups (dropped on `api_key`), when the store has such a cache. */
  apiKeys?: { forget(keyId: string): void; clear(): void } | undefined;
  /** Cached agents (dropped on `agent`). */
  agents: AgentDirectory;
  /** Open sockets, by what they were opened with. */
  live: LiveHub;
  /** Called on a `webhooks` entry: reload that organization's endpoints. */
  webhooksChanged?: ((orgId: string) => void) | undefined;
  logger: Logger;
}

/** Longest delay setTimeout takes, ms (2^31 - 1); a longer wait is re-armed in steps. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Makes the feed's changes take effect in this process (API.md "Auth endpoints": access ends within 1 s
 * on every process): drops the cached checks the change made stale, and tells the sockets opened with
 * what changed (LiveHub access watchers), which close:
 * - `user` (deleted, password changed): the person's sockets end (`invalid_token`);
 * - `session` (logout, reuse, password change): that sign-in's sockets end (`session_ended`);
 * - `member`: the member's sockets of that organization learn the role they now have (null: removed);
 * - `api_key`: revoked, or rotated with a grace period that is over: its sockets end
 *   (`revoked_api_key`); a grace period still running ends them when it runs out (a timer);
 * - `agent`: the cached agent goes; a public key that stopped working ends its sockets (`unpublished`);
 * - `webhooks`: the organization's endpoints are reloaded.
 * A gap in the feed (entries pruned unread) drops every cache. Returns the function that cancels the
 * pending grace-period timers.
 */
export function followAccessChanges(follower: FeedFollower, t: AccessChangeTargets): () => void {
  const graceTimers = new Map<string, NodeJS.Timeout>();

  const endKeyAt = (keyId: string, endsAt: number): void => {
    clearTimeout(graceTimers.get(keyId));
    const wait = endsAt - Date.now();
    if (wait <= 0) {
      graceTimers.delete(keyId);
      t.live.accessChanged(apiKeyKey(keyId), { kind: 'ended', reason: 'revoked_api_key' });
      return;
    }
    const timer = setTimeout(() => endKeyAt(keyId, endsAt), Math.min(wait, MAX_TIMER_MS));
    timer.unref();
    graceTimers.set(keyId, timer);
  };

  const apiKeyChanged = async (orgId: string, keyId: string): Promise<void> => {
    t.apiKeys?.forget(keyId);
    if (t.live.watching(apiKeyKey(keyId)) === 0) return;
    const key = await t.store.apiKeys.get(orgId, keyId);
    if (key === undefined || key.revoked_at !== null) return endKeyAt(keyId, 0);
    if (key.expires_at !== null) endKeyAt(keyId, Date.parse(key.expires_at));
  };

  const memberChanged = async (orgId: string, userId: string): Promise<void> => {
    t.access.forgetMember(orgId, userId);
    const key = memberKey(orgId, userId);
    if (t.live.watching(key) === 0) return;
    const check = await t.access.member(orgId, userId);
    t.live.accessChanged(key, { kind: 'role', role: check.status === 'member' ? check.role : null });
  };

  const failed = (entry: FeedEntry) => (err: unknown) => t.logger.error({ err, kind: entry.kind }, 'could not apply an access change to open sockets');

  follower.onEntry((e) => {
    switch (e.kind) {
      case 'user':
        t.access.forgetUser(e.user_id);
        t.live.accessChanged(userKey(e.user_id), { kind: 'ended', reason: 'invalid_token' });
        break;
      case 'session':
        t.access.forgetSession(e.session_id);
        t.live.accessChanged(sessionKey(e.session_id), { kind: 'ended', reason: 'session_ended' });
        break;
      case 'member':
        memberChanged(e.org_id, e.user_id).catch(failed(e));
        break;
      case 'api_key':
        apiKeyChanged(e.org_id, e.key_id).catch(failed(e));
        break;
      case 'agent':
        t.agents.invalidate(e.org_id, e.agent_id);
        if (e.public_key !== undefined) {
          t.agents.invalidatePublicKey(e.public_key);
          t.live.accessChanged(publicKeyKey(e.public_key), { kind: 'ended', reason: 'unpublished' });
        }
        break;
      case 'webhooks':
        t.webhooksChanged?.(e.org_id);
        break;
    }
  });
  follower.onGap(() => {
    t.access.clear();
    t.apiKeys?.clear();
    t.agents.clear();
  });
  return () => {
    for (const timer of graceTimers.values()) clearTimeout(timer);
    graceTimers.clear();
  };
}
