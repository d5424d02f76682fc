import { AppError } from '../errors/app-error.js';
import type { ApiKeysPort } from '../store/ports.js';
import { containsApiKey, digestsEqual, hashApiKey, isWellFormedApiKey } from './api-keys.js';
import type { Principal } from './principal.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Resolves `Authorization: Bearer sk_...` to a Principal (SPEC.md 5.2-5.3, API.md "Credentials").
 * Throws AppError 401: `missing_credentials` (no header), `invalid_api_key` (not a Bearer API key,
 * bad checksum, or unknown), `revoked_api_key`. A real API key (right shape and checksum) anywhere
 * in a query parameter's name or value is refused with `invalid_api_key` and never authenticates
 * (SPEC.md 5.8 and API.md "Credentials": keys are never accepted in a URL); anything else starting
 * with `sk_` (`?q=sk_ prefix`, `?q=sk_notakey`, a key-shaped string with a wrong checksum) is an
 * ordinary query value.
 */
export async function authenticateApiKey(
  apiKeys: ApiKeysPort, authorization: string | undefined, query: URLSearchParams,
): Promise<Principal> {
  for (const [name, value] of query) {
    if (containsApiKey(value) || containsApiKey(name)) {
      throw new AppError('invalid_api_key', 'API keys are not accepted in URLs; send the key in the Authorization header and revoke the exposed key.');
    }
  }
  if (authorization === undefined || authorization.trim() === '') {
    throw new AppError('missing_credentials', 'Send your API key as "Authorization: Bearer sk_...".');
  }
  const m = BEARER.exec(authorization);
  const token = m?.[1];
  if (token === undefined || !isWellFormedApiKey(token)) {
    throw new AppError('invalid_api_key', 'The API key is malformed; check that it was copied whole.');
  }
  const hash = hashApiKey(token);
  const rec = await apiKeys.findByHash(hash);
  if (!rec || !digestsEqual(rec.key_hash, hash)) throw new AppError('invalid_api_key', 'The API key is not valid.');
  if (rec.revoked_at !== null) throw new AppError('revoked_api_key', 'The API key has been revoked.');
  return { kind: 'api_key', orgId: rec.org_id, credentialId: rec.id };
}
