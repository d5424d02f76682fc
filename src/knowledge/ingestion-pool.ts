/**
 * The ingestion pool: a fixed number of parser processes running src/knowledge/ingest.process.ts
 * (compiled), so that parsing and chunking never block the event loop, and a document's memory is the
 * parser's, never the server's.
 *
 * Why processes and not worker threads (issue 35): a worker thread's heap cap (V8's old generation)
 * does not bound what a parser allocates outside the JavaScript heap: the buffers a zip or PDF stream
 * inflates into, WebAssembly memory, native memory. Those live in the server's own address space and,
 * once freed, mostly stay in its resident memory (glibc keeps freed arenas; measured here: a DOCX that
 * inflated 500 MB in a worker thread left the server 490 MB larger, still 80 s later, its thread long
 * stopped). A process is capped as a whole by the operating system (RLIMIT_DATA: heap, buffers, native
 * and WebAssembly memory alike), and all of its memory returns to the system when it exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compiledWorkerUrl } from '../workers/worker-file.js';
import { DEFAULT_MAX_EXPANDED_BYTES } from './expansion-limit.js';
import { CONTENT_PART_BYTES, type ChunksMessage, type PartMessage, type ReadyMessage, type ResultMessage, type TaskMessage } from './ingest-protocol.js';
import type { ChunkDraft, IngestResult, IngestTask } from './types.js';

/** Options of {@link IngestionPool}. */
export interface IngestionPoolOptions {
  /**
   * Most parser processes, an integer >= 1 (PARLEY_INGEST_WORKERS). Without warm-up they start when
   * documents arrive and stop after `idleMs` without work; with warm-up (`warmUpRounds` > 0) all of them
   * start with the pool and stay.
   */
  processes: number;
  /**
   * Rounds of the warm-up documents (src/knowledge/warm-up.ts) each process parses when it starts, before
   * its first task; an integer >= 0, default 0 (no warm-up). With warm-up every process starts with the
   * pool, warms up, and keeps running until close() (one that ends, by a time or memory bound or a crash,
   * is replaced and warms up again), so the first documents after a start or a quiet hour are parsed at
   * full speed; the cost is each process's memory for as long as the server runs, and its CPU at start.
   */
  warmUpRounds?: number;
  /**
   * Called with failures outside of a document: a process that cannot start, or that ends while idle.
   * The pool starts another when one is needed and keeps serving.
   */
  onError?: (err: unknown) => void;
  /** An idle process stops after this long, ms (default 60 s): a server that ingests nothing holds no parser. */
  idleMs?: number;
  /** Module the processes run; defaults to {@link resolveIngestProcessUrl}(). For tests. */
  moduleUrl?: URL;
  /**
   * Default time bound of one document, ms (default 60 s): counted from when a process is free for it
   * (not while it waits behind other documents). A task past it has its process killed and fails
   * with `document took longer than N ms to parse`. {@link IngestRunOptions.timeoutMs} overrides it.
   */
  timeoutMs?: number;
  /**
   * Memory for parsing one document, MB (default 512, PARLEY_INGEST_MEMORY_MB): each process's JavaScript
   * heap (V8's old generation) is capped at it, and the process as a whole (heap, buffers, WebAssembly and
   * native memory) at it plus {@link PARSER_BASE_MB} by the operating system (RLIMIT_DATA, where `/bin/sh`
   * can set it). A document whose parse needs more fails with `document needs more than N MB of memory to
   * parse`; its process ends and another starts for the next document.
   */
  memoryMb?: number;
  /**
   * Nice value added to each process, 0 (same priority as the server) to 19 (lowest); default
   * {@link DEFAULT_INGEST_NICE}. Every thread of a process runs at it (the process starts under `nice`), so
   * parsing takes the cores the event loop leaves idle and gives them back when chat needs them.
   */
  nice?: number;
  /**
   * The expansion limit of every document (PARLEY_INGEST_MAX_EXPANDED_BYTES; default
   * DEFAULT_MAX_EXPANDED_BYTES of src/knowledge/expansion-limit.ts): most bytes a DOCX or PDF may
   * decompress to and most characters of text any document may yield.
   */
  maxExpandedBytes?: number;
}

/** Default of {@link IngestionPoolOptions.nice}. */
export const DEFAULT_INGEST_NICE = 10;

