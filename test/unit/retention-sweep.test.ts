/**
 * The retention sweep (src/runtime/retention/retention-sweep.ts) on a real SQLite store in a temp dir:
 * which conversations it erases (by each organization's retention_days, else the default), in batches,
 * what it does with a conversation already gone or one that cannot be erased, and that one sweep runs at
 * a time. Time is injected (`now`), never read from the clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { createLogger } from '../../src/log/logger.js';
import { RetentionSweep } from '../../src/runtime/retention/retention-sweep.js';
import type { Store } from '../../src/store/ports.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const NOW = Date.parse('2026-03-01T00:00:00.000Z');
const DAY = 86_400_000;
let dir: string;
let store: Store;
let lines: Array<{ msg: string }>;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-retention-'));
  store = createSqliteStore(dir, { writer: 'main', reader: 'main' });
  for (const id of ['org_a', 'org_b']) await store.organizations.create({ id, name: id, created_at: '2026-01-01T00:00:00.000Z' });
  lines = [];
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A conversation of `org` last active `daysAgo` days before NOW. */
async function aged(org: string, id: string, daysAgo: number): Promise<void> {
  const at = new Date(NOW - daysAgo * DAY).toISOString();
  await store.conversations.create({ id, org_id: org, agent_id: 'agt_1', status: 'active', metadata: {}, visitor_token_hash: null, created_at: at, updated_at: at });
}

/** Erases through the store, as ConversationControl.erase does: not_found when already gone. */
const erase = async (orgId: string, id: string) => {
  if (!await store.conversations.erase(orgId, id, new Date(NOW).toISOString())) throw new AppError('not_found', 'No such conversation.');
};

function sweep(opts: Partial<ConstructorParameters<typeof RetentionSweep>[0]> = {}): RetentionSweep {
  const logger = createLogger('debug', { write: (l: string) => { lines.push(JSON.parse(l) as { msg: string }); } });
  return new RetentionSweep({ store, erase, defaultDays: undefined, logger, now: () => NOW, ...opts });
}

const left = async (org: string) => store.conversations.idleSince(org, new Date(NOW + DAY).toISOString(), 1000);

describe('RetentionSweep', () => {
  it('keeps everything when no organization sets retention_days and there is no default', async () => {
    await aged('org_a', 'conv_1', 1000);
    expect(await sweep().sweep()).toBe(0);
    expect(await left('org_a')).toEqual(['conv_1']);
  });

  it('erases what is idle for longer than the organization\'s own days, and only that (the boundary stays)', async () => {
    await store.organizations.setRetentionDays('org_a', 30);
    await aged('org_a', 'conv_old', 31);
    await aged('org_a', 'conv_edge', 30);
    await aged('org_a', 'conv_new', 29);
    await aged('org_b', 'conv_b', 400);
    expect(await sweep().sweep()).toBe(1);
    expect(await left('org_a')).toEqual(['conv_edge', 'conv_new']);
    expect(await left('org_b')).toEqual(['conv_b']);
    expect(lines.filter((l) => l.msg.startsWith('retention sweep: conversations past'))).toMatchObject([{ conversations: 1 }]);
    // Nothing more to erase: a second sweep (a new one, the first has ended) erases nothing and says nothing.
    expect(await sweep().sweep()).toBe(0);
    expect(lines.filter((l) => l.msg.startsWith('retention sweep: conversations past'))).toHaveLength(1);
  });

  it('runs on its own a minute after start, then every hour', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'] });
    const s = sweep({ defaultDays: 1 });
    try {
      await aged('org_a', 'conv_1', 5);
      s.start();
      await vi.advanceTimersByTimeAsync(59_000);
      expect(await left('org_a')).toEqual(['conv_1']);
      await vi.advanceTimersByTimeAsync(1_000);
      await vi.waitFor(async () => expect(await left('org_a')).toEqual([]));
      await aged('org_a', 'conv_2', 5);
      await vi.advanceTimersByTimeAsync(3_599_000);
      expect(await left('org_a')).toEqual(['conv_2']);
      await vi.advanceTimersByTimeAsync(1_000);
      await vi.waitFor(async () => expect(await left('org_a')).toEqual([]));
    } finally {
      await s.stop();
      vi.useRealTimers();
    }
  });

  it('a store that fails: the failure is logged and the sweep ends without erasing', async () => {
    await store.organizations.setRetentionDays('org_a', 1);
    await aged('org_a', 'conv_1', 5);
    const broken = (part: 'organizations' | 'conversations', method: string) => new Proxy(store, {
      get: (target, key) => (key === part ? { ...target[part], [method]: async () => { throw new Error('database is locked'); } } : target[key as keyof Store]),
    });
    expect(await sweep({ store: broken('organizations', 'retentionSettings') }).sweep()).toBe(0);
    expect(await sweep({ store: broken('conversations', 'idleSince') }).sweep()).toBe(0);
    expect(lines.map((l) => l.msg).filter((m) => m.startsWith('retention sweep: could not'))).toEqual([
      'retention sweep: could not read the organizations', 'retention sweep: could not list idle conversations',
    ]);
    expect(await left('org_a')).toEqual(['conv_1']);
  });

  it('the default applies to organizations without a setting; a setting wins over it', async () => {
    await store.organizations.setRetentionDays('org_b', 100);
    await aged('org_a', 'conv_a', 11);
    await aged('org_b', 'conv_b1', 11);
    await aged('org_b', 'conv_b2', 101);
    expect(await sweep({ defaultDays: 10 }).sweep()).toBe(2);
    expect(await left('org_a')).toEqual([]);
    expect(await left('org_b')).toEqual(['conv_b1']);
  });

  it('goes through every batch: seven conversations in batches of three', async () => {
    await store.organizations.setRetentionDays('org_a', 1);
    for (let i = 0; i < 7; i++) await aged('org_a', `conv_${i}`, 5);
    expect(await sweep({ batch: 3 }).sweep()).toBe(7);
    expect(await left('org_a')).toEqual([]);
  });

  it('a conversation gone already is skipped, not counted; one that cannot be erased is logged and the sweep ends', async () => {
    await store.organizations.setRetentionDays('org_a', 1);
    await store.organizations.setRetentionDays('org_b', 1);
    await aged('org_a', 'conv_1', 5);
    await aged('org_a', 'conv_2', 5);
    await aged('org_b', 'conv_3', 5);
    const gone = sweep({ erase: async (org, id) => { if (id === 'conv_1') throw new AppError('not_found', 'gone'); await erase(org, id); } });
    expect(await gone.sweep()).toBe(2);
    expect(await left('org_a')).toEqual(['conv_1']);
    // Every erasure fails: each failure is logged, and the sweep does not go round the same batch forever.
    const failing = sweep({ batch: 1, erase: async () => { throw new Error('disk full'); } });
    expect(await failing.sweep()).toBe(0);
    expect(lines.filter((l) => l.msg === 'retention sweep: could not erase a conversation')).toHaveLength(1);
  });

  it('one sweep at a time: a second call joins the first; stop() ends it between erasures', async () => {
    await store.organizations.setRetentionDays('org_a', 1);
    for (let i = 0; i < 4; i++) await aged('org_a', `conv_${i}`, 5);
    let calls = 0;
    let s: RetentionSweep | undefined;
    s = sweep({ batch: 2, erase: async (org, id) => { calls++; await erase(org, id); if (calls === 2) void s!.stop(); } });
    const [first, second] = [s.sweep(), s.sweep()];
    expect(second).toBe(first);
    expect(await first).toBe(2);
    expect(calls).toBe(2);
    expect((await left('org_a')).length).toBe(2);
  });
});
