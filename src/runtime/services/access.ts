import type { AccessCache } from '../../auth/access-cache.js';
import type { AccessTokens } from '../../auth/access-tokens.js';
import { authenticateApiKey, classifyAuthorization, refuseApiKeyInUrl } from '../../auth/authenticate.js';
import { hashOpaqueToken, isOpaqueToken } from '../../auth/opaque-tokens.js';
import type { ApiKeyPrincipal, PersonPrincipal, Principal } from '../../auth/principal.js';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';
import type { Role } from '../../vocabulary/role.js';

export type { ApiKeyPrincipal, PersonPrincipal, Principal };

/**
 * The kinds of credential a route may accept (API.md "Credentials"), and `internal`: a request another
 * Parley process signed (src/cluster/internal-auth.ts), checked by the dispatcher, never by a client.
 */
export type CredentialKind = 'api_key' | 'person' | 'internal';

/**
 * Who may call a route, declared on each route and checked in one place (AccessService.authenticate):
 * - `credentials`: the credential kinds accepted; empty = public (no credential needed, none checked).
 * - `roles`: the roles a person needs in the organization named by `X-Org-Id`; null = the route is not
 *   about one organization (`GET /v1/me`): `X-Org-Id` is not needed and no membership is checked.
 * An API key ignores `X-Org-Id` (its organization is the key's) and has every right in its organization,
 * but only on routes that list `api_key`.
 */
export interface AccessRule {
  credentials: readonly CredentialKind[];
  roles: readonly Role[] | null;
}

const ALL_ROLES: readonly Role[] = ['owner', 'admin', 'operator'];
const MANAGERS: readonly Role[] = ['owner', 'admin'];

/** The access rules routes use (docs/authentication.md "Roles"). */
export const ACCESS = {
  /** No credential: login, refresh, logout, probes, the OpenAPI document. */
  public: { credentials: [], roles: null },
  /** Read and chat: an API key, or any member (owner, admin, operator). */
  member: { credentials: ['api_key', 'person'], roles: ALL_ROLES },
  /** Change agents and knowledge bases: an API key, or an owner or admin. */
  manage: { credentials: ['api_key', 'person'], roles: MANAGERS },
  /** The dashboard's people and key management: a person who is an owner or admin; an API key gets 403. */
  personManage: { credentials: ['person'], roles: MANAGERS },
  /** A person's own things in one organization (socket tickets, the member list): any member; an API key gets 403. */
  personMember: { credentials: ['person'], roles: ALL_ROLES },
  /** The person themself, in no particular organization (`GET /v1/me`). */
  self: { credentials: ['person'], roles: null },
  /** Another Parley process of this store (src/transport/http/routes/internal.ts); anything else gets 404. */
  internal: { credentials: ['internal'], roles: null },
} as const satisfies Record<string, AccessRule>;

/** The caller of a request: the principal (org-scoped routes), and the person's user id when a person called. */
export interface Caller {
  /**
   * On org-scoped routes, the caller in that organization. On public routes and routes with `roles: null`
   * it is a placeholder with an empty `orgId` that must not be used.
   */
  principal: Principal;
  /** The signed-in person (`usr_...`), or undefined for an API key and on public routes. */
  userId: string | undefined;
}

const NOBODY: ApiKeyPrincipal = { kind: 'api_key', orgId: '', credentialId: '' };

