/**
 * A probe of SQLite's single writer for the scale bench (docs/scaling.md "Where the model stops holding"):
 * opens Parley's own SQLite store on a data dir (its writer thread, `synchronous` FULL or NORMAL, group
 * commit as in the server) and starts new conversations as fast as it can, `inflight` of them at a time,
 * for `ms` milliseconds. Each is one acknowledged write, as a visitor's first message is in the server: the
 * conversation, its first message and its lease in one transaction (ConversationsPort.start). Several
 * probes on one dir are several processes sharing one database file: SQLite lets one of them write at a
 * time (the file's write lock; the others try again every 50-200 µs: src/store/sqlite/write-lock.ts).
 *
 * CLI: `node dist/bench/lib/sqlite-commit-probe.js --dir <data dir> --sync full|normal --ms 2000
 * --inflight 64 [--start-at <epoch ms>]`. It opens the store (creating or migrating the database), waits
 * until `--start-at` when given (so that several probes start together), runs, and prints one JSON line:
 * `{"writes","commits","wall_s","errors","latency_ms":{"p50","p99","max"}}` (writes acknowledged,
 * transactions the writer committed, seconds, writes that failed (SQLITE_BUSY after 5 s of waiting for the lock), and
 * the time from asking for a write to its acknowledgement). With
 * `--ms 0` it only creates the database (run it once before starting several probes on a new dir).
 */
import { parseArgs } from 'node:util';
import { Samples } from './stats.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ConversationRecord, MessageRecord } from '../../src/store/records.js';

const { values } = parseArgs({
  options: {
    dir: { type: 'string' },
    sync: { type: 'string', default: 'full' },
    ms: { type: 'string', default: '2000' },
    inflight: { type: 'string', default: '1' },
    'start-at': { type: 'string' },
  },
  strict: true,
});
if (values.dir === undefined) throw new Error('--dir is required');
const sync = values.sync === 'normal' ? 'NORMAL' : 'FULL';
const ms = Number(values.ms);
const inflight = Math.max(1, Number(values.inflight));

const store = createSqliteStore(values.dir, { sync });
const owner = { id: `proc_probe${process.pid}`, url: 'http://127.0.0.1:1' };
const prefix = `${process.pid}_${Date.now()}`;
let seq = 0;

/** One new conversation with its first message and lease: one transaction. */
async function write(): Promise<void> {
  const n = seq++;
  const at = new Date().toISOString();
  const conv: ConversationRecord = {
    id: `conv_${prefix}_${n}`, org_id: 'org_probe', agent_id: 'agt_probe', status: 'active', metadata: {}, visitor_token_hash: null, created_at: at, updated_at: at,
  };
  const msg: MessageRecord = {
    id: `msg_${prefix}_${n}`, conversation_id: conv.id, org_id: 'org_probe', turn_id: `turn_${prefix}_${n}`, role: 'visitor', content: 'hello',
    citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null, error: null, timing: null, created_at: at,
  };
  await store.conversations.start(conv, msg, [], { lease: { owner, until: new Date(Date.now() + 10_000).toISOString() } });
}

async function main(): Promise<void> {
  if (values['start-at'] !== undefined) await new Promise((r) => setTimeout(r, Math.max(0, Number(values['start-at']) - Date.now())));
  const c0 = store.commits!();
  const t0 = performance.now();
  const end = t0 + ms;
  let writes = 0;
  let errors = 0;
  let firstError = '';
  const latency = new Samples(1 << 16);
  const lane = async () => {
    for (let i = 0; i < 100_000_000 && performance.now() < end; i++) {
      const a = performance.now();
      try {
        await write();
        writes++;
        latency.push(performance.now() - a);
      } catch (err) {
        errors++;
        firstError ||= err instanceof Error ? err.message : String(err);
      }
    }
  };
  if (ms > 0) await Promise.all(Array.from({ length: inflight }, lane));
  const wallS = (performance.now() - t0) / 1000;
  const c1 = store.commits!();
  await store.close();
  const l = latency.summary();
  process.stdout.write(`${JSON.stringify({
    writes, commits: c1.full + c1.normal - c0.full - c0.normal, wall_s: wallS, errors, first_error: firstError, latency_ms: { p50: l.p50, p99: l.p99, max: l.max },
  })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
