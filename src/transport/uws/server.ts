import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import type { Logger } from '../../log/logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import { preflightHeaders } from '../http/cors.js';
import type { Dispatcher } from '../http/dispatch.js';
import type { Router } from '../http/router.js';
import type { HttpResult, RouteDef } from '../http/types.js';
import type { SseHub } from '../sse/sse-writer.js';
import type { SocketRouteDef } from '../ws/routes.js';
import type { StaticSite } from '../static/static-site.js';
import { readBody } from './body-reader.js';
import { releaseRequest, type Exchange } from './exchange.js';
import { loadUws } from './native.js';
import { readRequestHead } from './request-head.js';
import { Responder } from './responder.js';
import { openSseResponse, type SseResponseHooks } from './sse-response.js';
import { registerWebSockets, type WebSocketRegistry } from './websocket.js';

/** The `detach` of a stream not attached yet. */
function noDetach(): void {}

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
  /** The WebSocket endpoints and their limits (src/transport/uws/websocket.ts). */
  sockets?: { routes: SocketRouteDef[]; maxBufferedBytes: number; idleTimeoutS: number };
  /** The allowed origins of the agent published under a public key (CORS preflights of `cors` routes). */
  allowedOrigins?: (publicKey: string) => Promise<string[] | undefined>;
  /**
   * Static sites (the dashboard), answered from memory before the route table is consulted: they live
   * outside /v1, need no credential and are not in the OpenAPI document.
   */
  sites?: readonly StaticSite[];
  /**
   * A second port to listen on as well (0: any free one), for the neighbours of this process: every route
   * is served there too. Several processes share `port` (SO_REUSEPORT: the kernel picks one of them per
   * connection), so a neighbour that must reach this process in particular uses this one.
   */
  internalPort?: number | undefined;
}

/** A listening server. `port` is the bound port (useful with port 0). */
export interface UwsServer {
  port: number;
  implementation: string;
  /**
   * Stops accepting connections (open ones, e.g. running streams, continue): on the shared port only
   * (`public`; the internal port, when there is one, stays open for the neighbours until `all`), or on both.
   */
  stopListening(which?: 'public' | 'all'): void;
  /** Closes every open streaming response and WebSocket (1001). */
  closeAll(): void;
  /** Open WebSockets. */
  readonly sockets: number;
  /** The bound internal port (UwsServerOptions.internalPort), when there is one. */
  internalPort: number | undefined;
}

const textDecoder = new TextDecoder();

/**
 * The uWebSockets.js transport: every uWS quirk lives in src/transport/uws/ (DESIGN.md). This file
 * wires the pieces: request data is copied synchronously (uWS request objects die when the callback
 * returns), `onAborted` is attached before any await, the body is read under the route's cap
 * (body-reader.ts), results are written corked (responder.ts), and streams go out as SSE
 * (sse-response.ts).
 */
