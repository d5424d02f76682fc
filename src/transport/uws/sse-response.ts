import type { SseSink } from '../sse/sse-writer.js';
import type { Exchange } from './exchange.js';

/** What the SSE response reports back to the server when it finishes. */
export interface SseResponseHooks {
  /** The response is over (ended, aborted by the server, or the client left); `extra` goes to the log line. */
  onFinished(extra: Record<string, unknown>): void;
}

/**
 * Starts a `text/event-stream` response on `ex` (status 200, `X-Request-Id`, no caching, no proxy
 * buffering) and returns the SseSink that writes to it. Writes are corked.
 */
export function openSseResponse(ex: Exchange, turnId: string, hooks: SseResponseHooks): SseSink {
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
  return {
    write(chunk) {
      if (ex.closed) return true;
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
      if (ex.closed) return;
      ex.closed = true;
      res.cork(() => res.end());
      hooks.onFinished({ turn_id: turnId });
    },
    bufferedBytes: () => backlog,
    abort() {
      if (ex.closed) return;
      ex.closed = true;
      res.close();
      hooks.onFinished({ turn_id: turnId, closed: 'slow_consumer' });
    },
  };
}
