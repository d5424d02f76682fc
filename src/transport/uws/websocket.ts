import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t, WebSocket } from 'uWebSockets.js';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import { redactUrl, type Logger } from '../../log/logger.js';
import { MAX_FRAME_BYTES } from '../ws/frames.js';
import type { SocketRouteDef, UpgradeOutcome } from '../ws/routes.js';
import { CLOSE, type SocketPort, type SocketSession } from '../ws/socket.js';
import { readRequestHead } from './request-head.js';
import { NOSNIFF, statusLine } from './responder.js';

/** Settings of the WebSocket endpoints. */
export interface WebSocketOptions {
  routes: SocketRouteDef[];
  logger: Logger;
  /**
   * A socket whose send buffer holds more than this many bytes after a write is closed with 1013 (API.md
   * "WebSockets": a consumer too slow), bytes.
   */
  maxBufferedBytes: number;
  /** Seconds without a frame either way before uWS closes the socket; it pings before that (uWS rounds to 4 s). */
  idleTimeoutS: number;
  /**
   * The client's address from the socket peer and the upgrade's headers (src/net/trusted-proxies.ts:
   * behind a trusted proxy, the address it forwarded); default: the peer.
   */
  clientAddress?: (peer: string, headers: Readonly<Record<string, string>>) => string;
  /** Headers every refused upgrade carries besides its own (`Strict-Transport-Security` on the TLS port). */
  extraHeaders?: ReadonlyArray<readonly [string, string]>;
  /** The open sockets of another app to count and close together with these (a TLS reload's new app). */
  registry?: WebSocketRegistry;
}

/** What uWS keeps per socket (its user data). */
interface SocketData {
  outcome: Exclude<UpgradeOutcome, { kind: 'refuse' }>;
  port: UwsPort | undefined;
  url: string;
  openedAt: number;
  /** The client's address, resolved at the upgrade (WebSocketOptions.clientAddress). */
  clientAddress: string;
}

/** The open sockets, so shutdown can close them. */
export interface WebSocketRegistry {
  /** Sockets open now. */
  readonly size: number;
  /** Closes every open socket with 1001 (going away). */
  closeAll(): void;
}

const textDecoder = new TextDecoder();

/**
 * Frames up to this size reach our handler, which closes those over MAX_FRAME_BYTES (64 KiB) with 1009;
 * uWS itself cuts the connection on a larger one without a close frame (the peer sees 1006), bytes.
 */
const HARD_FRAME_CAP_BYTES = 16 * MAX_FRAME_BYTES;

/**
 * A uWS WebSocket as a SocketPort. Frames queued in one synchronous run are written at the next
 * microtask inside one cork (one syscall). After each write the socket's buffered amount
 * (`ws.getBufferedAmount()`) is checked: past `maxBufferedBytes` (or when uWS dropped a frame at its own
 * `maxBackpressure`, set above our bound) the socket is closed with 1013. The turn and the other
 * subscribers never wait for it.
 */
class UwsPort implements SocketPort {
  closed = false;
  private pending: string[] = [];
  private scheduled = false;

  constructor(
    private readonly ws: WebSocket<SocketData>,
    readonly remoteAddress: string,
    private readonly maxBufferedBytes: number,
    private readonly logger: Logger,
  ) {}

  send(frame: string): void {
    if (this.closed) return;
    this.pending.push(frame);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    const frames = this.pending;
    this.pending = [];
    if (this.closed || frames.length === 0) return;
    let dropped = false;
    this.ws.cork(() => {
      for (const f of frames) if (this.ws.send(f, false) === 2) dropped = true;
    });
    const buffered = this.ws.getBufferedAmount();
    if (dropped || buffered > this.maxBufferedBytes) {
      this.logger.warn({ url: this.ws.getUserData().url, buffered_bytes: buffered, max_buffered_bytes: this.maxBufferedBytes },
        'socket client too slow: closed with 1013 (its turns go on and are stored)');
      this.close(CLOSE.tooSlow, 'consumer_too_slow');
    }
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = [];
    // uWS calls the close handler synchronously from end().
    this.ws.end(code, reason);
  }
}

/**
 * Registers the WebSocket endpoints on `app` (uWS's own WebSocket support: `app.ws` with an upgrade
 * handler). Every uWS quirk of sockets stays here:
 * - the upgrade request dies when the handler returns: the head, the path parameters, the
 *   `Sec-WebSocket-*` headers and the client address are copied synchronously first;
 * - authentication is async, so `res.onAborted` is attached before it and the upgrade itself runs in
 *   `res.cork(() => res.upgrade(...))`, skipped when the client went away meanwhile;
 * - frames over 64 KiB are closed with 1009 here; uWS's `maxPayloadLength` (1 MiB) only bounds what it
 *   buffers (past it uWS cuts the connection without a close frame);
 * - idle sockets: `idleTimeout` with `sendPingsAutomatically`;
 * - binary frames are closed with 1003 (the protocol is JSON text);
 * - a socket is never touched after its close handler ran (`port.closed`).
 */
