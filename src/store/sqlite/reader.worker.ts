/**
 * The SQLite reader thread (src/store/sqlite/reader.ts): owns a query-only connection to the database
 * file the main thread opened and migrated, and answers knowledge searches (bm25 over FTS5) one at a
 * time, so a slow full-text query never holds up the main event loop.
 *
 * Messages in: `{id: integer, search: Bm25Search}`. Out: `{id, ok: true, rows}` or `{id, ok: false, error}`.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { Bm25Searcher, type Bm25Search } from './knowledge-search.js';
import type { ReaderReply, ReaderRequest } from './reader.js';

const init = workerData as { file: unknown };
if (typeof init?.file !== 'string') throw new TypeError('the SQLite reader thread needs workerData {file: string}');

const db = new Database(init.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
// Reads only: a bug that tried to write here fails instead of taking the write lock from the writer thread.
db.pragma('query_only = ON');
const searcher = new Bm25Searcher(db);

/** Checks a request from the main thread (this process's own code: checked by hand, not with zod). */
function parseRequest(message: unknown): ReaderRequest {
  const m = message as { id?: unknown; search?: Partial<Bm25Search> };
  const s = m?.search;
  if (!Number.isInteger(m?.id) || typeof s?.match !== 'string' || typeof s.orgId !== 'string' || !Array.isArray(s.kbIds)
    || !s.kbIds.every((k) => typeof k === 'string') || !Number.isInteger(s.k)) {
    throw new TypeError('the SQLite reader thread got a malformed request');
  }
  return m as ReaderRequest;
}

parentPort!.on('message', (message: unknown) => {
  const request = parseRequest(message);
  let reply: ReaderReply;
  try {
    reply = { id: request.id, ok: true, rows: searcher.run(request.search) };
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    reply = { id: request.id, ok: false, error: { name: e.name, message: e.message, code: (e as Error & { code?: string }).code } };
  }
  parentPort!.postMessage(reply);
});
