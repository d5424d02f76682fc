import type { MembershipsPort, RefreshTokensPort } from '../store/ports.js';
import type { MemberCheck } from '../store/records.js';

/** Options of {@link AccessCache}. */
export interface AccessCacheOptions {
  /**
   * An entry is trusted this long at most, ms (default 60 s): a safety net only. Entries are dropped when
   * the feed tells of the change (src/runtime/feed-follower.ts), within 1 s on every process.
   */
  ttlMs?: number;
  /** Entries kept at most per map (default 20,000); past it the oldest go first. */
  maxEntries?: number;
  /** Current time, ms since the epoch (default Date.now). */
  now?: () => number;
}

interface Entry<T> {
  value: T;
  expiresAt: number;
}

/**
 * What a person's token may do now, read through a cache: the membership check (the person exists, their
 * role in an organization, their `access_valid_after`) and whether a sign-in (refresh-token family) has
 * ended. A request with a person's token asks both; on a hit it costs two Map lookups and no store read.
 *
 * Invalidation: `forgetUser`, `forgetMember` and `forgetSession` drop what a change made stale; the feed
 * follower calls them for every `user`, `member` and `session` entry, whichever process wrote it. A read
 * that was in flight when anything was forgotten is returned to its caller but not kept (one generation
 * number, bumped by every forget: forgets are rare, and a read not kept is only read again), so a stale
 * answer never outlives the invalidation that came after it.
 */
export class AccessCache {
  private readonly members = new Map<string, Entry<MemberCheck>>();
  private readonly sessions = new Map<string, Entry<boolean>>();
  /** Bumped by every forget: reads in flight across a forget are not kept. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(private readonly memberships: Pick<MembershipsPort, 'check'>, private readonly refreshTokens: Pick<RefreshTokensPort, 'getFamily'>, opts: AccessCacheOptions = {}) {
    this.ttlMs = opts.ttlMs ?? 60_000;
    this.maxEntries = opts.maxEntries ?? 20_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * MembershipsPort.check of person `userId` in `orgId`: synchronously from the cache, else a promise of
   * the store read (which is then cached). Throws (rejects) what the store throws.
   */
  member(orgId: string, userId: string): MemberCheck | Promise<MemberCheck> {
    const key = `${orgId}/${userId}`;
    const now = this.now();
    const hit = this.members.get(key);
    if (hit !== undefined && hit.expiresAt > now) return hit.value;
    const gen = this.generation;
    return this.memberships.check(orgId, userId).then((value) => {
      if (this.generation === gen) this.put(this.members, key, value, now);
      return value;
    });
  }

  /**
   * True when the sign-in `sessionId` has ended (its family was revoked, or it no longer exists): its
   * tokens are refused. Synchronously from the cache, else a promise of the store read.
   */
  sessionEnded(sessionId: string): boolean | Promise<boolean> {
    const now = this.now();
    const hit = this.sessions.get(sessionId);
    if (hit !== undefined && hit.expiresAt > now) return hit.value;
    const gen = this.generation;
    return this.refreshTokens.getFamily(sessionId).then((family) => {
      const ended = family === undefined || family.revoked_at !== null;
      if (this.generation === gen) this.put(this.sessions, sessionId, ended, now);
      return ended;
    });
  }

  /** Drops every cached check of person `userId` (deleted, or their password changed). */
  forgetUser(userId: string): void {
    this.generation++;
    const suffix = `/${userId}`;
    for (const key of this.members.keys()) if (key.endsWith(suffix)) this.members.delete(key);
  }

  /** Drops the cached check of `userId` in `orgId` (added, role changed, removed). */
  forgetMember(orgId: string, userId: string): void {
    this.generation++;
    this.members.delete(`${orgId}/${userId}`);
  }

  /** Drops the cached state of sign-in `sessionId` (it was revoked). */
  forgetSession(sessionId: string): void {
    this.generation++;
    this.sessions.delete(sessionId);
  }

  /** Drops everything (the feed had a gap: changes may have been missed). */
  clear(): void {
    this.generation++;
    this.members.clear();
    this.sessions.clear();
  }

  /** Entries cached (members + sessions), for tests and metrics. */
  get size(): number {
    return this.members.size + this.sessions.size;
  }

  private put<T>(map: Map<string, Entry<T>>, key: string, value: T, now: number): void {
    map.delete(key); // re-inserted last: the Map stays ordered oldest first
    map.set(key, { value, expiresAt: now + this.ttlMs });
    if (map.size > this.maxEntries) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }
}
