/**
 * The `openai` model provider: a lean streaming client for any OpenAI-compatible chat-completions
 * endpoint (OpenAI, vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, ...). DESIGN.md "Models".
 *
 * It is the hot path, so it holds one undici keep-alive `Pool` for the upstream origin and parses the
 * SSE body itself (src/models/openai/sse-data-parser.ts, decoded by src/models/openai/utf8-chunks.ts);
 * no SDK in between.
 */
import { Pool, type Dispatcher } from 'undici';
import { AppError } from '../../errors/app-error.js';
import { SseDataParser, SseEventTooLarge } from './sse-data-parser.js';
import { Utf8ChunkDecoder } from './utf8-chunks.js';
import type {
  AbortLike,
  ModelFinishReason,
  ModelMessage,
  ModelPart,
  ModelProvider,
  ModelToolCall,
  ModelToolSpec,
  ModelTurnInput,
  ModelUsage,
  Passage,
} from '../port.js';

/** Options of {@link createOpenAIProvider}. */
export interface OpenAIProviderOptions {
  /** API base URL including any path prefix, e.g. `http://127.0.0.1:1234/v1`; requests go to `${baseUrl}/chat/completions`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when set; never logged nor put in error messages. */
  apiKey?: string;
  /** Idle timeout in ms: the longest wait for the next SSE event (the first one counts from the request). */
  timeoutMs: number;
  /** Keep-alive connections to the upstream origin (default 128, pipelining 1). */
  connections?: number;
  /** Receives one warning per failed upstream call (status/code only, never the key). */
  logger?: { warn(obj: object, msg: string): void };
}

/** The provider plus `close()`, which destroys the pool: in-flight streams fail with `model_unavailable`. */
export type OpenAIProvider = ModelProvider & { close(): Promise<void> };

/** A message in the OpenAI chat-completions wire format. */
type WireMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** The JSON body POSTed to `/chat/completions`. */
interface WireRequest {
  model: string;
  messages: WireMessage[];
  stream: true;
  stream_options: { include_usage: true };
  tools?: { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  max_tokens?: number;
}

/** One streamed piece of a tool call; `index` says which call it belongs to. */
interface WireToolFragment {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** The subset of a `chat.completion.chunk` this client reads; everything is optional on the wire. */
interface WireChunk {
  choices?: {
    delta?: {
      content?: string | null;
      tool_calls?: WireToolFragment[];
    };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string } | string;
}

/** Largest SSE line/event buffered before the stream counts as broken (characters). */
const MAX_SSE_BUFFER = 8 * 1024 * 1024;
/** Bytes of a non-2xx body read to find the upstream's error message. */
const MAX_ERROR_BODY = 16 * 1024;
/** Characters of the upstream's error message kept in ours. */
const MAX_UPSTREAM_MESSAGE = 200;

/**
 * Request bodies of at most this many characters go to undici as a string, which its Request object keeps
 * (as a Buffer, at most 3 UTF-8 bytes a character: about 2 KiB) until the response ends; longer ones go as
 * a {@link OneShotBody}, which lets go of the bytes once they are written to the socket. A streamed answer
 * can last minutes, and the body (system prompt, passages, history) is the largest thing a live stream
 * would otherwise hold. Measured at 3,000 live streams of an agent with a 6,000-character prompt: 34.8 KiB
 * of RSS per stream with a Buffer body, 29.6 with this (30.2 with no prompt); the added first token at one
 * stream did not move (bench/: connections has the row). Short bodies keep undici's plain path, which has
 * no promise hop per request.
 */
export const RETAINED_BODY_MAX_CHARS = 680;

/**
 * Creates the `openai` provider for one OpenAI-compatible endpoint.
 *
 * `stream(input, signal)` POSTs `{model, messages, stream: true, stream_options: {include_usage: true},
 * tools?, max_tokens?}` and yields, in order: a `text-delta` per non-empty content delta, one `tool-call`
 * per streamed call (fragments joined by `index`) when the choice finishes, `usage` (tokens) when the
 * upstream sends it, then exactly one `finish`. Passages go in a system message after the first system
 * message (or first), as a numbered list the model cites by number.
 *
 * Errors (all thrown from the iterator): AppError `model_unavailable` for a non-2xx status (upstream
 * status and the first 200 characters of its message), connection failures, a stream cut before it
 * finished, malformed JSON or an in-stream error object; AppError `model_timeout` when no SSE event comes
 * for `timeoutMs` ms (time the consumer spends between parts does not count); the caller signal's reason
 * (or an `AbortError` DOMException) when `signal` aborts. The request is aborted and the idle timer
 * cleared on every exit path, including a consumer that stops iterating early.
 *
 * @throws TypeError synchronously when `baseUrl` is not an absolute http(s) URL or `timeoutMs` is not positive.
 */
export function createOpenAIProvider(opts: OpenAIProviderOptions): OpenAIProvider {
  const base = new URL(opts.baseUrl);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new TypeError(`baseUrl must be http(s), got ${base.protocol}`);
  }
  if (!(opts.timeoutMs > 0)) throw new TypeError('timeoutMs must be a positive number of milliseconds');
  const path = `${base.pathname.replace(/\/+$/, '')}/chat/completions${base.search}`;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'text/event-stream',
  };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  const pool = new Pool(base.origin, {
    connections: opts.connections ?? 128,
    pipelining: 1,
    // The idle timer below is the one timeout; undici's own would also count time the consumer holds us.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const ctx: StreamContext = {
    pool,
    path,
    headers,
    timeoutMs: opts.timeoutMs,
    apiKey: opts.apiKey,
    logger: opts.logger,
  };
  return {
    name: 'openai',
    stream: (input, signal, onPart) => streamStep(ctx, input, signal, onPart),
    close: () => pool.destroy(),
  };
}

interface StreamContext {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
  timeoutMs: number;
  apiKey: string | undefined;
  logger: OpenAIProviderOptions['logger'];
}

/** The reason an aborted signal carries, or a standard AbortError when it has none. */
function abortReason(signal: AbortLike): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * One step on undici's dispatch handler API: no Readable stream and no async iteration per token, so a
 * token costs one parse and one synchronous `onPart` call inside the socket's data callback.
 */
function streamStep(ctx: StreamContext, input: ModelTurnInput, signal: AbortLike, onPart: (part: ModelPart) => void): Promise<void> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    new StreamStep(ctx, input.model, signal, onPart, resolve, reject).start(input);
  });
}

