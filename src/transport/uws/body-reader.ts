import type { HttpResponse } from 'uWebSockets.js';

/** How a body read ended: the whole body (null when the request has none), or refused past the cap. */
export type BodyOutcome = { ok: true; body: Buffer | null } | { ok: false; reason: 'too_large' };

/**
 * Reads a request body under `limitBytes` and calls `done` once.
 *
 * - No body (`Content-Length: 0`, or neither Content-Length nor Transfer-Encoding, RFC 9112 6.3):
 *   `done({ok: true, body: null})` at once, without touching the socket.
 * - A declared `Content-Length` over the cap: `done({ok: false})` at once, before any body byte is
 *   read (the caller answers 413 and closes the connection).
 * - Otherwise the body is streamed with `res.onData` (chunked bodies included); the running size is
 *   checked on every chunk, so a body that grows past the cap is refused as soon as it does and the
 *   rest is never buffered.
 *
 * uWS hands `onData` an ArrayBuffer that is only valid during the callback, so each chunk is copied.
 * The caller must have attached `res.onAborted` before calling this (uWS requirement for async work);
 * after an abort uWS stops calling `onData`, so `done` is then never called.
 *
 * @param headers lower-cased request headers (`content-length`, `transfer-encoding` are read).
 * @param limitBytes the route's body cap, bytes.
 */
export function readBody(res: HttpResponse, headers: Record<string, string>, limitBytes: number, done: (outcome: BodyOutcome) => void): void {
  const declared = headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
    done({ ok: false, reason: 'too_large' });
    return;
  }
  if (declared === '0' || (declared === undefined && headers['transfer-encoding'] === undefined)) {
    done({ ok: true, body: null });
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  res.onData((chunk, isLast) => {
    if (finished) return;
    size += chunk.byteLength;
    if (size > limitBytes) {
      finished = true;
      done({ ok: false, reason: 'too_large' });
      return;
    }
    chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)));
    if (isLast) {
      finished = true;
      done({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    }
  });
}
