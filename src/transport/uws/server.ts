import { STATUS_CODES } from 'node:http';
import type { HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { AppError, toAppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import { redactUrl, type Logger } from '../../log/logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { Router } from '../http/router.js';
import type { Dispatcher } from '../http/dispatch.js';
import type { HttpRequest, HttpResult } from '../http/types.js';
import type { SseHub, SseSink } from '../sse/sse-writer.js';
import { loadUws } from './native.js';

export interface UwsServerOptions {
  host: string;
  port: number;
  router: Router;
  dispatch: Dispatcher;
  sse: SseHub;
  logger: Logger;
  metrics: Metrics;
  /** Body cap for JSON routes, bytes. */
  bodyLimitBytes: number;
  /** Body cap for raw upload routes, bytes. */
  rawBodyLimitBytes: number;
}

/** A listening server. `port` is the bound port (useful with port 0). */
export interface UwsServer {
  port: number;
  implementation: string;
  /** Stops accepting connections (open ones, e.g. running streams, continue). */
  stopListening(): void;
  /** Closes every open streaming response. */
  closeAll(): void;
}

const statusLine = (status: number): string => `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
const textDecoder = new TextDecoder();

/** Per-request state shared between the uWS callbacks and the async handler. */
interface Exchange {
  res: HttpResponse;
  aborted: boolean;
  onAbort: (() => void) | undefined;
  startedAt: number;
  req: HttpRequest;
  status: number;
}

/**
 * The uWebSockets.js transport: every uWS quirk lives here (DESIGN.md). Request data is copied
 * synchronously (uWS request objects die when the callback returns), `onAborted` is attached before
 * any await, bodies are streamed with a cap (413 body_too_large), writes from async code are corked,
 * and a response is never touched after the client went away.
 */
export function startUwsServer(opts: UwsServerOptions): Promise<UwsServer> {
  const { uws, implementation } = loadUws();
  const app: TemplatedApp = uws.App();
  const { logger, metrics } = opts;
  /** Responses still open (streams), so shutdown can close them. */
  const open = new Set<Exchange>();

  function finishLog(ex: Exchange, extra?: Record<string, unknown>): void {
    metrics.httpRequests.inc({ method: ex.req.method, status: String(ex.status) });
    logger.info({
      request_id: ex.req.requestId, method: ex.req.method, url: redactUrl(ex.req.path, ex.req.query.toString()),
      status: ex.status, duration_ms: Math.round((performance.now() - ex.startedAt) * 100) / 100, ...extra,
    }, 'request');
  }

  function send(ex: Exchange, result: Exclude<HttpResult, { kind: 'sse' }>, closeConnection = false): void {
    if (ex.aborted) return;
    ex.status = result.status;
    ex.res.cork(() => {
      ex.res.writeStatus(statusLine(result.status));
      ex.res.writeHeader('X-Request-Id', ex.req.requestId);
      if ('headers' in result && result.headers) for (const [k, v] of Object.entries(result.headers)) ex.res.writeHeader(k, v);
      if (result.kind === 'json') {
        ex.res.writeHeader('Content-Type', 'application/json');
        ex.res.end(JSON.stringify(result.body), closeConnection);
      } else if (result.kind === 'text') {
        ex.res.writeHeader('Content-Type', result.contentType);
        ex.res.end(result.body, closeConnection);
      } else {
        ex.res.endWithoutBody(0, closeConnection);
      }
    });
    finishLog(ex);
  }

  function sendError(ex: Exchange, err: unknown, closeConnection = false): void {
    const e = toAppError(err);
    if (e.status >= 500) logger.error({ err: e.cause ?? e, request_id: ex.req.requestId }, e.message);
    send(ex, { kind: 'json', status: e.status, body: { error: e.toBody(ex.req.requestId) }, ...(e.headers ? { headers: e.headers } : {}) }, closeConnection);
  }

  function stream(ex: Exchange, result: Extract<HttpResult, { kind: 'sse' }>): void {
    if (ex.aborted) return;
    const res = ex.res;
    ex.status = 200;
    let backlog = 0;
    let waitingWritable = false;
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('X-Request-Id', ex.req.requestId);
      res.writeHeader('Content-Type', 'text/event-stream; charset=utf-8');
      res.writeHeader('Cache-Control', 'no-cache, no-transform');
      res.writeHeader('X-Accel-Buffering', 'no');
    });
    const sink: SseSink = {
      write(chunk) {
        if (ex.aborted) return true;
        let ok = true;
        res.cork(() => { ok = res.write(chunk); });
        if (!ok) {
          backlog += Buffer.byteLength(chunk);
          if (!waitingWritable) {
            waitingWritable = true;
            res.onWritable(() => { backlog = 0; waitingWritable = false; return true; });
          }
        }
        return ok;
      },
      end() {
        if (ex.aborted) return;
        ex.aborted = true; // the response is finished: nothing may touch it again
        open.delete(ex);
        res.cork(() => res.end());
        finishLog(ex, { turn_id: result.channel.turnId });
      },
      bufferedBytes: () => backlog,
      abort() {
        if (ex.aborted) return;
        ex.aborted = true;
        open.delete(ex);
        res.close();
        finishLog(ex, { turn_id: result.channel.turnId, closed: 'slow_consumer' });
      },
    };
    open.add(ex);
    const detach = opts.sse.attach(sink, result.channel, result.afterSeq);
    ex.onAbort = () => {
      open.delete(ex);
      detach();
      finishLog(ex, { turn_id: result.channel.turnId, closed: 'client' });
    };
  }

  async function run(ex: Exchange, params: Record<string, string>, route: Parameters<Dispatcher>[1]): Promise<void> {
    try {
      const result = await opts.dispatch(ex.req, route, params);
      if (result.kind === 'sse') stream(ex, result);
      else send(ex, result);
    } catch (err) {
      sendError(ex, err);
    }
  }

  app.any('/*', (res, uReq) => {
    const headers: Record<string, string> = {};
    let conflictingLength = false;
    uReq.forEach((k, v) => {
      // Two different Content-Length values are a request-smuggling vector (RFC 9112 section 6.3): refuse.
      if (k === 'content-length' && headers[k] !== undefined && headers[k] !== v) conflictingLength = true;
      headers[k] = v;
    });
    const method = uReq.getMethod().toUpperCase();
    const path = uReq.getUrl();
    const queryString = uReq.getQuery() ?? '';
    const ex: Exchange = {
      res, aborted: false, onAbort: undefined, startedAt: performance.now(), status: 0,
      req: {
        method, path, query: new URLSearchParams(queryString), headers, body: null,
        requestId: newId('req'), remoteAddress: textDecoder.decode(res.getRemoteAddressAsText()),
      },
    };
    res.onAborted(() => {
      const wasOpen = !ex.aborted;
      ex.aborted = true;
      if (wasOpen) ex.onAbort?.();
    });

    if (conflictingLength) {
      sendError(ex, new AppError('malformed_request', 'The request has conflicting Content-Length headers.'), true);
      return;
    }
    const match = opts.router.match(method, path);
    if (!match.ok) {
      if (match.reason === 'method_not_allowed') {
        sendError(ex, new AppError('method_not_allowed', `${method} is not allowed here; allowed: ${match.allow!.join(', ')}.`, { headers: { Allow: match.allow!.join(', ') } }));
      } else {
        sendError(ex, new AppError('not_found', `No route for ${method} ${path}.`));
      }
      return;
    }
    const { route, params } = match;
    if (!route.body) {
      void run(ex, params, route);
      return;
    }
    const limit = route.body === 'raw' ? opts.rawBodyLimitBytes : opts.bodyLimitBytes;
    const declared = headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      sendError(ex, new AppError('body_too_large', `The request body exceeds ${limit} bytes.`), true);
      return;
    }
    if (declared === '0' || (declared === undefined && headers['transfer-encoding'] === undefined)) {
      void run(ex, params, route);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    res.onData((chunk, isLast) => {
      if (refused) return;
      size += chunk.byteLength;
      if (size > limit) {
        refused = true;
        sendError(ex, new AppError('body_too_large', `The request body exceeds ${limit} bytes.`), true);
        return;
      }
      // The ArrayBuffer is only valid during this callback: copy it.
      chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)));
      if (isLast) {
        ex.req.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        void run(ex, params, route);
      }
    });
  });

  return new Promise((resolve, reject) => {
    app.listen(opts.host, opts.port, (token: us_listen_socket | false) => {
      if (!token) {
        reject(new Error(`could not listen on ${opts.host}:${opts.port}`));
        return;
      }
      const port = uws.us_socket_local_port(token);
      logger.info({ host: opts.host, port, uws: implementation }, 'listening');
      resolve({
        port,
        implementation,
        stopListening: () => uws.us_listen_socket_close(token),
        closeAll: () => {
          for (const ex of open) { ex.aborted = true; ex.res.close(); }
          open.clear();
        },
      });
    });
  });
}
