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
 * uWS hands `onData` an ArrayBuffer that is only valid during the callback, so each chunk is copied, and
 * only once: with a declared Content-Length straight into a buffer of that size allocated at the first
 * chunk (its own ArrayBuffer, never a pooled slice, so a document upload can be moved on to the store's
 * writer thread without a copy); a chunked body collects its chunks and joins them at the end. No step
 * copies a whole body at once on the event loop (50 parallel 9 MB uploads once stalled it for 1.3 s).
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
  const length = declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : undefined;
  let whole: Buffer | undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  res.onData((chunk, isLast) => {
    if (finished) return;
    const bytes = new Uint8Array(chunk);
    if (size + bytes.byteLength > limitBytes) {
      finished = true;
      done({ ok: false, reason: 'too_large' });
      return;
    }
    if (length !== undefined && size + bytes.byteLength <= length) {
      whole ??= Buffer.allocUnsafeSlow(length);
      whole.set(bytes, size);
    } else {
      chunks.push(Buffer.copyBytesFrom(bytes));
    }
    size += bytes.byteLength;
    if (isLast) {
      finished = true;
      done({ ok: true, body: bodyOf(whole, chunks, size) });
    }
  });
}

/** The body read: the preallocated buffer (cut to the bytes that came), the joined chunks, or both joined. */
function bodyOf(whole: Buffer | undefined, chunks: Buffer[], size: number): Buffer {
  if (whole !== undefined && chunks.length === 0) return size === whole.byteLength ? whole : whole.subarray(0, size);
  const parts = whole !== undefined ? [whole.subarray(0, size - chunks.reduce((n, c) => n + c.byteLength, 0)), ...chunks] : chunks;
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
}
