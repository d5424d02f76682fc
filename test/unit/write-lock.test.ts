/**
 * Waiting for SQLite's write lock in short steps (src/store/sqlite/write-lock.ts), with a second real
 * connection on a temp database file holding the lock. Clocks are injected: a test's "time" moves only
 * when the code under test sleeps, so nothing here depends on how fast the machine is.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyBatch } from '../../src/store/sqlite/group-commit.js';
import {
  beginImmediate, isBusy, LOCK_WAIT, retryWhileBusy, sleepMicros, writeTransaction, type LockClock,
} from '../../src/store/sqlite/write-lock.js';

/** A clock whose time advances by exactly what is slept; `onSleep` runs before each sleep returns. */
function fakeClock(onSleep: (n: number, us: number) => void = () => {}): LockClock & { sleeps: number[]; t: number } {
  const c = {
    t: 1000,
    sleeps: [] as number[],
    now: () => c.t,
    sleep(us: number) {
      c.sleeps.push(us);
      c.t += us / 1000;
      onSleep(c.sleeps.length, us);
    },
  };
  return c;
}

function busyError(code = 'SQLITE_BUSY'): Error {
  return Object.assign(new Error('database is locked'), { code });
}

describe('isBusy', () => {
  it('is true for SQLITE_BUSY and its extended codes, false for anything else', () => {
    expect(isBusy(busyError())).toBe(true);
    expect(isBusy(busyError('SQLITE_BUSY_RECOVERY'))).toBe(true);
    expect(isBusy(busyError('SQLITE_BUSY_SNAPSHOT'))).toBe(true);
    expect(isBusy(busyError('SQLITE_LOCKED'))).toBe(false);
    expect(isBusy(busyError('SQLITE_BUSYX'))).toBe(false);
    expect(isBusy(busyError('XSQLITE_BUSY'))).toBe(false);
    expect(isBusy(Object.assign(new Error('x'), { code: 5 }))).toBe(false);
    expect(isBusy(new Error('database is locked'))).toBe(false);
    expect(isBusy(null)).toBe(false);
    expect(isBusy(undefined)).toBe(false);
    expect(isBusy('SQLITE_BUSY')).toBe(false);
  });
});