/** The idle timer's callback (one function for every step: the step comes as the timer's argument). */
function idleTimerFired(step: StreamStep): void {
  step.onIdle();
}

/**
 * The state of one {@link streamStep}: undici's dispatch handler, the signal's abort listener (its
 * `handleEvent`) and the idle timer's target in one object. A class rather than closures: a live stream
 * holds this object, its accumulator, its SSE parser and its UTF-8 decoder (plain objects, no closures)
 * instead of a dozen closures and their context (about 0.6 KB of heap per stream), an SSE parser made of
 * seven closures (about 0.7 KB) and a TextDecoder's ICU converter (about 0.6 KB of RSS).
 */
class StreamStep implements Dispatcher.DispatchHandler {
  private settled = false;
  private controller: Dispatcher.DispatchController | undefined;
  /** An abort requested before undici handed us the controller. */
  private pendingAbort: Error | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastActivity = performance.now();
  private status = 0;
  private errorBody = '';
  private errorBytes = 0;
  private readonly acc: StepAccumulator;
  private readonly decoder = new Utf8ChunkDecoder();
  private readonly parser = new SseDataParser(MAX_SSE_BUFFER);

  constructor(
    private readonly ctx: StreamContext,
    /** The model's name (for the log): a live stream keeps this, not its whole input. */
    private readonly model: string,
    private readonly signal: AbortLike,
    private readonly onPart: (part: ModelPart) => void,
    private readonly resolve: () => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.acc = new StepAccumulator(ctx.apiKey);
  }

  /** Listens for the abort, arms the idle timer and dispatches the request for `input`. */
  start(input: ModelTurnInput): void {
    this.signal.addEventListener('abort', this, { once: true });
    // Idle timer, lazily re-armed: data only stamps `lastActivity`; the timer checks it when it fires.
    this.timer = setTimeout(idleTimerFired, this.ctx.timeoutMs, this);
    const ctx = this.ctx;
    try {
      const json = JSON.stringify(buildRequest(input));
      if (json.length <= RETAINED_BODY_MAX_CHARS) {
        ctx.pool.dispatch({ path: ctx.path, method: 'POST', headers: ctx.headers, body: json }, this);
      } else {
        const bytes = Buffer.from(json, 'utf8');
        const headers = { ...ctx.headers, 'content-length': String(bytes.byteLength) };
        // undici's Dispatcher.md documents Iterable bodies for dispatch(); its .d.ts does not list them.
        const body = new OneShotBody(bytes) as unknown as Dispatcher.DispatchOptions['body'];
        ctx.pool.dispatch({ path: ctx.path, method: 'POST', headers, body }, this);
      }
    } catch (err) {
      this.finish(new AppError('model_unavailable', `Model upstream connection failed (${errorCode(err)}).`, { cause: err }));
    }
  }

