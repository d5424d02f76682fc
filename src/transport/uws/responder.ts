import { STATUS_CODES } from 'node:http';
import { toAppError } from '../../errors/app-error.js';
import { redactUrl, type Logger } from '../../log/logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { HttpResult } from '../http/types.js';
import type { Exchange } from './exchange.js';

/** A non-streaming result (everything but `sse`). */
export type PlainResult = Exclude<HttpResult, { kind: 'sse' }>;

const statusLine = (status: number): string => `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;

/**
 * Writes status, headers and bodies to uWS responses, and the one log line + metric per request.
 * Every write is corked (uWS requires it from async code, and it packs the response into one
 * syscall) and skipped when the exchange is already closed.
 */
export class Responder {
  constructor(private readonly logger: Logger, private readonly metrics: Metrics) {}

  /**
   * The request's log line (`request_id`, method, URL with secrets redacted, status, `duration_ms`)
   * and the `http_requests` metric. Called exactly once per exchange, when its response ends.
   */
  finishLog(ex: Exchange, extra?: Record<string, unknown>): void {
    this.metrics.httpRequests.inc({ method: ex.req.method, status: String(ex.status) });
    this.logger.info({
      request_id: ex.req.requestId, method: ex.req.method, url: redactUrl(ex.req.path, ex.req.query.toString()),
      status: ex.status, duration_ms: Math.round((performance.now() - ex.startedAt) * 100) / 100, ...extra,
    }, 'request');
  }

  /**
   * Writes a complete response: status line, `X-Request-Id`, the result's headers, then the JSON or
   * text body (or none for `empty`). `closeConnection` asks uWS to close the socket after it, for
   * requests whose body was not read (the bytes left on the wire cannot be parsed as a next request).
   */
  send(ex: Exchange, result: PlainResult, closeConnection = false): void {
    if (ex.closed) return;
    ex.closed = true;
    ex.status = result.status;
    const res = ex.res;
    res.cork(() => {
      res.writeStatus(statusLine(result.status));
      res.writeHeader('X-Request-Id', ex.req.requestId);
      if ('headers' in result && result.headers) for (const [k, v] of Object.entries(result.headers)) res.writeHeader(k, v);
      if (result.kind === 'json') {
        res.writeHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(result.body), closeConnection);
      } else if (result.kind === 'text') {
        res.writeHeader('Content-Type', result.contentType);
        res.end(result.body, closeConnection);
      } else {
        res.endWithoutBody(0, closeConnection);
      }
    });
    this.finishLog(ex);
  }

  /**
   * Writes `err` as the API.md error body (`{"error": {type, code, message, request_id}}`) with the
   * status of its code; anything that is not an AppError becomes 500 `internal_error` and is logged
   * with its cause.
   */
  sendError(ex: Exchange, err: unknown, closeConnection = false): void {
    const e = toAppError(err);
    if (e.status >= 500) this.logger.error({ err: e.cause ?? e, request_id: ex.req.requestId }, e.message);
    this.send(ex, { kind: 'json', status: e.status, body: { error: e.toBody(ex.req.requestId) }, ...(e.headers ? { headers: e.headers } : {}) }, closeConnection);
  }
}
