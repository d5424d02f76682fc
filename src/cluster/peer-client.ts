/**
 * How a Parley process talks to its neighbours (DESIGN.md "Several processes"): signed HTTP requests
 * (src/cluster/internal-auth.ts) over one undici keep-alive pool per neighbour, for the internal routes of
 * src/transport/http/routes/internal.ts. A request is JSON in, JSON out; a stream is Server-Sent Events
 * (the same framing as the public chat stream), read with the relay's own parser.
 */
import { Pool } from 'undici';
import { SseDataParser } from '../models/openai/sse-data-parser.js';
import { INTERNAL_HEADER, signInternal } from './internal-auth.js';

/** Options of {@link PeerClient}. */
export interface PeerClientOptions {
  /** This process's id (`proc_...`): the sender named in every signature. */
  processId: string;
  /** The cluster secret (ProcessesPort.clusterSecret). */
  secret: string;
  /** Connections per neighbour at most (a followed stream holds one for its whole turn). Default 4096. */
  connections?: number;
  /** A neighbour that takes longer to connect is unreachable, ms (default 1000). */
  connectTimeoutMs?: number;
  /** A JSON request whose answer takes longer fails, ms (default 10 s). */
  requestTimeoutMs?: number;
}

/** The answer to a JSON request: status, the headers the caller may need, and the parsed body (null when none). */
export interface PeerAnswer {
  status: number;
  retryAfter: string | undefined;
  body: unknown;
}

/**
 * A failure to reach a neighbour at all (connection refused, reset, timed out, DNS), as opposed to an
 * answer with an error status. `refused`: the connection was refused (nothing listens there now).
 */
export class PeerUnreachable extends Error {
  constructor(readonly url: string, readonly refused: boolean, cause: unknown) {
    super(`the Parley process at ${url} could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'PeerUnreachable';
  }
}

/** What a stream hands its reader: each event's data in order, then the end (with an error when it broke). */
export interface PeerStreamSink {
  onData(data: string): void;
  /** Called once: `undefined` after a clean end, else what cut the stream (PeerUnreachable, or an Error). */
  onEnd(err: unknown): void;
}

/** Longest SSE event accepted from a neighbour, characters (a turn's events are far smaller). */
const MAX_EVENT_CHARS = 4 * 1024 * 1024;

/** Signed requests and streams to neighbours (see the module comment). */
export class PeerClient {
  private readonly pools = new Map<string, Pool>();
  private closed = false;

  constructor(private readonly opts: PeerClientOptions) {}

  /**
   * Sends a signed JSON request to the process at `url` (its origin) and returns its answer. Throws
   * PeerUnreachable when no answer came (refused, reset, timed out).
   */
  async request(url: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<PeerAnswer> {
    const text = body === undefined ? null : JSON.stringify(body);
    try {
      const res = await this.pool(url).request({
        method, path, body: text ?? undefined, headersTimeout: this.opts.requestTimeoutMs ?? 10_000, bodyTimeout: this.opts.requestTimeoutMs ?? 10_000,
        headers: this.headers(method, path, text),
      });
      const raw = await res.body.text();
      const retry = res.headers['retry-after'];
      return { status: res.statusCode, retryAfter: Array.isArray(retry) ? retry[0] : retry, body: raw === '' ? null : JSON.parse(raw) as unknown };
    } catch (err) {
      throw unreachable(url, err);
    }
  }

  /**
   * Opens a signed request whose answer is an event stream, and feeds `sink` each event's data until the
   * stream ends. Resolves with the status and the error body (parsed) when the answer is not a 200 stream
   * (nothing is fed then, and `onEnd` is not called); with status 200 once the stream is open. Rejects with
   * PeerUnreachable when no answer came. `signal` aborts the stream (then `onEnd` gets the abort reason).
   */
  async stream(url: string, method: 'GET' | 'POST', path: string, body: unknown, sink: PeerStreamSink, signal?: AbortSignal): Promise<PeerAnswer> {
    const text = body === undefined ? null : JSON.stringify(body);
    let res: Awaited<ReturnType<Pool['request']>>;
    try {
      res = await this.pool(url).request({
        method, path, body: text ?? undefined, headersTimeout: this.opts.requestTimeoutMs ?? 10_000, bodyTimeout: 0,
        headers: { ...this.headers(method, path, text), accept: 'text/event-stream' }, signal,
      });
    } catch (err) {
      throw unreachable(url, err);
    }
    if (res.statusCode !== 200) {
      const raw = await res.body.text().catch(() => '');
      const retry = res.headers['retry-after'];
      let parsed: unknown = null;
      try { parsed = raw === '' ? null : JSON.parse(raw); } catch { parsed = null; }
      return { status: res.statusCode, retryAfter: Array.isArray(retry) ? retry[0] : retry, body: parsed };
    }
    const parser = new SseDataParser(MAX_EVENT_CHARS);
    const decoder = new TextDecoder();
    const eventSink = { onEvent: (data: string) => sink.onData(data) };
    void (async () => {
      try {
        for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }), eventSink);
        parser.feed(decoder.decode(), eventSink);
        sink.onEnd(undefined);
      } catch (err) {
        sink.onEnd(signal?.aborted ? signal.reason : unreachable(url, err));
      }
    })();
    return { status: 200, retryAfter: undefined, body: null };
  }

  /** Closes every pool (open streams are cut). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => {})));
  }

  private headers(method: string, path: string, body: string | null): Record<string, string> {
    const h: Record<string, string> = { [INTERNAL_HEADER]: signInternal(this.opts.secret, this.opts.processId, method, path, body) };
    if (body !== null) h['content-type'] = 'application/json';
    return h;
  }

  private pool(url: string): Pool {
    if (this.closed) throw new Error('the peer client is closed');
    const origin = new URL(url).origin;
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, { connections: this.opts.connections ?? 4096, pipelining: 1, connectTimeout: this.opts.connectTimeoutMs ?? 1000 });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}

function unreachable(url: string, err: unknown): PeerUnreachable {
  if (err instanceof PeerUnreachable) return err;
  const code = (err as { code?: string } | null)?.code;
  return new PeerUnreachable(url, code === 'ECONNREFUSED', err);
}
