/**
 * Chat stream events (SPEC.md 6.1, API.md "Chat"): each is one JSON object with a string `type`. Order:
 * `conversation` first; then tool_call/tool_result pairs and tokens as they happen; then `citations`,
 * `replace` (only when the safety check fired), `message`, `usage`, and last exactly one of `done` or
 * `error`. The same objects go out as SSE `data:` lines and as WebSocket frames.
 */
import { z } from 'zod';
import { CitationSchema, FinishReasonSchema, ToolCallSchema, ToolResultSchema, TurnErrorSchema, TurnTimingSchema, UsageSchema } from './turn.js';

export const StreamEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('conversation'), conversation_id: z.string(), turn_id: z.string(), visitor_token: z.string().optional() }),
  z.object({ type: z.literal('token'), delta: z.string() }),
  z.object({ type: z.literal('tool_call'), tool_call: ToolCallSchema }),
  z.object({ type: z.literal('tool_result'), tool_result: ToolResultSchema }),
  z.object({ type: z.literal('citations'), citations: z.array(CitationSchema) }),
  z.object({ type: z.literal('replace'), delta: z.string() }),
  z.object({ type: z.literal('message'), message_id: z.string() }),
  z.object({ type: z.literal('usage'), usage: UsageSchema, timing: TurnTimingSchema }),
  z.object({ type: z.literal('done'), finish_reason: FinishReasonSchema }),
  z.object({ type: z.literal('error'), error: TurnErrorSchema }),
]).meta({ id: 'StreamEvent', description: 'One SSE `data:` line (`id:` is `<turn_id>:<seq>`) or one WebSocket frame.' });
export type StreamEvent = z.infer<typeof StreamEventSchema>;

/** The `type` of a stream event. */
export type StreamEventType = StreamEvent['type'];

/** True for the two events that end a turn's stream (`done`, `error`). */
export function isTerminal(event: StreamEvent): boolean {
  return event.type === 'done' || event.type === 'error';
}
