/**
 * The store contract on MongoDB (DESIGN.md "Store": the adapter runs the same contract suite whenever
 * MONGODB_URI is set, and says it was skipped otherwise, rather than passing silently). MONGODB_URI names
 * a replica set (transactions and change streams need one), e.g.
 * `MONGODB_URI=mongodb://127.0.0.1:27017/?replicaSet=rs0 npx vitest run test/contract/mongodb.contract.test.ts`.
 * Each test gets a database of its own (dropped after it). The TTL indexes are left out: the suite writes
 * records that expired in 2025 on purpose, which the server's TTL monitor would otherwise delete under it.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { describe, it } from 'vitest';
import { createMongoStore } from '../../src/store/mongodb/mongo-store.js';
import type { Store } from '../../src/store/ports.js';
import { describeStoreContract } from './store.contract.js';

const uri = process.env.MONGODB_URI;

if (uri === undefined || uri === '') {
  describe('store contract: mongodb', () => {
    it.skip('skipped: MONGODB_URI not set', () => {});
  });
} else {
  const settings = { uri, maxPoolSize: 16, waitQueueTimeoutMS: 5000, serverSelectionTimeoutMS: 10_000, ttlIndexes: false };
  describeStoreContract('mongodb', async () => {
    const database = `parley_contract_${randomBytes(6).toString('hex')}`;
    const opened: Store[] = [await createMongoStore({ ...settings, database })];
    return {
      store: opened[0]!,
      async reopen() {
        const store = await createMongoStore({ ...settings, database });
        opened.push(store);
        return store;
      },
      async destroy() {
        for (const s of opened) await s.close().catch(() => {});
        const client = new MongoClient(uri);
        try { await client.db(database).dropDatabase(); } finally { await client.close(); }
      },
    };
  });
}
