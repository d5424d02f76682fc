/**
 * Turn vocabulary: what one agent reply carries on the wire (SPEC.md 2 and 6.1, API.md "Chat"), defined
 * once, zod first. The stream events (stream-event.ts), the one-shot reply, stored messages and
 * actors/ all use these.
 */
import { z } from 'zod';

/** Why a turn ended, as sent in the `done` event. */
export const FinishReasonSchema = z.enum(['stop', 'length', 'content_filter', 'handoff', 'cancelled']).meta({ id: 'FinishReason' });
export type FinishReason = z.infer<typeof FinishReasonSchema>;

/** The error of a failed turn, as in the `error` event and on a failed message. */
export const TurnErrorSchema = z.object({ type: z.string(), code: z.string(), message: z.string() }).meta({ id: 'TurnError' });
export type TurnError = z.infer<typeof TurnErrorSchema>;

/** A tool the agent decided to call: `arguments` is the parsed JSON the model wrote (or its raw text when not JSON). */
export const ToolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.unknown() }).meta({ id: 'ToolCall' });
export type ToolCall = z.infer<typeof ToolCallSchema>;

/** What a tool returned; `output` is JSON. */
export const ToolResultSchema = z.object({
  tool_call_id: z.string(), name: z.string(), output: z.unknown(), is_error: z.boolean(),
}).meta({ id: 'ToolResult' });
export type ToolResult = z.infer<typeof ToolResultSchema>;

/** One tool run of a turn: the call and what it returned (a message's `tool_runs`). */
export const ToolRunSchema = z.object({
  id: z.string(), name: z.string(), arguments: z.unknown(), output: z.unknown(), is_error: z.boolean(),
}).meta({ id: 'ToolRun' });
export type ToolRun = z.infer<typeof ToolRunSchema>;

/** Token counts of a turn (unit: tokens). */
export const UsageSchema = z.object({
  input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int(),
}).meta({ id: 'Usage' });
export type Usage = z.infer<typeof UsageSchema>;

const milestone = (what: string) => z.number().nullable().describe(`ms from the request's arrival to ${what}; null when it did not happen`);

/**
 * Where a turn's time went (API.md "Chat", Timing): each figure is milliseconds from the arrival of the
 * request that asked for the turn (the HTTP request, or the socket frame) to a step of the turn, or null
 * when the turn never reached that step. Carried by the `usage` event and stored with the agent message.
 * `first_token_ms - upstream_first_byte_ms` is Parley's relay of the first token; `upstream_first_byte_ms
 * - setup_ms` is the model's own time to it (network included).
 */
export const TurnTimingSchema = z.object({
  queued_ms: milestone('the turn starting (admission control and the turns ahead of it in its conversation passed)'),
  setup_ms: milestone('the first model call (the visitor message stored, history and passages loaded)'),
  upstream_first_byte_ms: milestone('the arrival of the upstream bytes that carried the first token (null for the builtin model, which has no upstream)'),
  first_token_ms: milestone('the first token handed to the turn\'s subscribers'),
  total_ms: milestone('the reply being complete (just before it is stored)'),
}).meta({ id: 'TurnTiming' });
export type TurnTiming = z.infer<typeof TurnTimingSchema>;

/** A knowledge-base passage a reply used; `score` is higher-is-better (bm25, sign flipped). */
export const CitationSchema = z.object({
  document_id: z.string(), chunk_id: z.string(), title: z.string(), snippet: z.string(), score: z.number(),
  heading: z.string().optional().describe('Heading path of the passage inside its document, e.g. "Refunds > Gift cards"; absent at the top level'),
  page: z.number().int().min(1).optional().describe('1-based page the passage starts on (PDF documents); absent for formats without pages'),
}).meta({ id: 'Citation' });
export type Citation = z.infer<typeof CitationSchema>;
