import { AppError } from '../../errors/app-error.js';
import type { AccessService } from '../../runtime/services/access.js';
import { corsHeaders } from './cors.js';
import type { HttpRequest, HttpResult, RouteDef } from './types.js';
import { parseJson, queryObject, requireJsonContentType, validate } from './validate.js';

/** Runs one matched route: authenticate, validate query and body, call the handler. Throws AppError. */
export type Dispatcher = (req: HttpRequest, route: RouteDef, params: Record<string, string>) => Promise<HttpResult>;

/**
 * Builds the dispatcher. Order: credentials and the route's access rule first (AccessService.authenticate:
 * 401, 400 missing_org_id, 403; so an unauthenticated or unauthorized caller learns nothing about ids or
 * bodies), then query, then body: a non-empty body on a JSON route needs `Content-Type:
 * application/json` (415 unsupported_content_type; an empty body needs none), then 400 invalid_json /
 * validation_failed. A `cors` route first settles its CORS headers (`allowedOrigins` of its public key):
 * every response, errors included, carries them; a page of a refused origin gets 403 `origin_not_allowed`.
 * An `internal` route (src/transport/http/routes/internal.ts) takes only a request `internal` accepts
 * (a neighbour's valid signature); any other request gets 404, as for a path that does not exist.
 */
export function createDispatcher(
  access: AccessService, allowedOrigins?: (publicKey: string) => Promise<string[] | undefined>,
  internal?: (req: HttpRequest) => boolean,
): Dispatcher {
  return async (req, route, params) => {
    if (route.access.credentials.includes('internal')) {
      // Another Parley process's signed request (src/cluster/internal-auth.ts); to anyone else the route does not exist.
      if (internal === undefined || !internal(req)) throw new AppError('not_found', `No route for ${req.method} ${req.path}.`);
      const body = route.body && route.body !== 'raw' ? validate(route.body, parseJson(req.body), 'body') : undefined;
      return route.handle({ req, params, body, query: {}, principal: { kind: 'api_key', orgId: '', credentialId: '' }, userId: undefined });
    }
    if (route.cors && allowedOrigins !== undefined && req.headers.origin !== undefined) {
      const allowed = await allowedOrigins(params.public_key ?? '');
      // Added to what the transport set already (Strict-Transport-Security on the TLS port).
      req.responseHeaders = { ...req.responseHeaders, ...corsHeaders(req.headers.origin, allowed) };
    }
    const { principal, userId } = await access.authenticate(req.headers, req.query, route.access);
    const query = route.query ? validate(route.query, queryObject(req.query), 'query') : {};
    let body: unknown = undefined;
    if (route.body && route.body !== 'raw') {
      if (req.body !== null && req.body.length > 0) requireJsonContentType(req.headers['content-type']);
      body = validate(route.body, parseJson(req.body), 'body');
    }
    return route.handle({ req, params, body, query, principal, userId });
  };
}
