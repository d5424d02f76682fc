import type Database from 'better-sqlite3';
import type { FeedPort } from '../ports.js';
import type { FeedChange, FeedEntry } from '../records.js';

type Statements = ReturnType<typeof prepare>;
const cache = new WeakMap<Database.Database, Statements>();

function prepare(db: Database.Database) {
  return {
    insert: db.prepare('INSERT INTO feed (kind, data, created_at) VALUES (?, ?, ?)'),
    after: db.prepare('SELECT seq, data, created_at FROM feed WHERE seq > ? ORDER BY seq LIMIT ?'),
    head: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'feed'"),
    prune: db.prepare('DELETE FROM feed WHERE created_at < ?'),
  };
}

function statements(db: Database.Database): Statements {
  let s = cache.get(db);
  if (s === undefined) {
    s = prepare(db);
    cache.set(db, s);
  }
  return s;
}

/**
 * Appends `changes` to the feed in the caller's transaction (so each is durable exactly when the change it
 * tells of is). Works on any connection: the main thread's or the writer thread's.
 */
export function recordChanges(db: Database.Database, changes: readonly FeedChange[], at: string): void {
  if (changes.length === 0) return;
  const { insert } = statements(db);
  for (const c of changes) insert.run(c.kind, JSON.stringify(c), at);
}

/** Listeners told, in this process, that a commit of this process wrote feed entries (FeedPort.onAppend). */
export class FeedSignal {
  private readonly listeners = new Set<() => void>();

  on(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  /** Called after a commit that wrote feed entries; a listener that throws does not stop the others. */
  fire(): void {
    for (const l of this.listeners) {
      try { l(); } catch { /* a listener's failure is its own */ }
    }
  }
}

/**
 * FeedPort on SQLite (table `feed`, `seq` AUTOINCREMENT: numbers grow in commit order because SQLite
 * commits one writer at a time, whichever process it is, and are never reused). Reads run on the main
 * thread's connection: an empty poll is one primary-key range probe.
 */
export function createFeed(db: Database.Database, signal: FeedSignal): FeedPort {
  const sql = statements(db);
  return {
    async head() {
      return (sql.head.get() as { seq: number } | undefined)?.seq ?? 0;
    },
    async read(after, limit) {
      const rows = sql.after.all(after, limit) as Array<{ seq: number; data: string; created_at: string }>;
      return rows.map((r) => ({ ...(JSON.parse(r.data) as FeedChange), seq: r.seq, at: r.created_at }) as FeedEntry);
    },
    async append(changes, at) {
      db.transaction(() => recordChanges(db, changes, at)).immediate();
      signal.fire();
    },
    async prune(before) {
      return sql.prune.run(before).changes;
    },
    onAppend(listener) {
      return signal.on(listener);
    },
  };
}
