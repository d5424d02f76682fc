/**
 * What the socket handlers (src/transport/ws/) see of a WebSocket: no uWS types (those stay in
 * src/transport/uws/), so the handlers are plain objects fed with text frames.
 */
import { toAppError } from '../../errors/app-error.js';

/** One open WebSocket, as the handlers use it. */
export interface SocketPort {
  /**
   * Queues a text frame. Frames queued in one synchronous run leave together (one cork, one syscall) at
   * the next microtask; after that write, a socket whose send buffer passed the bound is closed with
   * 1013. A frame for a closed socket is dropped.
   */
  send(frame: string): void;
  /** Closes the socket with `code` and `reason` (at most 123 bytes, RFC 6455 section 5.5.1); idempotent. */
  close(code: number, reason: string): void;
  /** True once the socket closed (either side). */
  readonly closed: boolean;
  /** The client's address as text (rate limits). */
  readonly remoteAddress: string;
}

/** A socket's handler, created when the upgrade was accepted. */
export interface SocketSession {
  /** The socket is open: frames may be sent from now on. */
  open(port: SocketPort): void;
  /** A text frame from the client (already checked to be at most MAX_FRAME_BYTES). */
  message(text: string): void;
  /** The socket closed (either side); release every subscription. Called once. */
  closed(): void;
}

/**
 * Close codes (API.md "WebSockets"; 4000-4999 are for applications, RFC 6455 section 7.4.2, and mirror
 * the HTTP statuses; the others are RFC 6455 section 7.4.1 codes).
 */
export const CLOSE = {
  /** The server is shutting down (RFC 6455: going away). */
  goingAway: 1001,
  /** A binary frame on a JSON text protocol (RFC 6455: unsupported data). */
  unsupportedData: 1003,
  /** A frame that breaks the protocol in a way the socket cannot go on from (RFC 6455: policy violation). */
  policy: 1008,
  /** A frame over 64 KiB (RFC 6455: message too big). */
  tooBig: 1009,
  /** A server failure (RFC 6455: internal error). */
  internal: 1011,
  /** The client reads too slowly: its send buffer passed the bound (RFC 6455: try again later). */
  tooSlow: 1013,
  /** No valid credential, or it was revoked since (logout). */
  unauthenticated: 4401,
  /** A credential that may not do this (a role, an API key where a person is needed). */
  forbidden: 4403,
  /** The agent, conversation or public key does not exist (or no longer: unpublished). */
  notFound: 4404,
  /** The listen-only socket's `auth` frame did not come within 5 s. */
  authTimeout: 4408,
} as const;

/**
 * The close code for a failure while opening a socket or authenticating on it: 401 -> 4401, 403 -> 4403,
 * 404 -> 4404, 429 -> 1013, another 4xx -> 1008, else 1011. The reason is the error code.
 */
export function closeFor(err: unknown): { code: number; reason: string } {
  const e = toAppError(err);
  const code = e.status === 401 ? CLOSE.unauthenticated
    : e.status === 403 ? CLOSE.forbidden
      : e.status === 404 ? CLOSE.notFound
        : e.status === 429 ? CLOSE.tooSlow
          : e.status < 500 ? CLOSE.policy : CLOSE.internal;
  return { code, reason: e.code };
}
