/**
 * One exchange of the agent playground as data (pages/playground.tsx draws it): the message and the reply
 * as its stream events arrive (API.md "Chat"). No DOM, so it is tested in Node (test/unit/playground-turn.test.ts).
 */
import type { components } from '../api-types.js';

type Schemas = components['schemas'];

type StreamEvent = Schemas['StreamEvent'];
type Citation = Schemas['Citation'];

/**
 * Timing of a turn, in ms from the request's arrival (API.md "Chat": the `usage` event's `timing`);
 * `null` for a step that did not happen. Read when the server sends it; older servers do not.
 */
export interface Timing {
  queued_ms: number | null;
  setup_ms: number | null;
  upstream_first_byte_ms: number | null;
  first_token_ms: number | null;
  total_ms: number | null;
}

/** A tool call of a turn, with its result once it came. */
export interface ToolStep {
  id: string;
  name: string;
  arguments: unknown;
  output?: unknown;
  isError?: boolean;
}

/** One exchange of the playground: the message, and the agent's reply as it streams in. */
export interface Exchange {
  key: number;
  message: string;
  reply: string;
  citations: Citation[];
  tools: ToolStep[];
  usage: Schemas['Usage'] | null;
  timing: Timing | null;
  /** Milliseconds from Send to the first token and to the end, measured here (the server's timing is above). */
  firstTokenMs: number | null;
  finish: string | null;
  error: string | null;
  streaming: boolean;
}

let exchangeKeys = 0;

/** A new exchange for `message`, streaming, with nothing of the reply yet. */
export function newExchange(message: string): Exchange {
  return { key: ++exchangeKeys, message, reply: '', citations: [], tools: [], usage: null, timing: null, firstTokenMs: null, finish: null, error: null, streaming: true };
}

/**
 * The state of the exchange after one stream event (API.md "Chat", SPEC.md 6.1): tokens append, `replace`
 * assigns, tool calls and results pair up by id, and `citations`, `usage` and `done`/`error` settle it.
 */
export function applyEvent(x: Exchange, e: StreamEvent, elapsedMs: number): Exchange {
  switch (e.type) {
    case 'token': return { ...x, reply: x.reply + e.delta, firstTokenMs: x.firstTokenMs ?? elapsedMs };
    case 'replace': return { ...x, reply: e.delta };
    case 'tool_call': return { ...x, tools: [...x.tools, { id: e.tool_call.id, name: e.tool_call.name, arguments: e.tool_call.arguments }] };
    case 'tool_result': return {
      ...x, tools: x.tools.map((t) => (t.id === e.tool_result.tool_call_id ? { ...t, output: e.tool_result.output, isError: e.tool_result.is_error } : t)),
    };
    case 'citations': return { ...x, citations: e.citations };
    case 'usage': return { ...x, usage: e.usage, timing: (e as { timing?: Timing }).timing ?? null };
    case 'done': return { ...x, finish: e.finish_reason, streaming: false };
    case 'error': return { ...x, error: e.error.message, streaming: false };
    default: return x;
  }
}