  /** The signal aborted (EventTarget calls an object listener's `handleEvent`). */
  handleEvent(): void {
    this.fail(abortReason(this.signal));
  }

  onIdle(): void {
    this.timer = undefined;
    const idle = performance.now() - this.lastActivity;
    const timeoutMs = this.ctx.timeoutMs;
    if (idle < timeoutMs) {
      this.timer = setTimeout(idleTimerFired, timeoutMs - idle, this);
      return;
    }
    this.ctx.logger?.warn({ model: this.model, timeoutMs }, 'model upstream idle timeout');
    this.fail(new AppError('model_timeout', `Model upstream sent nothing for ${timeoutMs} ms.`));
  }

  private finish(err?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this);
    if (err === undefined) this.resolve();
    else this.reject(err);
  }

  /** Stops the request (closing its socket) and fails the step with `err`. */
  private fail(err: unknown): void {
    if (this.settled) return;
    const reason = err instanceof Error ? err : new Error(String(err));
    this.finish(err); // first: the abort below may call onResponseError synchronously
    if (this.controller) this.controller.abort(reason);
    else this.pendingAbort = reason;
  }

  /** Hands queued parts to the consumer; a consumer that throws ends the step with its error. */
  private deliver(): boolean {
    const pending = this.acc.pending;
    if (pending.length === 0) return true;
    const batch = pending.splice(0);
    for (const part of batch) {
      try {
        this.onPart(part);
      } catch (err) {
        this.fail(err);
        return false;
      }
      if (this.settled) return false;
    }
    return true;
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    if (this.pendingAbort) c.abort(this.pendingAbort);
  }

  onResponseStart(c: Dispatcher.DispatchController, statusCode: number): void {
    this.status = statusCode;
    this.lastActivity = performance.now();
    // undici's controller keeps the response head's raw header Buffers (views into the socket read
    // that carried them) as `rawHeaders` for the whole response; a streamed answer never reads them.
    (c as { rawHeaders?: unknown }).rawHeaders = null;
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    const now = performance.now();
    this.lastActivity = now;
    const status = this.status;
    if (status < 200 || status > 299) {
      if (this.errorBytes < MAX_ERROR_BODY) this.errorBody += this.decoder.decode(chunk.subarray(0, MAX_ERROR_BODY - this.errorBytes));
      this.errorBytes += chunk.byteLength;
      return;
    }
    const acc = this.acc;
    if (acc.done) return; // after [DONE]: the rest is drained unread so the socket goes back to the pool
    acc.chunkAt = now;
    try {
      this.parser.feed(this.decoder.decode(chunk), acc);
    } catch (err) {
      if (!(err instanceof SseEventTooLarge)) throw err;
      acc.fail('Model upstream sent an oversized SSE event.');
    }
    if (!this.deliver()) return;
    if (acc.failure) {
      this.ctx.logger?.warn({ model: this.model }, 'model upstream stream was malformed');
      this.fail(acc.failure);
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    const status = this.status;
    if (status < 200 || status > 299) {
      const upstreamMessage = redact(extractErrorMessage(this.errorBody + this.decoder.end()), this.ctx.apiKey).slice(0, MAX_UPSTREAM_MESSAGE);
      this.ctx.logger?.warn({ model: this.model, status }, 'model upstream returned an error status');
      this.finish(new AppError('model_unavailable', `Model upstream returned HTTP ${status}${upstreamMessage ? `: ${upstreamMessage}` : '.'}`));
      return;
    }
    const acc = this.acc;
    if (!acc.done) {
      // Body ended without [DONE]: complete only if the choice had finished.
      const tail = acc.endOfBody();
      if (tail === undefined) {
        this.ctx.logger?.warn({ model: this.model }, 'model upstream stream ended before finishing');
        this.finish(new AppError('model_unavailable', 'Model upstream ended the stream before finishing.'));
        return;
      }
      acc.pending.push(...tail);
    }
    if (this.deliver()) this.finish();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.settled) return;
    if (err instanceof AppError) { this.finish(err); return; }
    if (this.signal.aborted) { this.finish(abortReason(this.signal)); return; }
    // A stream that already delivered its finish part is complete, whatever happens to the socket.
    if (this.acc.done) { this.finish(); return; }
    const code = errorCode(err);
    this.ctx.logger?.warn({ model: this.model, code }, 'model upstream connection failed');
    this.finish(new AppError('model_unavailable', `Model upstream connection failed (${code}).`, { cause: err }));
  }
}

