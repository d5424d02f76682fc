/**
 * Authentication of the requests Parley processes send each other (DESIGN.md "Several processes":
 * forwarding is authenticated between the processes, and no client can forge it).
 *
 * Every internal request carries `X-Parley-Internal: v1,<process id>,<unix ms>,<signature>`, where the
 * signature is the hex HMAC-SHA256 (RFC 2104) of `<unix ms>\n<method>\n<path with query>\n<hex SHA-256 of
 * the body>` keyed with the cluster secret, which only the processes know (it lives in the store and is
 * never shown by the API). A request is accepted when its signature matches (compared in constant time)
 * and its time is within {@link MAX_SKEW_MS} of the receiver's clock, so a captured header is useless to
 * anyone but for that window, on that path, with that body.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** The header that carries the signature. */
export const INTERNAL_HEADER = 'x-parley-internal';
/** Accepted clock difference between sender and receiver, ms. */
export const MAX_SKEW_MS = 30_000;

const EMPTY_BODY_SHA256 = createHash('sha256').update('').digest('hex');

function signature(secret: string, at: number, method: string, path: string, body: string | Uint8Array | null): string {
  const bodyHash = body === null || body.length === 0 ? EMPTY_BODY_SHA256 : createHash('sha256').update(body).digest('hex');
  return createHmac('sha256', secret).update(`${at}\n${method.toUpperCase()}\n${path}\n${bodyHash}`).digest('hex');
}

/**
 * The header value for a request from process `processId` (`method`, `path` with its query string, the
 * exact `body` bytes or text), signed at `at` (ms since the epoch).
 */
export function signInternal(secret: string, processId: string, method: string, path: string, body: string | Uint8Array | null, at = Date.now()): string {
  return `v1,${processId},${at},${signature(secret, at, method, path, body)}`;
}

/**
 * The sending process's id when `header` is a valid signature of this request at `now` (ms), else
 * undefined: a malformed header, another version, a time more than MAX_SKEW_MS away, or a signature that
 * does not match.
 */
export function verifyInternal(secret: string, header: string | undefined, method: string, path: string, body: string | Uint8Array | null, now = Date.now()): string | undefined {
  if (header === undefined) return undefined;
  const parts = header.split(',');
  if (parts.length !== 4 || parts[0] !== 'v1') return undefined;
  const [, processId, atText, given] = parts as [string, string, string, string];
  if (!/^\d{1,15}$/.test(atText) || !/^[0-9a-f]{64}$/.test(given) || processId === '') return undefined;
  const at = Number(atText);
  if (Math.abs(now - at) > MAX_SKEW_MS) return undefined;
  const expected = signature(secret, at, method, path, body);
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(given, 'hex')) ? processId : undefined;
}
