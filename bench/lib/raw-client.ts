/**
 * A cheap HTTP/1.1 client for the load generator, on raw `net` sockets: requests are pre-built bytes,
 * responses are scanned as bytes (one shared read buffer, `onread`). SSE bodies are never parsed: token
 * frames are counted by searching for a marker (`"type":"token"`, or `"content":"` in OpenAI chunks) with
 * a carry-over across reads, so a marker split between two TCP reads still counts once. Keep-alive connections are reused when the
 * response ended cleanly (chunked terminator or full Content-Length).
 */
import net from 'node:net';
import type { Samples } from './stats.js';

/** What the SSE body looks like: Parley-style events (also the baseline) or OpenAI chunks (direct). */
export type Flavor = 'events' | 'openai';

/** A request target: where to connect and the exact bytes to send. */
export interface Target {
  name: string;
  port: number;
  flavor: Flavor;
  /** The whole HTTP request (head + body), built once with {@link buildRequest}. */
  request: Buffer;
  /**
   * With {@link TargetSpec.bodies}: one whole request per body, sent in turn (round robin over every
   * connection of this target; `next` is the index of the next one). Absent: `request` every time.
   */
  rotation?: { requests: Buffer[]; next: number };
}

/** The serializable description of a target (the runner sends these to the load generator). */
export interface TargetSpec {
  name: string;
  port: number;
  flavor: Flavor;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /**
   * Several bodies to send in turn instead of `body` (e.g. one per conversation continued), each request
   * the next one, round robin.
   */
  bodies?: string[];
}

export function buildTarget(spec: TargetSpec): Target {
  const t: Target = { name: spec.name, port: spec.port, flavor: spec.flavor, request: buildRequest(spec) };
  if (spec.bodies !== undefined && spec.bodies.length > 0) t.rotation = { requests: spec.bodies.map((body) => buildRequest({ ...spec, body })), next: 0 };
  return t;
}

export function buildRequest(spec: Pick<TargetSpec, 'method' | 'path' | 'port' | 'headers' | 'body'>): Buffer {
  const body = Buffer.from(spec.body, 'utf8');
  let head = `${spec.method} ${spec.path} HTTP/1.1\r\nHost: 127.0.0.1:${spec.port}\r\n`;
  for (const [k, v] of Object.entries(spec.headers)) head += `${k}: ${v}\r\n`;
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Error codes that mean the load generator's own limits (not the server's). */
const CLIENT_LIMIT_CODES = new Set(['EMFILE', 'ENFILE', 'EADDRNOTAVAIL', 'EADDRINUSE', 'ENOBUFS', 'ENOMEM']);

export function isClientLimit(code: string): boolean {
  return CLIENT_LIMIT_CODES.has(code);
}

/** Scratch space for the bytes around a read boundary (reads are processed synchronously, one at a time). */
const SCRATCH = Buffer.alloc(256);

/**
 * Counts occurrences of several byte patterns in a stream of chunks, including occurrences split across
 * chunks: it keeps the last (longest pattern - 1) bytes of the stream and, for each new chunk, searches
 * the joint of that tail and the chunk's first bytes for matches that cross the boundary. Each
 * occurrence is counted exactly once, in the chunk where it ends. No allocation per chunk.
 */
export class Scanner {
  private readonly pats: Buffer[];
  private readonly keep: number;
  private readonly tail: Buffer;
  private tailLen = 0;

  constructor(patterns: string[]) {
    this.pats = patterns.map((p) => Buffer.from(p, 'latin1'));
    this.keep = Math.max(1, ...this.pats.map((p) => p.length)) - 1;
    if (this.keep * 2 > SCRATCH.length) throw new RangeError('pattern too long');
    this.tail = Buffer.alloc(Math.max(1, this.keep));
  }

  /** Pretends `bytes` came before the first chunk (e.g. `\r\n`, so a body of just `0\r\n\r\n` ends a chunked body). */
  seed(bytes: string): this {
    this.push(Buffer.from(bytes, 'latin1'));
    return this;
  }

