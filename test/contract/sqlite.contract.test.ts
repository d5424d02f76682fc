/** The store contract (test/contract/store.contract.ts) on the SQLite adapter: a real file in a temp dir per test. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/ports.js';
import { describeStoreContract } from './store.contract.js';

describeStoreContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-contract-'));
  const opened: Store[] = [createSqliteStore(dir)];
  return {
    store: opened[0]!,
    async reopen() {
      const store = createSqliteStore(dir);
      opened.push(store);
      return store;
    },
    async destroy() {
      for (const s of opened) await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
