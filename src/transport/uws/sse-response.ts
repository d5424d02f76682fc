import type { SseSink } from '../sse/sse-writer.js';
import type { Exchange } from './exchange.js';
import { sseHeaders } from './responder.js';

/** What the SSE response reports back to the server when it finishes. */
export interface SseResponseHooks {
  /** The response is over (ended, or aborted by the server); `extra` goes to the log line. */
  onFinished(extra: Record<string, unknown>): void;
}

/**
 * An SSE comment line (WHATWG HTML "Server-sent events": a line starting with `:` is ignored),
 * written only to make uWS drain what it holds; see `onWritable` below.
 */
const DRAIN_NUDGE = ':\n';

/**
 * Starts a `text/event-stream` response on `ex` (status 200, `X-Request-Id`, no caching, no proxy
 * buffering) and returns the SseSink that writes to it.
 *
 * Backpressure, and why it is done here rather than left to uWS (facts of the uWS build we ship,
 * checked against its sources and by experiment):
 * - `res.write()` returns false when the kernel did not take the whole chunk; uWS then keeps the rest
 *   in a per-socket buffer that it does not let us measure (`getWriteOffset()` only advances with
 *   `tryEnd`/`end`, never with `write`: it stays 0 for a whole stream).
 * - Once an `onWritable` handler is registered, uWS calls it when the socket drains and then does not
 *   drain its own buffer: it drains only inside a later `write`. A handler that writes nothing leaves
 *   the tail of the stream stuck until the next event.
 *
 * So after a write that returns false, later chunks wait in a queue here (counted exactly, bytes)
 * and go out from `onWritable`, which always writes something (the queued chunks, or the 2-byte
 * comment `:\n`) so uWS flushes. What uWS holds is then at most the chunk whose write failed.
 * `bufferedBytes()` = queued bytes + the size of that chunk; it can under-count by at most one uWS
 * cork buffer (16 KiB), when a corked write reported success and the flush at uncork fell short.
 */
export function openSseResponse(ex: Exchange, turnId: string, hooks: SseResponseHooks): SseSink {
  return new SseResponse(ex, turnId, hooks);
}

/**
 * The SseSink of one uWS response (see {@link openSseResponse}). A class, not closures: a live stream
 * holds one object and one bound function (the corked write) instead of seven closures and their
 * context, and a token's write allocates no closure for `res.cork`.
 */
class SseResponse implements SseSink {
  private readonly res: Exchange['res'];
  /** Chunks handed to us while the socket was backpressured, oldest first, from `head` on. */
  private queue: string[] = [];
  private head = 0;
  private queuedBytes = 0;
  /** Size of the last chunk uWS did not fully send (an upper bound of what uWS holds), bytes; 0 after a success. */
  private heldByUws = 0;
  /** A write failed and `onWritable` has not yet flushed everything behind it. */
  private backpressured = false;
  private writableHooked = false;
  /** The chunk `corkedWrite` writes, and what uWS answered. */
  private chunk = '';
  private wroteAll = true;
  private readonly corkedWrite: () => void;

  constructor(private readonly ex: Exchange, private readonly turnId: string, private readonly hooks: SseResponseHooks) {
    const res = ex.res;
    this.res = res;
    ex.status = 200;
    this.corkedWrite = () => { this.wroteAll = res.write(this.chunk); };
    res.cork(() => {
      res.writeStatus('200 OK');
      for (const [k, v] of sseHeaders(ex.req.requestId)) res.writeHeader(k, v);
      if (ex.req.responseHeaders !== undefined) for (const [k, v] of Object.entries(ex.req.responseHeaders)) res.writeHeader(k, v);
    });
  }

  /** One corked `res.write`; true when uWS sent it all (and everything it held before). */
  private writeNow(chunk: string): boolean {
    this.chunk = chunk;
    this.wroteAll = true;
    this.res.cork(this.corkedWrite);
    this.chunk = '';
    const ok = this.wroteAll;
    this.heldByUws = ok ? 0 : Buffer.byteLength(chunk);
    return ok;
  }

  private onWritable(): boolean {
    if (this.ex.closed) return true;
    let wrote = false;
    while (this.head < this.queue.length) {
      const chunk = this.queue[this.head]!;
      this.queue[this.head++] = '';
      this.queuedBytes -= Buffer.byteLength(chunk);
      wrote = true;
      if (!this.writeNow(chunk)) {
        if (this.head > 1024 && this.head * 2 > this.queue.length) { this.queue = this.queue.slice(this.head); this.head = 0; }
        return true;
      }
    }
    this.queue = [];
    this.head = 0;
    this.backpressured = false;
    // Nothing was queued, but uWS may still hold the tail of the last chunk: make it flush.
    if (!wrote && !this.writeNow(DRAIN_NUDGE)) this.backpressured = true;
    return true;
  }

  /** Call with `ex.closed` already set (uWS fires onAborted synchronously inside `res.close()`). */
  private finish(extra: Record<string, unknown>): void {
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.heldByUws = 0;
    this.hooks.onFinished(extra);
  }

  write(chunk: string): void {
    if (this.ex.closed || chunk.length === 0) return;
    if (this.backpressured) {
      this.queue.push(chunk);
      this.queuedBytes += Buffer.byteLength(chunk);
      return;
    }
    if (this.writeNow(chunk)) return;
    this.backpressured = true;
    if (!this.writableHooked) {
      this.writableHooked = true;
      this.res.onWritable(() => this.onWritable());
    }
  }

  end(): void {
    if (this.ex.closed) return;
    // What is still queued goes to uWS now: after `end` uWS drains by itself (it drops our
    // onWritable handler when the response completes) and closes an idle socket on its timeout.
    const rest = this.head < this.queue.length ? this.queue.slice(this.head).join('') : '';
    this.ex.closed = true;
    const res = this.res;
    res.cork(() => {
      if (rest.length > 0) res.write(rest);
      res.end();
    });
    this.finish({ turn_id: this.turnId });
  }

  bufferedBytes(): number {
    return this.queuedBytes + this.heldByUws;
  }

  abort(): void {
    if (this.ex.closed) return;
    this.ex.closed = true;
    this.res.close();
    this.finish({ turn_id: this.turnId, closed: 'slow_consumer' });
  }
}
