/**
 * The store contract on MongoDB (DESIGN.md "Store": the adapter runs the same contract suite whenever
 * MONGODB_URI is set, and says it was skipped otherwise, rather than passing silently). There is no MongoDB
 * adapter yet, so with MONGODB_URI set every contract test fails saying so.
 */
import { describe, it } from 'vitest';
import { describeStoreContract } from './store.contract.js';

const uri = process.env.MONGODB_URI;

if (uri === undefined || uri === '') {
  describe('store contract: mongodb', () => {
    it.skip('skipped: MONGODB_URI not set', () => {});
  });
} else {
  describeStoreContract('mongodb', async () => {
    throw new Error('MONGODB_URI is set, but there is no MongoDB store adapter yet (no src/store/mongodb/): the contract has nothing to run on.');
  });
}
