/**
 * A mock OpenAI-compatible upstream: a real HTTP server (node:http) for tests and benchmarks.
 * DESIGN.md "Models": configurable time-to-first-token, inter-token gap, tool calls and failures.
 *
 * Routes: `POST /v1/chat/completions` (SSE when `stream: true`, one `chat.completion` JSON otherwise) and
 * `GET /v1/models`. The behaviour is picked by the request's `model`:
 * - any other name: paced `"tok "` deltas when the `deltas` option is set, else `You said: <last user
 *   message>` as word deltas;
 * - `mock-tool`: a streamed `search_knowledge` call (`call_1`), or `Tool said: <first 60 chars of the
 *   last tool message>` once a tool message follows the last user message;
 * - `mock-call-<tool>`: a streamed call (`call_named_1`) of the tool named `<tool>` whose arguments are the
 *   last user message as it is (send the arguments' JSON as the chat message), or `Tool result: <the whole
 *   last tool message>` once a tool message follows the last user message;
 * - `mock-error`: HTTP 500 with an OpenAI error body; `mock-cut`: two deltas then the socket is destroyed;
 * - `mock-hang`: 200 + SSE headers, then nothing; `mock-slow-<ms>`: default with the first delta after <ms> ms;
 * - `mock-deltas-<n>`: paced `"tok "` deltas like the `deltas` option, but `n` of them (first after the
 *   default TTFT, then one per shared tick), so one mock can serve streams of several lengths;
 * - `mock-deltas-<n>-ttft-<ms>`: the same with the first delta after <ms> ms instead of the default TTFT;
 * - `mock-deltas-<n>-head-<bytes>`: like `mock-deltas-<n>`, with an `x-mock-padding` response header of
 *   <bytes> characters (a large response head, sent before the first delta when the TTFT is over 0);
 * - `mock-big-<n>x<size>`: `n` content deltas of `size` characters each (`<i>:` then `x`s), written as fast
 *   as the socket takes them, for backpressure tests; `mock-big-<n>x<size>-every-<ms>`: the same, one delta every
 *   `<ms>` ms (a steady flow a reading client keeps up with);
 * - `mock-secret`: a reply holding an e-mail address and a card number; `mock-length`: two deltas,
 *   finish `length`; `mock-history`: one delta with the JSON of the `{role, content}` it received.
 *
 * `POST /v1/embeddings` (`{model, input: string | string[], encoding_format?}`) answers `{object: 'list',
 * data: [{object: 'embedding', index, embedding}], model, usage}` (each embedding an array of numbers, or a
 * base64 string of little-endian float32 when `encoding_format` is `base64`) with deterministic vectors of {@link MOCK_EMBEDDING_DIMS}
 * dimensions ({@link mockEmbedding}: a hashed bag of words, with a small synonym table so that texts that
 * share no word can still be near), and can be told to fail ({@link MockUpstream.failEmbeddings}).
 * Embeddings requests are kept in `embeddingRequests`, not in `requests`.
 *
 * Runnable as a CLI once compiled:
 * `node dist/test/helpers/mock-upstream.js --port 0 --ttft-ms 0 --deltas 64 --interval-ms 20 [--no-record]`
 * prints `{"url":"http://127.0.0.1:N/v1","port":N}` and serves until SIGTERM/SIGINT. `--no-record` keeps
 * no request log (benchmarks send millions of requests; nobody reads the log of a separate process).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** Options of {@link startMockUpstream}. */
export interface MockUpstreamOptions {
  /** TCP port; default 0 (OS-assigned). */
  port?: number;
  /** Bind address; default `127.0.0.1`. */
  host?: string;
  /** Time to first token in ms for default-model streams; default 0. */
  ttftMs?: number;
  /** Paced mode: stream this many `"tok "` deltas (first after `ttftMs`, then one per `intervalMs`). */
  deltas?: number;
  /** Paced mode inter-token gap in ms (one shared timer for all streams); default 20. */
  intervalMs?: number;
  /** Keep every request in `requests`; default true. False for long benchmark runs (memory stays flat). */
  record?: boolean;
}

/** A message as the mock received it (raw JSON; fields as the client sent them). */
export interface RecordedMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  name?: string;
  [key: string]: unknown;
}