  /** Sets out[i] to the occurrences of pattern i that end in `chunk`. */
  scan(chunk: Buffer, out: number[]): void {
    const pats = this.pats;
    for (let i = 0; i < pats.length; i++) out[i] = 0;
    const tl = this.tailLen;
    if (tl > 0) {
      const head = Math.min(this.keep, chunk.length);
      this.tail.copy(SCRATCH, 0, 0, tl);
      chunk.copy(SCRATCH, tl, 0, head);
      const joined = SCRATCH.subarray(0, tl + head);
      for (let i = 0; i < pats.length; i++) {
        const p = pats[i]!;
        for (let j = joined.indexOf(p); j >= 0 && j < tl; j = joined.indexOf(p, j + 1)) if (j + p.length > tl) out[i]!++;
      }
    }
    for (let i = 0; i < pats.length; i++) {
      const p = pats[i]!;
      for (let j = chunk.indexOf(p); j >= 0; j = chunk.indexOf(p, j + p.length)) out[i]!++;
    }
    this.push(chunk);
  }

  private push(chunk: Buffer): void {
    const k = this.keep;
    if (chunk.length >= k) {
      chunk.copy(this.tail, 0, chunk.length - k);
      this.tailLen = k;
      return;
    }
    const drop = Math.max(0, this.tailLen + chunk.length - k);
    if (drop > 0) this.tail.copy(this.tail, 0, drop, this.tailLen);
    chunk.copy(this.tail, this.tailLen - drop);
    this.tailLen = this.tailLen - drop + chunk.length;
  }
}

const CRLF2 = Buffer.from('\r\n\r\n', 'latin1');
const CHUNKED_END = '\r\n0\r\n\r\n';
const NEVER = '\u0000\u0000never\u0000\u0000';
const MARKERS: Record<Flavor, { token: string; done: string; error: string | null; idle: string | null }> = {
  events: { token: '"type":"token"', done: '"type":"done"', error: '"type":"error"', idle: '"type":"conversation"' },
  openai: { token: '"content":"', done: 'data: [DONE]', error: null, idle: null },
};

/** The outcome of one request. Times are ms, relative to the exchange's `t0`. */
export interface ExchangeResult {
  ok: boolean;
  status: number;
  /** Error code or description when !ok (`http_<status>`, `stream_error`, `no_done`, `timeout`, errno codes). */
  error: string | undefined;
  /** The first bytes (up to 1 KiB) of the body of a failed response. */
  errorBody: string;
  /** The response head had a `Retry-After` header. */
  retryAfter: boolean;
  clientLimit: boolean;
  ttftMs: number;
  /** When the idle marker came (`conversation` event, or the response head for OpenAI streams). */
  idleMs: number;
  durationMs: number;
  tokens: number;
  frames: number;
  /** The body's first `keepBody` bytes as text (raw: chunk-size lines included); '' unless asked for. */
  body: string;
  /** Largest silence in the stream: t0 -> first token (minus the expected TTFT) and every token gap. */
  maxGapMs: number;
  bodyBytes: number;
}

/** Per-request options. */
export interface ExchangeOptions {
  /** Reference time (performance.now()) latencies count from; default: when the request is written. */
  t0?: number;
  /** Expect an SSE body (count tokens) rather than a one-shot body. */
  sse: boolean;
  /** The upstream's configured TTFT, subtracted from the first gap. */
  expectFirstMs?: number;
  /** Where to push inter-token gaps (ms) minus `intervalMs`, from the gap token2->token3 on. */
  gaps?: Samples;
  intervalMs?: number;
  /** Called once when the stream is established and idle (conversation event / OpenAI head, or see `idleOn`). */
  onIdle?: () => void;
  /** What makes the stream idle: its marker (default; `conversation` event or OpenAI head) or its first token. */
  idleOn?: 'marker' | 'token';
  /**
   * Keep the body's first this many bytes as text (ExchangeResult.body), for checks that read what the
   * server said (its timing figures). Off by default: measurement runs never decode bodies.
   */
  keepBody?: number;
}

