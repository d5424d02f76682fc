/**
 * The SQLite writer thread (src/store/sqlite/writer.ts): owns a write connection to the database file the
 * main thread opened and migrated, and commits each batch it receives as one transaction (one savepoint
 * per write, src/store/sqlite/group-commit.ts), then answers with an outcome per write. Its fsyncs and WAL
 * checkpoints happen on this thread, never on the main event loop.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import { CONVERSATION_WRITES, type ConversationWriteName } from './conversation-writes.js';
import { applyBatch } from './group-commit.js';
import type { BatchReply, WireError } from './writer.js';

const Init = z.object({ file: z.string(), sync: z.enum(['FULL', 'NORMAL']) });
const Batch = z.object({
  id: z.number().int(),
  writes: z.array(z.object({ op: z.enum(Object.keys(CONVERSATION_WRITES) as [ConversationWriteName, ...ConversationWriteName[]]), args: z.unknown() })),
});

const init = Init.parse(workerData);
const db = new Database(init.file);
db.pragma(`synchronous = ${init.sync}`);
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');

function toWire(err: unknown): WireError {
  if (err instanceof Error) return { name: err.name, message: err.message, code: (err as Error & { code?: string }).code };
  return { name: 'Error', message: String(err) };
}

parentPort!.on('message', (message: unknown) => {
  const batch = Batch.parse(message);
  const result = applyBatch(db, batch.writes.map((w) => () => (CONVERSATION_WRITES[w.op] as (d: Database.Database, a: unknown) => unknown)(db, w.args)));
  const reply: BatchReply = {
    id: batch.id,
    outcomes: batch.writes.map((_w, i) => {
      const o = result.outcomes[i];
      if (result.committed) return o!.ok ? { ok: true, value: o!.value } : { ok: false, error: toWire(o!.error) };
      return { ok: false, error: toWire(o !== undefined && !o.ok ? o.error : result.error) };
    }),
  };
  parentPort!.postMessage(reply);
});
