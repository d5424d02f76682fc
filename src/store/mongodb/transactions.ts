/**
 * Transactions and the helpers the port modules share: the one way this adapter runs writes that must
 * agree (a message with its usage, its outbox events and its webhook deliveries; a lease check with the
 * write it guards), and per-key ordering of a process's own writes.
 */
import { randomUUID } from 'node:crypto';
import type { ClientSession, MongoClient, TransactionOptions } from 'mongodb';
import type { FeedChange } from '../records.js';
import type { Collections } from './schema.js';

/**
 * Options of every transaction: snapshot reads, majority writes (set here explicitly, as on the client),
 * on the primary. A transaction acknowledged with `w: "majority"` survives the loss of the primary.
 */
export const TRANSACTION_OPTIONS: TransactionOptions = {
  readConcern: { level: 'snapshot' },
  writeConcern: { w: 'majority' },
  readPreference: 'primary',
};

/** Runs a transaction: `fn` gets the session every operation of the transaction must be given. */
export type RunTransaction = <T>(fn: (session: ClientSession) => Promise<T>) => Promise<T>;

/**
 * A RunTransaction on `client`, with the driver's callback API (`session.withTransaction`): the callback
 * is run again from the start on a transient error (a write conflict with a concurrent transaction, a
 * primary stepping down) and the commit is retried on an unknown commit result. So every callback of this
 * adapter is idempotent: it awaits its operations one after the other (no `Promise.all`: a session runs one
 * operation at a time), keeps no state across runs (what it returns is built in the run that commits), and
 * has no effect outside the transaction. Resolves with what `fn` resolved with in the run that committed;
 * rejects with `fn`'s error (the transaction is then aborted) or the driver's.
 */
export function transactionRunner(client: MongoClient): RunTransaction {
  return (fn) => client.withSession((session) => session.withTransaction(() => fn(session), TRANSACTION_OPTIONS));
}

/**
 * Makes the transaction of `session` conflict with every other transaction that locks `key` (a write to
 * the same document): MongoDB transactions run under snapshot isolation, where two transactions that each
 * read what the other writes can both commit (write skew). The writes whose correctness depends on a read
 * of other documents (the last owner of an organization: MembershipsPort) lock a key first, so the second
 * of two such transactions fails with a write conflict and is run again by the driver, reading the first
 * one's result.
 */
export async function lock(c: Collections, session: ClientSession, key: string): Promise<void> {
  await c.locks.updateOne({ _id: key }, { $inc: { n: 1 } }, { upsert: true, session });
}

/**
 * Inserts feed entries for `changes` in the transaction of `session` (FeedPort: the entry is durable
 * exactly when the change is). The entries of one commit share a random `commit` id, new at each run of
 * the callback.
 */
export async function recordChanges(c: Collections, session: ClientSession, changes: readonly FeedChange[], at: string): Promise<void> {
  if (changes.length === 0) return;
  const commit = randomUUID();
  const written_at = new Date();
  await c.feed.insertMany(changes.map((change) => ({ change, created_at: at, commit, written_at })), { session });
}

/**
 * Runs async operations one after the other per key, in the order they were started, and those of
 * different keys concurrently: the order a process issues its writes to one conversation is the order
 * they apply (as with the SQLite writer), while conversations do not wait for one another. A failed
 * operation rejects its own promise only.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` once every operation started before it with the same `key` has settled. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const run = before === undefined ? fn() : before.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => { if (this.tails.get(key) === tail) this.tails.delete(key); });
    return run;
  }

  /** Keys with an operation running or waiting (for tests: 0 once everything settled). */
  get size(): number {
    return this.tails.size;
  }
}

/** True when `err` is a duplicate key error (E11000) of the server. */
export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 11000;
}
