/**
 * The `data` of the webhook events built in the runtime (docs/webhooks.md lists every field).
 */
import type { EventSpec } from '../../events/outbox.js';
import type { MessageRecord, ToolRun, ToolRunRecord } from '../../store/records.js';

/** `message.created`: which message, of which conversation and agent, by whom, and its text. */
export function messageCreated(message: MessageRecord, agentId: string): EventSpec {
  return {
    type: 'message.created',
    data: {
      conversation_id: message.conversation_id, agent_id: agentId, message_id: message.id, role: message.role,
      turn_id: message.turn_id, status: message.status, content: message.content, created_at: message.created_at,
    },
  };
}

/**
 * `tool.run`: one tool call of a turn, what the model asked (`arguments`) and got (`output`, `is_error`),
 * and its record in `tool_runs` (`tool_run_id`, `kind`, `status`, `http_status`, `error`, `duration_ms` in ms).
 */
export function toolRun(run: ToolRun, record: ToolRunRecord): EventSpec {
  return {
    type: 'tool.run',
    data: {
      conversation_id: record.conversation_id, agent_id: record.agent_id, turn_id: record.turn_id, tool_call_id: run.id, name: run.name,
      arguments: run.arguments, output: run.output, is_error: run.is_error,
      tool_run_id: record.id, kind: record.kind, status: record.status, http_status: record.http_status, error: record.error,
      duration_ms: record.duration_ms,
    },
  };
}
