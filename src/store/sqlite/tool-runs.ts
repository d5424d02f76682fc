import type Database from 'better-sqlite3';
import type { ToolRunsPort } from '../ports.js';
import type { Fence, OutboxEvent, ToolRunRecord } from '../records.js';
import { checkFence } from './lease-writes.js';
import { writeOutbox } from './outbox-writes.js';
import type { Row } from './rows.js';

function fromRow(r: Row): ToolRunRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, agent_id: r.agent_id as string, conversation_id: r.conversation_id as string,
    turn_id: r.turn_id as string, tool_call_id: r.tool_call_id as string, name: r.name as string,
    kind: r.kind as ToolRunRecord['kind'], status: r.status as ToolRunRecord['status'],
    http_status: (r.http_status as number | null) ?? null, error: (r.error as string | null) ?? null,
    duration_ms: r.duration_ms as number, response_bytes: r.response_bytes as number, created_at: r.created_at as string,
  };
}

/**
 * ToolRunsPort on SQLite (table `tool_runs`, indexed by conversation), on the main connection: a run and its
 * outbox events in one transaction. A duplicate id throws (primary key) and stores neither.
 */
export function createToolRuns(db: Database.Database): ToolRunsPort {
  const sql = {
    insert: db.prepare(
      `INSERT INTO tool_runs (id, org_id, agent_id, conversation_id, turn_id, tool_call_id, name, kind, status, http_status, error, duration_ms, response_bytes, created_at)
       VALUES (@id, @org_id, @agent_id, @conversation_id, @turn_id, @tool_call_id, @name, @kind, @status, @http_status, @error, @duration_ms, @response_bytes, @created_at)`),
    byConversation: db.prepare('SELECT * FROM tool_runs WHERE org_id = ? AND conversation_id = ? ORDER BY created_at, id LIMIT ?'),
  };
  const recordWithEvents = db.transaction((run: ToolRunRecord, events: OutboxEvent[] | undefined, fence: Fence | undefined) => {
    if (fence !== undefined) checkFence(db, run.conversation_id, fence, new Date().toISOString());
    sql.insert.run(run);
    writeOutbox(db, events);
  });
  return {
    async record(run, events, fence) {
      recordWithEvents.immediate(run, events, fence);
    },
    async listForConversation(orgId, conversationId, limit = 100) {
      return (sql.byConversation.all(orgId, conversationId, limit) as Row[]).map(fromRow);
    },
  };
}
