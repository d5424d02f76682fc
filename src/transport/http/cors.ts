/**
 * CORS of the public endpoints (API.md "WebSockets": public endpoints and sockets are called from other
 * sites; Fetch Standard "CORS protocol"). A published agent allows `["*"]` (any page, the default) or a
 * list of origins (`PATCH /v1/agents/{agent_id}` `{"allowed_origins"}`).
 */
import { AppError } from '../../errors/app-error.js';
import { originAllowed } from '../../runtime/services/public.js';

/** Request headers a page may send to the public endpoints. */
export const CORS_ALLOW_HEADERS = 'Content-Type, X-Visitor-Token, Last-Event-ID';
/** Response headers a page may read. */
export const CORS_EXPOSE_HEADERS = 'X-Request-Id, Retry-After';
/** How long a browser may cache a preflight, s. */
export const CORS_MAX_AGE_S = 600;

/**
 * The CORS headers of a response to a page of `origin` (the request's `Origin`, undefined for non-browser
 * clients: no headers) for an agent allowing `allowed` (undefined: no published agent has the key; the
 * 404 that follows is readable by any page). Throws AppError 403 `origin_not_allowed` for an origin the
 * agent does not allow.
 */
export function corsHeaders(origin: string | undefined, allowed: readonly string[] | undefined): Record<string, string> {
  if (origin === undefined) return {};
  if (allowed !== undefined && !originAllowed(allowed, origin)) {
    throw new AppError('origin_not_allowed', 'This page\'s origin may not use this agent; add it to the agent\'s allowed_origins.');
  }
  if (allowed === undefined || allowed.includes('*')) {
    return { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': CORS_EXPOSE_HEADERS };
  }
  return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': CORS_EXPOSE_HEADERS, Vary: 'Origin' };
}

/**
 * The headers of a successful preflight (`OPTIONS` with `Access-Control-Request-Method`) for a path that
 * takes `methods`. Throws like `corsHeaders`.
 */
export function preflightHeaders(origin: string | undefined, allowed: readonly string[] | undefined, methods: readonly string[]): Record<string, string> {
  const base = corsHeaders(origin, allowed);
  return {
    ...base,
    'Access-Control-Allow-Methods': [...methods, 'OPTIONS'].join(', '),
    'Access-Control-Allow-Headers': CORS_ALLOW_HEADERS,
    'Access-Control-Max-Age': String(CORS_MAX_AGE_S),
  };
}
