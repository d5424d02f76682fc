/**
 * Embeddings from an OpenAI-compatible endpoint: `POST {baseUrl}/embeddings` with `{model, input,
 * encoding_format}`, answered `{data: [{index, embedding}], usage}` (the OpenAI embeddings API shape, which vLLM, Ollama's
 * /v1, llama.cpp's server, LM Studio and OpenRouter also speak). The same base URL and API key as the
 * chat provider (PARLEY_OPENAI_BASE_URL, PARLEY_OPENAI_API_KEY); docs/knowledge-bases.md "Embeddings
 * (optional)".
 */
import { Pool } from 'undici';
import { errorCode, extractErrorMessage, redact } from './openai-model.js';

/** Why an embeddings call failed. */
export type EmbeddingsErrorKind =
  /** The upstream answered a non-2xx status (`status` set). */
  | 'status'
  /** No complete answer within `timeoutMs`. */
  | 'timeout'
  /** Connection refused, reset, DNS failure and the like. */
  | 'network'
  /** A 2xx answer that is not the expected JSON, or vectors missing, of mixed dimensions or not numbers. */
  | 'malformed'
  /** The caller's signal aborted. */
  | 'aborted';

/**
 * A failed embeddings call. `message` is short and free of the API key (upstream text is redacted and cut
 * to 200 characters); `retryable` is true for timeouts, network failures, 429 and 5xx.
 */
export class EmbeddingsError extends Error {
  override readonly name = 'EmbeddingsError';
  readonly retryable: boolean;

  constructor(readonly kind: EmbeddingsErrorKind, message: string, readonly status?: number) {
    super(message);
    this.retryable = kind === 'timeout' || kind === 'network' || (kind === 'status' && (status === 429 || (status !== undefined && status >= 500)));
  }
}

/** Options of {@link createOpenAIEmbeddings}. */
export interface OpenAIEmbeddingsOptions {
  /** API base URL including any path prefix, e.g. `http://127.0.0.1:1234/v1`; requests go to `${baseUrl}/embeddings`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when set; never logged nor put in error messages. */
  apiKey?: string;
  /** The embedding model's name (PARLEY_EMBEDDINGS_MODEL), sent as `model`. */
  model: string;
  /** Bound of one call from request to the last byte of the answer, ms. */
  timeoutMs: number;
  /** Keep-alive connections to the upstream origin (default 8). */
  connections?: number;
}

/** Options of one {@link EmbeddingsClient.embed} call. */
export interface EmbedCallOptions {
  signal?: AbortSignal;
  /** Bound of this call, ms (default: the client's `timeoutMs`). */
  timeoutMs?: number;
}

/** An embeddings client for one model. */
export interface EmbeddingsClient {
  /** The model name; stored with every vector so that only vectors of one model are compared. */
  readonly model: string;
  /**
   * One vector per input, in input order (the answer's `index` decides the order, not its position).
   * An empty `inputs` resolves [] without a request. `options.timeoutMs` bounds this call instead of the
   * client's `timeoutMs`; `options.signal` aborts it.
   *
   * @throws EmbeddingsError (see {@link EmbeddingsErrorKind}).
   */
  embed(inputs: string[], options?: EmbedCallOptions): Promise<Float32Array[]>;
  /** Closes the connection pool; calls in flight fail. */
  close(): Promise<void>;
}

/** Most bytes of an answer read (64 MiB: 2048 inputs of 1536 dimensions as JSON numbers is about 60 MiB). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const MAX_UPSTREAM_MESSAGE = 200;

/**
 * Creates the client. Requests ask for `encoding_format: "base64"` (each vector as a base64 string of
 * little-endian float32, as the official OpenAI SDKs ask): the answer for 64 chunks of 1536 dimensions is
 * then about 0.5 MB and parses in about 1 ms on the event loop, where the same vectors as JSON numbers are
 * 2 MB and take about 12 ms (measured on the development machine). Servers that ignore the field (Ollama
 * answers numbers) are read as well: each `embedding` may be a base64 string or an array of numbers.
 *
 * @throws TypeError synchronously when `baseUrl` is not an absolute http(s) URL, `model` is empty or `timeoutMs` is not positive.
 */
