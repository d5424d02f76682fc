import { authenticateApiKey } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/principal.js';
import type { ApiKeysPort } from '../../store/ports.js';
import type { HttpRequest, HttpResult, RouteDef } from './types.js';
import { parseJson, queryObject, validate } from './validate.js';

/** Runs one matched route: authenticate, validate query and body, call the handler. Throws AppError. */
export type Dispatcher = (req: HttpRequest, route: RouteDef, params: Record<string, string>) => Promise<HttpResult>;

const NO_PRINCIPAL: Principal = { kind: 'api_key', orgId: '', credentialId: '' };

/**
 * Builds the dispatcher. Order: credentials first (so an unauthenticated caller learns nothing about
 * ids or bodies), then query, then body (400 invalid_json / validation_failed).
 */
export function createDispatcher(apiKeys: ApiKeysPort): Dispatcher {
  return async (req, route, params) => {
    const principal = route.auth === 'api_key'
      ? await authenticateApiKey(apiKeys, req.headers.authorization, req.query)
      : NO_PRINCIPAL;
    const query = route.query ? validate(route.query, queryObject(req.query), 'query') : {};
    let body: unknown = undefined;
    if (route.body && route.body !== 'raw') body = validate(route.body, parseJson(req.body), 'body');
    return route.handle({ req, params, body, query, principal });
  };
}
