/**
 * The feed on MongoDB (FeedPort; DESIGN.md "Several processes": one change stream per process).
 *
 * Entries are documents of the collection `feed`, inserted by the writes that make the changes, in the
 * same transaction (transactions.ts recordChanges). Each process follows the collection with one change
 * stream, on a client of its own (its long `getMore`s never hold a connection of the main pool), which
 * hands it every committed entry once, in commit order (the oplog's), whichever process wrote it. The
 * stream's entries are numbered here, 1, 2, 3, ... in the order they arrive, and kept in memory for
 * `read`: the numbers are this process's own, dense and in commit order, which is what the follower
 * (src/runtime/feed-follower.ts) needs; a skipped number tells it that entries may have been missed.
 *
 * So nothing serializes the writers (no counter document every write would fight over), and an entry is
 * readable here once the stream has delivered it: shortly after its commit, not at once. `onAppend`
 * listeners are called once per commit the stream delivers (this process's or another's).
 *
 * The stream's resume token is kept after every event: a stream that fails is opened again after it
 * (`startAfter`), and the driver itself resumes from it across elections and network errors. When the
 * oplog no longer holds the token (ChangeStreamHistoryLost: the process was cut off longer than the oplog
 * window), the feed skips a number (the follower drops its caches), opens a new stream at the present,
 * and catches up from the store: the entries of the collection written since the last one it had seen.
 * The cluster time of the last event is stored with the process's heartbeat (`processes.feed_seen_at`),
 * to watch the lag (docs/operations.md).
 */
import type { ChangeStream, ChangeStreamInsertDocument, Db, ObjectId, ResumeToken } from 'mongodb';
import type { Logger } from '../../log/logger.js';
import type { FeedPort } from '../ports.js';
import type { FeedChange, FeedEntry } from '../records.js';
import type { Collections, FeedDoc } from './schema.js';
import { recordChanges, type RunTransaction } from './transactions.js';

/** Entries kept for `read` at most; past it the oldest go (a follower that far behind sees a gap). */
export const MAX_BUFFERED = 10_000;

/** Ids of delivered entries remembered, so that a catch-up after lost history hands none out twice. */
const REMEMBERED_IDS = 10_000;

/** Pause before a failed stream is opened again, ms. */
const REOPEN_DELAY_MS = 1000;

/** True when `err` says the change stream's resume point is no longer in the oplog (server code 286). */
export function isHistoryLost(err: unknown): boolean {
  const e = err as { code?: unknown; codeName?: unknown } | null;
  return e?.code === 286 || e?.codeName === 'ChangeStreamHistoryLost';
}

/** The entry of a feed document numbered `seq`. */
export function entryOf(doc: Pick<FeedDoc, 'change' | 'created_at'>, seq: number): FeedEntry {
  return { ...doc.change, seq, at: doc.created_at } as FeedEntry;
}

/** The entries of `entries` (ascending `seq`) with `seq` greater than `after`, at most `limit`. */
export function entriesAfter(entries: readonly FeedEntry[], after: number, limit: number): FeedEntry[] {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (entries[mid]!.seq <= after) lo = mid + 1;
    else hi = mid;
  }
  return entries.slice(lo, lo + Math.max(0, limit));
}

type FeedEvent = ChangeStreamInsertDocument<FeedDoc>;

/** See the module comment. `start()` must resolve before the feed is used; `close()` ends the stream. */
export class ChangeStreamFeed implements FeedPort {
  private entries: FeedEntry[] = [];
  private seq = 0;
  private token: ResumeToken | undefined;
  private seenAt: string | null = null;
  private lastAt: string | undefined;
  private readonly delivered = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private commitsToAnnounce = 0;
  private lastCommit: string | undefined;
  private flushScheduled = false;
  private stream: ChangeStream<FeedDoc, FeedEvent> | undefined;
  private loop: Promise<void> | undefined;
  private closed = false;

  /**
   * `c`: the collections on the main client (writes, catch-up reads); `streamDb`: the same database on
   * the feed's own client.
   */
  constructor(private readonly c: Collections, private readonly streamDb: Db, private readonly tx: RunTransaction, private readonly logger?: Logger) {}

  /** Opens the change stream at the present and starts following it. Rejects with what the driver throws. */
  async start(): Promise<void> {
    await this.open(undefined);
    this.loop = this.follow();
  }

  /** Cluster time of the last entry the stream delivered (RFC 3339), or null before the first. */
  get position(): string | null {
    return this.seenAt;
  }