/**
 * True when a failed response is a typed refusal: HTTP 503 with a `Retry-After` header and a JSON body
 * `{"error":{"type":"api_error","code":"overloaded",...}}` (Parley's admission control). Anything else
 * that failed is an untyped failure.
 */
export function isTypedRefusal(r: Pick<ExchangeResult, 'status' | 'retryAfter' | 'errorBody'>): boolean {
  if (r.status !== 503 || !r.retryAfter) return false;
  try {
    const body = JSON.parse(r.errorBody) as { error?: { type?: unknown; code?: unknown } } | null;
    return body?.error?.type === 'api_error' && body.error.code === 'overloaded';
  } catch {
    return false;
  }
}

export class Exchange {
  readonly t0: number;
  lastActivity: number;
  status = 0;
  private headDone = false;
  private headBuf: Buffer | null = null;
  private chunked = false;
  private contentLength = -1;
  private bodyRead = 0;
  private errText = '';
  connClose = false;
  retryAfter = false;
  tokens = 0;
  frames = 0;
  firstTokenAt = 0;
  lastTokenAt = 0;
  idleAt = 0;
  maxGap = 0;
  sawDone = false;
  sawError = false;
  finished = false;
  private kept = '';
  /** Patterns: 0 token, 1 frame, 2 done, 3 error, 4 idle, 5 chunked end (SSE); or just the end. */
  private scanner: Scanner | undefined;
  private sseScan = false;
  private readonly hits = [0, 0, 0, 0, 0, 0];
  private resolveFn: (r: ExchangeResult) => void = () => {};
  readonly done: Promise<ExchangeResult>;

  constructor(private readonly flavor: Flavor, readonly opts: ExchangeOptions, now: number) {
    this.t0 = opts.t0 ?? now;
    this.lastActivity = now;
    this.done = new Promise((r) => { this.resolveFn = r; });
  }

  /** Feeds response bytes; returns true when the response is complete. */
  feed(buf: Buffer, now: number): boolean {
    this.lastActivity = now;
    if (!this.headDone) {
      const all = this.headBuf ? Buffer.concat([this.headBuf, buf]) : buf;
      const i = all.indexOf(CRLF2);
      if (i < 0) {
        this.headBuf = Buffer.from(all); // the read buffer is shared and reused
        if (all.length > 65_536) this.fail('bad_response_head', now);
        return this.finished;
      }
      this.headBuf = null;
      this.headDone = true;
      const head = all.toString('latin1', 0, i);
      this.status = Number(head.slice(9, 12));
      const lower = head.toLowerCase();
      this.chunked = /\r\ntransfer-encoding:\s*chunked/.test(lower);
      const cl = /\r\ncontent-length:\s*(\d+)/.exec(lower);
      this.contentLength = cl ? Number(cl[1]) : -1;
      this.connClose = /\r\nconnection:\s*close/.test(lower);
      this.retryAfter = /\r\nretry-after:/.test(lower);
      if (this.chunked) {
        const m = MARKERS[this.flavor];
        this.sseScan = this.status === 200 && this.opts.sse;
        // Patterns that cannot occur stand in for absent ones (keeps the indexes fixed).
        this.scanner = new Scanner(this.sseScan ? [m.token, 'data: ', m.done, m.error ?? NEVER, m.idle ?? NEVER, CHUNKED_END] : [CHUNKED_END]).seed('\r\n');
      }
      if (this.status === 200 && this.opts.sse && MARKERS[this.flavor].idle === null && this.opts.idleOn !== 'token') this.markIdle(now);
      buf = all.subarray(i + 4);
      if (buf.length === 0) {
        if (this.contentLength === 0) return this.complete(now);
        return false;
      }
    }
    this.bodyRead += buf.length;
    if (this.status !== 200 && this.errText.length < 1024) this.errText += buf.toString('utf8', 0, Math.min(buf.length, 1024));
    const keep = this.opts.keepBody;
    if (keep !== undefined && this.kept.length < keep) this.kept += buf.toString('utf8', 0, Math.min(buf.length, keep - this.kept.length));
    if (this.chunked) {
      const h = this.hits;
      this.scanner!.scan(buf, h);
      if (this.sseScan) {
        if (h[0]! > 0) this.onTokens(h[0]!, now);
        this.frames += h[1]!;
        if (h[2]! > 0) this.sawDone = true;
        if (h[3]! > 0) this.sawError = true;
        if (h[4]! > 0 && this.opts.idleOn !== 'token') this.markIdle(now);
        if (h[5]! > 0) return this.complete(now);
      } else if (h[0]! > 0) {
        return this.complete(now);
      }
      return false;
    }
    if (this.contentLength >= 0 && this.bodyRead >= this.contentLength) return this.complete(now);
    return false;
  }