/**
 * A request body that yields its bytes once and then drops them: undici keeps the body object of a
 * request until the response ends (lib/core/request.js keeps `this.body`), and a Buffer body would stay
 * with every live stream. undici writes an iterable body with the `content-length` header given (no
 * chunked encoding), header and bytes corked into one write.
 */
export class OneShotBody implements Iterable<Buffer>, Iterator<Buffer, undefined> {
  #bytes: Buffer | null;

  /** `bytes`: the whole body; the caller sends `content-length: bytes.byteLength`. */
  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }

  [Symbol.iterator](): Iterator<Buffer, undefined> {
    return this;
  }

  /** The bytes on the first call, then done; the bytes are no longer referenced from here. */
  next(): IteratorResult<Buffer, undefined> {
    const bytes = this.#bytes;
    if (bytes === null) return { done: true, value: undefined };
    this.#bytes = null;
    return { done: false, value: bytes };
  }
}

/**
 * Turns SSE events of one step into parts. Parts land in `pending`; a protocol problem sets `failure`
 * (thrown by the reader after `feed`, because throwing inside the parser callback would lose it).
 */
class StepAccumulator {
  readonly pending: ModelPart[] = [];
  failure: AppError | undefined;
  /** `[DONE]` seen: the finish part is queued; the rest of the body is drained unread. */
  done = false;
  private finishRaw: string | null = null;
  private callsFlushed = false;
  private usage: ModelUsage | undefined;
  /** Tool calls by index, made on the first fragment (most steps have none: a Map per live stream is ~200 bytes). */
  private calls: Map<number, ModelToolCall> | undefined;

  constructor(private readonly apiKey: string | undefined) {}

  /** performance.now() when the chunk being parsed arrived (stamped on text deltas for the relay metric). */
  chunkAt = 0;

  fail(message: string): void {
    this.failure ??= new AppError('model_unavailable', message);
  }

  onEvent(data: string): void {
    if (this.done || this.failure) return;
    if (data === '[DONE]') {
      this.pending.push(...this.closing());
      this.done = true;
      return;
    }
    let chunk: WireChunk;
    try {
      chunk = JSON.parse(data) as WireChunk;
    } catch {
      this.fail('Model upstream sent malformed JSON in its stream.');
      return;
    }
    if (chunk === null || typeof chunk !== 'object') {
      this.fail('Model upstream sent a malformed stream chunk.');
      return;
    }
    if (chunk.error !== undefined && chunk.error !== null) {
      const raw = typeof chunk.error === 'string' ? chunk.error : String(chunk.error.message ?? 'unknown error');
      this.fail(`Model upstream reported an error: ${redact(raw, this.apiKey).slice(0, MAX_UPSTREAM_MESSAGE)}`);
      return;
    }
    const choice = chunk.choices?.[0];
    if (choice) {
      const delta = choice.delta;
      if (delta) {
        const content = delta.content;
        if (typeof content === 'string' && content.length > 0) this.pending.push({ type: 'text-delta', delta: content, receivedAt: this.chunkAt });
        if (delta.tool_calls) this.addToolFragments(delta.tool_calls);
      }
      if (typeof choice.finish_reason === 'string' && choice.finish_reason.length > 0) {
        this.finishRaw = choice.finish_reason;
        this.flushCalls();
      }
    }
    const usage = chunk.usage;
    if (usage && typeof usage === 'object') {
      this.usage = {
        input_tokens: toCount(usage.prompt_tokens),
        output_tokens: toCount(usage.completion_tokens),
      };
    }
  }

  /** Parts that end a body which closed without `[DONE]`, or undefined when the choice never finished. */
  endOfBody(): ModelPart[] | undefined {
    if (this.finishRaw === null) return undefined;
    return this.closing();
  }

  private addToolFragments(fragments: WireToolFragment[]): void {
    if (!Array.isArray(fragments)) return;
    fragments.forEach((frag, position) => {
      const index = typeof frag.index === 'number' ? frag.index : position;
      const calls = this.calls ??= new Map();
      let call = calls.get(index);
      if (call === undefined) {
        call = { id: '', name: '', arguments: '' };
        calls.set(index, call);
      }
      if (!call.id && typeof frag.id === 'string') call.id = frag.id;
      const fn = frag.function;
      if (fn) {
        if (!call.name && typeof fn.name === 'string') call.name = fn.name;
        if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
      }
    });
  }

