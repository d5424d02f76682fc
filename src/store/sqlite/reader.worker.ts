/**
 * The SQLite reader thread (src/store/sqlite/reader.ts): owns a query-only connection to the database
 * file the main thread opened and migrated, and answers knowledge searches (bm25 over FTS5) one at a
 * time, so a slow full-text query never holds up the main event loop.
 *
 * Messages in: `{id: integer, search: Bm25Search}` or `{id, source: doc_id}` (a stored upload: several MB
 * read here rather than on the event loop, and moved to the main thread, not copied). Out: `{id, ok: true,
 * rows}`, `{id, ok: true, source}` or `{id, ok: false, error}`.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { Bm25Searcher, type Bm25Search } from './knowledge-search.js';
import { SOURCE_SQL, sourceOfRow, type ReaderReply, type ReaderRequest } from './reader.js';

const init = workerData as { file: unknown };
if (typeof init?.file !== 'string') throw new TypeError('the SQLite reader thread needs workerData {file: string}');

const db = new Database(init.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
// Reads only: a bug that tried to write here fails instead of taking the write lock from the writer thread.
db.pragma('query_only = ON');
const searcher = new Bm25Searcher(db);
const source = db.prepare(SOURCE_SQL);

/** Checks a request from the main thread (this process's own code: checked by hand, not with zod). */
function parseRequest(message: unknown): ReaderRequest {
  const m = message as { id?: unknown; search?: Partial<Bm25Search>; source?: unknown };
  if (Number.isInteger(m?.id) && typeof m.source === 'string') return m as ReaderRequest;
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
  const transfer: ArrayBuffer[] = [];
  try {
    if ('source' in request) {
      const row = sourceOfRow(source.get(request.source) as { content: unknown; is_text: unknown } | undefined);
      const bytes = row?.content;
      // The blob's own memory moves to the main thread (copied here first when it is a slice of a larger buffer).
      if (bytes instanceof Uint8Array) {
        const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice();
        row!.content = own;
        transfer.push(own.buffer as ArrayBuffer);
      }
      reply = { id: request.id, ok: true, source: row };
    } else {
      reply = { id: request.id, ok: true, rows: searcher.run(request.search) };
    }
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    reply = { id: request.id, ok: false, error: { name: e.name, message: e.message, code: (e as Error & { code?: string }).code } };
  }
  parentPort!.postMessage(reply, transfer);
});
