/**
 * Embeds a document's chunks at ingestion and a question at search time (docs/knowledge-bases.md
 * "Embeddings (optional)"). The HTTP calls run on the main thread: they are I/O, and the event loop
 * only parses the answers (one batch's JSON at a time).
 */
import type { Config } from '../config/config.js';
import { createOpenAIEmbeddings, EmbeddingsError, type EmbeddingsClient } from '../models/openai/openai-embeddings.js';
import type { NewChunk } from '../store/records.js';
import type { ChunkDraft } from './types.js';

/** Waits before the 1st and 2nd retry of a failed batch, ms: 2 retries, then the document fails. */
export const DEFAULT_EMBED_RETRY_DELAYS_MS: readonly number[] = [500, 2000];

/** Options of {@link ChunkEmbedder}. */
export interface ChunkEmbedderOptions {
  /** Chunks per embeddings request, an integer 1-2048 (PARLEY_EMBEDDINGS_BATCH). */
  batch: number;
  /**
   * Delay before each retry of a failed batch, ms; its length is the number of retries (default
   * {@link DEFAULT_EMBED_RETRY_DELAYS_MS}). Only retryable failures (timeout, network, 429, 5xx) are retried.
   */
  retryDelaysMs?: readonly number[];
}

/** A document's chunks could not be embedded; `message` is the reason stored on the document after `embedding failed: `. */
export class EmbeddingFailed extends Error {
  override readonly name = 'EmbeddingFailed';
}

/** What an embedding request is given for a chunk: title, heading path and text, one per line, so each shapes the vector. */
export function chunkEmbeddingInput(title: string, chunk: Pick<ChunkDraft, 'heading' | 'text'>): string {
  return [title, chunk.heading, chunk.text].filter((s) => s !== '').join('\n');
}

/** Embeds chunks in batches with retries, and single questions without retries. */
export class ChunkEmbedder {
  readonly #client: EmbeddingsClient;
  readonly #batch: number;
  readonly #delays: readonly number[];

  /** @throws RangeError when `batch` is not an integer in 1..2048 or a retry delay is negative. */
  constructor(client: EmbeddingsClient, opts: ChunkEmbedderOptions) {
    if (!Number.isInteger(opts.batch) || opts.batch < 1 || opts.batch > 2048) throw new RangeError(`embeddings batch must be an integer in 1..2048, got ${String(opts.batch)}`);
    this.#client = client;
    this.#batch = opts.batch;
    this.#delays = opts.retryDelaysMs ?? DEFAULT_EMBED_RETRY_DELAYS_MS;
    if (this.#delays.some((d) => !(d >= 0))) throw new RangeError('retry delays must be >= 0 ms');
  }

  /** The embedding model, stored with each vector. */
  get model(): string {
    return this.#client.model;
  }

  /**
   * `chunks` of the document titled `title`, each with its embedding (`{model, vector}`), in order.
   * Requests go one batch of `batch` chunks at a time (ceil(n / batch) requests when none fails); a
   * retryable failure is retried after each delay of `retryDelaysMs`.
   *
   * @throws EmbeddingFailed with the last failure's reason when a batch still fails, or when the vectors
   *   of one document come back with different dimensions.
   */
  async embedDocument(title: string, chunks: readonly ChunkDraft[]): Promise<NewChunk[]> {
    const out: NewChunk[] = [];
    let dims = -1;
    for (let start = 0; start < chunks.length; start += this.#batch) {
      const slice = chunks.slice(start, start + this.#batch);
      const vectors = await this.#withRetries(slice.map((c) => chunkEmbeddingInput(title, c)));
      slice.forEach((c, i) => {
        const vector = vectors[i]!;
        if (dims === -1) dims = vector.length;
        else if (vector.length !== dims) throw new EmbeddingFailed(`the model returned vectors of ${dims} and ${vector.length} dimensions`);
        out.push({ ord: c.ord, heading: c.heading, text: c.text, page: c.page, embedding: { model: this.#client.model, vector } });
      });
    }
    return out;
  }

  /**
   * The vector of a search question: one request, no retry (a turn is waiting), bounded by `timeoutMs`.
   *
   * @throws EmbeddingsError as the client throws it.
   */
  async embedQuery(text: string, timeoutMs?: number): Promise<Float32Array> {
    const [vector] = await this.#client.embed([text], timeoutMs === undefined ? {} : { timeoutMs });
    return vector!;
  }

  async #withRetries(inputs: string[]): Promise<Float32Array[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#client.embed(inputs);
      } catch (err) {
        const retryable = err instanceof EmbeddingsError ? err.retryable : false;
        if (!retryable || attempt >= this.#delays.length) throw new EmbeddingFailed(err instanceof Error ? err.message : String(err));
        await new Promise((resolve) => setTimeout(resolve, this.#delays[attempt]));
      }
    }
  }
}

/**
 * The embedder of a configuration (PARLEY_EMBEDDINGS_MODEL and _BATCH over the `openai` provider's base
 * URL and key; each request bounded by PARLEY_MODEL_TIMEOUT_MS), with `close` for its connections;
 * undefined when embeddings are off. Used by the server and by `kb import`.
 */
export function embedderFromConfig(config: Pick<Config, 'embeddings' | 'openai' | 'modelTimeoutMs'>): { embedder: ChunkEmbedder; close(): Promise<void> } | undefined {
  if (config.embeddings === undefined || config.openai === undefined) return undefined;
  const client = createOpenAIEmbeddings({
    baseUrl: config.openai.baseUrl, ...(config.openai.apiKey ? { apiKey: config.openai.apiKey } : {}),
    model: config.embeddings.model, timeoutMs: config.modelTimeoutMs,
  });
  return { embedder: new ChunkEmbedder(client, { batch: config.embeddings.batch }), close: () => client.close() };
}
