import type { AccessTokens } from '../../auth/access-tokens.js';
import { normalizeEmail } from '../../auth/identity.js';
import type { LoginThrottle } from '../../auth/login-throttle.js';
import { hashOpaqueToken, isOpaqueToken, newOpaqueToken } from '../../auth/opaque-tokens.js';
import type { PasswordHasher } from '../../auth/passwords.js';
import type { PersonPrincipal } from '../../auth/principal.js';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import type { Store } from '../../store/ports.js';
import type { UserOrganization, UserRecord } from '../../store/records.js';

/** Lifetime of a socket ticket, s (API.md "Credentials": single use, 60 s). */
export const SOCKET_TICKET_TTL_S = 60;

/** What a sign-in or a refresh gives the client (API.md "Auth endpoints"). */
export interface Session {
  accessToken: string;
  /** Seconds until the access token expires (900). */
  expiresIn: number;
  refreshToken: string;
  user: UserRecord;
  organizations: UserOrganization[];
}

/** The signed-in person and their organizations (`GET /v1/me`). */
export interface Me {
  user: UserRecord;
  organizations: UserOrganization[];
}

/** Options of the SessionService. */
export interface SessionOptions {
  /** A refresh token unused this long expires (PARLEY_REFRESH_IDLE_DAYS), ms. */
  refreshIdleMs: number;
  /** No refresh token of a login is accepted after this long (PARLEY_REFRESH_ABSOLUTE_DAYS), ms. */
  refreshAbsoluteMs: number;
  /** Current time, ms (default Date.now). */
  now?: () => number;
}

const badRefresh = (message: string) => new AppError('invalid_refresh_token', message);

/**
 * Sign-in, refresh, sign-out and socket tickets for persons (SPEC.md 5.4-5.6, API.md "Auth endpoints").
 *
 * Refresh tokens (RFC 9700 section 4.14.2): opaque `rt_...`, stored as SHA-256 hashes, single use; each
 * login starts a family, each refresh spends the token and issues the next of its family, and a spent
 * token presented again revokes the whole family (so of two concurrent refreshes of one token, one gets a
 * new pair and the family is then revoked: a client must not refresh twice with one token).
 */
export class SessionService {
  private readonly now: () => number;
  private lastPrune = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: Store,
    private readonly tokens: AccessTokens,
    private readonly passwords: PasswordHasher,
    private readonly throttle: LoginThrottle,
    private readonly opts: SessionOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * Signs a person in with e-mail and password from client address `address`. Throws AppError 429
   * `rate_limited` (too many failed attempts for the account or the address; `Retry-After`), 401
   * `invalid_credentials` (unknown e-mail, no password set, or wrong password: one error, the same
   * argon2 work for all), 503 `overloaded` (too many hashes waiting).
   */
  async login(email: string, password: string, address: string): Promise<Session> {
    const account = normalizeEmail(email);
    const attempt = this.throttle.take(account, address);
    let user: UserRecord | undefined;
    let ok: boolean;
    try {
      user = await this.store.users.findByEmail(account);
      ok = await this.passwords.verify(user?.password_hash ?? null, password);
    } catch (err) {
      this.throttle.refund(attempt); // not checked (overloaded, store failure): not a failed guess
      throw err;
    }
    if (!ok || user === undefined) throw new AppError('invalid_credentials', 'The e-mail or the password is wrong.');
    this.throttle.refund(attempt);
    await this.pruneNow();
    const now = this.now();
    const refreshToken = newOpaqueToken('rt');
    const family = {
      id: newId('rtf'), user_id: user.id, created_at: iso(now),
      absolute_expires_at: iso(now + this.opts.refreshAbsoluteMs), revoked_at: null, revoked_reason: null,
    };
    await this.store.refreshTokens.startFamily(family, {
      token_hash: hashOpaqueToken(refreshToken), family_id: family.id, created_at: iso(now),
      expires_at: iso(now + Math.min(this.opts.refreshIdleMs, this.opts.refreshAbsoluteMs)), used_at: null,
    });
    return this.session(user, refreshToken, family.id);
  }

