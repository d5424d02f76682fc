import type Database from 'better-sqlite3';
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
 * Newest-first rows of an org-scoped table keyed by time-sortable ids (Stripe list order): `limit + 1`
 * rows with ids below `page.after`, for toPage(). `extraWhere` (with `?` placeholders) follows `org_id = ?`.
 */
export function newestFirst(db: Database.Database, table: string, extraWhere: string, params: unknown[], page: PageRequest): Row[] {
  const after = page.after === undefined ? '' : ' AND id < ?';
  const sql = `SELECT * FROM ${table} WHERE org_id = ?${extraWhere}${after} ORDER BY id DESC LIMIT ?`;
  const args = page.after === undefined ? [...params, page.limit + 1] : [...params, page.after, page.limit + 1];
  return db.prepare(sql).all(...args) as Row[];
}
