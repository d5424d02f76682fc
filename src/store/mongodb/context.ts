import type { Collections } from './schema.js';
import type { KeyedQueue, RunTransaction } from './transactions.js';

/** What every port module of the MongoDB adapter is built from. */
export interface MongoContext {
  /** The store's collections (src/store/mongodb/schema.ts). */
  c: Collections;
  /** Runs a transaction (src/store/mongodb/transactions.ts). */
  tx: RunTransaction;
  /** Orders this process's writes to one conversation (or one delivery endpoint) by issue order. */
  queue: KeyedQueue;
}