export function createOpenAIEmbeddings(opts: OpenAIEmbeddingsOptions): EmbeddingsClient {
  const base = new URL(opts.baseUrl);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`baseUrl must be http(s), got ${base.protocol}`);
  if (opts.model.trim() === '') throw new TypeError('model must not be empty');
  if (!(opts.timeoutMs > 0)) throw new TypeError('timeoutMs must be a positive number of milliseconds');
  const path = `${base.pathname.replace(/\/+$/, '')}/embeddings${base.search}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  const pool = new Pool(base.origin, { connections: opts.connections ?? 8, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
  const apiKey = opts.apiKey;

  async function embed(inputs: string[], call: EmbedCallOptions = {}): Promise<Float32Array[]> {
    if (inputs.length === 0) return [];
    const signal = call.signal;
    const timeoutMs = call.timeoutMs ?? opts.timeoutMs;
    if (signal?.aborted) throw new EmbeddingsError('aborted', 'embeddings request aborted');
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; abort.abort(); }, timeoutMs);
    const onAbort = () => abort.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const failure = (err: unknown): EmbeddingsError => {
      if (err instanceof EmbeddingsError) return err;
      if (timedOut) return new EmbeddingsError('timeout', `embeddings upstream did not answer within ${timeoutMs} ms`);
      if (signal?.aborted) return new EmbeddingsError('aborted', 'embeddings request aborted');
      return new EmbeddingsError('network', `embeddings upstream unreachable (${errorCode(err)})`);
    };
    try {
      const res = await pool.request({
        method: 'POST', path, headers, body: JSON.stringify({ model: opts.model, input: inputs, encoding_format: 'base64' }), signal: abort.signal,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.byteLength;
        if (size > MAX_ANSWER_BYTES) {
          res.body.destroy();
          throw new EmbeddingsError('malformed', `embeddings answer larger than ${MAX_ANSWER_BYTES} bytes`);
        }
        chunks.push(chunk);
      }
      const text = Buffer.concat(chunks).toString('utf8');
      if (res.statusCode < 200 || res.statusCode > 299) {
        const upstream = redact(extractErrorMessage(text), apiKey).slice(0, MAX_UPSTREAM_MESSAGE);
        throw new EmbeddingsError('status', `embeddings upstream returned HTTP ${res.statusCode}${upstream ? `: ${upstream}` : ''}`, res.statusCode);
      }
      return parseAnswer(text, inputs.length);
    } catch (err) {
      throw failure(err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  return { model: opts.model, embed, close: () => pool.close() };
}

/** The vectors of an answer in input order; EmbeddingsError `malformed` when it does not hold exactly `count` of one dimension. */
function parseAnswer(text: string, count: number): Float32Array[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new EmbeddingsError('malformed', 'embeddings answer is not JSON');
  }
  const data = (parsed as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new EmbeddingsError('malformed', 'embeddings answer has no data array');
  if (data.length !== count) throw new EmbeddingsError('malformed', `embeddings answer has ${data.length} vectors for ${count} inputs`);
  const out = new Array<Float32Array | undefined>(count);
  let dims = -1;
  for (let pos = 0; pos < data.length; pos++) {
    const item = data[pos] as { index?: unknown; embedding?: unknown } | null;
    const index = typeof item?.index === 'number' ? item.index : pos;
    if (!Number.isInteger(index) || index < 0 || index >= count || out[index] !== undefined) {
      throw new EmbeddingsError('malformed', `embeddings answer has a bad or repeated index ${String(item?.index)}`);
    }
    const vector = toVector(item?.embedding);
    if (vector === undefined || vector.length === 0) throw new EmbeddingsError('malformed', `embeddings answer has no usable vector at index ${index}`);
    if (dims === -1) dims = vector.length;
    else if (vector.length !== dims) throw new EmbeddingsError('malformed', `embeddings answer mixes dimensions (${dims} and ${vector.length})`);
    out[index] = vector;
  }
  return out as Float32Array[];
}

function toVector(raw: unknown): Float32Array | undefined {
  if (Array.isArray(raw)) {
    const v = new Float32Array(raw.length);
    for (let i = 0; i < raw.length; i++) {
      const x = raw[i] as unknown;
      if (typeof x !== 'number' || !Number.isFinite(x)) return undefined;
      v[i] = x;
    }
    return v;
  }
  if (typeof raw === 'string') {
    const bytes = Buffer.from(raw, 'base64');
    if (bytes.byteLength % 4 !== 0) return undefined;
    const v = new Float32Array(bytes.byteLength / 4);
    for (let i = 0; i < v.length; i++) v[i] = bytes.readFloatLE(i * 4);
    return v;
  }
  return undefined;
}
