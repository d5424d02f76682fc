import type { Page, PageRequest } from '../records.js';

/**
 * Turns `limit + 1` fetched rows into an API.md page: `has_more` is true when the extra row exists.
 */
export function toPage<R, T>(rows: R[], page: PageRequest, map: (row: R) => T): Page<T> {
  const has_more = rows.length > page.limit;
  const data = (has_more ? rows.slice(0, page.limit) : rows).map(map);
  return { data, has_more };
}