  async head(): Promise<number> {
    return this.seq;
  }

  async read(after: number, limit: number): Promise<FeedEntry[]> {
    return entriesAfter(this.entries, after, limit);
  }

  async append(changes: FeedChange[], at: string): Promise<void> {
    await this.tx((session) => recordChanges(this.c, session, changes, at));
  }

  async prune(before: string): Promise<number> {
    const r = await this.c.feed.deleteMany({ created_at: { $lt: before } });
    this.entries = this.entries.filter((e) => e.at >= before);
    return r.deletedCount;
  }

  onAppend(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  /** Ends the stream (idempotent). */
  async close(): Promise<void> {
    this.closed = true;
    await this.stream?.close().catch(() => { /* already closed */ });
    await this.loop;
  }

  /** Opens the stream after `token` (or at the present) and waits until the server has started it. */
  private async open(token: ResumeToken | undefined): Promise<void> {
    const stream = this.streamDb.collection<FeedDoc>('feed').watch<FeedDoc, FeedEvent>(
      [{ $match: { operationType: 'insert' } }], token === undefined ? {} : { startAfter: token },
    );
    this.stream = stream;
    // The first call runs the aggregate that starts the stream; an event already there is taken.
    const first = await stream.tryNext();
    if (first !== null) this.take(first);
  }

  private async follow(): Promise<void> {
    while (!this.closed) {
      try {
        const event = await this.stream!.next();
        this.take(event);
      } catch (err) {
        if (this.closed) return;
        try {
          if (isHistoryLost(err)) {
            this.logger?.warn({ err }, 'the store feed\'s change stream lost its place in the oplog; catching up from the store (caches dropped)');
            await this.catchUp();
          } else {
            this.logger?.error({ err }, 'the store feed\'s change stream failed; opening it again');
            await new Promise((r) => setTimeout(r, REOPEN_DELAY_MS));
            if (!this.closed) await this.open(this.token);
          }
        } catch (again) {
          if (isHistoryLost(again)) this.token = undefined;
          this.logger?.error({ err: again }, 'reopening the store feed\'s change stream failed; trying again');
          await new Promise((r) => setTimeout(r, REOPEN_DELAY_MS));
          if (!this.closed) await this.open(this.token).catch(() => { /* the next round tries again */ });
        }
      }
    }
  }

  /**
   * After lost history: a number is skipped (the follower's gap handlers drop what they cache), a new
   * stream starts at the present, then the entries written since the last one seen are read from the
   * collection (in time order) and handed out, those already delivered excepted.
   */
  private async catchUp(): Promise<void> {
    this.seq++;
    await this.open(undefined);
    if (this.lastAt === undefined) return;
    const docs = await this.c.feed.find({ created_at: { $gte: this.lastAt } }).sort({ created_at: 1, _id: 1 }).toArray();
    for (const d of docs) this.add(d, String(d._id));
  }

  /** Takes one event of the stream. */
  private take(event: FeedEvent): void {
    this.token = event._id;
    if (event.clusterTime !== undefined) this.seenAt = new Date(event.clusterTime.t * 1000).toISOString();
    this.add(event.fullDocument, String(event.documentKey._id as ObjectId));
  }

  /** Numbers and keeps one entry (once per id), and schedules the onAppend call of its commit. */
  private add(doc: FeedDoc, id: string): void {
    if (this.delivered.has(id)) return;
    this.delivered.add(id);
    if (this.delivered.size > REMEMBERED_IDS) this.delivered.delete(this.delivered.values().next().value!);
    this.entries.push(entryOf(doc, ++this.seq));
    if (this.entries.length > MAX_BUFFERED) this.entries.splice(0, this.entries.length - MAX_BUFFERED);
    if (this.lastAt === undefined || doc.created_at > this.lastAt) this.lastAt = doc.created_at;
    if (doc.commit !== this.lastCommit) {
      this.lastCommit = doc.commit;
      this.commitsToAnnounce++;
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // After the events already at hand (the rest of the batch) are taken: a commit's entries are then all readable.
      setImmediate(() => this.announce());
    }
  }

  private announce(): void {
    this.flushScheduled = false;
    const commits = this.commitsToAnnounce;
    this.commitsToAnnounce = 0;
    for (let i = 0; i < commits; i++) {
      for (const l of this.listeners) {
        try { l(); } catch { /* a listener's failure is its own */ }
      }
    }
  }
}
