import type { HttpRequest as UwsRequest } from 'uWebSockets.js';

/** What the transport keeps of a request line and header section, copied out of uWS. */
export interface RequestHead {
  /** Upper-cased (`GET`, `HEAD`, ...). */
  method: string;
  /** Path without the query string, as sent (not decoded). */
  path: string;
  /** The raw query string, without `?` (`''` when none). */
  query: string;
  /**
   * Lower-cased names; for a name sent more than once, the last value (see `problem` for the ones refused),
   * except the proxy chains `x-forwarded-for` and `forwarded`, whose lines are joined with `, ` in order.
   */
  headers: Record<string, string>;
  /** Why the header section is refused (400 malformed_request), or undefined. */
  problem: string | undefined;
}

/**
 * Copies the request head out of a uWS request object, which dies when the route callback returns,
 * so this must run synchronously at the start of that callback.
 *
 * uWS's `req.forEach` reports every header line on its own, duplicates included (names lower-cased),
 * while `req.getHeader` returns only the first one; a plain map would keep the last. Fields that may
 * appear once are checked here:
 * - `Authorization` twice (even with the same value): which credential counts would be the parser's
 *   guess (RFC 9110 section 5.3: only list-valued fields may repeat; API.md "Conventions": refused).
 * - `Content-Length` with different values: a request-smuggling vector (RFC 9112 section 6.3).
 * - `Content-Type` with different values: the body's media type is ambiguous (RFC 9110 section 8.3).
 *
 * `X-Forwarded-For` and `Forwarded` are lists that each proxy appends to, possibly as a line of its own:
 * their lines are combined in order, as RFC 9110 section 5.3 allows for list-valued fields, so the
 * client-address rule (src/net/trusted-proxies.ts) sees the whole chain.
 */
export function readRequestHead(uReq: UwsRequest): RequestHead {
  const headers: Record<string, string> = {};
  let problem: string | undefined;
  uReq.forEach((k, v) => {
    const previous = headers[k];
    if (previous !== undefined) {
      if (k === 'authorization') problem ??= 'The request has more than one Authorization header; send exactly one.';
      else if (k === 'content-length' && previous !== v) problem ??= 'The request has conflicting Content-Length headers.';
      else if (k === 'content-type' && previous !== v) problem ??= 'The request has conflicting Content-Type headers.';
      else if (k === 'x-forwarded-for' || k === 'forwarded') {
        headers[k] = `${previous}, ${v}`;
        return;
      }
    }
    headers[k] = v;
  });
  return { method: uReq.getMethod().toUpperCase(), path: uReq.getUrl(), query: uReq.getQuery() ?? '', headers, problem };
}
