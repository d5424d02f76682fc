/**
 * The `data` of the webhook events built in the runtime (docs/webhooks.md lists every field).
 */
import type { EventSpec } from '../../events/outbox.js';
import type { MessageRecord, ToolRun } from '../../store/records.js';

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

/** `tool.run`: one tool call of a turn and its outcome (`output`, `is_error`). */
export function toolRun(run: ToolRun, ctx: { conversationId: string; agentId: string; turnId: string }): EventSpec {
  return {
    type: 'tool.run',
    data: {
      conversation_id: ctx.conversationId, agent_id: ctx.agentId, turn_id: ctx.turnId, tool_call_id: run.id, name: run.name,
      arguments: run.arguments, output: run.output, is_error: run.is_error,
    },
  };
}
