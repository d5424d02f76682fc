/**
 * `parley store copy`: every copied table (tables.ts) from a consistent snapshot of one store into
 * another, whichever their kinds, then a check that each table holds as many rows as the snapshot.
 */
import { CopyRefused, type CopySource, type CopyTarget } from './copy-side.js';
import { COPIED_TABLES } from './tables.js';

/** Rows read and written per step. */
export const COPY_BATCH = 500;

/** The rows of one table in the snapshot and in the target after the copy. */
export interface TableCount {
  table: string;
  source: number;
  target: number;
}

/** What a copy did: per table, the counts; `ok` when every table has as many rows as the snapshot. */
export interface CopyReport {
  tables: TableCount[];
  ok: boolean;
}

/** Progress of a copy: rows copied so far of `total`, and the table being copied. */
export type CopyProgress = (done: number, total: number, table: string) => void;

/**
 * Copies `source` into `target`. A target that holds data is refused (CopyRefused, nothing written)
 * unless `force`, which first clears it. Counts every table of the snapshot, copies them in order
 * (COPY_BATCH rows a step, `progress` after each), lets the target rebuild what the rows imply, then counts
 * the target's tables. Rejects with what either side throws (the target is then partly written).
 */
export async function copyStore(source: CopySource, target: CopyTarget, opts: { force: boolean; progress?: CopyProgress }): Promise<CopyReport> {
  const holding = await target.nonEmpty();
  if (holding.length > 0) {
    if (!opts.force) {
      throw new CopyRefused(`${target.description} already holds data (${holding.join(', ')}); nothing was copied. Pass --force to replace it.`);
    }
    await target.clear();
  }
  const counts = new Map<string, number>();
  for (const t of COPIED_TABLES) counts.set(t.name, await source.count(t));
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  let done = 0;
  opts.progress?.(0, total, COPIED_TABLES[0]!.name);
  for (const t of COPIED_TABLES) {
    for await (const rows of source.rows(t, COPY_BATCH)) {
      await target.insert(t, rows);
      done += rows.length;
      opts.progress?.(done, total, t.name);
    }
  }
  await target.finish();
  const tables: TableCount[] = [];
  for (const t of COPIED_TABLES) tables.push({ table: t.name, source: counts.get(t.name)!, target: await target.count(t) });
  return { tables, ok: tables.every((c) => c.source === c.target) };
}