/** The parsed JSON body of a chat request (raw: whatever the client sent). */
export interface RecordedChatBody {
  model?: string;
  messages?: RecordedMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  max_tokens?: number;
  [key: string]: unknown;
}

/** One chat request as received. `remotePort` identifies the client socket (keep-alive reuse). */
export interface RecordedRequest {
  body: RecordedChatBody;
  headers: http.IncomingHttpHeaders;
  remotePort: number | undefined;
}

/** One embeddings request as received. */
export interface RecordedEmbeddingsRequest {
  body: { model?: string; input?: unknown; [key: string]: unknown };
  headers: http.IncomingHttpHeaders;
  /** The inputs, as an array (a single string input counts as one). */
  inputs: string[];
  /** The HTTP status answered. */
  status: number;
}

/** A running mock upstream. */
export interface MockUpstream {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:40123/v1`. */
  url: string;
  port: number;
  /** Every chat request with valid JSON, in arrival order (the same array across `reset()`). */
  requests: RecordedRequest[];
  /** Every embeddings request, in arrival order, failed ones included (kept even with `record: false`; cleared by `reset()`). */
  embeddingRequests: RecordedEmbeddingsRequest[];
  /**
   * Makes the next `count` embeddings requests (default: all of them from now on) answer HTTP `status`
   * (default 500) with an OpenAI error body; `failEmbeddings(0)` makes them succeed again.
   */
  failEmbeddings(count?: number, status?: number): void;
  /** Chat responses currently in progress (streaming, waiting for their first token, or hanging). */
  activeStreams(): number;
  /** Forgets the recorded requests. */
  reset(): void;
  /** Ends every open socket, clears all timers and stops listening. */
  close(): Promise<void>;
}

/** One delta of a planned answer: text or a tool-call fragment. */
type PlannedDelta =
  | { content: string }
  | { tool: { index: 0; id?: string; type?: 'function'; function: { name?: string; arguments: string } } };

/** What a request is answered with. */
type Plan =
  | { kind: 'error' }
  | { kind: 'hang' }
  | { kind: 'paced'; total: number; ttftMs: number; headBytes?: number }
  | { kind: 'fixed'; deltas: PlannedDelta[]; finish: string; ttftMs: number; cutAfter?: number; everyMs?: number };

/** A stream paced by the shared ticker. */
interface PacedStream {
  res: http.ServerResponse;
  id: string;
  model: string;
  sent: number;
  total: number;
  usage: boolean;
  promptTokens: number;
  /** False until the first delta was sent (that one comes from the TTFT timer). */
  ticking: boolean;
  ttftTimer: NodeJS.Timeout | undefined;
  /** The SSE line of every delta after the first, built once per stream. */
  line: string | undefined;
  /** That line as one HTTP chunk, built once per stream. */
  frame?: Buffer;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;
const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
} as const;
const SECRET_TEXT = 'Write to jane.doe@example.com or pay with 4111 1111 1111 1111 today.';

/**
 * Starts the mock on `opts.port` (default 0) and `opts.host` (default 127.0.0.1).
 * Resolves once listening; rejects with the listen error (e.g. EADDRINUSE).
 */
export async function startMockUpstream(opts: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const host = opts.host ?? '127.0.0.1';
  const defaultTtft = opts.ttftMs ?? 0;
  const pacedDeltas = opts.deltas;
  const intervalMs = opts.intervalMs ?? 20;
  const record = opts.record ?? true;
  const requests: RecordedRequest[] = [];
  const embeddingRequests: RecordedEmbeddingsRequest[] = [];
  let embeddingFailures = 0;
  let embeddingFailStatus = 500;
  const active = new Set<http.ServerResponse>();
  const hanging = new Set<Socket>();
  const pending = new Set<NodeJS.Timeout>();
  const paced = new Set<PacedStream>();
  let ticker: NodeJS.Timeout | undefined;
  let seq = 0;

  const tick = (): void => {
    for (const s of paced) {
      if (!s.ticking) continue;
      writePacedDelta(s);
    }
    if (paced.size === 0 && ticker !== undefined) {
      clearInterval(ticker);
      ticker = undefined;
    }
  };

  const writePacedDelta = (s: PacedStream): void => {
    s.sent += 1;
    if (s.sent === 1) s.res.write(chunkLine(s.id, s.model, { role: 'assistant', content: 'tok ' }, null));
    else writeFrame(s);
    if (s.sent >= s.total) {
      paced.delete(s);
      endStream(s.res, s.id, s.model, 'stop', s.usage ? { prompt: s.promptTokens, completion: s.sent } : undefined);
    }
  };

  /**
   * Every delta after the first: one prebuilt HTTP/1.1 chunk (`<hex size>\r\n<data line>\r\n`) written
   * straight to the socket, which costs one socket write instead of node:http's four per `res.write`.
   * Only while this response owns the socket with chunked encoding and nothing of it is queued in
   * node:http; otherwise `res.write` as usual.
   */
  const writeFrame = (s: PacedStream): void => {
    const line = (s.line ??= chunkLine(s.id, s.model, { content: 'tok ' }, null));
    const res = s.res as http.ServerResponse & { _httpMessage?: unknown };
    const socket = res.socket as (Socket & { _httpMessage?: unknown }) | null;
    if (socket && !socket.destroyed && res.chunkedEncoding && res.headersSent && !res.writableEnded
      && socket._httpMessage === res && res.writableLength === 0) {
      s.frame ??= Buffer.from(`${Buffer.byteLength(line).toString(16)}\r\n${line}\r\n`, 'utf8');
      socket.write(s.frame);
    } else {
      res.write(line);
    }
  };

  const startPaced = (res: http.ServerResponse, body: RecordedChatBody, total: number, ttftMs: number, headBytes = 0): void => {
    const s: PacedStream = {
      res,
      id: `chatcmpl-mock-${++seq}`,
      model: body.model ?? 'mock',
      sent: 0,
      total,
      usage: body.stream_options?.include_usage === true,
      promptTokens: promptTokens(body),
      ticking: false,
      ttftTimer: undefined,
      line: undefined,
    };
    res.writeHead(200, headBytes > 0 ? { ...SSE_HEADERS, 'x-mock-padding': 'p'.repeat(headBytes) } : SSE_HEADERS);
    if (ttftMs > 0) res.flushHeaders();
    paced.add(s);
    res.on('close', () => {
      paced.delete(s);
      if (s.ttftTimer !== undefined) clearTimeout(s.ttftTimer);
    });
    if (total <= 0) {
      paced.delete(s);
      endStream(res, s.id, s.model, 'stop', s.usage ? { prompt: s.promptTokens, completion: 0 } : undefined);
      return;
    }
    const first = (): void => {
      s.ttftTimer = undefined;
      if (!paced.has(s)) return;
      writePacedDelta(s);
      s.ticking = true;
      if (ticker === undefined && paced.size > 0) ticker = setInterval(tick, intervalMs);
    };
    // Timers with equal durations share one list in Node, so a TTFT timer per stream stays cheap.
    if (ttftMs > 0) s.ttftTimer = setTimeout(first, ttftMs);
    else first();
  };

  const later = (ms: number, fn: () => void): void => {
    if (ms <= 0) {
      fn();
      return;
    }
    const t = setTimeout(() => {
      pending.delete(t);
      fn();
    }, ms);
    pending.add(t);
  };

  const answerFixed = (res: http.ServerResponse, body: RecordedChatBody, plan: Extract<Plan, { kind: 'fixed' }>): void => {
    const id = `chatcmpl-mock-${++seq}`;
    const model = body.model ?? 'mock';
    const usage = { prompt: promptTokens(body), completion: plan.deltas.length };
    if (body.stream !== true) {
      later(plan.ttftMs, () => {
        if (res.destroyed) return;
        if (plan.cutAfter !== undefined) {
          res.socket?.destroy();
          return;
        }
        sendJson(res, 200, completionJson(id, model, plan.deltas, plan.finish, usage));
      });
      return;
    }
    res.writeHead(200, SSE_HEADERS);
    if (plan.ttftMs > 0) res.flushHeaders();
    later(plan.ttftMs, () => {
      if (res.destroyed) return;
      if (plan.everyMs !== undefined) {
        // One delta per tick, then the end of the stream.
        let i = 0;
        const tick = () => {
          if (res.destroyed) return;
          const d = plan.deltas[i]!;
          const delta: Record<string, unknown> = 'content' in d ? { content: d.content } : { content: null, tool_calls: [d.tool] };
          if (i === 0) delta.role = 'assistant';
          res.write(chunkLine(id, model, delta, null));
          i++;
          if (i < plan.deltas.length) later(plan.everyMs!, tick);
          else endStream(res, id, model, plan.finish, body.stream_options?.include_usage === true ? usage : undefined);
        };
        tick();
        return;
      }
      let first = true;
      for (const [i, d] of plan.deltas.entries()) {
        const delta: Record<string, unknown> =
          'content' in d ? { content: d.content } : { content: null, tool_calls: [d.tool] };
        if (first) delta.role = 'assistant';
        first = false;
        const line = chunkLine(id, model, delta, null);
        if (plan.cutAfter !== undefined && i + 1 >= plan.cutAfter) {
          res.write(line, () => res.socket?.destroy());
          return;
        }
        res.write(line);
      }
      endStream(res, id, model, plan.finish, body.stream_options?.include_usage === true ? usage : undefined);
    });
  };

  const handleChat = (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): void => {
    let body: RecordedChatBody;
    try {
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as RecordedChatBody;
    } catch {
      sendJson(res, 400, { error: { message: 'request body is not a JSON object', type: 'invalid_request_error' } });
      return;
    }
    if (record) requests.push({ body, headers: req.headers, remotePort: req.socket.remotePort });
    const plan = planFor(body, { pacedDeltas, defaultTtft });
    switch (plan.kind) {
      case 'error':
        sendJson(res, 500, { error: { message: 'mock upstream failure', type: 'server_error' } });
        return;
      case 'hang': {
        const socket = req.socket;
        hanging.add(socket);
        socket.once('close', () => hanging.delete(socket));
        if (body.stream === true) {
          res.writeHead(200, SSE_HEADERS);
          res.flushHeaders();
        }
        return;
      }
      case 'paced':
        if (body.stream === true) {
          startPaced(res, body, plan.total, plan.ttftMs, plan.headBytes);
        } else {
          const deltas = Array.from({ length: plan.total }, () => ({ content: 'tok ' }));
          answerFixed(res, body, { kind: 'fixed', deltas, finish: 'stop', ttftMs: plan.ttftMs });
        }
        return;
      case 'fixed':
        answerFixed(res, body, plan);
        return;
    }
  };

  const handleEmbeddings = (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): void => {
    let body: RecordedEmbeddingsRequest['body'];
    try {
      body = JSON.parse(raw.toString('utf8')) as RecordedEmbeddingsRequest['body'];
    } catch {
      sendJson(res, 400, { error: { message: 'invalid JSON body', type: 'invalid_request_error' } });
      return;
    }
    const input = body.input;
    const inputs = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((x) => typeof x === 'string') ? (input as string[]) : undefined;
    const recorded: RecordedEmbeddingsRequest = { body, headers: req.headers, inputs: inputs ?? [], status: 200 };
    embeddingRequests.push(recorded);
    if (embeddingFailures > 0) {
      embeddingFailures--;
      recorded.status = embeddingFailStatus;
      sendJson(res, embeddingFailStatus, { error: { message: 'mock embeddings failure', type: 'server_error' } });
      return;
    }
    if (inputs === undefined || inputs.length === 0 || typeof body.model !== 'string') {
      recorded.status = 400;
      sendJson(res, 400, { error: { message: 'model and input (a string or an array of strings) are required', type: 'invalid_request_error' } });
      return;
    }
    sendJson(res, 200, {
      object: 'list',
      data: inputs.map((text, index) => {
        const v = mockEmbedding(text);
        const embedding = body.encoding_format === 'base64' ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v);
        return { object: 'embedding', index, embedding };
      }),
      model: body.model,
      usage: { prompt_tokens: inputs.reduce((n, t) => n + t.split(/\s+/).length, 0), total_tokens: inputs.reduce((n, t) => n + t.split(/\s+/).length, 0) },
    });
  };

  const server = http.createServer({ noDelay: true, keepAliveTimeout: 65_000 }, (req, res) => {
    active.add(res);
    res.on('close', () => active.delete(res));
    const url = req.url ?? '/';
    const path = url.split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      req.resume();
      sendJson(res, 200, {
        object: 'list',
        data: ['mock', 'mock-tool', 'mock-error', 'mock-cut', 'mock-hang', 'mock-secret', 'mock-length', 'mock-history'].map(
          (id) => ({ id, object: 'model', created: 0, owned_by: 'parley-mock' }),
        ),
      });
      return;
    }
    if (path !== '/v1/chat/completions' && path !== '/v1/embeddings') {
      req.resume();
      sendJson(res, 404, { error: { message: `no route ${req.method ?? ''} ${path ?? ''}`, type: 'invalid_request_error' } });
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      sendJson(res, 405, { error: { message: 'use POST', type: 'invalid_request_error' } });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (tooLarge) {
        sendJson(res, 413, { error: { message: 'request body too large', type: 'invalid_request_error' } });
        return;
      }
      const raw = Buffer.concat(chunks);
      // The request (and this closure) lives as long as a streamed answer does: keep no copy of the body.
      chunks.length = 0;
      if (path === '/v1/embeddings') handleEmbeddings(req, res, raw);
      else handleChat(req, res, raw);
    });
    req.on('error', () => res.destroy());
  });
  // Keep the keep-alive window longer than the client's, so the client always closes idle sockets first.
  server.headersTimeout = 60_000;
  server.requestTimeout = 0;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A deep accept queue: benchmarks open connections in bursts, and an overflowing queue drops SYNs
    // (the client retries after 1 s), which would show up as the mock's latency.
    server.listen({ port: opts.port ?? 0, host, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}/v1`,
    port,
    requests,
    embeddingRequests,
    failEmbeddings: (count = Number.POSITIVE_INFINITY, status = 500) => {
      embeddingFailures = count;
      embeddingFailStatus = status;
    },
    activeStreams: () => active.size,
    reset: () => {
      requests.length = 0;
      embeddingRequests.length = 0;
    },
    close: async () => {
      if (ticker !== undefined) clearInterval(ticker);
      ticker = undefined;
      for (const s of paced) if (s.ttftTimer !== undefined) clearTimeout(s.ttftTimer);
      paced.clear();
      for (const t of pending) clearTimeout(t);
      pending.clear();
      for (const socket of hanging) socket.destroy();
      hanging.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** Dimensions of the mock's embeddings. */
export const MOCK_EMBEDDING_DIMS = 64;

/**
 * Words the mock embeds as the same word (the first of each group), so that a question and a passage
 * with no word in common (and no common stem for bm25) can still be near neighbours.
 */
const MOCK_SYNONYMS: ReadonlyArray<readonly string[]> = [
  ['car', 'automobile', 'automobiles', 'cars', 'vehicle', 'vehicles', 'motorcar'],
  ['doctor', 'physician', 'physicians', 'doctors', 'medic'],
  ['repair', 'fix', 'fixing', 'mend', 'service', 'servicing', 'maintenance'],
  ['cheap', 'inexpensive', 'affordable', 'budget'],
];
const SYNONYM_OF = new Map<string, string>(MOCK_SYNONYMS.flatMap((group) => group.map((w) => [w, group[0]!] as const)));
const MOCK_STOPWORDS = new Set(['a', 'an', 'and', 'are', 'as', 'at', 'be', 'by', 'for', 'how', 'i', 'in', 'is', 'it', 'my', 'of', 'on', 'or', 'the', 'to', 'what', 'where', 'with', 'do', 'does', 'can', 'you', 'your', 'who']);

/**
 * The mock's embedding of `text`: lowercase words (letters and digits), stopwords dropped, synonyms
 * mapped to one word ({@link MOCK_SYNONYMS}), each word hashed (FNV-1a 32-bit) to one of
 * {@link MOCK_EMBEDDING_DIMS} dimensions and counted there, the whole scaled to length 1 (all zeros when
 * no word is left). Deterministic: the same text always gives the same vector.
 */
export function mockEmbedding(text: string): Float32Array {
  const v = new Float32Array(MOCK_EMBEDDING_DIMS);
  for (const raw of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    if (MOCK_STOPWORDS.has(raw)) continue;
    const word = SYNONYM_OF.get(raw) ?? raw;
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) {
      h ^= word.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    v[h % MOCK_EMBEDDING_DIMS]! += 1;
  }
  let n = 0;
  for (const x of v) n += x * x;
  if (n > 0) for (let i = 0; i < v.length; i++) v[i]! /= Math.sqrt(n);
  return v;
}

/** The answer plan for a request, by model name. */
function planFor(body: RecordedChatBody, cfg: { pacedDeltas: number | undefined; defaultTtft: number }): Plan {
  const model = body.model ?? '';
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const words = (text: string, ttftMs = 0): Extract<Plan, { kind: 'fixed' }> => ({
    kind: 'fixed',
    deltas: wordDeltas(text),
    finish: 'stop',
    ttftMs,
  });
  switch (model) {
    case 'mock-error':
      return { kind: 'error' };
    case 'mock-hang':
      return { kind: 'hang' };
    case 'mock-cut':
      return { kind: 'fixed', deltas: [{ content: 'partial ' }, { content: 'answer ' }, { content: 'lost' }], finish: 'stop', ttftMs: 0, cutAfter: 2 };
    case 'mock-length':
      return { kind: 'fixed', deltas: [{ content: 'Truncated ' }, { content: 'answer' }], finish: 'length', ttftMs: 0 };
    case 'mock-secret':
      return words(SECRET_TEXT);
    case 'mock-history':
      return {
        kind: 'fixed',
        deltas: [{ content: JSON.stringify(messages.map((m) => ({ role: m.role, content: m.content ?? null }))) }],
        finish: 'stop',
        ttftMs: 0,
      };
    case 'mock-tool': {
      const lastUser = lastIndex(messages, (m) => m.role === 'user');
      const toolAfter = lastIndex(messages, (m) => m.role === 'tool');
      if (toolAfter > lastUser) return words(`Tool said: ${contentText(messages[toolAfter]?.content).slice(0, 60)}`);
      const args = JSON.stringify({ query: lastUser >= 0 ? contentText(messages[lastUser]?.content) : '' });
      const third = Math.ceil(args.length / 3);
      const deltas: PlannedDelta[] = [
        { tool: { index: 0, id: 'call_1', type: 'function', function: { name: 'search_knowledge', arguments: '' } } },
      ];
      for (let i = 0; i < args.length; i += third) deltas.push({ tool: { index: 0, function: { arguments: args.slice(i, i + third) } } });
      return { kind: 'fixed', deltas, finish: 'tool_calls', ttftMs: 0 };
    }
  }
  const named = /^mock-call-([A-Za-z0-9_-]{1,64})$/.exec(model);
  if (named) {
    const lastUser = lastIndex(messages, (m) => m.role === 'user');
    const toolAfter = lastIndex(messages, (m) => m.role === 'tool');
    if (toolAfter > lastUser) return words(`Tool result: ${contentText(messages[toolAfter]?.content)}`);
    const args = lastUser >= 0 ? contentText(messages[lastUser]?.content) : '{}';
    const half = Math.max(1, Math.ceil(args.length / 2));
    const deltas: PlannedDelta[] = [
      { tool: { index: 0, id: 'call_named_1', type: 'function', function: { name: named[1]!, arguments: '' } } },
    ];
    for (let i = 0; i < args.length; i += half) deltas.push({ tool: { index: 0, function: { arguments: args.slice(i, i + half) } } });
    return { kind: 'fixed', deltas, finish: 'tool_calls', ttftMs: 0 };
  }
  const big = /^mock-big-(\d+)x(\d+)(?:-every-(\d+))?$/.exec(model);
  if (big) {
    const size = Number(big[2]);
    const deltas = Array.from({ length: Number(big[1]) }, (_, i) => ({ content: `${i}:`.padEnd(size, 'x') }));
    return { kind: 'fixed', deltas, finish: 'stop', ttftMs: cfg.defaultTtft, ...(big[3] === undefined ? {} : { everyMs: Number(big[3]) }) };
  }
  const padded = /^mock-deltas-(\d+)-head-(\d+)$/.exec(model);
  if (padded) return { kind: 'paced', total: Number(padded[1]), ttftMs: cfg.defaultTtft, headBytes: Number(padded[2]) };
  const sized = /^mock-deltas-(\d+)(?:-ttft-(\d+))?$/.exec(model);
  if (sized) return { kind: 'paced', total: Number(sized[1]), ttftMs: sized[2] !== undefined ? Number(sized[2]) : cfg.defaultTtft };
  const slow = /^mock-slow-(\d+)$/.exec(model);
  const ttftMs = slow ? Number(slow[1]) : cfg.defaultTtft;
  if (cfg.pacedDeltas !== undefined) return { kind: 'paced', total: cfg.pacedDeltas, ttftMs };
  const lastUser = lastIndex(messages, (m) => m.role === 'user');
  return words(`You said: ${lastUser >= 0 ? contentText(messages[lastUser]?.content) : ''}`, ttftMs);
}

function lastIndex<T>(items: T[], pred: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (pred(items[i]!)) return i;
  return -1;
}

/** Text of an OpenAI message content: a string, or the `text` of content parts; else empty. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p: unknown) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : ''))
      .join('');
  }
  return '';
}

/** Word deltas that concatenate back to `text` exactly (each word keeps its trailing whitespace). */
function wordDeltas(text: string): PlannedDelta[] {
  return (text.match(/\s*\S+\s*/g) ?? []).map((content) => ({ content }));
}

/** ceil(total characters of message contents / 4). */
function promptTokens(body: RecordedChatBody): number {
  let chars = 0;
  for (const m of Array.isArray(body.messages) ? body.messages : []) chars += contentText(m.content).length;
  return Math.ceil(chars / 4);
}

function chunkLine(id: string, model: string, delta: Record<string, unknown>, finish: string | null): string {
  return `data: ${JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;
}

/** Writes the finish chunk, the usage chunk (when asked for) and `[DONE]`, then ends the response. */
function endStream(
  res: http.ServerResponse,
  id: string,
  model: string,
  finish: string,
  usage: { prompt: number; completion: number } | undefined,
): void {
  let out = chunkLine(id, model, {}, finish);
  if (usage) {
    out += `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [],
      usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
    })}\n\n`;
  }
  out += 'data: [DONE]\n\n';
  res.end(out);
}

function completionJson(
  id: string,
  model: string,
  deltas: PlannedDelta[],
  finish: string,
  usage: { prompt: number; completion: number },
): object {
  let content = '';
  let args = '';
  let call: { id?: string; name?: string } | undefined;
  for (const d of deltas) {
    if ('content' in d) content += d.content;
    else {
      call ??= {};
      call.id ??= d.tool.id;
      call.name ??= d.tool.function.name;
      args += d.tool.function.arguments;
    }
  }
  const message: Record<string, unknown> = { role: 'assistant', content: call ? null : content };
  if (call) message.tool_calls = [{ id: call.id, type: 'function', function: { name: call.name, arguments: args } }];
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: finish }],
    usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
  };
}

function sendJson(res: http.ServerResponse, status: number, payload: unknown): void {
  const text = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** CLI entry: `--port --host --ttft-ms --deltas --interval-ms --no-record`; prints `{"url","port"}` as one JSON line. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'ttft-ms': { type: 'string' },
      deltas: { type: 'string' },
      'interval-ms': { type: 'string' },
      'no-record': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const num = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${v}`);
    return n;
  };
  const opts: MockUpstreamOptions = { port: num('port', values.port) ?? 0, host: values.host, record: values['no-record'] !== true };
  const ttft = num('ttft-ms', values['ttft-ms']);
  const deltas = num('deltas', values.deltas);
  const interval = num('interval-ms', values['interval-ms']);
  if (ttft !== undefined) opts.ttftMs = ttft;
  if (deltas !== undefined) opts.deltas = Math.floor(deltas);
  if (interval !== undefined) opts.intervalMs = interval;
  const mock = await startMockUpstream(opts);
  process.stdout.write(`${JSON.stringify({ url: mock.url, port: mock.port })}\n`);
  const stop = (): void => {
    void mock.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
