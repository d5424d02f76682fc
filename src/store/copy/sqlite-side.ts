/**
 * The SQLite side of `store copy`: a data directory as the source (a consistent snapshot taken with
 * `VACUUM INTO` while a server may be writing) or as the target.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../sqlite/database.js';
import { CopyRefused, type CopySource, type CopyTarget } from './copy-side.js';
import { COPIED_TABLES, type CopiedTable, type CopyRow } from './tables.js';

/** The database file of a data directory. */
export const dbFile = (dataDir: string): string => join(dataDir, 'parley.db');

/**
 * A snapshot of the SQLite store in `dataDir`: `VACUUM INTO` writes a copy of the database as of one read
 * transaction into a temporary file (consistent, whatever a running server writes meanwhile: WAL readers
 * do not block it), which is then migrated to the current schema when it is older, and read table by
 * table. Rejects with CopyRefused when the directory holds no Parley database.
 */
export async function openSqliteSource(dataDir: string): Promise<CopySource> {
  const file = dbFile(dataDir);
  if (!existsSync(file)) throw new CopyRefused(`No Parley data in ${dataDir} (no parley.db).`);
  const dir = mkdtempSync(join(tmpdir(), 'parley-copy-'));
  const snapshot = join(dir, 'snapshot.db');
  try {
    const live = new Database(file, { fileMustExist: true });
    try {
      live.pragma('busy_timeout = 5000');
      live.prepare('VACUUM INTO ?').run(snapshot);
    } finally {
      live.close();
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const db = openDatabase(snapshot, 'NORMAL');
  return {
    description: `SQLite in ${dataDir}`,
    async count(t) {
      return (db.prepare(`SELECT count(*) AS n FROM ${t.name}`).get() as { n: number }).n;
    },
    async *rows(t, batch) {
      const order = t.name === 'messages' ? ' ORDER BY seq' : '';
      let rows: CopyRow[] = [];
      for (const r of db.prepare(`SELECT * FROM ${t.name}${order}`).iterate() as IterableIterator<CopyRow>) {
        rows.push(r);
        if (rows.length === batch) { yield rows; rows = []; }
      }
      if (rows.length > 0) yield rows;
    },
    async close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The SQLite store in `dataDir` as the target (created, with its schema, when there is none). Rows are
 * inserted with the target's columns (a column a row lacks is NULL), one transaction per batch; messages
 * get new `seq` numbers in the order they come (their stored order), so that messages of a MongoDB store,
 * numbered per conversation, fit SQLite's single sequence. finish() rebuilds the full-text index from the
 * chunks. clear() deletes the database files: stop a server running on the target first.
 */
export async function openSqliteTarget(dataDir: string): Promise<CopyTarget> {
  mkdirSync(dataDir, { recursive: true });
  const file = dbFile(dataDir);
  let db = openDatabase(file);
  const columns = new Map<string, string[]>();
  const columnsOf = (t: CopiedTable): string[] => {
    let cols = columns.get(t.name);
    if (cols === undefined) {
      cols = (db.prepare(`PRAGMA table_info(${t.name})`).all() as Array<{ name: string }>).map((c) => c.name)
        .filter((c) => !(t.name === 'messages' && c === 'seq'));
      columns.set(t.name, cols);
    }
    return cols;
  };
  return {
    description: `SQLite in ${dataDir}`,
    async nonEmpty() {
      return COPIED_TABLES.filter((t) => db.prepare(`SELECT 1 FROM ${t.name} LIMIT 1`).get() !== undefined).map((t) => t.name);
    },
    async clear() {
      db.close();
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
      db = openDatabase(file);
      columns.clear();
    },
    async insert(t, rows) {
      const cols = columnsOf(t);
      const insert = db.prepare(`INSERT INTO ${t.name} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);
      db.transaction(() => {
        for (const r of rows) insert.run(...cols.map((c) => r[c] ?? null));
      }).immediate();
    },
    async finish() {
      db.prepare("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')").run();
    },
    async count(t) {
      return (db.prepare(`SELECT count(*) AS n FROM ${t.name}`).get() as { n: number }).n;
    },
    async close() {
      db.close();
    },
  };
}
