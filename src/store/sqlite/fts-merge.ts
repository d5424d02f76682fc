import type Database from 'better-sqlite3';

/** Leaf pages (FTS5 `pgsz`, ≈4 KB each) one merge step writes, roughly. */
const PAGES_PER_STEP = 16;

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Incremental merging of the `chunks_fts` index in bounded steps.
 *
 * FTS5 writes a new index segment at every commit and, with its default `automerge`, merges segments
 * as part of the writes, in amounts that grow with the index: with one commit per small slice of chunks
 * (src/store/sqlite/knowledge.ts), single slices took 20-140 ms on this machine instead of ≈5 ms. So
 * migration 2 sets `automerge = 0`, the chunk slices call step() inside their own short transactions,
 * and drain() runs after a document is completed or deleted: each step is an FTS5 `('merge', 16)`
 * command, which writes roughly 16 leaf pages and merges only levels holding `usermerge` (4) or more
 * segments (or a merge already begun). Measured: after 8,600 chunks the index has 1,080 data rows, against
 * 1,009 after a full 'optimize'. `crisismerge` (16 segments on one level) stays on as FTS5's own safety net.
 * Source: https://www.sqlite.org/fts5.html, "The 'automerge' Configuration Option" and "The 'merge' Command".
 */
export class FtsMerger {
  private readonly merge: Database.Statement;
  private readonly totalChanges: Database.Statement;
  private draining: Promise<void> | undefined;
  private stopped = false;

  /**
   * `relax` runs a drain slice (a whole transaction) at a relaxed sync level (see withRelaxedSync): a
   * merge lost to power loss is harmless, the index is the same without it.
   */
  constructor(private readonly db: Database.Database, private readonly relax: <T>(fn: () => T) => T = (fn) => fn()) {
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

  /**
   * Merges until nothing is left, in transactions of `sliceMs` of work with a setImmediate yield in
   * between. Concurrent calls share one run. Resolves when done or stopped; rejects with what SQLite threw.
   */
  drain(sliceMs: number): Promise<void> {
    if (this.draining !== undefined) return this.draining;
    const run = this.mergeInSlices(sliceMs).finally(() => {
      if (this.draining === run) this.draining = undefined;
    });
    this.draining = run;
    return run;
  }

  private async mergeInSlices(sliceMs: number): Promise<void> {
    const slice = this.db.transaction(() => this.step(performance.now() + sliceMs));
    while (!this.stopped && this.db.open && this.relax(() => slice.immediate())) await yieldToEventLoop();
  }

  /** Stops a running drain() after its current slice (the store is closing). */
  stop(): void {
    this.stopped = true;
  }
}