  /**
   * Exchanges a refresh token for a new pair. Throws AppError 401 `invalid_refresh_token` when the token
   * is malformed, unknown, expired (idle or absolute lifetime), of a revoked family, or already spent (the
   * family is then revoked: RFC 9700 section 4.14.2), or its person no longer exists.
   */
  async refresh(refreshToken: string): Promise<Session> {
    if (!isOpaqueToken(refreshToken, 'rt')) throw badRefresh('The refresh token is malformed.');
    const now = this.now();
    const next = newOpaqueToken('rt');
    const outcome = await this.store.refreshTokens.rotate(hashOpaqueToken(refreshToken),
      { token_hash: hashOpaqueToken(next), created_at: iso(now), expires_at: iso(now + this.opts.refreshIdleMs) }, iso(now));
    switch (outcome.status) {
      case 'rotated': break;
      case 'reused':
        throw badRefresh('The refresh token was already used, so this session has been ended; sign in again.');
      case 'revoked': throw badRefresh('This session has ended; sign in again.');
      case 'expired': throw badRefresh('The refresh token has expired; sign in again.');
      default: throw badRefresh('The refresh token is not valid.');
    }
    const user = await this.store.users.get(outcome.family.user_id);
    if (user === undefined) throw badRefresh('The refresh token is not valid.');
    return this.session(user, next, outcome.family.id);
  }

  /**
   * Signs out: revokes the family of `refreshToken` (spent or live). Its access tokens are refused from
   * then on and the WebSockets opened under that sign-in (its tokens' `sid`, its socket tickets) close: the
   * revocation is a `session` feed entry, which every process applies (src/runtime/access-changes.ts).
   * Unknown, malformed and already revoked tokens are accepted silently (RFC 7009 section 2.2: revocation
   * answers success for them).
   */
  async logout(refreshToken: string): Promise<void> {
    if (!isOpaqueToken(refreshToken, 'rt')) return;
    await this.store.refreshTokens.revokeFamilyOf(hashOpaqueToken(refreshToken), 'logout', iso(this.now()));
  }

  /** The person `userId` and their organizations. Throws AppError 401 `invalid_token` when they no longer exist. */
  async me(userId: string): Promise<Me> {
    const user = await this.store.users.get(userId);
    if (user === undefined) throw new AppError('invalid_token', 'The person this token was issued to no longer exists.');
    return { user, organizations: await this.store.memberships.organizationsOf(userId) };
  }

  /**
   * A single-use socket ticket for `principal` (a person in one organization): `wst_...`, valid
   * {@link SOCKET_TICKET_TTL_S} s, stored as its SHA-256 hash, bound to the person and organization.
   */
  async issueTicket(principal: PersonPrincipal): Promise<{ ticket: string; expiresIn: number }> {
    await this.pruneNow();
    const now = this.now();
    const ticket = newOpaqueToken('wst');
    await this.store.socketTickets.create({
      ticket_hash: hashOpaqueToken(ticket), user_id: principal.userId, org_id: principal.orgId, session_id: principal.sessionId,
      created_at: iso(now), expires_at: iso(now + SOCKET_TICKET_TTL_S * 1000), used_at: null,
    });
    return { ticket, expiresIn: SOCKET_TICKET_TTL_S };
  }

  private async session(user: UserRecord, refreshToken: string, sessionId: string): Promise<Session> {
    const access = await this.tokens.issue(user.id, sessionId);
    const organizations = await this.store.memberships.organizationsOf(user.id);
    return { accessToken: access.token, expiresIn: access.expiresIn, refreshToken, user, organizations };
  }

  /** Deletes expired refresh-token families and socket tickets, at most once a minute. */
  private async pruneNow(): Promise<void> {
    const now = this.now();
    if (now - this.lastPrune < 60_000) return;
    this.lastPrune = now;
    await this.store.refreshTokens.prune(iso(now));
    await this.store.socketTickets.prune(iso(now));
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