/**
 * Memory of a parser process beyond its document's share, MB: Node.js itself, the parsers' code (pdf.js,
 * mammoth, linkedom, md4c) and its threads' stacks. Measured: 176 MB of data segment (VmData) once every
 * parser had run once. The operating-system limit of a process is `memoryMb` plus this.
 */
export const PARSER_BASE_MB = 256;

/** Options of {@link IngestionPool.run}. */
export interface IngestRunOptions {
  /** Time bound of this document, ms; default the pool's `timeoutMs`. */
  timeoutMs?: number;
}

/** Default of {@link IngestionPoolOptions.timeoutMs}, ms. */
export const DEFAULT_INGEST_TIMEOUT_MS = 60_000;
/** Default of {@link IngestionPoolOptions.memoryMb}, MB. */
export const DEFAULT_INGEST_MEMORY_MB = 512;

/**
 * URL of the compiled parser process module: from compiled code the sibling `ingest.process.js`; from
 * TypeScript sources (vitest), `dist/src/knowledge/ingest.process.js` under the project root.
 *
 * @throws Error when the compiled module does not exist (run `npm run build`).
 */
export function resolveIngestProcessUrl(): URL {
  return compiledWorkerUrl(import.meta.url, 'ingest.process.js');
}

/**
 * Runs `node ...` under `/bin/sh` so that the process starts with its memory limit and nice value in
 * place before its first thread exists: `ulimit -d` (RLIMIT_DATA, KB: since Linux 4.7 it counts every
 * private writable mapping, so V8's heap, ArrayBuffers, WebAssembly memory and malloc alike) and `nice -n`.
 * A limit the shell cannot set (a lower hard limit) is left as it is.
 */
const LAUNCH = 'ulimit -d "$1" 2>/dev/null; n="$2"; shift 2; if [ "$n" -gt 0 ] && command -v nice >/dev/null 2>&1; then exec nice -n "$n" "$@"; fi; exec "$@"';

/** Messages of a parser's stderr that mean it ran out of memory (V8 fatal errors, failed mallocs). */
const OUT_OF_MEMORY = /heap out of memory|Allocation failed|Fatal process out of memory|Cannot allocate memory|out of memory/i;

/** Last bytes of a parser's stderr kept, to tell why it ended. */
const STDERR_TAIL = 4096;

/** A running task: its id, the chunks received so far, how to finish it. */
interface Running {
  id: number;
  chunks: ChunkDraft[];
  timer: NodeJS.Timeout;
  timedOut: boolean;
  timeoutMs: number;
  finish: (result: IngestResult) => void;
}

/** One parser process and what the pool knows of it. */
interface Parser {
  child: ChildProcess;
  ready: boolean;
  /** Resolves once the process takes tasks (its `ready` message), or once it has ended. */
  readyPromise: Promise<boolean>;
  running: Running | undefined;
  stderr: string;
  idleTimer: NodeJS.Timeout | undefined;
  /** Set when the pool ends the process itself (idle, close): its exit is not a failure. */
  retiring: boolean;
  exited: boolean;
}

/**
 * A fixed pool of parser processes. `run` never rejects: bad documents resolve with the parser's
 * `{ok:false, code, error}`; a document past the time or memory bound resolves with the reason (its process
 * is killed or has died, and another starts); any other failure of the process (a crash, a task that
 * cannot be sent, a closed pool) resolves `{ok:false, code:'ingestion_failed', error:'ingestion worker
 * failed: ...'}`. Only that document fails: the other documents, running in other processes or waiting,
 * carry on, and the pool keeps serving later tasks.
 *
 * At most `processes` documents are parsed at a time; the rest wait here in arrival order, so a
 * document's time bound starts when a process is free for it. (Fairness between organizations is the
 * caller's: src/knowledge/knowledge-service.ts hands documents over in its own order.)
 */
export class IngestionPool {
  readonly #processes: number;
  readonly #timeoutMs: number;
  readonly #memoryMb: number;
  readonly #nice: number;
  readonly #warmUpRounds: number;
  readonly #idleMs: number;
  readonly #maxExpandedBytes: number;
  readonly #modulePath: string;
  readonly #onError: ((err: unknown) => void) | undefined;
  readonly #parsers = new Set<Parser>();
  readonly #waiting: Array<() => void> = [];
  readonly #idle: Parser[] = [];
  #running = 0;
  #nextId = 1;
  #closed = false;
  #warmedUp = 0;
  readonly #drained: Array<() => void> = [];

