import { authenticateApiKey } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/principal.js';
import type { Store } from '../../store/ports.js';

export type { Principal };

/** Turns the credentials of a request into a Principal (SPEC.md 5, API.md "Credentials"). */
export class AccessService {
  constructor(private readonly store: Store) {}

  /**
   * The caller of a request with these (lower-cased) headers and query. Throws AppError 401
   * (`missing_credentials`, `invalid_api_key`, `revoked_api_key`). A request with two Authorization
   * headers never gets here: the transport refuses it with 400 `malformed_request`.
   */
  authenticate(headers: Record<string, string>, query: URLSearchParams): Promise<Principal> {
    return authenticateApiKey(this.store.apiKeys, headers.authorization, query);
  }
}
