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
  const res = ex.res;
  ex.status = 200;
  /** Chunks handed to us while the socket was backpressured, oldest first, from `head` on. */
  let queue: string[] = [];
  let head = 0;
  let queuedBytes = 0;
  /** Size of the last chunk uWS did not fully send (an upper bound of what uWS holds), bytes; 0 after a success. */
  let heldByUws = 0;
  /** A write failed and `onWritable` has not yet flushed everything behind it. */
  let backpressured = false;
  let writableHooked = false;

  res.cork(() => {
    res.writeStatus('200 OK');
    for (const [k, v] of sseHeaders(ex.req.requestId)) res.writeHeader(k, v);
    if (ex.req.responseHeaders !== undefined) for (const [k, v] of Object.entries(ex.req.responseHeaders)) res.writeHeader(k, v);
  });

  /** One corked `res.write`; true when uWS sent it all (and everything it held before). */
  const writeNow = (chunk: string): boolean => {
    let ok = true;
    res.cork(() => { ok = res.write(chunk); });
    heldByUws = ok ? 0 : Buffer.byteLength(chunk);
    return ok;
  };

  const onWritable = (): boolean => {
    if (ex.closed) return true;
    let wrote = false;
    while (head < queue.length) {
      const chunk = queue[head]!;
      queue[head++] = '';
      queuedBytes -= Buffer.byteLength(chunk);
      wrote = true;
      if (!writeNow(chunk)) {
        if (head > 1024 && head * 2 > queue.length) { queue = queue.slice(head); head = 0; }
        return true;
      }
    }
    queue = [];
    head = 0;
    backpressured = false;
    // Nothing was queued, but uWS may still hold the tail of the last chunk: make it flush.
    if (!wrote && !writeNow(DRAIN_NUDGE)) backpressured = true;
    return true;
  };

  /** Call with `ex.closed` already set (uWS fires onAborted synchronously inside `res.close()`). */
  const finish = (extra: Record<string, unknown>): void => {
    queue = [];
    head = 0;
    queuedBytes = 0;
    heldByUws = 0;
    hooks.onFinished(extra);
  };

  return {
    write(chunk) {
      if (ex.closed || chunk.length === 0) return;
      if (backpressured) {
        queue.push(chunk);
        queuedBytes += Buffer.byteLength(chunk);
        return;
      }
      if (writeNow(chunk)) return;
      backpressured = true;
      if (!writableHooked) {
        writableHooked = true;
        res.onWritable(onWritable);
      }
    },
    end() {
      if (ex.closed) return;
      // What is still queued goes to uWS now: after `end` uWS drains by itself (it drops our
      // onWritable handler when the response completes) and closes an idle socket on its timeout.
      const rest = head < queue.length ? queue.slice(head).join('') : '';
      ex.closed = true;
      res.cork(() => {
        if (rest.length > 0) res.write(rest);
        res.end();
      });
      finish({ turn_id: turnId });
    },
    bufferedBytes: () => queuedBytes + heldByUws,
    abort() {
      if (ex.closed) return;
      ex.closed = true;
      res.close();
      finish({ turn_id: turnId, closed: 'slow_consumer' });
    },
  };
}
