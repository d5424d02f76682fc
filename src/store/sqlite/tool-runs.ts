import type Database from 'better-sqlite3';
import type { ToolRunsPort } from '../ports.js';
import type { ToolRunRecord } from '../records.js';
import type { ConversationWriter } from './writer.js';
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
 * ToolRunsPort on SQLite (table `tool_runs`, indexed by conversation): a run and its outbox events in one
 * write of the writer, which commits writes in the order they were issued, so a run of a new
 * conversation's first turn always lands after the conversation and its lease. A duplicate id throws
 * (primary key) and stores neither.
 */
export function createToolRuns(db: Database.Database, writer: ConversationWriter): ToolRunsPort {
  const sql = {
    byConversation: db.prepare('SELECT * FROM tool_runs WHERE org_id = ? AND conversation_id = ? ORDER BY created_at, id LIMIT ?'),
  };
  return {
    record(run, events, fence) {
      return writer.run('recordToolRun', { run, events, fence });
    },
    async listForConversation(orgId, conversationId, limit = 100) {
      return (sql.byConversation.all(orgId, conversationId, limit) as Row[]).map(fromRow);
    },
  };
}
