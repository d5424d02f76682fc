import { STATUS_CODES } from 'node:http';
import { toAppError } from '../../errors/app-error.js';
import { redactUrl, type Logger } from '../../log/logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { HttpResult } from '../http/types.js';
import type { ErrorCode } from '../../errors/catalogue.js';
import type { Exchange } from './exchange.js';

/** A non-streaming result (everything but `sse`). */
export type PlainResult = Exclude<HttpResult, { kind: 'sse' }>;

/** 5xx codes that are load shedding, not faults: not logged as errors one by one (see Responder.sendError). */
const SHEDDING_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['overloaded', 'shutting_down']);

/** `200 OK`, `404 Not Found`, ... */
export const statusLine = (status: number): string => `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;

/**
 * `X-Content-Type-Options: nosniff` (WHATWG Fetch, "X-Content-Type-Options" header): browsers take the
 * declared Content-Type as it is and never sniff a JSON body or a text file as HTML or script. Sent on
 * every response: API, event streams, static files, refused socket upgrades.
 */
export const NOSNIFF: readonly [string, string] = ['X-Content-Type-Options', 'nosniff'];

/**
 * Headers of an event-stream response (WHATWG HTML "Server-sent events"): the media type, no
 * caching or transformation by intermediaries, and no buffering by nginx-style proxies.
 */
export function sseHeaders(requestId: string): Array<[string, string]> {
  return [
    ['X-Request-Id', requestId],
    ['Content-Type', 'text/event-stream; charset=utf-8'],
    ['Cache-Control', 'no-cache, no-transform'],
    ['X-Accel-Buffering', 'no'],
    [NOSNIFF[0], NOSNIFF[1]],
  ];
}

/**
 * Writes status, headers and bodies to uWS responses, and the one log line + metric per request.
 * Every write is corked (uWS requires it from async code, and it packs the response into one
 * syscall) and skipped when the exchange is already closed.
 */
export class Responder {
  constructor(private readonly logger: Logger, private readonly metrics: Metrics) {}

  /**
   * The request's log line (`request_id`, method, URL with secrets redacted, status, `duration_ms`, and
   * `client_address`: the client's, behind a trusted proxy the one it forwarded) and the `http_requests`
   * metric. Called exactly once per exchange, when its response ends.
   */
  finishLog(ex: Exchange, extra?: Record<string, unknown>): void {
    this.metrics.httpRequests.inc({ method: ex.req.method, status: String(ex.status) });
    this.logger.info({
      request_id: ex.req.requestId, method: ex.req.method, url: redactUrl(ex.req.path, ex.req.query.toString()),
      status: ex.status, duration_ms: Math.round((performance.now() - ex.startedAt) * 100) / 100, client_address: ex.req.remoteAddress, ...extra,
    }, 'request');
  }

  /**
   * Writes a complete response: status line, `X-Request-Id`, {@link NOSNIFF}, the result's headers, then the JSON, text
   * or bytes body (or none for `empty`). `closeConnection` asks uWS to close the socket after it, for
   * requests whose body was not read (the bytes left on the wire cannot be parsed as a next request).
   *
   * uWS facts this works around (the build we ship): `end(body)` writes the body even on a HEAD
   * request, which would corrupt the next response on a keep-alive connection; and
   * `endWithoutBody(n)` with n > 0 sends nothing at all (it waits for n body bytes), as does any call
   * with arguments other than a number. So a HEAD response writes `Content-Length` itself and ends
   * with a bare `endWithoutBody()`; a 204 or 304 carries no Content-Length (RFC 9110 section 8.6).
   */
  send(ex: Exchange, result: PlainResult, closeConnection = false): void {
    if (ex.closed) return;
    ex.closed = true;
    ex.status = result.status;
    const res = ex.res;
    let body: string | Uint8Array | undefined;
    let contentType: string | undefined;
    if (result.kind === 'json') { body = JSON.stringify(result.body); contentType = 'application/json'; }
    else if (result.kind === 'text' || result.kind === 'bytes') { body = result.body; contentType = result.contentType; }
    res.cork(() => {
      res.writeStatus(statusLine(result.status));
      res.writeHeader('X-Request-Id', ex.req.requestId);
      res.writeHeader(NOSNIFF[0], NOSNIFF[1]);
      if (ex.req.responseHeaders !== undefined) for (const [k, v] of Object.entries(ex.req.responseHeaders)) res.writeHeader(k, v);
      if ('headers' in result && result.headers) for (const [k, v] of Object.entries(result.headers)) res.writeHeader(k, v);
      if (contentType !== undefined) res.writeHeader('Content-Type', contentType);
      if (body === undefined) {
        if (result.status === 204 || result.status === 304) {
          if (closeConnection) res.writeHeader('Connection', 'close');
          res.endWithoutBody();
        } else {
          res.endWithoutBody(0, closeConnection);
        }
      } else if (ex.head) {
        res.writeHeader('Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
        if (closeConnection) res.writeHeader('Connection', 'close');
        res.endWithoutBody();
      } else {
        res.end(body, closeConnection);
      }
    });
    this.finishLog(ex);
  }

  /**
   * The HEAD twin of a stream: status 200 and the headers of the event stream, no body; the turn's
   * channel is not subscribed to.
   */
  sendStreamHead(ex: Exchange, turnId: string): void {
    if (ex.closed) return;
    ex.closed = true;
    ex.status = 200;
    const res = ex.res;
    res.cork(() => {
      res.writeStatus(statusLine(200));
      for (const [k, v] of sseHeaders(ex.req.requestId)) res.writeHeader(k, v);
      if (ex.req.responseHeaders !== undefined) for (const [k, v] of Object.entries(ex.req.responseHeaders)) res.writeHeader(k, v);
      res.endWithoutBody();
    });
    this.finishLog(ex, { turn_id: turnId });
  }

  /**
   * Writes `err` as the API.md error body (`{"error": {type, code, message, request_id}}`) with the
   * status of its code; anything that is not an AppError becomes 500 `internal_error` and is logged
   * with its cause.
   */
  sendError(ex: Exchange, err: unknown, closeConnection = false): void {
    const e = toAppError(err);
    // Load shedding (503 overloaded, shutting_down) is expected and can come hundreds of times a second:
    // the request line records it, admission control logs a summary (src/runtime/admission.ts), and an
    // error line with a stack for each would add to the load it sheds.
    if (e.status >= 500 && !SHEDDING_CODES.has(e.code)) this.logger.error({ err: e.cause ?? e, request_id: ex.req.requestId }, e.message);
    this.send(ex, { kind: 'json', status: e.status, body: { error: e.toBody(ex.req.requestId) }, ...(e.headers ? { headers: e.headers } : {}) }, closeConnection);
  }
}
