/**
 * The ingestion worker pool: a fixed-size Piscina pool running src/knowledge/ingest.worker.ts
 * (compiled) so that parsing and chunking never block the event loop.
 */
import { compiledWorkerUrl } from '../workers/worker-file.js';
import { Piscina } from 'piscina';
import type { IngestResult, IngestTask } from './types.js';
import { isWarmUpDone } from './warm-up.js';

/** Options of {@link IngestionPool}. */
export interface IngestionPoolOptions {
  /**
   * Most worker threads, an integer >= 1. Without warm-up they start when documents arrive and stop after
   * `idleMs` without work; with warm-up (`warmUpRounds` > 0) all of them start with the pool and stay.
   */
  threads: number;
  /**
   * Rounds of the warm-up documents (src/knowledge/warm-up.ts) each worker parses when it starts, before
   * its first task; an integer >= 0, default 0 (no warm-up). With warm-up every worker starts with the pool,
   * warms up, and keeps running until close() (a worker that ends, by a time or memory bound or a crash,
   * is replaced and warms up again), so the first documents after a start or a quiet hour are parsed at
   * full speed; the cost is each worker's memory for as long as the server runs, and its CPU at start.
   */
  warmUpRounds?: number;
  /**
   * Called with errors the pool reports outside of a task (a worker dying while idle). Without it
   * they are ignored: the pool replaces the worker and keeps serving.
   */
  onError?: (err: unknown) => void;
  /** An idle worker stops after this long, ms (default 60 s): a server that ingests nothing holds no worker. */
  idleMs?: number;
  /** Worker module URL; defaults to {@link resolveIngestWorkerUrl}(). For tests. */
  workerUrl?: URL;
  /**
   * Default time bound of one document, ms (default 60 s): counted from when a worker is free for it
   * (not while it waits behind other documents). A task past it has its worker terminated and fails
   * with `document took longer than N ms to parse`. {@link IngestRunOptions.timeoutMs} overrides it.
   */
  timeoutMs?: number;
  /**
   * Heap cap of each worker thread (V8 old generation), MB (default 512). A document whose parse needs
   * more ends its worker and fails with `document needs more than N MB of memory to parse`; the pool
   * starts a new worker for the next one.
   */
  memoryMb?: number;
  /**
   * Nice value of each worker thread, 0 (normal) to 19 (lowest); default {@link DEFAULT_INGEST_NICE}. A
   * worker lowers its own thread's priority when it starts (Linux; elsewhere it runs at normal priority),
   * so parsing takes the cores the event loop leaves idle and gives them back when chat needs them
   * (src/workers/thread-priority.ts).
   */
  nice?: number;
}

/** Default of {@link IngestionPoolOptions.nice}. */
export const DEFAULT_INGEST_NICE = 10;

/** What each ingestion worker receives as Piscina's `workerData`. */
export interface IngestWorkerData {
  nice: number;
  /** IngestionPoolOptions.warmUpRounds; 0 for none. */
  warmUpRounds: number;
}

/** Options of {@link IngestionPool.run}. */
export interface IngestRunOptions {
  /**
   * Transfer a `Uint8Array` content's memory to the worker instead of copying it. Only done when
   * the array spans its whole (non-shared) ArrayBuffer, so pooled `Buffer` slices are copied.
   * The caller's array is detached (length 0) afterwards. Default false.
   */
  transfer?: boolean;
  /** Time bound of this document, ms; default the pool's `timeoutMs`. */
  timeoutMs?: number;
}

/** Default of {@link IngestionPoolOptions.timeoutMs}, ms. */
export const DEFAULT_INGEST_TIMEOUT_MS = 60_000;
/** Default of {@link IngestionPoolOptions.memoryMb}, MB. */
export const DEFAULT_INGEST_MEMORY_MB = 512;

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
 * `{ok:false, error}`; a document past the time or memory bound resolves with the reason (its worker is
 * terminated and replaced); any other worker failure (crash, uncloneable task, closed pool) resolves
 * `{ok:false, error:'ingestion worker failed: ...'}`. Only that document fails: the other documents,
 * running in other workers or waiting, carry on, and the pool keeps serving later tasks.
 *
 * At most `threads` documents are handed to Piscina at a time; the rest wait here in arrival order, so
 * a document's time bound starts when a worker is free for it.
 */
export class IngestionPool {
  readonly #piscina: Piscina<IngestTask, IngestResult>;
  readonly #timeoutMs: number;
  readonly #memoryMb: number;
  readonly #waiting: Array<() => void> = [];
  #running = 0;
  #closed = false;
  #warmedUp = 0;

