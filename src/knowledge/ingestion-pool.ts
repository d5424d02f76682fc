/**
 * The ingestion worker pool: a fixed-size Piscina pool running src/knowledge/ingest.worker.ts
 * (compiled) so that parsing and chunking never block the event loop.
 */
import { compiledWorkerUrl } from '../workers/worker-file.js';
import { Piscina } from 'piscina';
import type { IngestResult, IngestTask } from './types.js';

/** Options of {@link IngestionPool}. */
export interface IngestionPoolOptions {
  /** Most worker threads, an integer >= 1. They start when documents arrive and stop after `idleMs` without work. */
  threads: number;
  /**
   * Called with errors the pool reports outside of a task (a worker dying while idle). Without it
   * they are ignored: the pool replaces the worker and keeps serving.
   */
  onError?: (err: unknown) => void;
  /** An idle worker stops after this long, ms (default 60 s): a server that ingests nothing holds no worker. */
  idleMs?: number;
  /** Worker module URL; defaults to {@link resolveIngestWorkerUrl}(). For tests. */
  workerUrl?: URL;
}

/** Options of {@link IngestionPool.run}. */
export interface IngestRunOptions {
  /**
   * Transfer a `Uint8Array` content's memory to the worker instead of copying it. Only done when
   * the array spans its whole (non-shared) ArrayBuffer, so pooled `Buffer` slices are copied.
   * The caller's array is detached (length 0) afterwards. Default false.
   */
  transfer?: boolean;
}

/**
 * URL of the compiled worker module. From compiled code (this module's URL ends in `.js`) the
 * sibling `ingest.worker.js`; from TypeScript sources (vitest), the project root's
 * `dist/src/knowledge/ingest.worker.js`, root being two levels above src/knowledge.
 *
 * @throws Error when the compiled worker does not exist (run `npm run build`).
 */
export function resolveIngestWorkerUrl(): URL {
  return compiledWorkerUrl(import.meta.url, 'ingest.worker.js');
}

/**
 * A fixed pool of ingestion workers. `run` never rejects: bad documents resolve with the worker's
 * `{ok:false, error}`, and a worker failure (crash, uncloneable task, closed pool) resolves
 * `{ok:false, error:'ingestion worker failed: ...'}` while the pool keeps serving later tasks.
 */
export class IngestionPool {
  readonly #piscina: Piscina<IngestTask, IngestResult>;
  #closed = false;

  /**
   * Starts `threads` workers.
   *
   * @throws RangeError when `threads` is not an integer >= 1.
   * @throws Error when the compiled worker is missing (see {@link resolveIngestWorkerUrl}).
   */
  constructor(opts: IngestionPoolOptions) {
    if (!Number.isInteger(opts.threads) || opts.threads < 1) {
      throw new RangeError(`ingestion pool threads must be an integer >= 1, got ${String(opts.threads)}`);
    }
    const workerUrl = opts.workerUrl ?? resolveIngestWorkerUrl();
    this.#piscina = new Piscina<IngestTask, IngestResult>({
      filename: workerUrl.href,
      name: 'default',
      minThreads: 0,
      maxThreads: opts.threads,
      idleTimeout: opts.idleMs ?? 60_000,
    });
    const onError = opts.onError;
    // Piscina emits 'error' for failures outside a task; an unhandled 'error' event would crash the process.
    this.#piscina.on('error', (err: unknown) => {
      onError?.(err);
    });
  }

  /** Number of worker threads. */
  get threads(): number {
    return this.#piscina.maxThreads;
  }

  /** Tasks waiting for a free worker. */
  get queueSize(): number {
    return this.#piscina.queueSize;
  }

  /**
   * Parses and chunks one document in a worker. Resolves the worker's {@link IngestResult};
   * never rejects (see the class comment).
   */
  async run(task: IngestTask, options: IngestRunOptions = {}): Promise<IngestResult> {
    if (this.#closed) return { ok: false, error: 'ingestion worker failed: the ingestion pool is closed' };
    const transferList: ArrayBuffer[] = [];
    const content = task.content;
    if (
      options.transfer === true &&
      content instanceof Uint8Array &&
      content.buffer instanceof ArrayBuffer &&
      content.byteOffset === 0 &&
      content.byteLength === content.buffer.byteLength
    ) {
      transferList.push(content.buffer);
    }
    try {
      return await this.#piscina.run(task, transferList.length > 0 ? { transferList } : {});
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return { ok: false, error: `ingestion worker failed: ${message.replace(/\s+/g, ' ').trim().slice(0, 300)}` };
    }
  }

  /** Waits for running and queued tasks, then stops the workers. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#piscina.close();
  }
}
