/**
 * Token counting in a worker thread: the o200k_base rank table (≈23 MB of heap with gpt-tokenizer) lives
 * here, not in the server's main thread, whose garbage collections it would otherwise slow (with the
 * earlier js-tiktoken table, ≈70 MB, a full GC of the main thread took 39 ms instead of 4 ms), and
 * counting a long text costs no event-loop time.
 */
import { z } from 'zod';
import type { ModelMessage } from './port.js';
import { countMessageTokens, countTokens, truncateToTokens } from './tokenizer.js';

const CountTask = z.object({ messages: z.array(z.any()), texts: z.array(z.string()) });
const TruncateTask = z.object({ text: z.string(), max: z.number().int().min(0) });

/** `countMessageTokens(messages)` + the tokens of every text, tokens. Throws on a malformed task. */
export default function count(task: { messages: ModelMessage[]; texts: string[] }): number {
  const t = CountTask.parse(task) as { messages: ModelMessage[]; texts: string[] };
  let total = t.messages.length > 0 ? countMessageTokens(t.messages) : 0;
  for (const text of t.texts) total += countTokens(text);
  return total;
}

/** `text` cut to whole words within `max` tokens (see truncateToTokens). Throws on a malformed task. */
export function truncate(task: { text: string; max: number }): { text: string; truncated: boolean } {
  const t = TruncateTask.parse(task);
  return truncateToTokens(t.text, t.max);
}
