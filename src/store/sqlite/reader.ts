/**
 * Where knowledge searches run: in a reader thread with its own query-only connection (default), so a
 * full-text query over a large index (milliseconds per search, growing with the index) never pauses the
 * streams the main event loop serves; or on the main thread's connection (`PARLEY_SQLITE_READER=main`).
 * SQLite's WAL mode lets the reader run while the writer thread commits; a search sees every commit
 * made before it started, on either connection.
 */
import type Database from 'better-sqlite3';
import { Worker } from 'node:worker_threads';
import { compiledWorkerUrl } from '../../workers/worker-file.js';
import { Bm25Searcher, type Bm25Row, type Bm25Search } from './knowledge-search.js';
import { fromWire, type WireError } from './writer.js';

/** A document's stored upload as read: the TEXT or BLOB and its is_text flag; null when none was stored; undefined when no such document. */
export type SourceRow = { content: string | Uint8Array; isText: boolean } | null | undefined;

/** Runs knowledge searches, and reads stored uploads. */
export interface KnowledgeReader {
  /** The rows of a bm25 search, best first. Rejects with what SQLite threw, or when the reader thread died. */
  search(s: Bm25Search): Promise<Bm25Row[]>;
  /**
   * The stored upload of document `docId` (several MB: read off the event loop by the reader thread, and
   * moved, not copied, to the caller). Rejects like `search`.
   */
  source(docId: string): Promise<SourceRow>;
  /** Waits for the searches in flight, then stops (a worker reader's thread ends); later searches reject. */
  close(): Promise<void>;
}

/** Which reader to use: `worker` (default; a reader thread) or `main` (the main thread's connection). */
export type ReaderKind = 'worker' | 'main';

/** A request to the reader thread: a search, or the stored upload of a document. */
export type ReaderRequest = { id: number; search: Bm25Search } | { id: number; source: string };

/** The reader thread's answer to one request. */
export type ReaderReply =
  | { id: number; ok: true; rows: Bm25Row[] }
  | { id: number; ok: true; source: SourceRow }
  | { id: number; ok: false; error: WireError };

/** SQL of {@link KnowledgeReader.source}: the upload of a document, or no row when the document is gone. */
export const SOURCE_SQL = `SELECT s.content AS content, s.is_text AS is_text
  FROM documents d LEFT JOIN document_sources s ON s.doc_id = d.id WHERE d.id = ?`;

/** A {@link SOURCE_SQL} row as a {@link SourceRow}. */
export function sourceOfRow(row: { content: unknown; is_text: unknown } | undefined): SourceRow {
  if (row === undefined) return undefined;
  if (row.content == null) return null;
  if (row.is_text === 1) return { content: row.content as string, isText: true };
  const buf = row.content as Buffer;
  return { content: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength), isText: false };
}

/** Searches on `db` itself, synchronously (the promise is settled when returned). */
export function createMainThreadReader(db: Database.Database): KnowledgeReader {
  const searcher = new Bm25Searcher(db);
  const source = db.prepare(SOURCE_SQL);
  let closed = false;
  return {
    source(docId) {
      if (closed) return Promise.reject(new Error('the store is closed'));
      try {
        return Promise.resolve(sourceOfRow(source.get(docId) as { content: unknown; is_text: unknown } | undefined));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    search(s) {
      if (closed) return Promise.reject(new Error('the store is closed'));
      try {
        return Promise.resolve(searcher.run(s));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    async close() {
      closed = true;
    },
  };
}

interface Pending {
  resolve: (value: never) => void;
  reject: (err: unknown) => void;
}

/**
 * A reader thread (reader.worker.ts, compiled) with its own connection to `file`, which the main thread
 * has opened and migrated. The thread starts with the first search (a server whose agents have no
 * knowledge never starts it) and handles one search at a time, in order; searches issued meanwhile
 * wait in its message queue. It does not keep the process alive while idle. If the thread dies, the
 * searches in flight reject with the reason and the next search starts a new thread.
 *
 * @throws Error when the compiled worker is missing (run `npm run build`).
 */
export function createWorkerReader(file: string): KnowledgeReader {
  const url = compiledWorkerUrl(import.meta.url, 'reader.worker.js');
  let worker: Worker | undefined;
  let nextId = 1;
  const pending = new Map<number, Pending>();
  let closed = false;
  let drained: (() => void) | undefined;

  function settle(id: number, outcome: (p: Pending) => void): void {
    const p = pending.get(id);
    if (p === undefined) return;
    pending.delete(id);
    outcome(p);
    if (pending.size === 0) {
      worker?.unref();
      drained?.();
    }
  }

  function start(): Worker {
    const w = new Worker(url, { workerData: { file } });
    w.on('message', (reply: ReaderReply) => {
      settle(reply.id, (p) => (!reply.ok ? p.reject(fromWire(reply.error)) : p.resolve(('rows' in reply ? reply.rows : reply.source) as never)));
    });
    const died = (reason: unknown) => {
      if (worker !== w) return;
      worker = undefined;
      const err = reason instanceof Error ? reason : new Error(`the SQLite reader thread stopped: ${String(reason)}`);
      for (const id of [...pending.keys()]) settle(id, (p) => p.reject(err));
    };
    w.on('error', died);
    w.on('exit', (code) => died(new Error(`the SQLite reader thread exited with code ${code}`)));
    return w;
  }

  function ask<T>(request: (id: number) => ReaderRequest): Promise<T> {
    if (closed) return Promise.reject(new Error('the store is closed'));
    return new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (value: never) => void, reject });
      worker ??= start();
      worker.ref();
      worker.postMessage(request(id));
    });
  }

  return {
    search: (s) => ask<Bm25Row[]>((id) => ({ id, search: s })),
    source: (docId) => ask<SourceRow>((id) => ({ id, source: docId })),
    async close() {
      closed = true;
      if (pending.size > 0) await new Promise<void>((resolve) => { drained = resolve; });
      const w = worker;
      worker = undefined;
      await w?.terminate();
    },
  };
}
