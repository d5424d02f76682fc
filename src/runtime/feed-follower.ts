import type { Logger } from '../log/logger.js';
import type { FeedPort } from '../store/ports.js';
import type { FeedEntry } from '../store/records.js';

/** Options of {@link FeedFollower}. */
export interface FeedFollowerOptions {
  /** How often the feed is read for other processes' entries, ms (default 100; this process's own come at once). */
  pollMs?: number;
  /** Entries read per store read (default 500). */
  batch?: number;
  /** Entries older than this are deleted by the periodic prune, ms (default 10 minutes). */
  retainMs?: number;
  /** How often the prune runs, ms (default 1 minute). */
  pruneEveryMs?: number;
  logger: Logger;
}

/** What a follower calls for each entry, in feed order. Must not throw (a throw is logged and skipped). */
export type FeedHandler = (entry: FeedEntry) => void;

/**
 * Follows the store's feed (FeedPort; DESIGN.md "Several processes") from where it was when the follower
 * started, and hands every entry, in commit order and once, to the handlers: every process sharing the
 * store so hears of a revoked key, a removed member or an unpublished agent, whichever process (or the
 * command line) made the change. Entries this process wrote are read at once (the store's `onAppend`
 * signal); the others within `pollMs`.
 *
 * Gaps: entry numbers are dense (a rolled-back write takes its number back with it), so when the first
 * entry read is not the one after the cursor, entries this follower had not read were pruned (it was
 * paused past `retainMs`): the `onGap` handlers run before that entry, so caches drop everything they hold.
 */
export class FeedFollower {
  private readonly handlers: FeedHandler[] = [];
  private readonly gapHandlers: Array<() => void> = [];
  private cursor = 0;
  private reading: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;
  private readonly pollMs: number;
  private readonly batch: number;
  private readonly retainMs: number;

  constructor(private readonly feed: FeedPort, private readonly opts: FeedFollowerOptions) {
    this.pollMs = opts.pollMs ?? 100;
    this.batch = opts.batch ?? 500;
    this.retainMs = opts.retainMs ?? 600_000;
  }

  /** Adds a handler for every entry from now on. */
  onEntry(handler: FeedHandler): void {
    this.handlers.push(handler);
  }

  /** Adds a handler for a gap (entries lost to a prune before they were read). */
  onGap(handler: () => void): void {
    this.gapHandlers.push(handler);
  }

  /** Starts following from the feed's current head. Throws what the store throws. */
  async start(): Promise<void> {
    this.cursor = await this.feed.head();
    this.unsubscribe = this.feed.onAppend(() => { void this.poll(); });
    this.timer = setInterval(() => { void this.poll(); }, this.pollMs);
    this.timer.unref();
    this.pruneTimer = setInterval(() => { void this.prune(); }, this.opts.pruneEveryMs ?? 60_000);
    this.pruneTimer.unref();
  }

  /**
   * Reads and dispatches every entry after the cursor; resolves when that is done. A call while a read
   * is under way makes that read go round once more, so nothing committed before the call is missed.
   */
  poll(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.reading !== undefined) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      try {
        do {
          this.again = false;
          for (;;) {
            const entries = await this.feed.read(this.cursor, this.batch);
            if (entries.length === 0) break;
            if (entries[0]!.seq > this.cursor + 1) this.gap(entries[0]!.seq);
            for (const e of entries) this.dispatch(e);
            this.cursor = entries[entries.length - 1]!.seq;
            if (entries.length < this.batch) break;
          }
        } while (this.again && !this.stopped);
      } catch (err) {
        this.opts.logger.error({ err }, 'reading the store feed failed; retrying at the next poll');
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }

  /** Stops following (idempotent). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.pruneTimer !== undefined) clearInterval(this.pruneTimer);
    this.unsubscribe?.();
    await this.reading;
  }

  /** The `seq` of the last entry handed out. */
  get position(): number {
    return this.cursor;
  }

  private dispatch(entry: FeedEntry): void {
    for (const h of this.handlers) {
      try {
        h(entry);
      } catch (err) {
        this.opts.logger.error({ err, feed_seq: entry.seq, kind: entry.kind }, 'a feed handler failed');
      }
    }
  }

  /** Entries after the cursor were pruned before they were read: the handlers of a gap run. */
  private gap(nextSeq: number): void {
    this.opts.logger.warn({ read_up_to: this.cursor, next: nextSeq }, 'store feed entries were pruned before this process read them; caches dropped');
    for (const h of this.gapHandlers) {
      try { h(); } catch (err) { this.opts.logger.error({ err }, 'a feed gap handler failed'); }
    }
  }

  private async prune(): Promise<void> {
    try {
      await this.feed.prune(new Date(Date.now() - this.retainMs).toISOString());
    } catch (err) {
      this.opts.logger.error({ err }, 'pruning the store feed failed');
    }
  }
}
