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
 */
export function createDispatcher(access: AccessService, allowedOrigins?: (publicKey: string) => Promise<string[] | undefined>): Dispatcher {
  return async (req, route, params) => {
    if (route.cors && allowedOrigins !== undefined && req.headers.origin !== undefined) {
      const allowed = await allowedOrigins(params.public_key ?? '');
      req.responseHeaders = corsHeaders(req.headers.origin, allowed);
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
