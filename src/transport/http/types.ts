import type { ZodType } from 'zod';
import type { AccessRule, Principal } from '../../runtime/services/access.js';
import type { ReadFrom, TurnChannel } from '../../runtime/turn/turn-channel.js';
import type { SseFramer } from '../sse/sse-writer.js';

/** An HTTP request as route handlers see it: no uWS types, everything copied out of the socket. */
export interface HttpRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The whole body (read under the route's cap), or null when there was none. */
  body: Buffer | null;
  requestId: string;
  /**
   * The client's address: the socket peer's, or, when that peer is a trusted proxy
   * (PARLEY_TRUSTED_PROXIES), the one the proxy forwarded (src/net/trusted-proxies.ts). Rate limits and
   * sign-in throttling count by it.
   */
  remoteAddress: string;
  /** performance.now() (ms) when the request arrived (its head was read): the origin of a turn's timing. */
  arrivedAt: number;
  /**
   * Headers every response to this request carries, whatever it is (success, error, stream):
   * `Strict-Transport-Security` on the TLS port (set by the transport), the CORS headers of a public
   * endpoint (added by the dispatcher before the handler runs).
   */
  responseHeaders?: Record<string, string>;
}

/** What a handler returns; the transport writes it. */
export type HttpResult =
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'empty'; status: number; headers?: Record<string, string> }
  | { kind: 'text'; status: number; contentType: string; body: string }
  /** Bytes as they are (static files, possibly gzip-encoded: then `headers` says so). */
  | { kind: 'bytes'; status: number; contentType: string; body: Uint8Array; headers?: Record<string, string> }
  /**
   * An SSE stream of a turn's channel from `from` (`'origin'`: the response of the request that started
   * the turn, which gets every event whatever the replay retention; a number: a resume, replaying after
   * that sequence number), each event framed by `framer` (default: Parley's own stream events).
   */
  | { kind: 'sse'; channel: TurnChannel; from: ReadFrom; framer?: SseFramer };

/** Context handed to a route handler: path params, validated body and query, the caller. */
export interface RouteContext<B, Q> {
  req: HttpRequest;
  params: Record<string, string>;
  body: B;
  query: Q;
  /**
   * The caller in the route's organization (the API key's, or the one a person named in `X-Org-Id`), on
   * org-scoped routes. On public routes and routes with `roles: null` a placeholder with an empty orgId.
   */
  principal: Principal;
  /** The signed-in person's user id when a person called; undefined for an API key and on public routes. */
  userId: string | undefined;
}

/** One documented response of a route (feeds OpenAPI). */
export interface RouteResponse {
  status: number;
  description: string;
  schema?: ZodType;
  contentType?: string;
}

/**
 * A route: method + path template (`/v1/agents/{agent_id}`), who may call it, how its body and query are
 * validated, and the handler. The same definition feeds the router, the dispatcher (which checks
 * `access` for every route in one place) and OpenAPI (security requirements and the 400/401/403
 * responses follow from `access`).
 */
export interface RouteDef<B = any, Q = any> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  summary: string;
  tag: string;
  /** Credential kinds accepted and roles needed (src/runtime/services/access.ts ACCESS). */
  access: AccessRule;
  /**
   * A public endpoint of a published agent (path parameter `public_key`), called from other sites: CORS
   * preflights are answered and responses carry CORS headers for the origins the agent allows
   * (src/transport/http/cors.ts); a page of another origin gets 403 `origin_not_allowed`.
   */
  cors?: boolean;
  /**
   * OpenAPI security requirements, in place of those that follow from `access`: for a route that checks a
   * credential of its own (`/metrics` and its optional `metricsToken`).
   */
  security?: Array<Record<string, string[]>>;
  /** Request headers the route reads, for OpenAPI (`X-Visitor-Token`, `Last-Event-ID`). */
  headerParams?: Array<{ name: string; required: boolean; description: string }>;
  /** JSON body schema, or `raw` for uploads handled by the route itself. */
  body?: ZodType<B> | 'raw';
  query?: ZodType<Q>;
  responses: RouteResponse[];
  handle(ctx: RouteContext<B, Q>): Promise<HttpResult> | HttpResult;
}
