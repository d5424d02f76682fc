/**
 * The HTTP side of a webhook delivery attempt (API.md "Webhooks"): one POST with undici through the
 * outbound guard (src/net/outbound-guard.ts: public addresses only, checked at connect time on the
 * resolved address, on every attempt, unless private networks are allowed), a whole-attempt timeout,
 * redirects never followed (undici's `request` does not follow them; a 3xx is reported as a failure),
 * and at most the first 4 KiB of the response body kept.
 */
import type { Agent } from 'undici';
import { request } from 'undici';
import { createGuardedAgent, DESTINATION_REFUSED_MESSAGE, destinationRefusedIn } from '../net/outbound-guard.js';

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
  /**
   * Why it failed, in words (null for a 2xx). The tenant sees it (a delivery's `last_error`), so it never
   * names an address the URL's host resolved to: a refused destination is `destination refused: private
   * address`, a connection failure its error code.
   */
  error: string | null;
  /** For the operator's log only: the failure with the addresses involved (undefined when `error` says all). */
  detail?: string | undefined;
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
        const location = headerValue(res.headers.location);
        // The receiver's Location is shown as it is, up to 500 characters (delivery lists show the error).
        error = `redirect not followed: HTTP ${status}${location === undefined ? '' : ` to ${location.length > 500 ? `${location.slice(0, 500)}…` : location}`}`;
      } else if (status < 200 || status >= 300) {
        error = `HTTP ${status}`;
      }
      return { status, body: kept, durationMs: elapsed(), error, retryAfter };
    } catch (err) {
      const code = (err as { code?: string }).code;
      const timedOut = abort.signal.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
      if (timedOut) return { status: 0, body: '', durationMs: elapsed(), error: `timeout: no complete response within ${this.opts.timeoutMs} ms`, retryAfter: undefined };
      return { status: 0, body: '', durationMs: elapsed(), ...describe(err), retryAfter: undefined };
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

/**
 * A failed request as recorded on the attempt (`error`, shown to the tenant) and as logged (`detail`). The
 * error names the failure by its code only (`connection failed (ECONNREFUSED)`): Node's and undici's
 * messages name the address connected to, which would tell a tenant how the server resolves names.
 */
function describe(err: unknown): { error: string; detail: string } {
  const refused = destinationRefusedIn(err);
  if (refused !== undefined) return { error: DESTINATION_REFUSED_MESSAGE, detail: refused.detail };
  const messages: string[] = [];
  let code: string | undefined;
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== null && typeof e === 'object'; i++) {
    const { message, code: c } = e as { message?: unknown; code?: unknown };
    if (typeof message === 'string' && message !== '') messages.push(message);
    if (code === undefined && typeof c === 'string') code = c;
    e = (e as { cause?: unknown }).cause;
  }
  const detail = messages.length > 0 ? messages.join(': ') : String(err);
  return { error: code === undefined ? 'request failed' : `connection failed (${code})`, detail };
}
