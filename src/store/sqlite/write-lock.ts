/**
 * Waiting for SQLite's write lock in short steps.
 *
 * SQLite lets one connection write at a time, across every process on the file. A connection that finds
 * the lock taken gets SQLITE_BUSY, or, with `PRAGMA busy_timeout`, waits in SQLite's default busy
 * handler, which sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, then 100 ms between attempts
 * (sqliteDefaultBusyCallback in SQLite's main.c). The lock is usually held for a commit (a millisecond or
 * a few), so a waiter often slept 25-100 ms past the moment it was freed, and under load from another
 * process it kept missing the short gaps between that process's commits: with two processes writing flat
 * out, writes waited up to a second (docs/scaling.md, "SQLite with several processes").
 *
 * Here a connection asks for the lock with the busy handler switched off (busy_timeout 0) and, while it
 * is refused, tries again after sleeps that start at {@link LOCK_WAIT}.firstSleepUs and double up to
 * maxSleepUs, for up to timeoutMs in all (the 5000 ms busy timeout it replaces); then it fails with the
 * same SQLITE_BUSY error as before. The sleeps are `Atomics.wait` on a private SharedArrayBuffer: a
 * synchronous sleep of a fraction of a millisecond, on a worker thread or (Node allows it) the main one.
 */
import type Database from 'better-sqlite3';

/** How long and how finely to wait for the write lock. */
export interface LockWait {
  /** Longest total wait, ms; then the last SQLITE_BUSY error is thrown. */
  timeoutMs: number;
  /** Sleep after the first refused attempt, µs. */
  firstSleepUs: number;
  /** Longest sleep between two attempts, µs (each sleep doubles the one before, up to this). */
  maxSleepUs: number;
}

/**
 * Parley's wait: 5000 ms in all, as `PRAGMA busy_timeout = 5000` did; sleeps of 50, 100, then 200 µs
 * (Atomics.wait adds ~80 µs on this host: an attempt every ~0.3 ms). A refused attempt costs ~8 µs of CPU,
 * so a waiting connection uses ~3% of a core. Longest sleeps of 200, 500 and 1000 µs were compared with the
 * scale bench's SQLite probe (two processes, 64 writes in flight each): the shorter the sleep, the more
 * often a waiter got in between two commits of the other process; write p99 24-27 ms, 36-63 ms and 52-64 ms
 * (docs/scaling.md, "SQLite with several processes").
 */
export const LOCK_WAIT: Readonly<LockWait> = Object.freeze({ timeoutMs: 5000, firstSleepUs: 50, maxSleepUs: 200 });

/** The time source and the sleep of a wait (tests pass their own). */
export interface LockClock {
  /** Now, ms (monotonic). */
  now(): number;
  /** Blocks the calling thread for about `us` microseconds. */
  sleep(us: number): void;
}

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the calling thread for about `us` µs (Atomics.wait on a cell nobody notifies; Linux wakes it within ~60 µs of the time). */
export function sleepMicros(us: number): void {
  Atomics.wait(sleepCell, 0, 0, us / 1000);
}

/** performance.now() and {@link sleepMicros}. */
export const SYSTEM_CLOCK: LockClock = Object.freeze({ now: () => performance.now(), sleep: sleepMicros });

/**
 * Whether `err` is SQLite's "the lock is taken": SQLITE_BUSY or one of its extended codes
 * (SQLITE_BUSY_RECOVERY, SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_TIMEOUT; https://www.sqlite.org/rescode.html#busy),
 * as better-sqlite3 names them in `err.code`.
 */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'));
}

/**
 * Runs `attempt` until it does not throw SQLITE_BUSY (see {@link isBusy}), sleeping between attempts as
 * `wait` says; returns what it returned. Any other error is thrown at once. When `wait.timeoutMs` has
 * passed since the first refusal, the last SQLITE_BUSY error is thrown. `attempt` must be safe to repeat
 * after SQLITE_BUSY (a statement that could not take its lock did nothing).
 */
export function retryWhileBusy<T>(attempt: () => T, wait: Readonly<LockWait> = LOCK_WAIT, clock: LockClock = SYSTEM_CLOCK): T {
  let deadline: number | undefined;
  let sleepUs = wait.firstSleepUs;
  for (;;) {
    try {
      return attempt();
    } catch (err) {
      if (!isBusy(err)) throw err;
      const now = clock.now();
      deadline ??= now + wait.timeoutMs;
      const leftUs = (deadline - now) * 1000;
      if (leftUs <= 0) throw err;
      clock.sleep(Math.min(sleepUs, leftUs));
      sleepUs = Math.min(sleepUs * 2, wait.maxSleepUs);
    }
  }
}

