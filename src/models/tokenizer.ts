/**
 * Token counting for usage accounting and budgets, with the `o200k_base` BPE (the encoding of the
 * gpt-4o / o-series model family): js-tiktoken's rank table, counted by src/models/bpe.ts, whose cost
 * is linear in the text for any script (js-tiktoken's own merge loop is quadratic in the length of a
 * pre-token: a 32,000-character CJK or emoji message took seconds). The counter is built on first use
 * (parsing the ranks takes a few hundred milliseconds) and reused. The server calls this only in a
 * worker thread (src/models/token-count.worker.ts).
 */
import o200k_base from 'js-tiktoken/ranks/o200k_base';
import { BpeCounter } from './bpe.js';
import type { ModelMessage } from './port.js';

/**
 * Per-message overhead in tokens for chat-formatted input. OpenAI's chat format wraps every message in
 * role/separator tokens; "about 4 tokens per message" is the usual approximation from OpenAI's
 * token-counting cookbook (How_to_count_tokens_with_tiktoken). It is an estimate, not an exact count.
 */
const PER_MESSAGE_OVERHEAD = 4;

let counter: BpeCounter | undefined;

/** The shared o200k_base counter (built on first use). */
export function o200kCounter(): BpeCounter {
  counter ??= new BpeCounter(o200k_base);
  return counter;
}

/**
 * Number of o200k_base tokens in `text`, exactly as tiktoken encodes it. Special-token strings such as
 * `<|endoftext|>` are counted as ordinary text (never rejected), so any user text can be counted.
 * Cost: linear in the UTF-8 size of `text` (times a log factor for very long whitespace-free runs).
 *
 * @param text any string; `''` gives 0.
 * @returns token count (unit: tokens), an integer >= 0. Never throws.
 */
export function countTokens(text: string): number {
  return o200kCounter().count(text);
}

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
