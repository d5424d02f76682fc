import type Database from 'better-sqlite3';
import { beginImmediate, type WriteLockOptions } from './write-lock.js';

interface PendingWrite {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** What happened to one write of a batch before the commit. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** SQLite rolled the whole transaction back while a write ran (SQLITE_FULL, SQLITE_IOERR, ...): the batch is lost. */
class TransactionLost {
  constructor(readonly cause: unknown) {}
}

/** The result of applyBatch: per-write outcomes, or the error that lost the whole transaction. */
export type BatchResult = { committed: true; outcomes: Outcome[] } | { committed: false; error: unknown; outcomes: Outcome[] };

/**
 * Applies `runs` in ONE transaction on `db`, each inside its own SAVEPOINT, in order, then commits.
 * A run that throws is rolled back to its savepoint alone (its outcome is the error, the others go on).
 * When the transaction itself fails (BEGIN or COMMIT fails, or SQLite rolls the whole transaction back
 * under a run), nothing is stored: `committed` is false, and `outcomes` covers the runs applied before the
 * failure (a run whose outcome failed keeps that error; every other run lost the transaction). Used by GroupCommit (main thread) and by the writer thread
 * (src/store/sqlite/writer.worker.ts), so both commit the same way. Never throws.
 *
 * The write lock is taken with `BEGIN IMMEDIATE`, waited for in short steps while another connection (of
 * this process or another) holds it: `lock` says how (src/store/sqlite/write-lock.ts beginImmediate; by
 * default SQLite's busy handler is switched off for the wait and the connection's busy_timeout bounds it).
 * When the lock is not had within that time, the batch fails with SQLITE_BUSY before any run ran.
 */
export function applyBatch(db: Database.Database, runs: ReadonlyArray<() => unknown>, lock: WriteLockOptions = {}): BatchResult {
  const outcomes: Outcome[] = [];
  let sql: BatchStatements | undefined;
  try {
    sql = batchStatements(db);
    beginImmediate(db, lock);
    for (const run of runs) {
      sql.savepoint.run();
      let value: unknown;
      try {
        value = run();
      } catch (error) {
        if (!db.inTransaction) throw new TransactionLost(error);
        sql.rollbackTo.run();
        sql.release.run();
        outcomes.push({ ok: false, error });
        continue;
      }
      sql.release.run();
      outcomes.push({ ok: true, value });
    }
    sql.commit.run();
  } catch (thrown) {
    const error = thrown instanceof TransactionLost ? thrown.cause : thrown;
    if (sql !== undefined && db.open && db.inTransaction) {
      try { sql.rollback.run(); } catch { /* the transaction is gone either way */ }
    }
    return { committed: false, error, outcomes };
  }
  return { committed: true, outcomes };
}

type BatchStatements = Record<'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo', Database.Statement>;
const prepared = new WeakMap<Database.Database, BatchStatements>();

function batchStatements(db: Database.Database): BatchStatements {
  let sql = prepared.get(db);
  if (sql === undefined) {
    sql = {
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT group_commit_write'),
      release: db.prepare('RELEASE group_commit_write'),
      rollbackTo: db.prepare('ROLLBACK TO group_commit_write'),
    };
    prepared.set(db, sql);
  }
  return sql;
}

/**
 * Group commit for the hot-path writes (conversations, messages): writes issued in the same event-loop
 * turn are applied in ONE transaction at `setImmediate`, so N concurrent turns cost one WAL commit (one
 * fsync with synchronous=FULL, ≈0.7 ms on this machine's disk) instead of N.
 *
 * Guarantees:
 * - Writes apply in the order they were issued.
 * - Each write runs inside its own SAVEPOINT: a write that throws is rolled back to its savepoint alone
 *   (its promise rejects with what it threw; the others go on and commit).
 * - A promise resolves, with what its `run` returned, only after the COMMIT succeeded, so "durable
 *   before the client is told" (DESIGN.md "Store") holds.
 * - When the transaction itself fails (BEGIN or COMMIT fails, e.g. SQLITE_BUSY, SQLITE_IOERR,
 *   SQLITE_FULL, a deferred foreign key, or SQLite rolls the whole transaction back under a write), nothing
 *   of the batch is stored and every write that had not already failed on its own rejects with that error.
 */
export class GroupCommit {
  private queue: PendingWrite[] = [];
  private scheduled = false;
  /** Transactions committed so far (one per non-empty flush that committed). */
  committed = 0;

  constructor(private readonly db: Database.Database) {}

  /**
   * Queues `run` (synchronous better-sqlite3 statements; it must not start or end a transaction of its
   * own, nested `db.transaction()` functions are fine) for the next commit. Resolves with its return
   * value after the commit; rejects as described on the class.
   */
  write<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Applies and commits everything queued (also called on close). Never throws: failures go to the writes' promises. */
  flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    const result = applyBatch(this.db, batch.map((w) => w.run));
    if (!result.committed) {
      // Writes that failed on their own keep their own error; the others lost the transaction.
      batch.forEach((w, i) => {
        const o = result.outcomes[i];
        w.reject(o !== undefined && !o.ok ? o.error : result.error);
      });
      return;
    }
    this.committed++;
    batch.forEach((w, i) => {
      const o = result.outcomes[i]!;
      if (o.ok) w.resolve(o.value);
      else w.reject(o.error);
    });
  }
}
