/**
 * `npm run parley -- store copy --from <data dir | mongodb URI> --to <data dir | mongodb URI> [--force]`:
 * a store copied into another, with a progress bar and the row counts of every table checked at the end
 * (src/store/copy/). SQLite to SQLite makes a backup of a live data dir; SQLite to MongoDB moves up;
 * MongoDB to SQLite moves down. Exit codes: 0 copied and counted, 1 refused or counts differ.
 */
import { SingleBar } from 'cli-progress';
import { resolve } from 'node:path';
import type { Config } from '../config/config.js';
import { hostsOf } from '../store/mongodb/connection.js';
import { CopyRefused, type CopySource, type CopyTarget } from '../store/copy/copy-side.js';
import { copyStore } from '../store/copy/copy-store.js';
import { openMongoSource, openMongoTarget } from '../store/copy/mongo-side.js';
import { openSqliteSource, openSqliteTarget } from '../store/copy/sqlite-side.js';

/** True when `where` is a MongoDB connection string rather than a data directory. */
export const isMongoUri = (where: string): boolean => /^mongodb(\+srv)?:\/\//i.test(where);

/** `where` named for people: a MongoDB URI by its hosts (never its password), a directory by its absolute path. */
export const describeWhere = (where: string): string => (isMongoUri(where) ? `MongoDB at ${hostsOf(where)}` : resolve(where));

/** What the command needs from around it. */
export interface StoreCopyDeps {
  /** Connection settings for a MongoDB side (PARLEY_MONGODB_* but the URI). */
  mongodb: Pick<NonNullable<Config['mongodb']>, 'maxPoolSize' | 'waitQueueTimeoutMS' | 'serverSelectionTimeoutMS'>;
  /** Where the progress bar draws (a TTY redraws in place; otherwise a line every half second). */
  progress: NodeJS.WritableStream & { isTTY?: boolean };
  print(line: string): void;
}

/**
 * Runs the copy; resolves with the exit code. Refusals (a target holding data without `--force`, a
 * source that is no store, the same store on both sides) reject with CopyRefused.
 */
export async function runStoreCopy(o: { from: string; to: string; force: boolean }, deps: StoreCopyDeps): Promise<number> {
  if (describeWhere(o.from) === describeWhere(o.to) && (!isMongoUri(o.from) || o.from === o.to)) {
    throw new CopyRefused(`--from and --to name the same store (${describeWhere(o.from)}).`);
  }
  const mongo = (uri: string) => ({ uri, ...deps.mongodb, appName: 'parley-store-copy' });
  let source: CopySource | undefined;
  let target: CopyTarget | undefined;
  const bar = new SingleBar({
    stream: deps.progress, noTTYOutput: true, notTTYSchedule: 500, hideCursor: false,
    format: 'copying {table} [{bar}] {percentage}% | {value}/{total} rows',
  });
  let started = false;
  try {
    source = isMongoUri(o.from) ? await openMongoSource(mongo(o.from)) : await openSqliteSource(o.from);
    target = isMongoUri(o.to) ? await openMongoTarget(mongo(o.to)) : await openSqliteTarget(o.to);
    deps.print(`Copying ${source.description} to ${target.description}.`);
    const report = await copyStore(source, target, {
      force: o.force,
      progress: (done, total, table) => {
        if (!started) { bar.start(total, 0, { table }); started = true; }
        bar.update(done, { table });
      },
    });
    if (started) bar.stop();
    started = false;
    const width = Math.max(...report.tables.map((t) => t.table.length));
    for (const t of report.tables) {
      deps.print(`  ${t.table.padEnd(width)}  ${String(t.source).padStart(9)} -> ${String(t.target).padStart(9)}${t.source === t.target ? '' : '  MISMATCH'}`);
    }
    deps.print(report.ok ? 'Copied: every table holds as many rows as the snapshot.' : 'The copy is incomplete: some tables hold a different number of rows than the snapshot (see MISMATCH above).');
    return report.ok ? 0 : 1;
  } finally {
    if (started) bar.stop();
    await source?.close().catch(() => {});
    await target?.close().catch(() => {});
  }
}
