/**
 * Where the hot-path writes (conversations, messages) are committed: on the main thread (GroupCommit) or
 * in a writer thread that owns its own connection, so that the commit's fsync and the WAL checkpoints
 * never block the event loop (`PARLEY_SQLITE_WRITER`). Both group-commit: the writes issued in one
 * event-loop turn share one transaction, apply in issue order, each in its own savepoint, and resolve only
 * after the commit (src/store/sqlite/group-commit.ts).
 */
import type Database from 'better-sqlite3';
import { Worker } from 'node:worker_threads';
import { compiledWorkerUrl } from '../../workers/worker-file.js';
import { CONVERSATION_WRITES, type ConversationWriteArgs, type ConversationWriteName, type ConversationWriteResult } from './conversation-writes.js';
import type { SqliteSync } from './database.js';
import { GroupCommit } from './group-commit.js';

/** Commits conversation writes. */
export interface ConversationWriter {
  /**
   * Queues write `op` for the next group commit; resolves with its result once committed (durable per `sync`).
   * `transfer`: ArrayBuffers inside `args` that a writer thread may take instead of copying (they are
   * detached for the caller); the main-thread writer ignores it.
   */
  run<K extends ConversationWriteName>(op: K, args: ConversationWriteArgs<K>, transfer?: ArrayBuffer[]): Promise<ConversationWriteResult<K>>;
  /** Commits what is queued and waits for every write issued so far; then no more writes are taken. */
  close(): Promise<void>;
  /** Transactions committed since the writer started, by the `synchronous` level they committed at. */
  commits(): CommitCounts;
}

/**
 * Committed transactions by `PRAGMA synchronous` level: `full` ones fsync the WAL at commit, `normal` ones
 * do not (https://www.sqlite.org/pragma.html#pragma_synchronous; knowledge-writes.ts `batchSynchronous`).
 */
export interface CommitCounts {
  full: number;
  normal: number;
}

/** Which writer to use: `worker` (default; a writer thread) or `main` (group commit on the main thread). */
export type WriterKind = 'worker' | 'main';

/** Group commit on the main thread's connection. */
export function createMainThreadWriter(db: Database.Database, sync: SqliteSync = 'FULL'): ConversationWriter {
  const commits = new GroupCommit(db);
  return {
    commits: () => (sync === 'FULL' ? { full: commits.committed, normal: 0 } : { full: 0, normal: commits.committed }),
    run(op, args) {
      const fn = CONVERSATION_WRITES[op] as (db: Database.Database, a: typeof args) => ReturnType<(typeof CONVERSATION_WRITES)[typeof op]>;
      return commits.write(() => fn(db, args)) as never;
    },
    async close() {
      commits.flush();
    },
  };
}

/** A write as sent to the writer thread. */
export interface WriteRequest {
  op: ConversationWriteName;
  args: unknown;
}

/** A serialized error (structured clone keeps no prototype). */
export interface WireError {
  name: string;
  message: string;
  code?: string | undefined;
}

/** The writer thread's answer to one batch: an outcome per write, in order. */
export interface BatchReply {
  id: number;
  /** The `synchronous` level the batch committed at, as SQLite reported it; absent when nothing was committed. */
  synchronous?: 'FULL' | 'NORMAL' | undefined;
  outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: WireError }>;
}