export function registerWebSockets(app: TemplatedApp, opts: WebSocketOptions): WebSocketRegistry {
  const { logger } = opts;
  const registry = (opts.registry ?? new SocketSet()) as SocketSet;
  const open = registry.open;

  for (const route of opts.routes) {
    const names: string[] = [];
    const pattern = route.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      names.push(name);
      return `:${name}`;
    });

    app.ws<SocketData>(pattern, {
      compression: 0,
      // uWS drops a frame over maxPayloadLength without a close frame (the peer sees 1006), so its cap
      // sits above ours and the message handler closes frames over 64 KiB with 1009 itself.
      maxPayloadLength: HARD_FRAME_CAP_BYTES,
      idleTimeout: opts.idleTimeoutS,
      sendPingsAutomatically: true,
      // Above our own bound, so uWS never drops a frame before the 1013 close.
      maxBackpressure: opts.maxBufferedBytes * 2 + MAX_FRAME_BYTES,
      closeOnBackpressureLimit: 0,

      upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => {
        const head = readRequestHead(req);
        const key = req.getHeader('sec-websocket-key');
        const protocol = req.getHeader('sec-websocket-protocol');
        const extensions = req.getHeader('sec-websocket-extensions');
        const raw = names.map((_n, i) => req.getParameter(i) ?? '');
        const peer = textDecoder.decode(res.getRemoteAddressAsText());
        const remoteAddress = opts.clientAddress === undefined ? peer : opts.clientAddress(peer, head.headers);
        const url = redactUrl(head.path, head.query);
        let aborted = false;
        res.onAborted(() => { aborted = true; });

        const answer = (err: AppError) => {
          if (aborted) return;
          const requestId = newId('req');
          res.cork(() => {
            res.writeStatus(statusLine(err.status));
            res.writeHeader('X-Request-Id', requestId);
            res.writeHeader(NOSNIFF[0], NOSNIFF[1]);
            if (opts.extraHeaders !== undefined) for (const [k, v] of opts.extraHeaders) res.writeHeader(k, v);
            for (const [k, v] of Object.entries(err.headers ?? {})) res.writeHeader(k, v);
            res.writeHeader('Content-Type', 'application/json');
            res.end(JSON.stringify({ error: err.toBody(requestId) }), true);
          });
          logger.info({ request_id: requestId, url, status: err.status, code: err.code }, 'socket upgrade refused');
        };

        if (head.problem !== undefined) return answer(new AppError('malformed_request', head.problem));
        const params: Record<string, string> = {};
        try {
          names.forEach((n, i) => { params[n] = decodeURIComponent(raw[i]!); });
        } catch {
          return answer(new AppError('not_found', 'Malformed path.'));
        }
        route.accept({ params, query: new URLSearchParams(head.query), headers: head.headers, remoteAddress }).then((outcome) => {
          if (aborted) return;
          if (outcome.kind === 'refuse') return answer(outcome.error);
          const data: SocketData = { outcome, port: undefined, url, openedAt: performance.now(), clientAddress: remoteAddress };
          res.cork(() => res.upgrade<SocketData>(data, key, protocol, extensions, context));
        }, (err: unknown) => {
          logger.error({ err, url }, 'socket upgrade failed');
          answer(new AppError('internal_error', 'The socket could not be opened.'));
        });
      },

      open: (ws: WebSocket<SocketData>) => {
        const data = ws.getUserData();
        open.add(ws);
        // No closure per socket: the port logs through the shared logger (idle sockets' memory counts).
        const port = new UwsPort(ws, data.clientAddress, opts.maxBufferedBytes, logger);
        data.port = port;
        if (data.outcome.kind === 'close') {
          port.close(data.outcome.code, data.outcome.reason);
          return;
        }
        data.outcome.session.open(port);
      },

      message: (ws: WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean) => {
        const data = ws.getUserData();
        if (data.port === undefined || data.port.closed || data.outcome.kind !== 'open') return;
        if (isBinary) {
          data.port.close(CLOSE.unsupportedData, 'text_frames_only');
          return;
        }
        if (message.byteLength > MAX_FRAME_BYTES) {
          data.port.close(CLOSE.tooBig, 'frame_too_large');
          return;
        }
        // The ArrayBuffer is only valid during this callback: decode (copy) it now.
        const text = textDecoder.decode(message);
        try {
          data.outcome.session.message(text);
        } catch (err) {
          logger.error({ err, url: data.url }, 'socket frame handler failed');
          data.port.close(CLOSE.internal, 'internal_error');
        }
      },

      close: (ws: WebSocket<SocketData>, code: number) => {
        open.delete(ws);
        const data = ws.getUserData();
        if (data.port !== undefined) data.port.closed = true;
        const session: SocketSession | undefined = data.outcome.kind === 'open' ? data.outcome.session : undefined;
        session?.closed();
        logger.info({ url: data.url, client_address: data.clientAddress, code, duration_ms: Math.round(performance.now() - data.openedAt) }, 'socket closed');
      },
    });
  }

  return registry;
}

/** The open sockets of one or more apps (registerWebSockets). */
class SocketSet implements WebSocketRegistry {
  readonly open = new Set<WebSocket<SocketData>>();

  get size(): number {
    return this.open.size;
  }

  closeAll(): void {
    for (const ws of [...this.open]) {
      const port = ws.getUserData().port;
      if (port !== undefined) port.close(CLOSE.goingAway, 'shutting_down');
      else ws.end(CLOSE.goingAway, 'shutting_down');
    }
  }
}
