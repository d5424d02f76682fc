import type Database from 'better-sqlite3';
import type { Fence, OutboxEvent, ToolRunRecord } from '../records.js';
import { checkFence } from './lease-writes.js';
import { writeOutbox } from './outbox-writes.js';

const inserts = new WeakMap<Database.Database, Database.Statement>();

/** The tool-run write (merged into the writer's registry): a run and its outbox events, after the fence check. */
export const TOOL_RUN_WRITES = {
  recordToolRun(db: Database.Database, a: { run: ToolRunRecord; events?: OutboxEvent[] | undefined; fence?: Fence | undefined }): void {
    let insert = inserts.get(db);
    if (insert === undefined) {
      insert = db.prepare(
        `INSERT INTO tool_runs (id, org_id, agent_id, conversation_id, turn_id, tool_call_id, name, kind, status, http_status, error, duration_ms, response_bytes, created_at)
         VALUES (@id, @org_id, @agent_id, @conversation_id, @turn_id, @tool_call_id, @name, @kind, @status, @http_status, @error, @duration_ms, @response_bytes, @created_at)`);
      inserts.set(db, insert);
    }
    if (a.fence !== undefined) checkFence(db, a.run.conversation_id, a.fence, new Date().toISOString());
    insert.run(a.run);
    writeOutbox(db, a.events);
  },
} as const;

