// Run under `strace -f -c -e trace=fsync,fdatasync` by test/integration/sqlite-commits.test.ts: opens a
// SQLite store in the temporary directory argv[2] (the compiled build, writer thread by default) and makes
// argv[3] acknowledged chat writes, one after another, then closes it.
import { createSqliteStore } from '../../dist/src/store/sqlite/sqlite-store.js';

const [dir, count] = [process.argv[2], Number(process.argv[3])];
const store = createSqliteStore(dir, {});
const T = '2025-01-01T00:00:00.000Z';
for (let i = 0; i < count; i++) {
  await store.conversations.start(
    { id: `conv_${i}`, org_id: 'org_A', agent_id: 'agt_1', status: 'active', metadata: {}, visitor_token_hash: null, created_at: T, updated_at: T },
    { id: `msg_${i}`, conversation_id: `conv_${i}`, org_id: 'org_A', turn_id: 'turn_1', role: 'visitor', content: 'Hello', citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null, error: null, created_at: T },
  );
}
await store.close();
