import { Piscina } from 'piscina';
import { compiledWorkerUrl } from '../workers/worker-file.js';
import type { ModelMessage } from './port.js';
import { countMessageTokens, countTokens, truncateToTokens } from './tokenizer.js';

/** Counts usage tokens (o200k_base) for providers that do not report them, and for the builtin model. */
export interface TokenCounter {
  /** `countMessageTokens(messages)` + the tokens of every text, tokens. */
  count(messages: ModelMessage[], texts: string[]): Promise<number>;
  /** `text` cut to whole words within `max` tokens, and whether it was cut. */
  truncate(text: string, max: number): Promise<{ text: string; truncated: boolean }>;
  close(): Promise<void>;
}

/** Counts in the calling thread (tests, tools). The server uses {@link createWorkerTokenCounter}. */
export const inProcessTokenCounter: TokenCounter = {
  async count(messages, texts) {
    let total = messages.length > 0 ? countMessageTokens(messages) : 0;
    for (const text of texts) total += countTokens(text);
    return total;
  },
  async truncate(text, max) {
    return truncateToTokens(text, max);
  },
  async close() {},
};

/**
 * Counts in one dedicated worker thread (src/models/token-count.worker.ts, compiled), so the rank
 * table's heap and the BPE work stay off the event loop. The worker loads the table at once, in the
 * background. Rejects what the worker throws.
 *
 * @throws Error when the compiled worker is missing (run `npm run build`).
 */
export function createWorkerTokenCounter(): TokenCounter {
  const pool = new Piscina({
    filename: compiledWorkerUrl(import.meta.url, 'token-count.worker.js').href,
    minThreads: 1, maxThreads: 1, idleTimeout: Number.POSITIVE_INFINITY,
  });
  // Warm up: the first count parses the rank table (~0.5 s of CPU) in the worker, not in a turn.
  pool.run({ messages: [], texts: ['warm up'] }).catch(() => {});
  return {
    count: (messages, texts) => pool.run({ messages, texts }) as Promise<number>,
    truncate: (text, max) => pool.run({ text, max }, { name: 'truncate' }) as Promise<{ text: string; truncated: boolean }>,
    close: () => pool.destroy(),
  };
}
