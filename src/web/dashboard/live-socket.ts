/**
 * A WebSocket to Parley that stays open (API.md "WebSockets"): each connection is opened with a fresh
 * single-use socket ticket (`POST /v1/auth/ws-ticket`, API.md "Credentials"), so that no long-lived
 * token goes into a URL; a connection that drops is opened again after a backoff of 1 s, 2 s, 4 s ...
 * up to 30 s, each with up to a third of random jitter, so that many consoles do not all come back at
 * once after a restart. A connection that stayed up for 10 s resets the backoff.
 *
 * The server's close codes decide what happens next: 4403 (forbidden) and 4404 (not found) stop for
 * good; anything else (1001 going away on a restart, 1006 a lost network, 4401 a spent ticket) retries.
 * A sign-in that ended (the ticket request answers 401) stops too: the dashboard shows the sign-in page.
 */
import { ApiError, type Frame } from './api.js';
import type { Session } from './session.js';

/** Where a live socket stands, for the page to show. */
export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'stopped';

export interface LiveSocketOptions {
  session: Session;
  /** The socket's path and query without the credential, e.g. `/v1/inbox/ws?org_id=org_...`; asked at every connect. */
  path: () => string;
  /** Each frame received, parsed. */
  onFrame: (frame: Frame) => void;
  /** Each change of state; `reason` says why it stopped or retries. */
  onState: (state: LiveState, reason: string | null) => void;
  /** Called when a connection opens: `again` is false the first time, true after a drop (catch up then). */
  onOpen?: (again: boolean) => void;
}

/** First retry delay, ms. */
const FIRST_DELAY_MS = 1_000;
/** Longest retry delay, ms. */
const MAX_DELAY_MS = 30_000;
/** A connection open this long resets the backoff, ms. */
const STABLE_MS = 10_000;
/** An application ping every this often keeps proxies from closing an idle socket, ms. */
const PING_MS = 25_000;

/** The delay before retry number `attempt` (0-based), ms: doubling from 1 s, capped at 30 s, plus up to a third of jitter. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(attempt, 10));
  return Math.round(base * (1 + random() / 3));
}

/** See the file's comment. `start()` once; `stop()` when the page goes away. */
export class LiveSocket {
  private ws: WebSocket | null = null;
  private stopped = false;
  private attempt = 0;
  private opens = 0;
  private openedAt = 0;
  private retryTimer: number | undefined;
  private pingTimer: number | undefined;

  constructor(private readonly opts: LiveSocketOptions) {}

  start(): void {
    this.opts.onState('connecting', null);
    void this.connect();
  }

  /** Closes for good (1000); no more retries. */
  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.retryTimer);
    window.clearInterval(this.pingTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws !== null && ws.readyState <= WebSocket.OPEN) ws.close(1000, 'done');
  }

  /** Sends `frame` as JSON; false when the socket is not open. */
  send(frame: Frame): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  private async connect(): Promise<void> {
    let ticket: string;
    try {
      ticket = (await this.opts.session.request<{ ticket: string }>('POST', '/v1/auth/ws-ticket')).ticket;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return this.end(err.message);
      return this.retry('Could not reach Parley.');
    }
    if (this.stopped) return;
    const path = this.opts.path();
    const url = `${location.origin.replace(/^http/, 'ws')}${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(ticket)}`;
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.openedAt = Date.now();
      this.opts.onState('live', null);
      this.opts.onOpen?.(this.opens++ > 0);
      window.clearInterval(this.pingTimer);
      this.pingTimer = window.setInterval(() => this.send({ type: 'ping' }), PING_MS);
    };
    ws.onmessage = (e) => {
      if (this.ws !== ws || typeof e.data !== 'string') return;
      let frame: Frame;
      try { frame = JSON.parse(e.data) as Frame; } catch { return; }
      if (frame.type !== 'pong') this.opts.onFrame(frame);
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      window.clearInterval(this.pingTimer);
      if (this.openedAt !== 0 && Date.now() - this.openedAt >= STABLE_MS) this.attempt = 0;
      this.openedAt = 0;
      if (e.code === 4403) return this.end('You may not watch this.');
      if (e.code === 4404) return this.end('Not found: it may have been deleted.');
      this.retry(e.code === 1001 ? 'Parley is restarting.' : 'The connection dropped.');
    };
  }

  private retry(reason: string): void {
    if (this.stopped) return;
    this.opts.onState('reconnecting', reason);
    window.clearTimeout(this.retryTimer);
    this.retryTimer = window.setTimeout(() => { void this.connect(); }, backoffMs(this.attempt++));
  }

  private end(reason: string): void {
    this.stopped = true;
    this.opts.onState('stopped', reason);
  }
}
