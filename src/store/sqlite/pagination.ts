import type Database from 'better-sqlite3';
import { AppError } from '../../errors/app-error.js';
import type { Page, PageRequest } from '../records.js';
import type { Row } from './rows.js';

/**
 * Turns `limit + 1` fetched rows into an API.md page: `has_more` is true when the extra row exists.
 */
export function toPage<R, T>(rows: R[], page: PageRequest, map: (row: R) => T): Page<T> {
  const has_more = rows.length > page.limit;
  const data = (has_more ? rows.slice(0, page.limit) : rows).map(map);
  return { data, has_more };
}

/**
 * The error of a list whose `after` cursor names no record of the list's scope (ports.ts "Lists"):
 * AppError `validation_failed` (400) with `errors: [{ path: 'after', message: 'unknown cursor' }]`.
 * `thing` names the list's records, e.g. `agent`.
 */
export function unknownCursor(thing: string): AppError {
  return new AppError('validation_failed', `The cursor \`after\` names no ${thing} of this list.`, {
    errors: [{ path: 'after', message: 'unknown cursor' }],
  });
}

/**
 * A newest-first list of an org-scoped table keyed by time-sortable ids (Stripe list order): `scope` is
 * the SQL condition (with `?` placeholders, `scopeParams`) every record of the list satisfies, e.g.
 * `org_id = ?`; `filter` narrows the rows returned but not the records a cursor may name. Reads
 * `page.limit + 1` rows after the cursor (ids below it) for toPage().
 * Throws unknownCursor(`thing`) when `page.after` names no record in `scope`.
 */
export class NewestFirstList {
  private readonly exists: Database.Statement;
  /** Prepared page queries by SQL text (one per filter shape and cursor presence). */
  private readonly pages = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    private readonly table: string,
    private readonly scope: string,
    private readonly thing: string,
  ) {
    this.exists = db.prepare(`SELECT 1 FROM ${table} WHERE ${scope} AND id = ?`);
  }

  /**
   * The rows of one page: `scopeParams` fill `scope`'s placeholders; `filter` is SQL appended after it
   * (starting with ` AND `, placeholders filled by `filterParams`). Throws unknownCursor(`thing`).
   */
  rows(scopeParams: unknown[], page: PageRequest, filter = '', filterParams: unknown[] = []): Row[] {
    if (page.after !== undefined && this.exists.get(...scopeParams, page.after) === undefined) throw unknownCursor(this.thing);
    const after = page.after === undefined ? '' : ' AND id < ?';
    const sql = `SELECT * FROM ${this.table} WHERE ${this.scope}${filter}${after} ORDER BY id DESC LIMIT ?`;
    const args = [...scopeParams, ...filterParams, ...(page.after === undefined ? [] : [page.after]), page.limit + 1];
    let stmt = this.pages.get(sql);
    if (stmt === undefined) { stmt = this.db.prepare(sql); this.pages.set(sql, stmt); }
    return stmt.all(...args) as Row[];
  }
}