  private markIdle(now: number): void {
    if (this.idleAt !== 0) return;
    this.idleAt = now;
    this.opts.onIdle?.();
  }

  private onTokens(n: number, now: number): void {
    const gaps = this.opts.gaps;
    const interval = this.opts.intervalMs ?? 0;
    if (this.tokens === 0) {
      this.firstTokenAt = now;
      if (this.opts.idleOn === 'token') this.markIdle(now);
      const g = now - this.t0 - (this.opts.expectFirstMs ?? 0);
      if (g > this.maxGap) this.maxGap = g;
    } else {
      const g = now - this.lastTokenAt;
      if (g > this.maxGap) this.maxGap = g;
      // Gap between token k and k+1 (k = this.tokens); token1 -> token2 depends on the mock's tick phase.
      if (gaps && this.tokens >= 2) gaps.push(g - interval);
    }
    // Tokens that arrived in the same read: a gap of 0 each.
    if (gaps) for (let k = 1; k < n; k++) if (this.tokens + k >= 2) gaps.push(-interval);
    this.tokens += n;
    this.lastTokenAt = now;
  }

  /** The server closed the connection (fine when the body has no length: it ends at close). */
  closed(now: number): void {
    if (this.finished) return;
    if (this.headDone && !this.chunked && this.contentLength < 0) {
      this.complete(now);
      return;
    }
    this.fail(this.headDone ? 'closed_mid_response' : 'closed_before_response', now);
  }

  private complete(now: number): boolean {
    if (this.finished) return true;
    let error: string | undefined;
    if (this.status !== 200) error = `http_${this.status}`;
    else if (this.opts.sse && this.sawError) error = 'stream_error';
    else if (this.opts.sse && !this.sawDone) error = 'no_done';
    this.settle(error, false, now);
    return true;
  }

  fail(code: string, now: number, clientLimit = false): void {
    if (this.finished) return;
    this.settle(code, clientLimit, now);
  }

  private settle(error: string | undefined, clientLimit: boolean, now: number): void {
    this.finished = true;
    this.resolveFn({
      ok: error === undefined,
      status: this.status,
      error,
      errorBody: error === undefined ? '' : this.errText.slice(0, 1024),
      retryAfter: this.retryAfter,
      clientLimit,
      ttftMs: this.firstTokenAt > 0 ? this.firstTokenAt - this.t0 : Number.NaN,
      idleMs: this.idleAt > 0 ? this.idleAt - this.t0 : Number.NaN,
      durationMs: now - this.t0,
      tokens: this.tokens,
      frames: this.frames,
      body: this.kept,
      maxGapMs: this.maxGap,
      bodyBytes: this.bodyRead,
    });
  }
}

const READ_BUFFER = Buffer.alloc(256 * 1024);

/** One keep-alive connection; one exchange at a time. */
export class Conn {
  readonly socket: net.Socket;
  current: Exchange | null = null;
  dead = false;
  /** Resolves true once connected, false if the socket closed first. */
  readonly ready: Promise<boolean>;
  private lastError = '';