  /**
   * Starts `threads` workers.
   *
   * @throws RangeError when `threads` is not an integer >= 1, or `timeoutMs`, `memoryMb` or `nice` is out of range.
   * @throws Error when the compiled worker is missing (see {@link resolveIngestWorkerUrl}).
   */
  constructor(opts: IngestionPoolOptions) {
    if (!Number.isInteger(opts.threads) || opts.threads < 1) {
      throw new RangeError(`ingestion pool threads must be an integer >= 1, got ${String(opts.threads)}`);
    }
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_INGEST_TIMEOUT_MS;
    this.#memoryMb = opts.memoryMb ?? DEFAULT_INGEST_MEMORY_MB;
    if (!Number.isInteger(this.#timeoutMs) || this.#timeoutMs < 1) throw new RangeError(`ingestion timeoutMs must be an integer >= 1, got ${String(opts.timeoutMs)}`);
    if (!Number.isInteger(this.#memoryMb) || this.#memoryMb < 8) throw new RangeError(`ingestion memoryMb must be an integer >= 8, got ${String(opts.memoryMb)}`);
    const nice = opts.nice ?? DEFAULT_INGEST_NICE;
    if (!Number.isInteger(nice) || nice < 0 || nice > 19) throw new RangeError(`ingestion nice must be an integer in 0..19, got ${String(opts.nice)}`);
    const warmUpRounds = opts.warmUpRounds ?? 0;
    if (!Number.isInteger(warmUpRounds) || warmUpRounds < 0) throw new RangeError(`ingestion warmUpRounds must be an integer >= 0, got ${String(opts.warmUpRounds)}`);
    const workerData: IngestWorkerData = { nice, warmUpRounds };
    const workerUrl = opts.workerUrl ?? resolveIngestWorkerUrl();
    this.#piscina = new Piscina<IngestTask, IngestResult>({
      filename: workerUrl.href,
      name: 'default',
      // Warm workers all start now and never idle out (Piscina stops only threads above minThreads).
      minThreads: warmUpRounds > 0 ? opts.threads : 0,
      maxThreads: opts.threads,
      idleTimeout: opts.idleMs ?? 60_000,
      workerData,
      resourceLimits: {
        maxOldGenerationSizeMb: this.#memoryMb,
        maxYoungGenerationSizeMb: Math.max(4, Math.min(64, Math.floor(this.#memoryMb / 8))),
      },
    });
    const onError = opts.onError;
    // Piscina emits 'error' for failures outside a task; an unhandled 'error' event would crash the process.
    this.#piscina.on('error', (err: unknown) => {
      onError?.(err);
    });
    // Messages a worker posts outside a task: its warm-up is done (src/knowledge/ingest.worker.ts).
    this.#piscina.on('message', (message: unknown) => {
      if (isWarmUpDone(message)) this.#warmedUp++;
    });
  }

  /**
   * Workers that finished their warm-up since the pool started, replacements included (0 without
   * warm-up): once it reaches `threads`, the first documents no longer wait for V8 to compile the parser.
   */
  get warmedUp(): number {
    return this.#warmedUp;
  }

  /** Number of worker threads. */
  get threads(): number {
    return this.#piscina.maxThreads;
  }

  /** Tasks waiting for a free worker. */
  get queueSize(): number {
    return this.#waiting.length + this.#piscina.queueSize;
  }

  /**
   * Parses and chunks one document in a worker. Resolves the worker's {@link IngestResult};
   * never rejects (see the class comment).
   */
  async run(task: IngestTask, options: IngestRunOptions = {}): Promise<IngestResult> {
    if (this.#closed) return { ok: false, error: 'ingestion worker failed: the ingestion pool is closed' };
    if (this.#running >= this.#piscina.maxThreads) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#running++;
    try {
      return await this.#runNow(task, options);
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
    }
  }

  async #runNow(task: IngestTask, options: IngestRunOptions): Promise<IngestResult> {
    if (this.#closed) return { ok: false, error: 'ingestion worker failed: the ingestion pool is closed' };
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
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
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      return await this.#piscina.run(task, transferList.length > 0 ? { transferList, signal: abort.signal } : { signal: abort.signal });
    } catch (err) {
      if (abort.signal.aborted) return { ok: false, error: `document took longer than ${timeoutMs} ms to parse (the ingestion time limit)` };
      if ((err as { code?: unknown } | null)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        return { ok: false, error: `document needs more than ${this.#memoryMb} MB of memory to parse (the ingestion memory limit)` };
      }
      const message = err instanceof Error ? err.message : String(err);
      return { ok: false, error: `ingestion worker failed: ${message.replace(/\s+/g, ' ').trim().slice(0, 300)}` };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits for running and queued tasks, then stops the workers; tasks still waiting for a worker fail as closed. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const wake of this.#waiting.splice(0)) wake();
    await this.#piscina.close();
  }
}
