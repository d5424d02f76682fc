/**
 * The SQLite writer thread (src/store/sqlite/writer.ts): owns a write connection to the database file the
 * main thread opened and migrated, and commits each batch it receives as one transaction (one savepoint
 * per write, src/store/sqlite/group-commit.ts), then answers with an outcome per write. Its fsyncs and WAL
 * checkpoints happen on this thread, never on the main event loop.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { CONVERSATION_WRITES } from './conversation-writes.js';
import { applyBatch } from './group-commit.js';
import { batchSynchronous } from './knowledge-writes.js';
import type { BatchReply, WireError, WriteRequest } from './writer.js';
import { LOCK_WAIT } from './write-lock.js';

// The messages come from this process's own main thread (writer.ts), so they are checked by hand rather
// than with zod: importing zod alone takes about 55 ms of a worker's start (it starts with the first write).
const init = workerData as { file: unknown; sync: unknown; lockTimeoutMs?: unknown };
if (typeof init?.file !== 'string' || (init.sync !== 'FULL' && init.sync !== 'NORMAL')
  || (init.lockTimeoutMs !== undefined && !(typeof init.lockTimeoutMs === 'number' && init.lockTimeoutMs >= 0))) {
  throw new TypeError('the SQLite writer thread needs workerData {file: string, sync: "FULL" | "NORMAL", lockTimeoutMs?: number >= 0}');
}

/** Checks a batch from the main thread: `{id: integer, writes: [{op: a CONVERSATION_WRITES name, args}]}`. */
function parseBatch(message: unknown): { id: number; writes: WriteRequest[] } {
  const m = message as { id?: unknown; writes?: unknown };
  if (!Number.isInteger(m?.id) || !Array.isArray(m.writes)) throw new TypeError('the SQLite writer thread got a malformed batch');
  for (const w of m.writes as Array<{ op?: unknown }>) {
    if (typeof w?.op !== 'string' || !Object.hasOwn(CONVERSATION_WRITES, w.op)) throw new TypeError(`unknown write ${String(w?.op)}`);
  }
  return m as { id: number; writes: WriteRequest[] };
}

const db = new Database(init.file);
const configuredSync = init.sync as 'FULL' | 'NORMAL';

/**
 * The connection's `synchronous` level as SQLite reports it (1 is NORMAL, 2 FULL:
 * https://www.sqlite.org/pragma.html#pragma_synchronous). Prepared anew each time (a few µs), like
 * {@link setSync}: a PRAGMA's code is generated when it is prepared.
 */
function currentSync(): 'FULL' | 'NORMAL' {
  return db.pragma('synchronous', { simple: true }) === 1 ? 'NORMAL' : 'FULL';
}

/**
 * Sets the connection's `synchronous` level. Through `db.pragma`, never a statement prepared once and
 * run later: SQLite applies a PRAGMA assignment when the statement is prepared, so preparing
 * `PRAGMA synchronous = NORMAL` ahead of time switched the connection to NORMAL there and then, and
 * running a prepared `= FULL` later did not reliably switch it back (cc1ef03 prepared both at start:
 * until the first ingestion, every chat commit of the writer thread skipped its fsync).
 */
function setSync(level: 'FULL' | 'NORMAL'): void {
  db.pragma(`synchronous = ${level}`);
}

setSync(configuredSync);
// No busy handler: a batch waits for the write lock in applyBatch, trying again every 50-200 µs for up to
// 5 s (src/store/sqlite/write-lock.ts), not in SQLite's sleeps of up to 100 ms. Nothing else this
// connection does waits for a lock: it reads only inside its own write transactions.
db.pragma('busy_timeout = 0');
db.pragma('foreign_keys = ON');
// As on the main connection (database.ts openDatabase): deleted content is overwritten, not left in free pages.
db.pragma('secure_delete = ON');

/** How this thread's batches wait for the write lock (the connection has no busy handler): LOCK_WAIT, or the time the main thread gave. */
const WRITE_LOCK = {
  wait: init.lockTimeoutMs === undefined ? LOCK_WAIT : { ...LOCK_WAIT, timeoutMs: init.lockTimeoutMs as number },
  busyHandler: false,
} as const;

function toWire(err: unknown): WireError {
  if (err instanceof Error) return { name: err.name, message: err.message, code: (err as Error & { code?: string }).code };
  return { name: 'Error', message: String(err) };
}

parentPort!.on('message', (message: unknown) => {
  const batch = parseBatch(message);
  const wanted = batchSynchronous(batch.writes.map((w) => w.op), configuredSync);
  // What this commit uses, read back from SQLite for every batch (once more after a switch): the reply
  // reports the level actually in force.
  let level = currentSync();
  if (level !== wanted) {
    setSync(wanted);
    level = currentSync();
  }
  const result = applyBatch(db, batch.writes.map((w) => () => (CONVERSATION_WRITES[w.op] as (d: Database.Database, a: unknown) => unknown)(db, w.args)), WRITE_LOCK);
  const reply: BatchReply = {
    id: batch.id,
    synchronous: result.committed ? level : undefined,
    outcomes: batch.writes.map((_w, i) => {
      const o = result.outcomes[i];
      if (result.committed) return o!.ok ? { ok: true, value: o!.value } : { ok: false, error: toWire(o!.error) };
      return { ok: false, error: toWire(o !== undefined && !o.ok ? o.error : result.error) };
    }),
  };
  parentPort!.postMessage(reply);
});