  constructor(readonly target: Target, private readonly onDead?: (c: Conn) => void) {
    // One read buffer for every socket of the process: no allocation per read.
    this.socket = net.connect({
      host: '127.0.0.1', port: target.port, noDelay: true,
      onread: {
        buffer: READ_BUFFER,
        callback: (n: number, buf: Uint8Array) => {
          const ex = this.current;
          if (ex && ex.feed((buf as Buffer).subarray(0, n), performance.now())) this.current = null;
          return true;
        },
      },
    });
    this.ready = new Promise((resolve) => {
      this.socket.once('connect', () => resolve(true));
      this.socket.once('close', () => resolve(false));
    });
    this.socket.on('error', (err: NodeJS.ErrnoException) => {
      this.lastError = err.code ?? err.message;
    });
    this.socket.on('close', () => {
      this.dead = true;
      const ex = this.current;
      this.current = null;
      if (ex) {
        const code = this.lastError;
        if (code) ex.fail(code, performance.now(), isClientLimit(code));
        else ex.closed(performance.now());
      }
      this.onDead?.(this);
    });
  }

  /** Writes the target's request and returns the exchange (its `done` resolves with the result). */
  send(opts: ExchangeOptions): Exchange {
    const ex = new Exchange(this.target.flavor, opts, performance.now());
    if (this.dead) {
      ex.fail(this.lastError || 'connection_closed', performance.now(), isClientLimit(this.lastError));
      return ex;
    }
    this.current = ex;
    const r = this.target.rotation;
    this.socket.write(r === undefined ? this.target.request : r.requests[r.next++ % r.requests.length]!);
    return ex;
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** True when the connection may carry another request. */
  get reusable(): boolean {
    return !this.dead && this.current === null;
  }
}

/**
 * Keep-alive connections to one target: reuse an idle one, else connect. By default the most recently
 * released idle connection is reused (a stack); with `pick: 'random'` a uniformly random idle one, so that
 * requests spread over every pre-opened connection, and so over every process the kernel gave them to when
 * several processes listen on one port (SO_REUSEPORT picks a listener per connection, by a hash of its
 * addresses and ports: a stack would keep reusing the few connections on top).
 */
export class ConnPool {
  private readonly idle: Conn[] = [];
  readonly all = new Set<Conn>();

  constructor(private readonly target: Target, private readonly pick: 'stack' | 'random' = 'stack') {}

  /**
   * Opens up to `n` connections before a measurement (in batches of `batch`, each awaited, so the
   * server's accept queue never overflows) and keeps them idle. Returns how many connected.
   */
  async prewarm(n: number, batch = 100, timeoutMs = 30_000): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    let ok = 0;
    for (let i = 0; i < n && performance.now() < deadline; i += batch) {
      const conns = Array.from({ length: Math.min(batch, n - i) }, () => {
        const c = new Conn(this.target, (dead) => this.all.delete(dead));
        this.all.add(c);
        return c;
      });
      const results = await Promise.all(conns.map((c) => c.ready));
      conns.forEach((c, k) => { if (results[k]) { ok++; this.idle.push(c); } else c.destroy(); });
    }
    return ok;
  }

  acquire(): Conn {
    if (this.pick === 'random') {
      while (this.idle.length > 0) {
        const i = Math.floor(Math.random() * this.idle.length);
        const c = this.idle[i]!;
        this.idle[i] = this.idle[this.idle.length - 1]!;
        this.idle.pop();
        if (c.reusable) return c;
      }
    }
    for (let c = this.idle.pop(); c; c = this.idle.pop()) if (c.reusable) return c;
    const c = new Conn(this.target, (dead) => this.all.delete(dead));
    this.all.add(c);
    return c;
  }

  /** Returns the connection after its exchange: kept when reusable, destroyed otherwise. */
  release(c: Conn, ex: Exchange): void {
    if (c.reusable && !ex.connClose) this.idle.push(c);
    else c.destroy();
  }

  closeAll(): void {
    for (const c of this.all) c.destroy();
    this.all.clear();
    this.idle.length = 0;
  }
}
