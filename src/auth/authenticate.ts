import { AppError } from '../errors/app-error.js';
import type { ApiKeysPort } from '../store/ports.js';
import { digestsEqual, hashApiKey, isWellFormedApiKey } from './api-keys.js';
import type { Principal } from './principal.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Resolves `Authorization: Bearer sk_...` to a Principal (SPEC.md 5.2-5.3, API.md "Credentials").
 * Throws AppError 401: `missing_credentials` (no header), `invalid_api_key` (not a Bearer API key,
 * bad checksum, or unknown), `revoked_api_key`. A key offered in the query string is refused and
 * never authenticates (SPEC.md 5.8: keys must not be placed in URLs).
 */
export async function authenticateApiKey(
  apiKeys: ApiKeysPort, authorization: string | undefined, query: URLSearchParams,
): Promise<Principal> {
  for (const value of query.values()) {
    if (value.startsWith('sk_')) {
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
