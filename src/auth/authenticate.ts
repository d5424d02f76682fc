import { AppError } from '../errors/app-error.js';
import type { ApiKeysPort } from '../store/ports.js';
import { containsApiKey, digestsEqual, hashApiKey, isWellFormedApiKey } from './api-keys.js';
import type { ApiKeyPrincipal } from './principal.js';

/** `Bearer <token>` (RFC 6750 section 2.1; the scheme is case-insensitive, RFC 9110 section 11.1). */
const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** Three base64url segments: the JWS compact serialization (RFC 7515 section 7.1) of an access token. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * What the Authorization header carries: nothing, a JWT-shaped bearer token, or anything else (the API-key
 * path), with its bearer token when it has the Bearer scheme.
 */
export type BearerCredential = { kind: 'none' } | { kind: 'jwt'; token: string } | { kind: 'other'; token: string | undefined };

/**
 * Classifies the Authorization header: absent or blank -> `none`; `Bearer <three base64url segments>` ->
 * `jwt` (a person's access token); anything else -> `other`, which is checked as an API key (so
 * `Basic ...`, a bare key or a malformed key all get `invalid_api_key`, as before people could sign in).
 */
export function classifyAuthorization(authorization: string | undefined): BearerCredential {
  if (authorization === undefined || authorization.trim() === '') return { kind: 'none' };
  const token = BEARER.exec(authorization)?.[1];
  // An API key has no dot: one memchr settles the common case before the regex runs.
  if (token !== undefined && token.includes('.') && JWT_SHAPE.test(token)) return { kind: 'jwt', token };
  return { kind: 'other', token };
}

/**
 * Throws AppError `invalid_api_key` (401) when a real API key (right shape and checksum) appears anywhere
 * in a query parameter's name or value (SPEC.md 5.8 and API.md "Credentials": keys are never accepted in a
 * URL); anything else starting with `sk_` (`?q=sk_ prefix`, a key-shaped string with a wrong checksum) is
 * an ordinary query value.
 */
export function refuseApiKeyInUrl(query: URLSearchParams): void {
  for (const [name, value] of query) {
    if (containsApiKey(value) || containsApiKey(name)) {
      throw new AppError('invalid_api_key', 'API keys are not accepted in URLs; send the key in the Authorization header and revoke the exposed key.');
    }
  }
}

/**
 * Resolves the bearer token of `Authorization: Bearer sk_...` (undefined: the header was not a Bearer
 * credential) to a principal (SPEC.md 5.2-5.3, API.md "Credentials") with one store read. Throws AppError
 * 401: `invalid_api_key` (not a Bearer API key, bad checksum, or unknown), `revoked_api_key` (revoked, or
 * rotated and past its grace period: `expires_at` at or before `now()`, ms).
 */
export async function authenticateApiKey(apiKeys: ApiKeysPort, token: string | undefined, now: () => number): Promise<ApiKeyPrincipal> {
  if (token === undefined || !isWellFormedApiKey(token)) {
    throw new AppError('invalid_api_key', 'The API key is malformed; check that it was copied whole.');
  }
  const hash = hashApiKey(token);
  const rec = await apiKeys.findByHash(hash);
  if (!rec || !digestsEqual(rec.key_hash, hash)) throw new AppError('invalid_api_key', 'The API key is not valid.');
  if (rec.revoked_at !== null) throw new AppError('revoked_api_key', 'The API key has been revoked.');
  if (rec.expires_at !== null && Date.parse(rec.expires_at) <= now()) throw new AppError('revoked_api_key', 'The API key was rotated and its grace period is over.');
  return { kind: 'api_key', orgId: rec.org_id, credentialId: rec.id, expiresAt: rec.expires_at === null ? null : Date.parse(rec.expires_at) };
}