describe('retryWhileBusy', () => {
  const wait = { timeoutMs: 1000, firstSleepUs: 10, maxSleepUs: 35 };

  it('returns at once, without sleeping, when the first attempt succeeds', () => {
    const clock = fakeClock();
    expect(retryWhileBusy(() => 'done', wait, clock)).toBe('done');
    expect(clock.sleeps).toEqual([]);
  });

  it('retries after SQLITE_BUSY with sleeps that double up to the longest, and returns what the attempt returned', () => {
    const clock = fakeClock();
    let calls = 0;
    const value = retryWhileBusy(() => {
      calls++;
      if (calls <= 5) throw busyError();
      return calls;
    }, wait, clock);
    expect(value).toBe(6);
    expect(clock.sleeps).toEqual([10, 20, 35, 35, 35]);
  });

  it('throws any other error at once, without sleeping', () => {
    const clock = fakeClock();
    const err = busyError('SQLITE_CONSTRAINT_UNIQUE');
    let calls = 0;
    expect(() => retryWhileBusy(() => { calls++; throw err; }, wait, clock)).toThrow(err);
    expect(calls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('gives up with the last SQLITE_BUSY error once timeoutMs has passed since the first refusal; the last sleep is cut to the time left', () => {
    const clock = fakeClock();
    let calls = 0;
    const errors: Error[] = [];
    const thrown = (() => {
      try {
        retryWhileBusy(() => { calls++; const e = busyError(); errors.push(e); throw e; }, { timeoutMs: 0.1, firstSleepUs: 30, maxSleepUs: 40 }, clock);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    // 100 µs in all: 30 + 40 + the 30 left (to the µs: the fake time is float ms).
    expect(clock.sleeps.map(Math.round)).toEqual([30, 40, 30]);
    expect(calls).toBe(4);
    expect(thrown).toBe(errors[3]);
  });

  it('waits by default as LOCK_WAIT says: 5000 ms in all, from 50 µs doubling to 200 µs', () => {
    expect(LOCK_WAIT).toEqual({ timeoutMs: 5000, firstSleepUs: 50, maxSleepUs: 200 });
    const clock = fakeClock();
    expect(() => retryWhileBusy(() => { throw busyError(); }, undefined, clock)).toThrow('database is locked');
    expect(clock.sleeps.slice(0, 4)).toEqual([50, 100, 200, 200]);
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBeCloseTo(5_000_000, 3);
  });
});

describe('sleepMicros', () => {
  it('returns after sleeping (Atomics.wait with a fractional timeout in ms)', () => {
    const t0 = performance.now();
    sleepMicros(2000);
    // At least the time asked (no upper bound: the machine may be busy).
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1.9);
  });
});

describe('with a second connection holding the write lock', () => {
  let dir: string;
  let holder: Database.Database;
  let db: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-write-lock-'));
    const file = join(dir, 'test.db');
    holder = new Database(file);
    holder.pragma('journal_mode = WAL');
    holder.exec('CREATE TABLE t (x INTEGER)');
    db = new Database(file);
    db.pragma('busy_timeout = 5000');
    holder.exec('BEGIN IMMEDIATE');
    holder.exec('INSERT INTO t VALUES (1)');
  });

  afterEach(() => {
    if (holder.inTransaction) holder.exec('ROLLBACK');
    holder.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const count = (c: Database.Database) => (c.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;

  it('beginImmediate retries BEGIN IMMEDIATE and takes the lock once the holder commits, with the busy handler off while it waits', () => {
    const seen: unknown[] = [];
    const clock = fakeClock((n) => {
      seen.push(db.pragma('busy_timeout', { simple: true }));
      if (n === 3) holder.exec('COMMIT');
    });
    beginImmediate(db, { clock });
    expect(clock.sleeps).toEqual([50, 100, 200]);
    expect(seen).toEqual([0, 0, 0]);
    expect(db.inTransaction).toBe(true);
    // It holds the lock now: the other connection cannot begin.
    holder.pragma('busy_timeout = 0');
    expect(() => holder.exec('BEGIN IMMEDIATE')).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
    db.exec('INSERT INTO t VALUES (2)');
    db.exec('COMMIT');
    expect(count(holder)).toBe(2);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
  });

  it('beginImmediate gives up with SQLITE_BUSY after a tiny deadline (real clock), outside any transaction, busy_timeout set back', () => {
    let thrown: unknown;
    try {
      beginImmediate(db, { wait: { timeoutMs: 3, firstSleepUs: 50, maxSleepUs: 200 } });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ code: 'SQLITE_BUSY' });
    expect(db.inTransaction).toBe(false);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    holder.exec('COMMIT');
    // The connection is usable afterwards.
    expect(() => beginImmediate(db)).not.toThrow();
    expect(db.inTransaction).toBe(true);
    db.exec('ROLLBACK');
  });

  it('beginImmediate leaves busy_timeout alone when told the connection has no busy handler', () => {
    // 1 ms: SQLite's handler sleeps once, 1 ms, then gives up; the connection's setting is what shows here.
    db.pragma('busy_timeout = 1');
    const seen: unknown[] = [];
    const clock = fakeClock((n) => {
      seen.push(db.pragma('busy_timeout', { simple: true }));
      if (n === 2) holder.exec('COMMIT');
    });
    beginImmediate(db, { clock, busyHandler: false });
    expect(clock.sleeps).toEqual([50, 100]);
    expect(seen).toEqual([1, 1]);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(1);
    expect(db.inTransaction).toBe(true);
    db.exec('ROLLBACK');
  });

  it('beginImmediate on a connection whose busy_timeout is 0 keeps it 0', () => {
    db.pragma('busy_timeout = 0');
    const clock = fakeClock((n) => { if (n === 1) holder.exec('COMMIT'); });
    beginImmediate(db, { clock });
    expect(clock.sleeps).toEqual([50]);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(0);
    db.exec('ROLLBACK');
  });

  it('applyBatch waits for the lock, then applies every run in one commit', () => {
    const clock = fakeClock((n) => { if (n === 2) holder.exec('COMMIT'); });
    const result = applyBatch(db, [
      () => db.prepare('INSERT INTO t VALUES (10)').run().changes,
      () => db.prepare('INSERT INTO t VALUES (11)').run().changes,
    ], { clock });
    expect(result).toEqual({ committed: true, outcomes: [{ ok: true, value: 1 }, { ok: true, value: 1 }] });
    expect(clock.sleeps).toEqual([50, 100]);
    expect(count(holder)).toBe(3);
  });

  it('applyBatch fails the whole batch with SQLITE_BUSY, running nothing, when the lock is not had by the deadline', () => {
    let ran = 0;
    const result = applyBatch(db, [() => { ran++; }], { wait: { timeoutMs: 0.5, firstSleepUs: 100, maxSleepUs: 100 }, clock: fakeClock() });
    expect(result.committed).toBe(false);
    expect(result).toMatchObject({ error: { code: 'SQLITE_BUSY' }, outcomes: [] });
    expect(ran).toBe(0);
    expect(db.inTransaction).toBe(false);
    holder.exec('COMMIT');
    expect(count(db)).toBe(1);
  });

  it('writeTransaction waits for the lock, commits what fn wrote and returns its value', () => {
    const clock = fakeClock((n) => { if (n === 4) holder.exec('COMMIT'); });
    const value = writeTransaction(db, () => db.prepare('INSERT INTO t VALUES (20)').run().changes, { clock });
    expect(value).toBe(1);
    expect(clock.sleeps).toEqual([50, 100, 200, 200]);
    expect(db.inTransaction).toBe(false);
    expect(count(holder)).toBe(2);
  });

  it('writeTransaction gives up with SQLITE_BUSY without running fn when the lock is not had by the deadline', () => {
    let ran = false;
    expect(() => writeTransaction(db, () => { ran = true; }, { wait: { timeoutMs: 1, firstSleepUs: 500, maxSleepUs: 500 }, clock: fakeClock() }))
      .toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
    expect(ran).toBe(false);
    expect(db.inTransaction).toBe(false);
  });
});

describe('writeTransaction', () => {
  let dir: string;
  let db: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-write-tx-'));
    db = new Database(join(dir, 'test.db'));
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (x INTEGER UNIQUE)');
  });

  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const rows = () => (db.prepare('SELECT x FROM t ORDER BY x').all() as Array<{ x: number }>).map((r) => r.x);

  it('rolls back everything fn wrote when fn throws, and rethrows', () => {
    const boom = new Error('boom');
    expect(() => writeTransaction(db, () => {
      db.prepare('INSERT INTO t VALUES (1)').run();
      throw boom;
    })).toThrow(boom);
    expect(db.inTransaction).toBe(false);
    expect(rows()).toEqual([]);
  });

  it('rethrows what fn threw when SQLite already ended the transaction under it (nothing left to roll back)', () => {
    const boom = new Error('boom');
    expect(() => writeTransaction(db, () => {
      db.prepare('INSERT INTO t VALUES (1)').run();
      db.exec('ROLLBACK');
      throw boom;
    })).toThrow(boom);
    expect(db.inTransaction).toBe(false);
    expect(rows()).toEqual([]);
  });

  it('rolls back when COMMIT fails (a deferred foreign key), and rethrows its error', () => {
    db.exec('CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)');
    db.pragma('foreign_keys = ON');
    expect(() => writeTransaction(db, () => db.prepare('INSERT INTO c VALUES (7)').run()))
      .toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' }));
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT count(*) AS n FROM c').get()).toEqual({ n: 0 });
  });

  it('inside a transaction already, runs fn in a savepoint of it: a throw undoes fn alone, and nothing commits before the outer COMMIT', () => {
    db.exec('BEGIN');
    db.prepare('INSERT INTO t VALUES (1)').run();
    expect(() => writeTransaction(db, () => {
      db.prepare('INSERT INTO t VALUES (2)').run();
      db.prepare('INSERT INTO t VALUES (1)').run();
    })).toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_UNIQUE' }));
    expect(db.inTransaction).toBe(true);
    expect(writeTransaction(db, () => db.prepare('INSERT INTO t VALUES (3)').run().changes)).toBe(1);
    expect(db.inTransaction).toBe(true);
    db.exec('ROLLBACK');
    expect(rows()).toEqual([]);
  });
});
