import type { Collection, Document, Filter } from 'mongodb';
import type { PageRequest } from '../records.js';
import { unknownCursor } from '../list-page.js';

/**
 * The query of one page of a newest-first list (Stripe list order: descending time-sortable ids):
 * the records in `scope`, narrowed by `filter`, with ids below the cursor `after` when there is one.
 */
export function pageQuery(scope: Document, filter: Document, after: string | undefined): Document {
  return after === undefined ? { ...filter, ...scope } : { ...filter, ...scope, _id: { $lt: after } };
}

/**
 * The documents of one page of a newest-first list of `coll` (src/store/ports.ts "Lists"): `scope` is
 * what every record of the list satisfies (a cursor must name one of them), `filter` narrows what the
 * page returns. Reads `page.limit + 1` documents, for toPage(). Rejects with unknownCursor(`thing`) when
 * `page.after` names no record in `scope`.
 */
export async function newestFirst<D extends Document>(
  coll: Collection<D>, scope: Filter<D>, page: PageRequest, thing: string, filter: Filter<D> = {},
): Promise<D[]> {
  if (page.after !== undefined && (await coll.countDocuments({ ...scope, _id: page.after } as Filter<D>, { limit: 1 })) === 0) {
    throw unknownCursor(thing);
  }
  return (await coll.find(pageQuery(scope, filter, page.after) as Filter<D>).sort({ _id: -1 }).limit(page.limit + 1).toArray()) as D[];
}