/** Options of {@link beginImmediate} and {@link writeTransaction}. */
export interface WriteLockOptions {
  /** How long and how finely to wait (default {@link LOCK_WAIT}). */
  wait?: Readonly<LockWait>;
  /** Time and sleep (default {@link SYSTEM_CLOCK}). */
  clock?: LockClock;
  /**
   * Whether the connection may have SQLite's busy handler on (`busy_timeout` above 0; default true): it
   * is then switched off while the lock is awaited here, and set back to its value after. The writer
   * thread's connection has none (busy_timeout 0 for good) and passes false, which saves two PRAGMAs a
   * commit.
   */
  busyHandler?: boolean;
}

type LockStatements = Record<'begin' | 'commit' | 'rollback', Database.Statement>;
const lockStatements = new WeakMap<Database.Database, LockStatements>();

function statements(db: Database.Database): LockStatements {
  let sql = lockStatements.get(db);
  if (sql === undefined) {
    sql = { begin: db.prepare('BEGIN IMMEDIATE'), commit: db.prepare('COMMIT'), rollback: db.prepare('ROLLBACK') };
    lockStatements.set(db, sql);
  }
  return sql;
}

/**
 * `BEGIN IMMEDIATE` on `db` (takes the write lock), waiting for the lock in short steps
 * ({@link retryWhileBusy}) rather than in SQLite's busy handler. A refused BEGIN leaves the connection
 * outside any transaction, so it can be run again. Must be called outside a transaction.
 * @throws the SQLITE_BUSY error once `wait.timeoutMs` has passed; what SQLite throws otherwise (SQLITE_IOERR, ...).
 */
export function beginImmediate(db: Database.Database, opts: WriteLockOptions = {}): void {
  const { begin } = statements(db);
  const attempt = () => { begin.run(); };
  if (opts.busyHandler === false) {
    retryWhileBusy(attempt, opts.wait, opts.clock);
    return;
  }
  // A PRAGMA assignment takes effect when it is prepared, so each goes through db.pragma, not a statement kept.
  const timeoutMs = db.pragma('busy_timeout', { simple: true }) as number;
  if (timeoutMs === 0) {
    retryWhileBusy(attempt, opts.wait, opts.clock);
    return;
  }
  db.pragma('busy_timeout = 0');
  try {
    retryWhileBusy(attempt, opts.wait, opts.clock);
  } finally {
    db.pragma(`busy_timeout = ${timeoutMs}`);
  }
}

/**
 * Runs `fn` (synchronous better-sqlite3 statements) in one write transaction on `db` and returns what it
 * returned: {@link beginImmediate}, `fn`, COMMIT; if `fn` throws, ROLLBACK and rethrow. Inside a
 * transaction already (a caller's), `fn` runs in a savepoint of it instead, as better-sqlite3's
 * `db.transaction()` does. For the writes of the main thread's connection: its event loop is held for
 * about as long as the lock is, not for the busy handler's sleeps.
 * @throws what beginImmediate throws (SQLITE_BUSY after the wait), what `fn` throws, what COMMIT throws.
 */
export function writeTransaction<T>(db: Database.Database, fn: () => T, opts: WriteLockOptions = {}): T {
  if (db.inTransaction) return db.transaction(fn)();
  beginImmediate(db, opts);
  const sql = statements(db);
  try {
    const result = fn();
    sql.commit.run();
    return result;
  } catch (err) {
    if (db.inTransaction) sql.rollback.run();
    throw err;
  }
}

/**
 * `fn` as a function that runs it in {@link writeTransaction} on `db`: the replacement, for the main
 * thread's connection, of better-sqlite3's `db.transaction(fn).immediate`, whose BEGIN IMMEDIATE waits in
 * SQLite's busy handler.
 */
export function lockedTransaction<A extends unknown[], T>(db: Database.Database, fn: (...args: A) => T, opts: WriteLockOptions = {}): (...args: A) => T {
  return (...args: A) => writeTransaction(db, () => fn(...args), opts);
}
