/**
 * Chat stream event objects (SPEC.md 6.1, API.md "Chat"): each is one JSON object with a string `type`.
 * Order: `conversation` first; then tool_call/tool_result pairs and tokens; then `citations`,
 * `replace` (only when the safety check fired), `message`, `usage`, and last exactly one of `done` or
 * `error`.
 */
import type { Citation, Usage } from '../store/ports.js';
import type { TurnError, TurnFinishReason } from '../../actors/turn/turn.types.js';

export type StreamEvent =
  | { type: 'conversation'; conversation_id: string; turn_id: string; visitor_token?: string }
  | { type: 'token'; delta: string }
  | { type: 'tool_call'; tool_call: { id: string; name: string; arguments: unknown } }
  | { type: 'tool_result'; tool_result: { tool_call_id: string; name: string; output: unknown; is_error: boolean } }
  | { type: 'citations'; citations: Citation[] }
  | { type: 'replace'; delta: string }
  | { type: 'message'; message_id: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'done'; finish_reason: TurnFinishReason }
  | { type: 'error'; error: TurnError };

/** True for the two events that end a turn's stream. */
export function isTerminal(event: StreamEvent): boolean {
  return event.type === 'done' || event.type === 'error';
}
