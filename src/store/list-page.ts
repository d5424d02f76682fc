/**
 * List helpers every adapter shares (src/store/ports.ts "Lists"): the page made of `limit + 1` fetched
 * records, and the error of a cursor that names no record of the list.
 */
import { AppError } from '../errors/app-error.js';
import type { Page, PageRequest } from './records.js';

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