  /**
   * Starts `processes` parsers at once when warm-up is on; otherwise none until the first document.
   *
   * @throws RangeError when `processes` is not an integer >= 1, or `timeoutMs`, `memoryMb`, `nice`,
   *   `warmUpRounds` or `maxExpandedBytes` is out of range.
   * @throws Error when the compiled module is missing (see {@link resolveIngestProcessUrl}).
   */
  constructor(opts: IngestionPoolOptions) {
    if (!Number.isInteger(opts.processes) || opts.processes < 1) {
      throw new RangeError(`ingestion pool processes must be an integer >= 1, got ${String(opts.processes)}`);
    }
    this.#processes = opts.processes;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_INGEST_TIMEOUT_MS;
    this.#memoryMb = opts.memoryMb ?? DEFAULT_INGEST_MEMORY_MB;
    if (!Number.isInteger(this.#timeoutMs) || this.#timeoutMs < 1) throw new RangeError(`ingestion timeoutMs must be an integer >= 1, got ${String(opts.timeoutMs)}`);
    if (!Number.isInteger(this.#memoryMb) || this.#memoryMb < 8) throw new RangeError(`ingestion memoryMb must be an integer >= 8, got ${String(opts.memoryMb)}`);
    this.#nice = opts.nice ?? DEFAULT_INGEST_NICE;
    if (!Number.isInteger(this.#nice) || this.#nice < 0 || this.#nice > 19) throw new RangeError(`ingestion nice must be an integer in 0..19, got ${String(opts.nice)}`);
    this.#warmUpRounds = opts.warmUpRounds ?? 0;
    if (!Number.isInteger(this.#warmUpRounds) || this.#warmUpRounds < 0) throw new RangeError(`ingestion warmUpRounds must be an integer >= 0, got ${String(opts.warmUpRounds)}`);
    this.#maxExpandedBytes = opts.maxExpandedBytes ?? DEFAULT_MAX_EXPANDED_BYTES;
    if (!Number.isInteger(this.#maxExpandedBytes) || this.#maxExpandedBytes < 0) throw new RangeError(`ingestion maxExpandedBytes must be an integer >= 0, got ${String(opts.maxExpandedBytes)}`);
    this.#idleMs = opts.idleMs ?? 60_000;
    this.#onError = opts.onError;
    this.#modulePath = fileURLToPath(opts.moduleUrl ?? resolveIngestProcessUrl());
    if (!existsSync(this.#modulePath)) throw new Error(`parser module ${this.#modulePath} not found: run \`npm run build\` first`);
    if (this.#warmUpRounds > 0) for (let i = 0; i < this.#processes; i++) this.#idle.push(this.#start());
  }

  /**
   * Processes that finished their warm-up since the pool started, replacements included (0 without
   * warm-up): once it reaches `processes`, the first documents no longer wait for V8 to compile the parser.
   */
  get warmedUp(): number {
    return this.#warmedUp;
  }

  /** Most parser processes (the configured number). */
  get processes(): number {
    return this.#processes;
  }

  /** Parser processes alive now (starting, idle or parsing). */
  get alive(): number {
    return this.#parsers.size;
  }

  /** Process ids of the parsers alive now (for tests and diagnostics). */
  get pids(): number[] {
    return [...this.#parsers].map((p) => p.child.pid).filter((pid): pid is number => pid !== undefined);
  }

  /** Tasks waiting for a free parser. */
  get queueSize(): number {
    return this.#waiting.length;
  }

  /** Starts a parser process. */
  #start(): Parser {
    const kb = (this.#memoryMb + PARSER_BASE_MB) * 1024;
    const node = [process.execPath, `--max-old-space-size=${this.#memoryMb}`, this.#modulePath, String(this.#warmUpRounds)];
    const child = process.platform === 'win32'
      ? spawn(node[0]!, node.slice(1), { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced' })
      : spawn('/bin/sh', ['-c', LAUNCH, 'parley-ingest', String(kb), String(this.#nice), ...node], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced' });
    let markReady: (ok: boolean) => void = () => undefined;
    const parser: Parser = {
      child, ready: false, running: undefined, stderr: '', idleTimer: undefined, retiring: false, exited: false,
      readyPromise: new Promise<boolean>((resolve) => { markReady = resolve; }),
    };
    this.#parsers.add(parser);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      parser.stderr = (parser.stderr + text).slice(-STDERR_TAIL);
    });
    child.on('message', (message: unknown) => this.#onMessage(parser, message, markReady));
    child.on('error', (err) => {
      // Spawn failures (and a kill that could not be sent): 'exit' may not follow a failed spawn.
      if (!parser.ready && child.pid === undefined) this.#ended(parser, null, null, err, markReady);
      else this.#onError?.(err);
    });
    child.on('exit', (code, signal) => this.#ended(parser, code, signal, undefined, markReady));
    return parser;
  }

  #onMessage(parser: Parser, message: unknown, markReady: (ok: boolean) => void): void {
    const m = message as Partial<ReadyMessage | ChunksMessage | ResultMessage> | null;
    if (typeof m !== 'object' || m === null) return;
    if (m.type === 'ready') {
      parser.ready = true;
      if (((m as ReadyMessage).rounds ?? 0) > 0) this.#warmedUp++;
      markReady(true);
      return;
    }
    const running = parser.running;
    if (running === undefined || (m as ChunksMessage | ResultMessage).id !== running.id) return;
    if (m.type === 'chunks' && Array.isArray((m as ChunksMessage).chunks)) {
      for (const chunk of (m as ChunksMessage).chunks) running.chunks.push(chunk);
    } else if (m.type === 'result' && typeof (m as ResultMessage).result === 'object') {
      const result = (m as ResultMessage).result;
      running.finish(result.ok ? { ok: true, chunks: running.chunks, characters: result.characters } : result);
    }
  }

  /** A parser process ended (or never started): finish its task with the reason, forget it, replace it if warm. */
  #ended(parser: Parser, code: number | null, signal: NodeJS.Signals | null, spawnError: Error | undefined, markReady: (ok: boolean) => void): void {
    if (parser.exited) return;
    parser.exited = true;
    this.#parsers.delete(parser);
    const idleAt = this.#idle.indexOf(parser);
    if (idleAt >= 0) this.#idle.splice(idleAt, 1);
    clearTimeout(parser.idleTimer);
    markReady(false);
    const running = parser.running;
    if (running !== undefined) {
      running.finish(this.#deathResult(parser, running, code, signal, spawnError));
    } else if (!parser.retiring && !this.#closed) {
      this.#onError?.(spawnError ?? new Error(`ingestion parser process ended while idle (${describeExit(code, signal)})${lastLine(parser.stderr)}`));
    }
    // A warm pool keeps its processes: the replacement starts (and warms up) now, not with the next document.
    if (this.#warmUpRounds > 0 && !this.#closed && this.#parsers.size < this.#processes) this.#idle.push(this.#start());
  }

  #deathResult(parser: Parser, running: Running, code: number | null, signal: NodeJS.Signals | null, spawnError: Error | undefined): IngestResult {
    if (running.timedOut) {
      return { ok: false, code: 'ingestion_timeout', error: `document took longer than ${running.timeoutMs} ms to parse (the ingestion time limit)` };
    }
    if (OUT_OF_MEMORY.test(parser.stderr)) {
      return { ok: false, code: 'document_too_large', error: `document needs more than ${this.#memoryMb} MB of memory to parse (the ingestion memory limit)` };
    }
    const why = spawnError !== undefined ? spawnError.message : `the parser process ended (${describeExit(code, signal)})${lastLine(parser.stderr)}`;
    return { ok: false, code: 'ingestion_failed', error: `ingestion worker failed: ${why.replace(/\s+/g, ' ').trim().slice(0, 300)}` };
  }

  /**
   * An idle parser, started if none is idle; waits for it to take tasks. One that dies before it does (a
   * crash at start) is replaced, twice at most: undefined then (or when the pool closed meanwhile).
   */
  async #acquire(): Promise<Parser | undefined> {
    for (let attempt = 0; attempt < 3 && !this.#closed; attempt++) {
      const parser = this.#idle.pop() ?? this.#start();
      clearTimeout(parser.idleTimer);
      parser.idleTimer = undefined;
      if (await parser.readyPromise) return parser;
    }
    return undefined;
  }

  /** Back to the idle list; a cold pool stops it after `idleMs` without work. */
  #release(parser: Parser): void {
    if (parser.exited) return;
    if (this.#closed) {
      this.#retire(parser);
      return;
    }
    this.#idle.push(parser);
    if (this.#warmUpRounds === 0) {
      parser.idleTimer = setTimeout(() => {
        const at = this.#idle.indexOf(parser);
        if (at >= 0) this.#idle.splice(at, 1);
        this.#retire(parser);
      }, this.#idleMs);
      parser.idleTimer.unref();
    }
  }

  /** Ends a parser the pool no longer needs: disconnecting makes it exit; a kill follows if it lingers. */
  #retire(parser: Parser): void {
    parser.retiring = true;
    if (parser.exited) return;
    try { parser.child.disconnect(); } catch { /* already disconnected */ }
    setTimeout(() => { if (!parser.exited) parser.child.kill('SIGKILL'); }, 2000).unref();
  }

  /**
   * Parses and chunks one document in a parser process. Resolves the parser's {@link IngestResult};
   * never rejects (see the class comment).
   */
  async run(task: IngestTask, options: IngestRunOptions = {}): Promise<IngestResult> {
    if (this.#closed) return closedResult();
    if (this.#running >= this.#processes) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#running++;
    try {
      return await this.#runNow(task, options);
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
      if (this.#running === 0) for (const done of this.#drained.splice(0)) done();
    }
  }

  async #runNow(task: IngestTask, options: IngestRunOptions): Promise<IngestResult> {
    if (this.#closed) return closedResult();
    const parser = await this.#acquire();
    if (parser === undefined) {
      return this.#closed ? closedResult() : { ok: false, code: 'ingestion_failed', error: 'ingestion worker failed: the parser process could not start' };
    }
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const id = this.#nextId++;
    // A large upload goes in slices, one per event-loop turn: serializing 9 MB at once held the loop ~15 ms.
    const content = task.content;
    const sliced = content instanceof Uint8Array && content.byteLength > CONTENT_PART_BYTES;
    if (sliced) {
      for (let at = 0; at < content.byteLength && !parser.exited; at += CONTENT_PART_BYTES) {
        const part: PartMessage = { type: 'part', id, bytes: content.subarray(at, at + CONTENT_PART_BYTES) };
        try { parser.child.send(part); } catch { break; /* the task's own send reports it */ }
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const result = await new Promise<IngestResult>((resolve) => {
      const running: Running = {
        id, chunks: [], timedOut: false, timeoutMs,
        timer: setTimeout(() => {
          running.timedOut = true;
          parser.child.kill('SIGKILL'); // its exit finishes the task with the time-limit reason
        }, timeoutMs),
        finish: (r) => {
          if (parser.running !== running) return;
          parser.running = undefined;
          clearTimeout(running.timer);
          resolve(r);
        },
      };
      parser.running = running;
      const message: TaskMessage = {
        type: 'task', id, ...(sliced ? { parts: true } : {}),
        task: { title: task.title, contentType: task.contentType, content: sliced ? new Uint8Array(0) : content, maxExpandedBytes: task.maxExpandedBytes ?? this.#maxExpandedBytes, memoryMb: this.#memoryMb },
      };
      try {
        parser.child.send(message, (err) => {
          if (err) running.finish({ ok: false, code: 'ingestion_failed', error: `ingestion worker failed: ${err.message.replace(/\s+/g, ' ').slice(0, 300)}` });
        });
      } catch (err) {
        // A task that cannot be serialized (a function, say) fails alone; the process is fine.
        running.finish({ ok: false, code: 'ingestion_failed', error: `ingestion worker failed: ${(err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').slice(0, 300)}` });
      }
    });
    // A parser that ran out of memory ends (its memory goes back to the system); the next document gets a fresh one.
    if (!result.ok && result.code === 'document_too_large' && !parser.exited) this.#retire(parser);
    else this.#release(parser);
    return result;
  }

  /** Waits for running and queued tasks, then stops the processes; tasks still waiting for a parser fail as closed. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const wake of this.#waiting.splice(0)) wake();
    if (this.#running > 0) await new Promise<void>((resolve) => this.#drained.push(resolve));
    const exits = [...this.#parsers].map((p) => new Promise<void>((resolve) => {
      if (p.exited) resolve();
      else p.child.once('exit', () => resolve());
      clearTimeout(p.idleTimer);
      this.#retire(p);
    }));
    this.#idle.length = 0;
    await Promise.all(exits);
  }
}

function closedResult(): IngestResult {
  return { ok: false, code: 'ingestion_failed', error: 'ingestion worker failed: the ingestion pool is closed' };
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `signal ${signal}` : `exit code ${String(code)}`;
}

/** `: <last non-empty line of stderr>`, or '' when it wrote nothing. */
function lastLine(stderr: string): string {
  const line = stderr.trim().split('\n').pop()?.trim();
  return line ? `: ${line}` : '';
}
