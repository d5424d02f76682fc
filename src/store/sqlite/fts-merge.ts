import type Database from 'better-sqlite3';

/** Leaf pages (FTS5 `pgsz`, ≈4 KB each) one merge step writes, roughly. */
const PAGES_PER_STEP = 16;

/**
 * Incremental merging of the `chunks_fts` index in bounded steps.
 *
 * FTS5 writes a new index segment at every commit and, with its default `automerge`, merges segments
 * as part of the writes, in amounts that grow with the index: with one commit per small slice of chunks
 * (src/store/sqlite/knowledge.ts), single slices took 20-140 ms on this machine instead of ≈5 ms. So
 * migration 2 sets `automerge = 0`, and after a document is completed or deleted the store runs the
 * `ftsMerge` write (src/store/sqlite/knowledge-writes.ts), a few ms of step() each, until nothing is
 * left; conversation writes commit in between. Each step is an FTS5 `('merge', 16)`
 * command, which writes roughly 16 leaf pages and merges only levels holding `usermerge` (4) or more
 * segments (or a merge already begun). Measured: after 8,600 chunks the index has 1,080 data rows, against
 * 1,009 after a full 'optimize'. `crisismerge` (16 segments on one level) stays on as FTS5's own safety net.
 * Source: https://www.sqlite.org/fts5.html, "The 'automerge' Configuration Option" and "The 'merge' Command".
 */
export class FtsMerger {
  private readonly merge: Database.Statement;
  private readonly totalChanges: Database.Statement;

  constructor(db: Database.Database) {
    this.merge = db.prepare(`INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('merge', ${PAGES_PER_STEP})`);
    this.totalChanges = db.prepare('SELECT total_changes() AS n');
  }

  /**
   * Merge steps until `deadline` (a performance.now() time, ms) or until nothing is left to merge; at
   * least one step. Runs in the caller's transaction if there is one. Returns true when more merging is
   * left (the last step did work). Throws what SQLite throws.
   */
  step(deadline: number): boolean {
    for (;;) {
      const before = (this.totalChanges.get() as { n: number }).n;
      this.merge.run();
      // The documented way to tell whether 'merge' did anything: total_changes() grew by 2 or more.
      if ((this.totalChanges.get() as { n: number }).n - before < 2) return false;
      if (performance.now() >= deadline) return true;
    }
  }
}
