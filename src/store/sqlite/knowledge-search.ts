/**
 * The bm25 search of knowledge chunks (SQLite FTS5), shared by the reader thread
 * (src/store/sqlite/reader.worker.ts) and the main thread's connection (src/store/sqlite/reader.ts), so both
 * run the very same statement.
 */
import type Database from 'better-sqlite3';
import type { ChunkHit } from '../records.js';

/**
 * One search: the FTS5 MATCH expression (src/store/sqlite/search-query.ts `toFtsQuery`, never empty), the
 * organization, its knowledge bases (at least one) and the most hits wanted (k >= 1).
 */
export interface Bm25Search {
  match: string;
  orgId: string;
  kbIds: string[];
  k: number;
}

/**
 * A hit as the statement returns it, one array per row (raw mode: no object per row, and cheap to post
 * between threads): chunk id, document id, title, heading path, body, page (or null), bm25 rank (lower
 * is better, negative).
 */
export type Bm25Row = [string, string, string, string, string, number | null, number];

/**
 * The search statement for `n` knowledge bases: chunks of `ready` documents whose FTS row matches, best
 * bm25 first (column weights title 4, heading 2, body 1; ties by rowid). Bound parameters: match, org
 * id, the n knowledge base ids, limit.
 */
function bm25Sql(n: number): string {
  return `SELECT c.id, c.doc_id, c.title, c.heading, c.body, c.page, bm25(chunks_fts, 4.0, 2.0, 1.0) AS rank
    FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid JOIN documents d ON d.id = c.doc_id
    WHERE chunks_fts MATCH ? AND c.org_id = ? AND c.kb_id IN (${Array.from({ length: n }, () => '?').join(', ')}) AND d.status = 'ready'
    ORDER BY rank, c.rowid LIMIT ?`;
}

/** Most distinct knowledge-base counts whose prepared statement is kept per connection. */
const KEPT_STATEMENTS = 32;

/**
 * Runs bm25 searches on one connection, with the prepared statement per number of knowledge bases
 * (up to {@link KEPT_STATEMENTS} kept). Throws what SQLite throws (e.g. SQLITE_BUSY past busy_timeout).
 */
export class Bm25Searcher {
  private readonly statements = new Map<number, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  /** The rows of `s`, best first (at most `s.k`). */
  run(s: Bm25Search): Bm25Row[] {
    let stmt = this.statements.get(s.kbIds.length);
    if (stmt === undefined) {
      stmt = this.db.prepare(bm25Sql(s.kbIds.length)).raw(true);
      if (s.kbIds.length <= KEPT_STATEMENTS) this.statements.set(s.kbIds.length, stmt);
    }
    return stmt.all(s.match, s.orgId, ...s.kbIds, s.k) as Bm25Row[];
  }
}

/** A row as a ChunkHit; `score` is the bm25 relevance (the negated rank), rounded to 3 decimals. */
export function toChunkHit(r: Bm25Row): ChunkHit {
  return {
    document_id: r[1], chunk_id: r[0], title: r[2], heading: r[3], text: r[4], page: r[5] ?? null,
    score: Math.round(-r[6] * 1000) / 1000,
  };
}
