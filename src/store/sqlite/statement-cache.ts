import type Database from 'better-sqlite3';

/**
 * One set of prepared statements per connection, prepared at its first use: `prepare(db)` runs once for
 * each connection `db` (the main thread's, the writer thread's) and its result is kept for as long as the
 * connection lives (a WeakMap: a closed connection's statements go with it). Throws what `prepare` throws
 * (SQLite's error for a statement that does not compile).
 */
export function statementCache<S>(prepare: (db: Database.Database) => S): (db: Database.Database) => S {
  const cache = new WeakMap<Database.Database, S>();
  return (db) => {
    let s = cache.get(db);
    if (s === undefined) {
      s = prepare(db);
      cache.set(db, s);
    }
    return s;
  };
}
