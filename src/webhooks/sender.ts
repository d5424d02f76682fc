/**
 * The HTTP side of a webhook delivery attempt (API.md "Webhooks"): one POST with undici through the
 * outbound guard (src/net/outbound-guard.ts: public addresses only, checked at connect time on the
 * resolved address, on every attempt, unless private networks are allowed), a whole-attempt timeout,
 * redirects never followed (undici's `request` does not follow them; a 3xx is reported as a failure),
 * and at most the first 4 KiB of the response body kept.
 */
import type { Agent } from 'undici';
import { request } from 'undici';
import { createGuardedAgent } from '../net/outbound-guard.js';

/** Bytes of a response body kept on an attempt's record (API.md: the first 4 KiB). */
export const RESPONSE_BODY_LIMIT_BYTES = 4096;

/** How one attempt went. */
export interface AttemptResult {
  /** HTTP status; 0 when no response came (refused destination, connection error, timeout). */
  status: number;
  /** The first 4 KiB of the response body, decoded as UTF-8 ('' when none). */
  body: string;
  /** From sending to the end of reading the kept body, ms. */
  durationMs: number;
  /** Why it failed, in words (null for a 2xx). */
  error: string | null;
  /** The response's `Retry-After` header, if any. */
  retryAfter: string | undefined;
}

/** Options of WebhookSender. */
export interface WebhookSenderOptions {
  /** Allow loopback, private and link-local destinations (`PARLEY_WEBHOOKS_ALLOW_PRIVATE`). */
  allowPrivate: boolean;
  /** The whole attempt (connect, send, response head and the kept body), ms (API.md: 10 s). */
  timeoutMs: number;
  /** Keep-alive connections per origin. */
  connections?: number;
}

/** Sends delivery attempts; one shared guarded connection pool. */
export class WebhookSender {
  private readonly agent: Agent;

  constructor(private readonly opts: WebhookSenderOptions) {
    this.agent = createGuardedAgent({ allowPrivate: opts.allowPrivate, connectTimeoutMs: opts.timeoutMs, connections: opts.connections ?? 16 });
  }

  /** POSTs `body` with `headers` to `url`. Never throws: every failure is an AttemptResult with an error. */
  async send(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.opts.timeoutMs);
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const res = await request(url, {
        method: 'POST', headers, body, dispatcher: this.agent, signal: abort.signal,
        // undici's own timers are backstops: the attempt's timer above ends it first, with one error text.
        headersTimeout: this.opts.timeoutMs + 1000, bodyTimeout: this.opts.timeoutMs + 1000,
      });
      const kept = await readHead(res.body, RESPONSE_BODY_LIMIT_BYTES);
      const status = res.statusCode;
      const retryAfter = headerValue(res.headers['retry-after']);
      let error: string | null = null;
      if (status >= 300 && status < 400) {
        error = `redirect not followed: HTTP ${status}${res.headers.location === undefined ? '' : ` to ${headerValue(res.headers.location)}`}`;
      } else if (status < 200 || status >= 300) {
        error = `HTTP ${status}`;
      }
      return { status, body: kept, durationMs: elapsed(), error, retryAfter };
    } catch (err) {
      const code = (err as { code?: string }).code;
      const timedOut = abort.signal.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
      const error = timedOut ? `timeout: no complete response within ${this.opts.timeoutMs} ms` : describe(err);
      return { status: 0, body: '', durationMs: elapsed(), error, retryAfter: undefined };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the connection pool. */
  async close(): Promise<void> {
    await this.agent.close().catch(() => {});
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Reads up to `limit` bytes of `body`, then drops the rest (the connection is not reused then). */
async function readHead(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const take = Math.min(chunk.length, limit - size);
    if (take > 0) { parts.push(chunk.subarray(0, take)); size += take; }
    if (size >= limit) { body.destroy(); break; }
  }
  return Buffer.concat(parts).toString('utf8');
}

/** An error as recorded on the attempt: its message with the cause's code when there is one. */
function describe(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { message?: string; code?: string } };
  const cause = e.cause;
  if (e.code === 'DESTINATION_REFUSED') return e.message ?? 'destination refused';
  if (cause?.code === 'DESTINATION_REFUSED') return cause.message ?? 'destination refused';
  if (cause?.message) return `${e.message ?? 'request failed'}: ${cause.message}${cause.code ? ` (${cause.code})` : ''}`;
  return `${e.message ?? String(err)}${e.code ? ` (${e.code})` : ''}`;
}
