/**
 * The SQLite writer thread waits for the write lock itself (src/store/sqlite/write-lock.ts): while another
 * connection to the file (here a second real connection, as another process's would be) holds
 * `BEGIN IMMEDIATE`, a write stays pending and commits once the lock is released; past its deadline it
 * fails with SQLITE_BUSY, and the next write goes through once the lock is free. Runs the compiled worker
 * (npm run build).
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/sqlite/database.js';
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
