import type { ApiKeysPort, Store } from './ports.js';
import type { ApiKeyRecord } from './records.js';

interface Entry {
  record: ApiKeyRecord | undefined;
  expiresAt: number;
}

/**
 * An ApiKeysPort that answers `findByHash` (every API-key request) from memory for `ttlMs`, unknown hashes
 * included, and otherwise passes through. A key revoked or rotated through this instance is forgotten at
 * once, so its next use is refused at once; a change by another process is forgotten when the store feed
 * tells of it (`forget`, within about 100 ms), and within `ttlMs` at most. At most `maxEntries` hashes are kept, the oldest dropped first.
 */
export class CachedApiKeys implements ApiKeysPort {
  private readonly byHash = new Map<string, Entry>();

  constructor(private readonly inner: ApiKeysPort, private readonly ttlMs = 5_000, private readonly maxEntries = 10_000, private readonly now: () => number = Date.now) {}

  async create(rec: ApiKeyRecord): Promise<void> {
    await this.inner.create(rec);
    this.byHash.delete(rec.key_hash);
  }

  async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const now = this.now();
    const hit = this.byHash.get(keyHash);
    if (hit !== undefined && hit.expiresAt > now) return hit.record;
    const record = await this.inner.findByHash(keyHash);
    this.byHash.delete(keyHash); // re-inserted last: the Map stays ordered oldest first
    this.byHash.set(keyHash, { record, expiresAt: now + this.ttlMs });
    if (this.byHash.size > this.maxEntries) {
      const oldest = this.byHash.keys().next().value;
      if (oldest !== undefined) this.byHash.delete(oldest);
    }
    return record;
  }

  get(orgId: string, id: string): ReturnType<ApiKeysPort['get']> {
    return this.inner.get(orgId, id);
  }

  list(orgId: string, page: Parameters<ApiKeysPort['list']>[1]): ReturnType<ApiKeysPort['list']> {
    return this.inner.list(orgId, page);
  }

  async revoke(orgId: string, id: string, at: string): Promise<boolean> {
    const done = await this.inner.revoke(orgId, id, at);
    this.forgetKey(id);
    return done;
  }

  async rotate(orgId: string, id: string, next: ApiKeyRecord, graceEndsAt: string | null, at: string): Promise<boolean> {
    const done = await this.inner.rotate(orgId, id, next, graceEndsAt, at);
    this.forgetKey(id);
    this.byHash.delete(next.key_hash);
    return done;
  }

  /** Drops the cached lookups of key `id` (revoked or rotated, here or by another process: the feed tells). */
  forget(id: string): void {
    this.forgetKey(id);
  }

  /** Drops every cached lookup. */
  clear(): void {
    this.byHash.clear();
  }

  /** Drops the cached lookups of key `id` (its hash is only known from a cached record). */
  private forgetKey(id: string): void {
    for (const [hash, e] of this.byHash) if (e.record?.id === id) this.byHash.delete(hash);
  }
}

/** `store` with its API-key lookups cached (see CachedApiKeys). */
export function withApiKeyCache<S extends Store>(store: S, ttlMs?: number): S & { apiKeys: CachedApiKeys } {
  return { ...store, apiKeys: new CachedApiKeys(store.apiKeys, ttlMs) };
}
