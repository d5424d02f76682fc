import type Database from 'better-sqlite3';
import type { FeedPort } from '../ports.js';
import type { FeedChange, FeedEntry } from '../records.js';
import { writeTransaction } from './write-lock.js';
import { statementCache } from './statement-cache.js';

/** The writer the prune goes through (src/store/sqlite/writer.ts; named here by its one write, so feed.ts does not import it). */
export interface FeedPruneWriter {
  run(op: 'feedPrune', args: { before: string }): Promise<number>;
}

function prepare(db: Database.Database) {
  return {
    insert: db.prepare('INSERT INTO feed (kind, data, created_at) VALUES (?, ?, ?)'),
    after: db.prepare('SELECT seq, data, created_at FROM feed WHERE seq > ? ORDER BY seq LIMIT ?'),
    head: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'feed'"),
    prune: db.prepare('DELETE FROM feed WHERE seq IN (SELECT seq FROM feed WHERE created_at < ? ORDER BY seq LIMIT ?)'),
  };
}

const statements = statementCache(prepare);

/**
 * Appends `changes` to the feed in the caller's transaction (so each is durable exactly when the change it
 * tells of is). Works on any connection: the main thread's or the writer thread's.
 */
export function recordChanges(db: Database.Database, changes: readonly FeedChange[], at: string): void {
  if (changes.length === 0) return;
  const { insert } = statements(db);
  for (const c of changes) insert.run(c.kind, JSON.stringify(c), at);
}

/** Entries one prune step deletes at most (a few ms of the writer's time, so other writers never wait long). */
export const PRUNE_BATCH = 5000;

/** The feed's writes, by name (merged into the writer's registry). */
export const FEED_WRITES = {
  /** Deletes up to PRUNE_BATCH entries written before `before`; how many. */
  feedPrune(db: Database.Database, a: { before: string }): number {
    return statements(db).prune.run(a.before, PRUNE_BATCH).changes;
  },
} as const;

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
 * thread's connection: an empty poll is one primary-key range probe. Pruning runs in the writer, in steps.
 */
export function createFeed(db: Database.Database, signal: FeedSignal, writer: FeedPruneWriter): FeedPort {
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
      writeTransaction(db, () => recordChanges(db, changes, at));
      signal.fire();
    },
    async prune(before) {
      // In steps, through the writer thread: a large prune never holds the event loop or the write lock long.
      let total = 0;
      for (;;) {
        const n = await writer.run('feedPrune', { before });
        total += n;
        if (n < PRUNE_BATCH) return total;
      }
    },
    onAppend(listener) {
      return signal.on(listener);
    },
  };
}
