/**
 * The store contract (test/contract/store.contract.ts) on the SQLite adapter, once per writer: the
 * writer thread (the default) and group commit on the main thread. A real file in a temp dir per test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { WriterKind } from '../../src/store/sqlite/writer.js';
import type { Store } from '../../src/store/ports.js';
import { describeStoreContract } from './store.contract.js';

for (const writer of ['worker', 'main'] as WriterKind[]) {
  describeStoreContract(`sqlite (${writer === 'worker' ? 'writer thread' : 'main-thread writer'})`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-contract-'));
    const opened: Store[] = [createSqliteStore(dir, { writer })];
    return {
      store: opened[0]!,
      async reopen() {
        const store = createSqliteStore(dir, { writer });
        opened.push(store);
        return store;
      },
      async destroy() {
        for (const s of opened) await s.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
}