export function startUwsServer(opts: UwsServerOptions): Promise<UwsServer> {
  const { uws, implementation } = loadUws();
  const app: TemplatedApp = uws.App();
  const { logger } = opts;
  const responder = new Responder(logger, opts.metrics);
  /** Responses still open (streams), so shutdown can close them. */
  const open = new Set<Exchange>();
  // Socket routes first: uWS hands a non-upgrade GET on them on to the catch-all below (404).
  const sockets: WebSocketRegistry | undefined = opts.sockets
    ? registerWebSockets(app, { routes: opts.sockets.routes, logger, maxBufferedBytes: opts.sockets.maxBufferedBytes, idleTimeoutS: opts.sockets.idleTimeoutS })
    : undefined;

  /**
   * A CORS preflight (Fetch Standard: `OPTIONS` with `Access-Control-Request-Method`) of a public route:
   * 204 with the allow headers for an origin the agent allows, 403 `origin_not_allowed` otherwise. True
   * when the request was one (answered here).
   */
  function preflight(ex: Exchange): boolean {
    if (ex.req.method !== 'OPTIONS' || ex.req.headers['access-control-request-method'] === undefined || !opts.allowedOrigins) return false;
    const found = opts.router.pathRoutes(ex.req.path);
    if (found === undefined || !found.routes.some((r) => r.cors)) return false;
    const methods = found.routes.map((r) => r.method);
    opts.allowedOrigins(found.params.public_key ?? '').then((allowed) => {
      responder.send(ex, { kind: 'empty', status: 204, headers: preflightHeaders(ex.req.headers.origin, allowed, methods) });
    }).catch((err: unknown) => responder.sendError(ex, err));
    return true;
  }

  /**
   * How a streaming response ends, as one object per live stream rather than closures over `stream`'s
   * scope: it finished (SseResponseHooks.onFinished) or its client went away (Exchange.onAbort).
   */
  class StreamEnding implements SseResponseHooks {
    /** Unsubscribes the response from its turn's channel; set once the response is attached. */
    detach: () => void = noDetach;

    constructor(private readonly ex: Exchange, private readonly turnId: string) {}

    onFinished(extra: Record<string, unknown>): void {
      open.delete(this.ex);
      responder.finishLog(this.ex, extra);
    }

    clientGone(): void {
      open.delete(this.ex);
      this.detach();
      responder.finishLog(this.ex, { turn_id: this.turnId, closed: 'client' });
    }
  }

  function stream(ex: Exchange, result: Extract<HttpResult, { kind: 'sse' }>): void {
    if (ex.closed || ex.head) {
      // The turn's own client will not read its events (it went away, or asked for the head alone).
      if (result.from === 'origin') result.channel.releaseOrigin();
      if (ex.head) responder.sendStreamHead(ex, result.channel.turnId); // nothing when it went away
      return;
    }
    const turnId = result.channel.turnId;
    const ending = new StreamEnding(ex, turnId);
    // One cork: the status, the headers and the events the turn already has (at least its `conversation`
    // event, often the first tokens) leave in one write.
    ex.res.cork(() => {
      const sink = openSseResponse(ex, turnId, ending);
      open.add(ex);
      ending.detach = opts.sse.attach(sink, result.channel, result.from, result.framer);
    });
    ex.onAbort = ending;
    releaseRequest(ex.req);
  }

  async function run(ex: Exchange, route: RouteDef, params: Record<string, string>): Promise<void> {
    try {
      const result = await opts.dispatch(ex.req, route, params);
      if (result.kind === 'sse') stream(ex, result);
      else responder.send(ex, result);
    } catch (err) {
      responder.sendError(ex, err);
    }
  }

  app.any('/*', (res, uReq) => {
    const head = readRequestHead(uReq);
    const { method, path, headers } = head;
    const arrivedAt = performance.now();
    const ex: Exchange = {
      res, closed: false, onAbort: undefined, startedAt: arrivedAt, status: 0, head: method === 'HEAD',
      req: {
        method, path, query: new URLSearchParams(head.query), headers, body: null,
        requestId: newId('req'), remoteAddress: textDecoder.decode(res.getRemoteAddressAsText()), arrivedAt,
      },
    };
    res.onAborted(() => {
      const wasOpen = !ex.closed;
      ex.closed = true;
      if (wasOpen) ex.onAbort?.clientGone();
    });

    if (head.problem !== undefined) {
      // Answered before any body byte is read, so the connection cannot be reused.
      responder.sendError(ex, new AppError('malformed_request', head.problem), true);
      return;
    }
    if (preflight(ex)) return;
    const site = opts.sites?.find((s) => s.owns(path));
    if (site !== undefined) {
      // A static site reads no body: a request that may carry one (any method but GET and HEAD, all
      // refused with 405) closes its connection, so the unread bytes are never parsed as a request.
      const unreadBody = method !== 'GET' && method !== 'HEAD';
      try { responder.send(ex, site.answer(method, path, headers), unreadBody); } catch (err) { responder.sendError(ex, err, unreadBody); }
      return;
    }
    const match = opts.router.match(method, path);
    if (!match.ok) {
      if (match.reason === 'method_not_allowed') {
        responder.sendError(ex, new AppError('method_not_allowed', `${method} is not allowed here; allowed: ${match.allow!.join(', ')}.`, { headers: { Allow: match.allow!.join(', ') } }));
      } else {
        responder.sendError(ex, new AppError('not_found', `No route for ${method} ${path}.`));
      }
      return;
    }
    const { route, params } = match;
    if (!route.body) {
      void run(ex, route, params);
      return;
    }
    const limit = route.body === 'raw' ? opts.rawBodyLimitBytes : opts.bodyLimitBytes;
    readBody(res, headers, limit, (outcome) => {
      if (!outcome.ok) {
        responder.sendError(ex, new AppError('body_too_large', `The request body exceeds ${limit} bytes.`), true);
        return;
      }
      ex.req.body = outcome.body;
      void run(ex, route, params);
    });
  });

  const listen = (port: number): Promise<us_listen_socket> => new Promise((resolve, reject) => {
    app.listen(opts.host, port, (token: us_listen_socket | false) => {
      if (!token) reject(new Error(`could not listen on ${opts.host}:${port}`));
      else resolve(token);
    });
  });
  return (async () => {
    const token = await listen(opts.port);
    const port = uws.us_socket_local_port(token);
    let internal: us_listen_socket | undefined;
    if (opts.internalPort !== undefined) {
      try {
        internal = await listen(opts.internalPort);
      } catch (err) {
        uws.us_listen_socket_close(token);
        throw err;
      }
    }
    const internalPort = internal === undefined ? undefined : uws.us_socket_local_port(internal);
    let publicClosed = false;
    let internalClosed = false;
    logger.info({ host: opts.host, port, internal_port: internalPort, uws: implementation }, 'listening');
    return {
      port,
      internalPort,
      implementation,
      stopListening: (which = 'all') => {
        if (!publicClosed) { publicClosed = true; uws.us_listen_socket_close(token); }
        if (which === 'all' && internal !== undefined && !internalClosed) { internalClosed = true; uws.us_listen_socket_close(internal); }
      },
      closeAll: () => {
        for (const ex of open) { ex.closed = true; ex.res.close(); }
        open.clear();
        sockets?.closeAll();
      },
      get sockets() { return sockets?.size ?? 0; },
    };
  })();
}
