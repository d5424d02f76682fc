/**
 * FeedFollower (src/runtime/feed-follower.ts) on the real SQLite store: it hands out every entry written
 * after it started, once and in order; this process's own writes at once (no poll wait), another
 * connection's (another process) at the next poll; and a gap (entries pruned before they were read)
 * runs the gap handlers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { FeedFollower } from '../../src/runtime/feed-follower.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/ports.js';
import type { FeedEntry } from '../../src/store/records.js';

const dirs: string[] = [];
const stores: Store[] = [];
const followers: FeedFollower[] = [];
afterEach(async () => {
  for (const f of followers.splice(0)) await f.stop();
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(dir?: string): { store: Store; dir: string } {
  const d = dir ?? mkdtempSync(join(tmpdir(), 'parley-feed-'));
  if (dir === undefined) dirs.push(d);
  const store = createSqliteStore(d, { writer: 'main', reader: 'main' });
  stores.push(store);
  return { store, dir: d };
}

function follow(store: Store, pollMs = 10_000): { follower: FeedFollower; seen: FeedEntry[]; gaps: number[] } {
  const follower = new FeedFollower(store.feed, { logger: createLogger('silent'), pollMs });
  followers.push(follower);
  const seen: FeedEntry[] = [];
  const gaps: number[] = [];
  follower.onEntry((e) => seen.push(e));
  follower.onGap(() => gaps.push(seen.length));
  return { follower, seen, gaps };
}

const users = (seen: FeedEntry[]) => seen.map((e) => (e.kind === 'user' ? e.user_id : e.kind));

describe('FeedFollower', () => {
  it('starts at the head: only what is written after start, this process\'s writes at once, in order', async () => {
    const { store } = open();
    await store.feed.append([{ kind: 'user', user_id: 'usr_before' }], '2025-01-01T00:00:00.000Z');
    const { follower, seen } = follow(store);
    await follower.start();
    await store.feed.append([{ kind: 'user', user_id: 'usr_1' }, { kind: 'user', user_id: 'usr_2' }], '2025-01-01T00:00:01.000Z');
    await follower.poll(); // the append's signal already started this read; poll waits for it
    expect(users(seen)).toEqual(['usr_1', 'usr_2']);
    await follower.poll();
    expect(users(seen)).toEqual(['usr_1', 'usr_2']);
    expect(follower.position).toBe(seen[1]!.seq);
  });

  it('another connection\'s entries (another process) arrive at the next poll; a handler that throws does not stop the others', async () => {
    const a = open();
    const b = open(a.dir);
    const { follower, seen } = follow(a.store, 20);
    follower.onEntry(() => { throw new Error('broken handler'); });
    await follower.start();
    await b.store.feed.append([{ kind: 'member', org_id: 'org_1', user_id: 'usr_9' }], '2025-01-01T00:00:01.000Z');
    const deadline = Date.now() + 2000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(seen.map((e) => e.kind)).toEqual(['member']);
  });

  it('reads in batches: many entries come through complete and in order', async () => {
    const { store } = open();
    const follower = new FeedFollower(store.feed, { logger: createLogger('silent'), pollMs: 10_000, batch: 3 });
    followers.push(follower);
    const seen: FeedEntry[] = [];
    follower.onEntry((e) => seen.push(e));
    await follower.start();
    await store.feed.append(Array.from({ length: 10 }, (_, i) => ({ kind: 'user' as const, user_id: `usr_${i}` })), '2025-01-01T00:00:01.000Z');
    await follower.poll();
    expect(users(seen)).toEqual(Array.from({ length: 10 }, (_, i) => `usr_${i}`));
  });

  it('entries pruned before they were read: the gap handlers run, then the follower goes on', async () => {
    const a = open();
    const b = open(a.dir);
    const { follower, seen, gaps } = follow(a.store);
    await follower.start();
    await b.store.feed.append([{ kind: 'user', user_id: 'usr_lost' }], '2025-01-01T00:00:01.000Z');
    await b.store.feed.prune('2025-01-01T00:00:02.000Z');
    await b.store.feed.append([{ kind: 'user', user_id: 'usr_next' }], '2025-01-01T00:00:03.000Z');
    await follower.poll();
    expect(users(seen)).toEqual(['usr_next']);
    expect(gaps).toEqual([0]);
  });

  it('stop: nothing more is handed out', async () => {
    const { store } = open();
    const { follower, seen } = follow(store);
    await follower.start();
    await follower.stop();
    await store.feed.append([{ kind: 'user', user_id: 'usr_1' }], '2025-01-01T00:00:01.000Z');
    await follower.poll();
    expect(seen).toEqual([]);
  });
});
