/**
 * The SQLite writer thread waits for the write lock itself (src/store/sqlite/write-lock.ts): while another
 * connection to the file (here a second real connection, as another process's would be) holds
 * `BEGIN IMMEDIATE`, a write stays pending and commits once the lock is released; past its deadline it
 * fails with SQLITE_BUSY, and the next write goes through once the lock is free. Runs the compiled worker
 * (npm run build). And the writes that stay on the main thread's connection wait for the lock themselves
 * too, not in SQLite's busy handler.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { createWorkerWriter, type ConversationWriter } from '../../src/store/sqlite/writer.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SQLite writer thread and another connection holding the write lock', () => {
  let dir: string;
  let file: string;
  let main: Database.Database;
  let holder: Database.Database;
  let writer: ConversationWriter | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-write-lock-'));
    file = join(dir, 'parley.db');
    main = openDatabase(file);
    holder = new Database(file);
  });

  afterEach(async () => {
    if (holder.inTransaction) holder.exec('ROLLBACK');
    holder.close();
    await writer?.close();
    writer = undefined;
    main.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const register = (w: ConversationWriter, id: string) =>
    w.run('processRegister', { id, url: `http://${id}`, started_at: '2026-01-01T00:00:00.000Z', heartbeat_at: '2026-01-01T00:00:00.000Z', draining_at: null });
  const ids = () => (main.prepare('SELECT id FROM processes ORDER BY id').all() as Array<{ id: string }>).map((r) => r.id);

  it('keeps a write pending while the lock is held, and commits it once the holder commits', async () => {
    writer = createWorkerWriter(file, 'FULL');
    await register(writer, 'proc_a'); // the thread is up
    holder.exec('BEGIN IMMEDIATE');
    holder.prepare("INSERT INTO processes (id, url, started_at, heartbeat_at) VALUES ('proc_holder', 'x', 'x', 'x')").run();
    let settled: 'resolved' | 'rejected' | undefined;
    const pending = register(writer, 'proc_b').then(() => { settled = 'resolved'; }, (e: unknown) => { settled = 'rejected'; throw e; });
    await sleep(150);
    expect(settled).toBeUndefined();
    expect(ids()).toEqual(['proc_a']);
    holder.exec('COMMIT');
    await pending;
    expect(settled).toBe('resolved');
    expect(ids()).toEqual(['proc_a', 'proc_b', 'proc_holder']);
  });

  it('fails the write with SQLITE_BUSY once its (injected, tiny) deadline passed, and writes again once the lock is free', async () => {
    writer = createWorkerWriter(file, 'FULL', { lockTimeoutMs: 20 });
    await register(writer, 'proc_a');
    holder.exec('BEGIN IMMEDIATE');
    await expect(register(writer, 'proc_b')).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
    holder.exec('ROLLBACK');
    await register(writer, 'proc_c');
    expect(ids()).toEqual(['proc_a', 'proc_c']);
    // The 3 s test timeout is 150 times the deadline given, and short of the 5 s a busy handler or the
    // default deadline would wait: this fails if the thread does not honour the deadline it was given.
  }, 3000);
});

/**
 * A thread with its own connection to `file` that, on each `hold(ms)`, takes the write lock
 * (BEGIN IMMEDIATE), says so, keeps it for `ms` while blocked (as a commit of another process would),
 * and commits.
 */
function lockHolder(file: string): { hold(ms: number): Promise<void>; close(): Promise<number> } {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads');
    const Database = require(workerData.driver);
    const db = new Database(workerData.file);
    const cell = new Int32Array(new SharedArrayBuffer(4));
    parentPort.on('message', (ms) => {
      db.exec('BEGIN IMMEDIATE');
      parentPort.postMessage('held');
      Atomics.wait(cell, 0, 0, ms);
      db.exec('COMMIT');
    });
  `, { eval: true, workerData: { file, driver: createRequire(import.meta.url).resolve('better-sqlite3') } });
  return {
    hold: (ms) => new Promise((resolve) => {
      worker.once('message', () => resolve());
      worker.postMessage(ms);
    }),
    close: () => worker.terminate(),
  };
}

describe('writes on the main thread\'s connection while another connection holds the write lock', () => {
  it('each waits for the lock by itself (with SQLite\'s busy handler off) and is stored once the holder commits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-main-lock-'));
    const store = createSqliteStore(dir, { writer: 'main', reader: 'main' });
    const holder = lockHolder(join(dir, 'parley.db'));
    try {
      // Without a busy handler, a write that does not wait by itself fails at once with SQLITE_BUSY.
      store.db.pragma('busy_timeout = 0');
      const at = '2026-01-01T00:00:00.000Z';
      const writes: Array<[string, () => Promise<unknown>]> = [
        ['organizations.create', () => store.organizations.create({ id: 'org_1', name: 'One', created_at: at })],
        ['organizations.setRetentionDays', () => store.organizations.setRetentionDays('org_1', 30)],
        ['users.create', () => store.users.create({ id: 'usr_1', email: 'a@example.com', password_hash: null, access_valid_after: null, created_at: at, updated_at: at })],
        ['users.setPasswordHash', () => store.users.setPasswordHash('usr_1', 'hash', at)],
        ['memberships.add', () => store.memberships.add({ org_id: 'org_1', user_id: 'usr_1', role: 'owner', created_at: at })],
        ['apiKeys.create', () => store.apiKeys.create({ id: 'key_1', org_id: 'org_1', name: 'k', key_hash: 'h1', last4: 'abcd', created_at: at, revoked_at: null, expires_at: null })],
        ['apiKeys.revoke', () => store.apiKeys.revoke('org_1', 'key_1', at)],
        ['knowledge.createBase', () => store.knowledge.createBase({ id: 'kb_1', org_id: 'org_1', name: 'kb', created_at: at })],
        ['knowledge.deleteBase', () => store.knowledge.deleteBase('org_1', 'kb_1')],
        ['feed.append', () => store.feed.append([{ kind: 'user', user_id: 'usr_1' }], at)],
        ['processes.clusterSecret', () => store.processes.clusterSecret('s3cret')],
        // Group commit on the main thread (PARLEY_SQLITE_WRITER=main).
        ['conversations.create', () => store.conversations.create({
          id: 'conv_1', org_id: 'org_1', agent_id: 'agt_1', status: 'active', metadata: {}, visitor_token_hash: null, created_at: at, updated_at: at,
        })],
      ];
      const outcomes: Record<string, unknown> = {};
      for (const [name, write] of writes) {
        await holder.hold(150);
        outcomes[name] = await write().then((v) => v ?? 'ok', (e: unknown) => `failed: ${(e as { code?: string }).code ?? String(e)}`);
      }
      expect(outcomes).toEqual({
        'organizations.create': 'ok', 'organizations.setRetentionDays': true, 'users.create': true, 'users.setPasswordHash': true,
        'memberships.add': true, 'apiKeys.create': 'ok', 'apiKeys.revoke': true, 'knowledge.createBase': 'ok', 'knowledge.deleteBase': true,
        'feed.append': 'ok', 'processes.clusterSecret': 's3cret', 'conversations.create': 'ok',
      });
      expect(await store.organizations.retentionDays('org_1')).toBe(30);
      expect((await store.apiKeys.get('org_1', 'key_1'))?.revoked_at).toBe(at);
      expect(await store.conversations.get('org_1', 'conv_1')).toMatchObject({ id: 'conv_1' });
      expect(store.db.pragma('busy_timeout', { simple: true })).toBe(0);
    } finally {
      await holder.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
