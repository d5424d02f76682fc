/**
 * Token counting for usage accounting and budgets. Uses the `o200k_base` BPE (the encoding of the
 * gpt-4o / o-series model family) through js-tiktoken's lite build, so only that one rank table is
 * loaded. The encoder is built on first use (parsing the ranks takes several hundred milliseconds) and
 * reused. The server calls this only in a worker thread (src/models/token-count.worker.ts).
 */
import { Tiktoken } from 'js-tiktoken/lite';
import o200k_base from 'js-tiktoken/ranks/o200k_base';
import type { ModelMessage } from './port.js';

/**
 * Per-message overhead in tokens for chat-formatted input. OpenAI's chat format wraps every message in
 * role/separator tokens; "about 4 tokens per message" is the usual approximation from OpenAI's
 * token-counting cookbook (How_to_count_tokens_with_tiktoken). It is an estimate, not an exact count.
 */
const PER_MESSAGE_OVERHEAD = 4;

/** Longest whitespace-free run encoded in one piece, chars. */
const LONG_RUN_CHARS = 256;
const PIECE = 128;
const LONG_RUN = new RegExp(`\\S{${LONG_RUN_CHARS + 1},}`, 'g');
const LONG_RUN_TEST = new RegExp(`\\S{${LONG_RUN_CHARS + 1},}`);

let encoder: Tiktoken | undefined;

function getEncoder(): Tiktoken {
  encoder ??= new Tiktoken(o200k_base);
  return encoder;
}


/**
 * Number of o200k_base tokens in `text`. Special-token strings such as `<|endoftext|>` are counted as
 * ordinary text (never rejected), so any user text can be counted.
 *
 * @param text any string; `''` gives 0.
 * @returns token count (unit: tokens), an integer >= 0. Never throws.
 */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  if (!LONG_RUN_TEST.test(text)) return encodeLength(text);
  // BPE merging is quadratic in the length of one pre-token: a 32,000-char message without spaces
  // would block the event loop for minutes. Runs of more than LONG_RUN chars without whitespace are
  // counted in PIECE-char pieces (a slight over-count: no merge spans a cut); the rest as usual.
  let total = 0;
  let rest = '';
  let last = 0;
  for (const m of text.matchAll(LONG_RUN)) {
    rest += text.slice(last, m.index);
    last = m.index + m[0].length;
    for (let i = 0; i < m[0].length; i += PIECE) total += encodeLength(m[0].slice(i, i + PIECE));
  }
  rest += text.slice(last);
  return total + (rest.length === 0 ? 0 : encodeLength(rest));
}

function encodeLength(text: string): number {
  // allowedSpecial = [] and disallowedSpecial = [] : encode special-token look-alikes as plain text.
  return getEncoder().encode(text, [], []).length;
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
 * whether it had to be cut.
 */
export function truncateToTokens(text: string, max: number): { text: string; truncated: boolean } {
  if (countTokens(text) <= max) return { text, truncated: false };
  const parts = text.match(/\S+\s*/g) ?? [];
  let out = '';
  for (const part of parts) {
    const next = out + part;
    if (countTokens(next.trimEnd()) > max) break;
    out = next;
  }
  return { text: out.trimEnd(), truncated: true };
}
