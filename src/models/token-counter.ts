import { Piscina } from 'piscina';
import { compiledWorkerUrl } from '../workers/worker-file.js';
import type { ModelMessage } from './port.js';

/** Counts usage tokens (o200k_base) for providers that do not report them, and for the builtin model. */
export interface TokenCounter {
  /** `countMessageTokens(messages)` + the tokens of every text, tokens. */
  count(messages: ModelMessage[], texts: string[]): Promise<number>;
  /** `text` cut to whole words within `max` tokens, and whether it was cut. */
  truncate(text: string, max: number): Promise<{ text: string; truncated: boolean }>;
  close(): Promise<void>;
}

/**
 * Counts in the calling thread (tests, tools). The server uses {@link createWorkerTokenCounter}. The
 * tokenizer (≈23 MB of heap) is loaded on the first count, so importing this module costs nothing.
 */
export const inProcessTokenCounter: TokenCounter = {
  async count(messages, texts) {
    const { countMessageTokens, countTokens } = await import('./tokenizer.js');
    let total = messages.length > 0 ? countMessageTokens(messages) : 0;
    for (const text of texts) total += countTokens(text);
    return total;
  },
  async truncate(text, max) {
    const { truncateToTokens } = await import('./tokenizer.js');
    return truncateToTokens(text, max);
  },
  async close() {},
};

/**
 * Counts in one worker thread (src/models/token-count.worker.ts, compiled), so the rank table's heap and
 * the BPE work stay off the event loop. The thread starts on the first count (loading the table takes
 * about 0.3 s of its CPU, paid by that first count) and stops after `idleMs` without counts, so a server
 * whose providers report usage never holds the table (≈23 MB of heap plus a thread). Rejects what the
 * worker throws.
 *
 * @param idleMs the worker stops after this long without a count, ms (default 5 minutes).
 * @throws Error when the compiled worker is missing (run `npm run build`).
 */
export function createWorkerTokenCounter(idleMs = 5 * 60_000): TokenCounter {
  const pool = new Piscina({
    filename: compiledWorkerUrl(import.meta.url, 'token-count.worker.js').href,
    minThreads: 0, maxThreads: 1, idleTimeout: idleMs,
  });
  return {
    count: (messages, texts) => pool.run({ messages, texts }) as Promise<number>,
    truncate: (text, max) => pool.run({ text, max }, { name: 'truncate' }) as Promise<{ text: string; truncated: boolean }>,
    close: () => pool.destroy(),
  };
}