/** The Error a WireError describes (name, message and SQLite code kept; no stack). */
export function fromWire(e: WireError): Error {
  const err = new Error(e.message);
  err.name = e.name;
  if (e.code !== undefined) (err as Error & { code?: string }).code = e.code;
  return err;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Options of createWorkerWriter. */
export interface WorkerWriterOptions {
  /**
   * How long a batch waits for SQLite's write lock while another connection holds it before it fails
   * with SQLITE_BUSY, ms (default 5000, LOCK_WAIT in src/store/sqlite/write-lock.ts; tests pass less).
   */
  lockTimeoutMs?: number;
}

/**
 * A writer thread (writer.worker.ts, compiled) with its own connection to `file`, opened after the main
 * thread ran the migrations. Its batches wait for the write lock, when another connection (of this
 * process or another) holds it, in steps of 50-200 µs rather than in SQLite's busy handler
 * (src/store/sqlite/write-lock.ts). A write that finds the thread idle is posted at once; one batch is in
 * flight at a time, and writes issued meanwhile wait and go as the next batch, so the batch grows with
 * the load (one fsync for all of them). If the thread dies, the
 * writes in flight reject with the reason and the next write starts a new thread.
 *
 * @throws Error when the compiled worker is missing (run `npm run build`).
 */
export function createWorkerWriter(file: string, sync: SqliteSync, opts: WorkerWriterOptions = {}): ConversationWriter {
  const url = compiledWorkerUrl(import.meta.url, 'writer.worker.js');
  let worker: Worker | undefined;
  let nextId = 1;
  let queued: WriteRequest[] = [];
  let queuedWaiters: Pending[] = [];
  /** Buffers the queued writes hand over (documents' uploads): moved, not cloned, with their batch. */
  let queuedTransfers: ArrayBuffer[] = [];
  let inFlight: { id: number; waiters: Pending[] } | undefined;
  let closed = false;
  let idle: (() => void) | undefined;
  const counts: CommitCounts = { full: 0, normal: 0 };

  function start(): Worker {
    const w = new Worker(url, { workerData: { file, sync, ...(opts.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: opts.lockTimeoutMs }) } });
    w.on('message', (reply: BatchReply) => {
      const batch = inFlight;
      if (!batch || batch.id !== reply.id) return;
      inFlight = undefined;
      if (reply.synchronous === 'FULL') counts.full++;
      else if (reply.synchronous === 'NORMAL') counts.normal++;
      reply.outcomes.forEach((o, i) => {
        const p = batch.waiters[i]!;
        if (o.ok) p.resolve(o.value);
        else p.reject(fromWire(o.error));
      });
      send();
    });
    const died = (reason: unknown) => {
      if (worker !== w) return;
      worker = undefined;
      const batch = inFlight;
      inFlight = undefined;
      const err = reason instanceof Error ? reason : new Error(`the SQLite writer thread stopped: ${String(reason)}`);
      for (const p of batch?.waiters ?? []) p.reject(err);
      send();
    };
    w.on('error', died);
    w.on('exit', (code) => died(new Error(`the SQLite writer thread exited with code ${code}`)));
    return w;
  }

  function send(): void {
    if (inFlight !== undefined) return;
    if (queued.length === 0) {
      idle?.();
      return;
    }
    const id = nextId++;
    inFlight = { id, waiters: queuedWaiters };
    const writes = queued;
    const transfers = queuedTransfers;
    queued = [];
    queuedWaiters = [];
    queuedTransfers = [];
    worker ??= start();
    // Cloning a batch of uploads here once held the event loop for 340 ms (50 uploads of 9 MB, issue 35).
    worker.postMessage({ id, writes }, transfers);
  }

  return {
    commits: () => ({ ...counts }),
    run(op, args, transfer) {
      if (closed) return Promise.reject(new Error('the store is closed'));
      return new Promise((resolve, reject) => {
        queued.push({ op, args });
        if (transfer !== undefined) queuedTransfers.push(...transfer);
        queuedWaiters.push({ resolve: resolve as (v: unknown) => void, reject });
        // Leader/follower group commit: a write that finds the thread idle leaves at once (a commit is on
        // the latency path of every chat turn: its first event waits for it); while a batch is in flight,
        // writes wait and leave together when it is answered, so batches grow with the load.
        send();
      });
    },
    async close() {
      closed = true;
      if (inFlight !== undefined || queued.length > 0) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          send();
        });
      }
      await worker?.terminate();
      worker = undefined;
    },
  };
}
