import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CachedApiKeys } from '../../src/store/cached-api-keys.js';
import type { ApiKeyRecord } from '../../src/store/records.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const T0 = '2026-01-01T00:00:00.000Z';
const key = (id: string, hash: string): ApiKeyRecord => ({
  id, org_id: 'org_A', name: id, key_hash: hash, last4: 'abcd', created_at: T0, revoked_at: null, expires_at: null,
});

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

/** The cache over a real SQLite store, counting the lookups that reach the store, with a clock the test moves. */
async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'parley-keycache-'));
  dirs.push(dir);
  const store = createSqliteStore(dir);
  await store.organizations.create({ id: 'org_A', name: 'A', created_at: T0 });
  let reads = 0;
  const counting = { ...store.apiKeys, findByHash: (h: string) => { reads++; return store.apiKeys.findByHash(h); } };
  let now = 1_000_000;
  const cache = new CachedApiKeys(counting, 5_000, 3, () => now);
  return { store, cache, reads: () => reads, advance: (ms: number) => { now += ms; } };
}

describe('CachedApiKeys', () => {
  it('answers repeated lookups from memory until the TTL passes, unknown hashes included', async () => {
    const t = await setup();
    await t.cache.create(key('key_1', 'h1'));
    expect((await t.cache.findByHash('h1'))?.id).toBe('key_1');
    expect((await t.cache.findByHash('h1'))?.id).toBe('key_1');
    expect(await t.cache.findByHash('nope')).toBeUndefined();
    expect(await t.cache.findByHash('nope')).toBeUndefined();
    expect(t.reads()).toBe(2);
    t.advance(5_001);
    await t.cache.findByHash('h1');
    expect(t.reads()).toBe(3);
    await t.store.close();
  });

  it('a revocation through the cache applies at once', async () => {
    const t = await setup();
    await t.cache.create(key('key_1', 'h1'));
    expect((await t.cache.findByHash('h1'))?.revoked_at).toBeNull();
    expect(await t.cache.revoke('org_A', 'key_1', T0)).toBe(true);
    expect((await t.cache.findByHash('h1'))?.revoked_at).toBe(T0);
    await t.store.close();
  });

  it('a rotation through the cache applies at once, and the new key is found', async () => {
    const t = await setup();
    await t.cache.create(key('key_1', 'h1'));
    expect(await t.cache.findByHash('h2')).toBeUndefined(); // cached as unknown
    await t.cache.findByHash('h1');
    expect(await t.cache.rotate('org_A', 'key_1', key('key_2', 'h2'), null, T0)).toBe(true);
    expect((await t.cache.findByHash('h1'))?.revoked_at).toBe(T0);
    expect((await t.cache.findByHash('h2'))?.id).toBe('key_2');
    await t.store.close();
  });

  it('keeps at most maxEntries hashes, dropping the oldest', async () => {
    const t = await setup();
    for (const h of ['a', 'b', 'c', 'd']) await t.cache.findByHash(h);
    expect(t.reads()).toBe(4);
    await t.cache.findByHash('d');
    expect(t.reads()).toBe(4);
    await t.cache.findByHash('a'); // dropped: read again
    expect(t.reads()).toBe(5);
    await t.store.close();
  });
});
