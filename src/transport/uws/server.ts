import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { HttpRequest as UwsRequest, HttpResponse as UwsResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
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
  /**
   * HTTPS and WSS on `port` (PEM files), through uWS's SSLApp; every response there carries
   * {@link HSTS}. The internal port stays plain HTTP and then serves only what neighbours use (see
   * UwsServer.internalPort). Undefined: plain HTTP everywhere.
   */
  tls?: { certFile: string; keyFile: string } | undefined;
  /**
   * The client's address of a request from its socket peer and headers (src/net/trusted-proxies.ts);
   * default: the socket peer. Feeds `HttpRequest.remoteAddress`, the sockets' address and the log lines.
   */
  clientAddress?: (peer: string, headers: Readonly<Record<string, string>>) => string;
}

/**
 * `Strict-Transport-Security` (RFC 6797) on every response of the TLS port: browsers use HTTPS for this
 * host for a year. No `includeSubDomains`: Parley cannot know the operator's other hosts.
 */
export const HSTS: Readonly<Record<string, string>> = Object.freeze({ 'Strict-Transport-Security': 'max-age=31536000' });
const HSTS_PAIRS: ReadonlyArray<readonly [string, string]> = Object.freeze(Object.entries(HSTS));

/** Paths the internal port serves when the public port speaks TLS: the neighbours' routes and the probes. */
const NEIGHBOUR_PATHS = /^\/(internal\/|healthz$|readyz$)/;

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
  /**
   * The bound internal port (UwsServerOptions.internalPort), when there is one. It is plain HTTP; with TLS
   * on the public port it answers only `/internal/...` (signed requests of neighbours), `/healthz` and
   * `/readyz` (404 for anything else), so no credential of a client travels over it in clear.
   */
  internalPort: number | undefined;
  /** Whether the public port speaks TLS (HTTPS, WSS). */
  tls: boolean;
  /**
   * Reads the certificate and key files again and serves new connections with them, without dropping any
   * open one (docs/operations.md "Reload the certificate"): a new SSLApp with the same routes listens on the
   * same port (SO_REUSEPORT), then the old listening socket closes; connections opened before keep the old
   * certificate until they close. Throws, keeping the current certificate, when the files do not load
   * (an Error naming the file and the cause) or the port cannot be bound again; a no-op without TLS.
   */
  reloadTls(): Promise<void>;
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
  const { logger } = opts;
  const responder = new Responder(logger, opts.metrics);
  /** Responses still open (streams), so shutdown can close them. */
  const open = new Set<Exchange>();
  /** The open sockets of every app (a TLS reload adds one). */
  let sockets: WebSocketRegistry | undefined;

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

  /**
   * One HTTP request of any app: `secure` (the TLS port: every response carries HSTS), `neighboursOnly`
   * (the plain internal port beside a TLS public port: NEIGHBOUR_PATHS only).
   */
  function request(res: UwsResponse, uReq: UwsRequest, secure: boolean, neighboursOnly: boolean): void {
    const head = readRequestHead(uReq);
    const { method, path, headers } = head;
    const arrivedAt = performance.now();
    const peer = textDecoder.decode(res.getRemoteAddressAsText());
    const ex: Exchange = {
      res, closed: false, onAbort: undefined, startedAt: arrivedAt, status: 0, head: method === 'HEAD',
      req: {
        method, path, query: new URLSearchParams(head.query), headers, body: null,
        requestId: newId('req'), remoteAddress: opts.clientAddress === undefined ? peer : opts.clientAddress(peer, headers),
        arrivedAt, responseHeaders: secure ? HSTS : undefined,
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
    if (neighboursOnly && !NEIGHBOUR_PATHS.test(path)) {
      responder.sendError(ex, new AppError('not_found', 'This port serves Parley\'s neighbours only; use the HTTPS port.'), method !== 'GET' && method !== 'HEAD');
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
  }

  /**
   * A new app with every route: the public one (an SSLApp with TLS: throws when its files do not load), or
   * the plain internal one beside a TLS public port (`neighbours`: no sockets, NEIGHBOUR_PATHS only).
   */
  function createApp(kind: 'public' | 'neighbours'): TemplatedApp {
    const secure = kind === 'public' && opts.tls !== undefined;
    if (secure) checkTlsFiles(opts.tls!);
    const app = secure ? uws.SSLApp({ cert_file_name: opts.tls!.certFile, key_file_name: opts.tls!.keyFile }) : uws.App();
    // Socket routes first: uWS hands a non-upgrade GET on them on to the catch-all below (404).
    if (opts.sockets !== undefined && kind === 'public') {
      sockets = registerWebSockets(app, {
        routes: opts.sockets.routes, logger, maxBufferedBytes: opts.sockets.maxBufferedBytes, idleTimeoutS: opts.sockets.idleTimeoutS,
        clientAddress: opts.clientAddress, extraHeaders: secure ? HSTS_PAIRS : undefined, registry: sockets,
      });
    }
    const neighboursOnly = kind === 'neighbours';
    app.any('/*', (res, uReq) => request(res, uReq, secure, neighboursOnly));
    return app;
  }

  const listen = (app: TemplatedApp, port: number): Promise<us_listen_socket> => new Promise((resolve, reject) => {
    app.listen(opts.host, port, (token: us_listen_socket | false) => {
      if (!token) reject(new Error(`could not listen on ${opts.host}:${port}`));
      else resolve(token);
    });
  });
  return (async () => {
    const app = createApp('public');
    let token = await listen(app, opts.port);
    const port = uws.us_socket_local_port(token);
    let internal: us_listen_socket | undefined;
    if (opts.internalPort !== undefined) {
      try {
        internal = await listen(opts.tls === undefined ? app : createApp('neighbours'), opts.internalPort);
      } catch (err) {
        uws.us_listen_socket_close(token);
        throw err;
      }
    }
    const internalPort = internal === undefined ? undefined : uws.us_socket_local_port(internal);
    let publicClosed = false;
    let internalClosed = false;
    const scheme = opts.tls === undefined ? 'http' : 'https';
    logger.info({ host: opts.host, port, tls: opts.tls !== undefined, internal_port: internalPort, uws: implementation },
      `listening on ${scheme}://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`
      + `${opts.host === '0.0.0.0' || opts.host === '::' ? ' (every network interface)' : ''}`
      + `, TLS ${opts.tls === undefined ? 'off (plain HTTP)' : 'on (HTTPS and WSS)'}`
      + (internalPort === undefined ? '' : `; neighbours on plain http port ${internalPort}`));
    let reloading: Promise<void> | undefined;
    const reload = async (): Promise<void> => {
      // uSockets shares a port between listening sockets (SO_REUSEPORT) only when the port was named: one
      // bound as port 0 cannot take a second listener, and closing it first would refuse connections.
      if (opts.port === 0) throw new Error('TLS: a reload needs a fixed PARLEY_PORT (this server took any free port, 0)');
      const next = createApp('public');
      if (publicClosed) return;
      const nextToken = await listen(next, port);
      if (publicClosed) {
        uws.us_listen_socket_close(nextToken);
        return;
      }
      uws.us_listen_socket_close(token);
      token = nextToken;
      logger.info({ cert_file: opts.tls!.certFile }, 'TLS certificate reloaded: new connections use it, open ones keep theirs');
    };
    return {
      port,
      internalPort,
      implementation,
      tls: opts.tls !== undefined,
      reloadTls: () => {
        if (opts.tls === undefined) return Promise.resolve();
        // One reload at a time: two SIGHUPs in a row do not leave an extra listening socket behind.
        reloading = (reloading ?? Promise.resolve()).then(reload, reload);
        return reloading;
      },
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

/**
 * Loads the PEM certificate chain and private key with node:tls first, for an error that says what is
 * wrong (uWS's own is "App construction failed" whatever the cause): a missing or unreadable file, a
 * file that is not PEM, or a key that does not match the certificate. Throws an Error.
 */
function checkTlsFiles(tls: { certFile: string; keyFile: string }): void {
  let cert: Buffer;
  let key: Buffer;
  try {
    cert = readFileSync(tls.certFile);
  } catch (err) {
    throw new Error(`TLS: cannot read the certificate file ${tls.certFile} (PARLEY_TLS_CERT_FILE): ${(err as Error).message}`);
  }
  try {
    key = readFileSync(tls.keyFile);
  } catch (err) {
    throw new Error(`TLS: cannot read the key file ${tls.keyFile} (PARLEY_TLS_KEY_FILE): ${(err as Error).message}`);
  }
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new Error(`TLS: ${tls.certFile} and ${tls.keyFile} are not a PEM certificate and its private key: ${(err as Error).message}`);
  }
}
