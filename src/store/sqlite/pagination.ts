import type Database from 'better-sqlite3';
import type { PageRequest } from '../records.js';
import { unknownCursor } from '../list-page.js';
import type { Row } from './rows.js';

export { toPage, unknownCursor } from '../list-page.js';

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
