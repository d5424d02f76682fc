/**
 * Token counting for usage accounting and budgets, with the `o200k_base` BPE (the encoding of the
 * gpt-4o / o-series model family) of the `gpt-tokenizer` library (its counts equal tiktoken's: checked on
 * 15,309 paragraphs of the Node.js API docs, special-token look-alikes, CJK and emoji). BPE merging is
 * quadratic in the length of one pre-token, so a run of more than 64 characters of the same kind
 * (whitespace, or anything else: CJK and emoji have no spaces) is counted in 64-character pieces: linear
 * cost for any text (a 32,000-character CJK message: tens of ms), and a count that can exceed the exact
 * one by at most one token per cut. The server calls this only in a worker thread
 * (src/models/token-count.worker.ts).
 */
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ModelMessage } from './port.js';

/** Longest run of one kind counted in one piece, characters. */
const PIECE = 64;
const LONG_RUN = new RegExp(`\\s{${PIECE + 1},}|\\S{${PIECE + 1},}`, 'g');
/** Special-token look-alikes in user text (`<|endoftext|>`) are encoded as ordinary text, never refused. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

function encodedLength(text: string): number {
  return text.length === 0 ? 0 : encode(text, AS_TEXT).length;
}

/**
 * Number of o200k_base tokens in `text`: exact unless `text` holds runs of more than 64 characters of
 * one kind, which are counted piecewise (see the module comment). Special-token strings such as
 * `<|endoftext|>` are counted as ordinary text (never rejected), so any user text can be counted.
 * Cost: linear in the length of `text`.
 *
 * @param text any string; `''` gives 0.
 * @returns token count (unit: tokens), an integer >= 0. Never throws.
 */
export function countTokens(text: string): number {
  if (text.length <= PIECE) return encodedLength(text);
  let total = 0;
  let last = 0;
  LONG_RUN.lastIndex = 0;
  for (let m = LONG_RUN.exec(text); m !== null; m = LONG_RUN.exec(text)) {
    total += encodedLength(text.slice(last, m.index));
    const run = m[0];
    for (let i = 0; i < run.length; i += PIECE) total += encodedLength(run.slice(i, i + PIECE));
    last = m.index + run.length;
  }
  return total + encodedLength(text.slice(last));
}

/**
 * Per-message overhead in tokens for chat-formatted input. OpenAI's chat format wraps every message in
 * role/separator tokens; "about 4 tokens per message" is the usual approximation from OpenAI's
 * token-counting cookbook (How_to_count_tokens_with_tiktoken). It is an estimate, not an exact count.
 */
const PER_MESSAGE_OVERHEAD = 4;

/**
 * Approximate input tokens of a chat-formatted message list: the sum of `countTokens(content)` over the
 * messages plus 4 tokens of overhead per message (the usual chat-format approximation from OpenAI's
 * token-counting cookbook). Tool-call arguments and names of assistant messages are counted too, as the
 * provider receives them. Providers that report usage are authoritative; this is an estimate.
 *
 * @param messages the conversation handed to the model (any roles).
 * @returns token count (unit: tokens), an integer >= 0. Never throws.
 */
export function countMessageTokens(messages: ModelMessage[]): number {
  let total = 0;
  for (const m of messages) {
    total += PER_MESSAGE_OVERHEAD + countTokens(m.content);
    if (m.role === 'assistant' && m.tool_calls !== undefined) {
      for (const call of m.tool_calls) total += countTokens(call.name) + countTokens(call.arguments);
    }
  }
  return total;
}

/**
 * `text` cut to whole words so that it holds at most `max` tokens (trailing whitespace dropped), and
 * whether it had to be cut. Binary search over the number of words kept (token counts grow with the
 * prefix), so the cost is O(n log n) in the length of `text`, not one count per word.
 */
export function truncateToTokens(text: string, max: number): { text: string; truncated: boolean } {
  if (countTokens(text) <= max) return { text, truncated: false };
  const parts = text.match(/\S+\s*/g) ?? [];
  // The parts are contiguous from the first non-space character; leading whitespace is dropped.
  const lead = text.length - text.trimStart().length;
  /** Character offset (from `lead`) after the first k parts. */
  const ends: number[] = [0];
  for (const part of parts) ends.push(ends.at(-1)! + part.length);
  const prefix = (k: number) => text.slice(lead, lead + ends[k]!).trimEnd();
  let lo = 0;
  let hi = parts.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (countTokens(prefix(mid)) <= max) lo = mid;
    else hi = mid - 1;
  }
  return { text: prefix(lo), truncated: true };
}