  private flushCalls(): void {
    if (this.callsFlushed) return;
    this.callsFlushed = true;
    const calls = this.calls;
    if (calls === undefined) return;
    const indexes = [...calls.keys()].sort((a, b) => a - b);
    for (const index of indexes) {
      const call = calls.get(index)!;
      if (!call.id) call.id = `call_${index}`;
      this.pending.push({ type: 'tool-call', call });
    }
  }

  /** Tool calls not yet flushed, then usage (when sent), then the one finish part. */
  private closing(): ModelPart[] {
    this.flushCalls();
    const parts: ModelPart[] = [];
    if (this.usage) parts.push({ type: 'usage', usage: this.usage });
    parts.push({ type: 'finish', reason: mapFinish(this.finishRaw, this.calls !== undefined && this.calls.size > 0) });
    return parts;
  }
}

/**
 * OpenAI finish_reason to ours. `function_call` (legacy) is `tool_calls`; a missing reason is `stop`,
 * or `tool_calls` when the step produced tool calls; unknown reasons are `stop`.
 */
function mapFinish(raw: string | null, hasCalls: boolean): ModelFinishReason {
  switch (raw) {
    case 'stop':
    case 'length':
    case 'tool_calls':
    case 'content_filter':
      return raw;
    case 'function_call':
      return 'tool_calls';
    default:
      return hasCalls ? 'tool_calls' : 'stop';
  }
}

function toCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
}

/** The chat-completions request body for one step. */
function buildRequest(input: ModelTurnInput): WireRequest {
  const messages = input.messages.map(toWireMessage);
  if (input.passages.length > 0) {
    const firstSystem = messages.findIndex((m) => m.role === 'system');
    messages.splice(firstSystem + 1, 0, { role: 'system', content: passagesPrompt(input.passages) });
  }
  const req: WireRequest = {
    model: input.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (input.tools.length > 0) req.tools = input.tools.map(toWireTool);
  if (input.maxOutputTokens !== undefined) req.max_tokens = input.maxOutputTokens;
  return req;
}

function toWireMessage(m: ModelMessage): WireMessage {
  switch (m.role) {
    case 'system':
    case 'user':
      return { role: m.role, content: m.content };
    case 'assistant': {
      if (!m.tool_calls || m.tool_calls.length === 0) return { role: 'assistant', content: m.content };
      return {
        role: 'assistant',
        content: m.content.length > 0 ? m.content : null,
        tool_calls: m.tool_calls.map((c) => ({
          id: c.id,
          type: 'function' as const,
          function: { name: c.name, arguments: c.arguments },
        })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
  }
}

function toWireTool(t: ModelToolSpec): NonNullable<WireRequest['tools']>[number] {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } };
}

/**
 * The system message carrying the passages: instructions, then `[n] <title> — <heading>\n<text>` per
 * passage (the ` — <heading>` part only when the heading is non-empty), numbered from 1 in input order.
 */
function passagesPrompt(passages: Passage[]): string {
  const list = passages
    .map((p, i) => `[${i + 1}] ${p.heading ? `${p.title} — ${p.heading}` : p.title}\n${p.text}`)
    .join('\n\n');
  return (
    'Answer from the numbered passages below. Cite the passages you use by their number in square ' +
    'brackets, e.g. [1]. If the passages do not contain the answer, say so.\n\n' +
    list
  );
}


/** `error.message` of an OpenAI-style error body, else `message`/`error` strings, else the raw text. */
export function extractErrorMessage(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') {
      const obj = parsed as { error?: unknown; message?: unknown };
      if (typeof obj.error === 'string') return obj.error;
      if (obj.error && typeof obj.error === 'object') {
        const msg = (obj.error as { message?: unknown }).message;
        if (typeof msg === 'string') return msg;
      }
      if (typeof obj.message === 'string') return obj.message;
    }
  } catch {
    // not JSON: use the text itself
  }
  return text.replace(/\s+/g, ' ').trim();
}

/** Removes the API key (and any bearer token) from text that came from the upstream. */
export function redact(text: string, apiKey: string | undefined): string {
  let out = apiKey ? text.split(apiKey).join('[redacted]') : text;
  out = out.replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
  return out;
}

/** A short, secret-free code for a transport failure (e.g. `ECONNREFUSED`, `UND_ERR_SOCKET`). */
export function errorCode(err: unknown): string {
  if (err && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const name = (err as { name?: unknown }).name;
    if (typeof name === 'string') return name;
  }
  return 'unknown';
}
