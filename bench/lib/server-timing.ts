/**
 * The per-turn timing a Parley stream reports (API.md "Chat", Timing: the `usage` event of an SSE stream,
 * `parley.timing` on the last chunk of an OpenAI-compatible stream), read back from a response body by
 * the load generator, so a benchmark can check the server's figures against its own clock.
 */

/** The timing object: milliseconds from the request's arrival at the server; null for a step that did not happen. */
export interface ServerTiming {
  queued_ms: number | null;
  setup_ms: number | null;
  upstream_first_byte_ms: number | null;
  first_token_ms: number | null;
  total_ms: number | null;
}

const TIMING = /"timing":(\{[^{}]*\})/g;
const FIELDS = ['queued_ms', 'setup_ms', 'upstream_first_byte_ms', 'first_token_ms', 'total_ms'] as const;

/**
 * The last `"timing":{...}` object of `body` (raw response text; a stream has one), or undefined when
 * there is none or it is not a timing object (every field a number or null).
 */
export function timingOf(body: string): ServerTiming | undefined {
  let last: string | undefined;
  for (const m of body.matchAll(TIMING)) last = m[1];
  if (last === undefined) return undefined;
  let o: Record<string, unknown>;
  // The pattern only matches `{...}`: it parses to an object, or not at all.
  try { o = JSON.parse(last) as Record<string, unknown>; } catch { return undefined; }
  for (const f of FIELDS) if (!(f in o) || (o[f] !== null && typeof o[f] !== 'number')) return undefined;
  return o as unknown as ServerTiming;
}

/**
 * How one turn's first token splits, from the server's figures and the client's clock (ms), or
 * undefined when the turn had no upstream first byte or no first token (a builtin model, a failure):
 * - `model`: upstream_first_byte - setup: the model's own time to its first token, network included;
 * - `parley`: setup + (first_token - upstream_first_byte): Parley's share;
 * - `clientMinusServer`: the client's TTFT - first_token: the network and framing between Parley and the
 *   client, plus the client's own read (never negative when both clocks are right: the server's starts later).
 */
export function firstTokenSplit(t: ServerTiming, clientTtftMs: number): { model: number; parley: number; clientMinusServer: number } | undefined {
  if (t.setup_ms === null || t.upstream_first_byte_ms === null || t.first_token_ms === null) return undefined;
  return {
    model: t.upstream_first_byte_ms - t.setup_ms,
    parley: t.setup_ms + (t.first_token_ms - t.upstream_first_byte_ms),
    clientMinusServer: clientTtftMs - t.first_token_ms,
  };
}