/** Turns the credentials of a request into a Caller (SPEC.md 5, API.md "Credentials"). */
export class AccessService {
  constructor(
    private readonly store: Store, private readonly tokens: AccessTokens, private readonly cache: AccessCache,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The caller of a request with these (lower-cased) headers and query, for a route with `rule`. In order:
   * a real API key in the URL: 401 `invalid_api_key`; no Authorization: 401 `missing_credentials`; a
   * JWT-shaped bearer token is verified in memory (401 `invalid_token` / `expired_token`), anything else
   * checked as an API key (401 `invalid_api_key` / `revoked_api_key`, one store read); a credential kind
   * the route does not take: 403 `forbidden`. For a person on an org-scoped route: no `X-Org-Id`: 400
   * `missing_org_id`; then the person's checks (AccessCache: no store read when cached): the person no longer
   * exists, the token was issued before their `access_valid_after` (a password change), or its sign-in
   * ended (logout): 401 `invalid_token`; not a member of that organization: 403 `not_a_member`; a role
   * the route does not allow: 403 `forbidden`.
   * A request with two Authorization headers never gets here (400 `malformed_request` in the transport).
   */
  async authenticate(headers: Record<string, string>, query: URLSearchParams, rule: AccessRule): Promise<Caller> {
    if (rule.credentials.length === 0) return { principal: NOBODY, userId: undefined };
    if (rule.credentials.includes('internal')) throw new AppError('not_found', 'No such route.');
    refuseApiKeyInUrl(query);
    const credential = classifyAuthorization(headers.authorization);
    if (credential.kind === 'none') {
      throw new AppError('missing_credentials', 'Send "Authorization: Bearer <API key or access token>".');
    }
    if (credential.kind === 'other') {
      const principal = await authenticateApiKey(this.store.apiKeys, credential.token, this.now);
      if (!rule.credentials.includes('api_key')) {
        throw new AppError('forbidden', 'An API key cannot do this; sign in as an owner or admin (the dashboard).');
      }
      return { principal, userId: undefined };
    }
    const token = await this.tokens.verify(credential.token);
    if (!rule.credentials.includes('person')) throw new AppError('forbidden', 'This endpoint takes an API key, not a person\'s token.');
    if (rule.roles === null) return { principal: NOBODY, userId: token.userId };
    const orgId = headers['x-org-id']?.trim();
    if (!orgId) throw new AppError('missing_org_id', 'Send the organization as "X-Org-Id: org_..." with a person\'s access token.');
    const principal = await this.member(orgId, token.userId, token.tokenId, token.sessionId, token.issuedAt);
    if (!rule.roles.includes(principal.role)) {
      throw new AppError('forbidden', `The ${principal.role} role cannot do this; it needs ${rule.roles.join(' or ')}.`);
    }
    return { principal, userId: token.userId };
  }

  /**
   * Spends a WebSocket ticket (`wst_...`, single use, 60 s; API.md "Credentials") and returns the person
   * it was issued to, in the organization it was issued for, with their role now. Throws AppError 401
   * `invalid_token` (malformed, unknown, already used or expired ticket, or the person no longer exists)
   * or 403 `not_a_member` (no longer a member of that organization). The WebSocket routes call this.
   */
  async consumeTicket(ticket: string): Promise<PersonPrincipal> {
    if (!isOpaqueToken(ticket, 'wst')) throw new AppError('invalid_token', 'The socket ticket is malformed.');
    const rec = await this.store.socketTickets.consume(hashOpaqueToken(ticket), new Date(this.now()).toISOString());
    if (rec === undefined) throw new AppError('invalid_token', 'The socket ticket is unknown, used or expired; ask for a new one.');
    return this.member(rec.org_id, rec.user_id, 'ticket', rec.session_id, Math.floor(Date.parse(rec.created_at) / 1000));
  }

  /**
   * The caller of a WebSocket upgrade (API.md "WebSockets", "Credentials"), any role of the organization:
   * - `Authorization: Bearer sk_...` on the upgrade (server clients): the API key's organization;
   *   a person's access token in that header works too, in the organization `orgOf` names;
   * - else `?token=`: a socket ticket `wst_...` (its person and organization, single use), or a person's
   *   access token, in the organization `orgOf` names (the agent's or conversation's, or the inbox's
   *   `org_id`): undefined there is 404 `not_found` (or what `orgOf` throws);
   * - an API key anywhere in the query string is refused (401 `invalid_api_key`: keys never go in URLs),
   *   nothing at all is 401 `missing_credentials`, another token 401 `invalid_token`.
   * Throws AppError like `authenticate` (401 invalid/expired/revoked, 403 `not_a_member`).
   */
  async authenticateSocket(headers: Record<string, string>, query: URLSearchParams, orgOf: () => Promise<string | undefined>): Promise<Principal> {
    refuseApiKeyInUrl(query);
    const header = classifyAuthorization(headers.authorization);
    if (header.kind === 'other') return authenticateApiKey(this.store.apiKeys, header.token, this.now);
    const token = header.kind === 'jwt' ? header.token : query.get('token') ?? '';
    if (token === '') throw new AppError('missing_credentials', 'Send ?token=<access token or wst_ ticket>, or Authorization: Bearer <API key> on the upgrade.');
    if (token.startsWith('wst_')) return this.consumeTicket(token);
    if (classifyAuthorization(`Bearer ${token}`).kind !== 'jwt') throw new AppError('invalid_token', 'The token is neither an access token nor a socket ticket.');
    const verified = await this.tokens.verify(token);
    const orgId = await orgOf();
    if (orgId === undefined) throw new AppError('not_found', 'No such resource.');
    return this.member(orgId, verified.userId, verified.tokenId, verified.sessionId, verified.issuedAt);
  }

  /**
   * The person's principal in `orgId`, for a credential issued at `issuedAt` (Unix s) under sign-in
   * `sessionId`. Throws 401 `invalid_token` (no such person; issued in a second before their
   * `access_valid_after`; or the sign-in ended) or 403 `not_a_member`.
   *
   * `access_valid_after` is compared at the token's resolution, whole seconds (RFC 7519 `iat`): a credential
   * issued earlier in the same second as a password change passes that check, but the change also ended
   * every sign-in of the person, so the session check refuses it.
   */
  private async member(orgId: string, userId: string, credentialId: string, sessionId: string | null, issuedAt: number): Promise<PersonPrincipal> {
    const cached = this.cache.member(orgId, userId);
    const check = cached instanceof Promise ? await cached : cached;
    if (check.status === 'no_user') throw new AppError('invalid_token', 'The person this token was issued to no longer exists.');
    if (check.access_valid_after !== null && issuedAt < Math.floor(Date.parse(check.access_valid_after) / 1000)) {
      throw new AppError('invalid_token', 'This token was issued before the password changed; sign in again.');
    }
    if (sessionId !== null) {
      const ended = this.cache.sessionEnded(sessionId);
      if (ended instanceof Promise ? await ended : ended) throw new AppError('invalid_token', 'This sign-in has ended (signed out); sign in again.');
    }
    if (check.status === 'not_a_member') throw new AppError('not_a_member', 'You are not a member of this organization.');
    return { kind: 'person', orgId, userId, role: check.role, credentialId, sessionId };
  }
}
