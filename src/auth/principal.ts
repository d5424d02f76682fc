import type { Role } from '../vocabulary/role.js';

/** A caller authenticated by an API key: the key's organization, with every right there but people management. */
export interface ApiKeyPrincipal {
  kind: 'api_key';
  /** The organization every resource access is scoped to. */
  orgId: string;
  /** The credential's id (`key_...`), for logs and for closing its sockets when it is revoked. */
  credentialId: string;
  /** When a rotated key's grace period ends, ms since the epoch (it then counts as revoked); null for no end. */
  expiresAt?: number | null;
}

/** A signed-in person acting in one organization (named by `X-Org-Id`, or by a socket ticket). */
export interface PersonPrincipal {
  kind: 'person';
  /** The organization every resource access is scoped to; the person is a member of it. */
  orgId: string;
  /** The person (`usr_...`). */
  userId: string;
  /** Their role in `orgId`, as the store said for this request. */
  role: Role;
  /** The access token's `jti` (or `ticket` for a socket ticket), for logs. */
  credentialId: string;
  /**
   * The sign-in the credential belongs to (the access token's `sid`, or the session a socket ticket was
   * issued under), or null; a socket opened with it closes when that sign-in ends.
   */
  sessionId: string | null;
}

/** Who is calling: resolved from a credential by src/auth and the runtime's AccessService (API.md "Credentials"). */
export type Principal = ApiKeyPrincipal | PersonPrincipal;
