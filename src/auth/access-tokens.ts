/**
 * Access tokens for signed-in persons: JWTs signed with Ed25519 (EdDSA, RFC 8037) by jose, in the JWT
 * profile for OAuth 2.0 access tokens (RFC 9068): header `typ: at+jwt` and `kid`, claims `iss`, `aud`,
 * `sub` (the person's user id), `iat`, `exp`, `jti` and `client_id`, all required on verification, and
 * `sid` (the sign-in: its refresh-token family id, as OpenID Connect names a session) when the token was
 * issued by a sign-in or a refresh; logout closes the sockets opened under that `sid`. The
 * algorithm is pinned to EdDSA on verification and the `typ` checked (RFC 8725 sections 3.1 and 3.11),
 * so `alg: none`, HMAC tokens made with the public key and other token types are refused. Lifetime 900 s
 * (SPEC.md 5.5: about fifteen minutes); a token whose `iat` is more than 900 s old is expired whatever its
 * `exp` says.
 *
 * Keys: one active key signs; it is made on the first start and kept in the store (SigningKeysPort).
 * `parley keys rotate-signing` retires it and makes a new one; a retired key still verifies for
 * {@link ACCESS_TOKEN_TTL_S} after its retirement, which covers every token it signed, and no longer.
 *
 * Verification stays in memory on the hot path: the public keys are cached by kid (an unknown kid
 * reloads them from the store, at most once per second; they are re-read at most once a minute
 * otherwise, to learn retirements), and a token that verified once is remembered until it expires, so
 * a client reusing its token costs one Map lookup.
 */
import { calculateJwkThumbprint, errors, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type JWTHeaderParameters } from 'jose';
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import type { SigningKeysPort } from '../store/ports.js';
import type { JwkRecord, SigningKeyRecord } from '../store/records.js';

/** Lifetime of an access token, s (SPEC.md 5.5; API.md "Auth endpoints": `expires_in: 900`). */
export const ACCESS_TOKEN_TTL_S = 900;
/** `iss` of every access token (RFC 9068 section 2.2). */
export const ACCESS_TOKEN_ISSUER = 'parley';
/** `aud` of every access token: this API (RFC 9068 section 2.2). */
export const ACCESS_TOKEN_AUDIENCE = 'parley-api';
/** `client_id` of tokens issued by password sign-in (RFC 9068 section 2.2 requires the claim). */
export const ACCESS_TOKEN_CLIENT_ID = 'parley';
/** Header `typ` (RFC 9068 section 2.1; checked per RFC 8725 section 3.11). */
export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** The one algorithm signed and accepted (RFC 8725 section 3.1: algorithms pinned). */
export const ACCESS_TOKEN_ALG = 'EdDSA';
/** Claims a token must carry to verify. */
export const REQUIRED_CLAIMS = ['iss', 'aud', 'sub', 'iat', 'exp', 'jti', 'client_id'] as const;

/** Shortest time between two reloads of the keys caused by unknown kids, ms. */
export const KEY_RELOAD_MIN_MS = 1000;
/** Longest time the cached keys are trusted without a re-read (to learn retirements), ms. */
export const KEY_RECHECK_MS = 60_000;

/**
 * A token that verified: whose it is, which token (`jti`), which key signed it, and until when it is
 * accepted (Unix s: its `exp`, or the end of its key's window if the key is retired and that is sooner).
 */
export interface VerifiedAccessToken {
  userId: string;
  tokenId: string;
  /** The `sid` claim (the sign-in's refresh-token family id), or null when the token has none. */
  sessionId: string | null;
  kid: string;
  /** The `iat` claim, Unix s. */
  issuedAt: number;
  expiresAt: number;
}

/** A freshly signed token. */
export interface IssuedAccessToken {
  token: string;
  /** Seconds until it expires ({@link ACCESS_TOKEN_TTL_S}). */
  expiresIn: number;
  claims: { iss: string; aud: string; sub: string; iat: number; exp: number; jti: string; client_id: string; sid?: string };
  kid: string;
}

type Key = Awaited<ReturnType<typeof importJWK>>;

/**
 * A new Ed25519 key pair as a store record: `kid` is the key's JWK thumbprint (RFC 7638), `created_at`
 * as given, not retired.
 */
export async function newSigningKey(createdAt: string): Promise<SigningKeyRecord> {
  const { publicKey, privateKey } = await generateKeyPair(ACCESS_TOKEN_ALG, { crv: 'Ed25519', extractable: true });
  const public_jwk = await exportJWK(publicKey) as JwkRecord;
  const private_jwk = await exportJWK(privateKey) as JwkRecord;
  const kid = await calculateJwkThumbprint(public_jwk);
  return { kid, algorithm: ACCESS_TOKEN_ALG, public_jwk, private_jwk, created_at: createdAt, retired_at: null };
}

/** Options of AccessTokens. */
export interface AccessTokensOptions {
  /** Current time, ms since the epoch (default Date.now); tests pass a fixed clock. */
  now?: () => number;
  /** Verified tokens remembered at most (default 4096); past it the oldest are forgotten. */
  verifiedCacheSize?: number;
}

const invalid = (message: string) => new AppError('invalid_token', message);

/** Issues and verifies access tokens with the keys of `keys` (see the module comment). */
export class AccessTokens {
  private readonly now: () => number;
  private readonly cacheSize: number;
  private signing: { kid: string; key: Key } | undefined;
  private readonly publicKeys = new Map<string, { key: Key; retiredAt: number | null }>();
  private keysLoadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private readonly verified = new Map<string, VerifiedAccessToken>();
  /** Store reads of the keys so far (for tests of the reload bound). */
  keyLoads = 0;

  constructor(private readonly keys: SigningKeysPort, opts: AccessTokensOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.cacheSize = opts.verifiedCacheSize ?? 4096;
  }

  /** Makes the first signing key if the store has none (first start), and loads the verification keys. */
  async init(): Promise<void> {
    await this.keys.ensureActive(await newSigningKey(new Date(this.now()).toISOString()));
    await this.reload();
  }

  /**
   * Signs a token for person `userId` with the store's active key (read on every call, so a rotation by
   * another process takes effect at the next sign-in), with claim `sid` = `sessionId` when given. Throws
   * what the store throws.
   */
  async issue(userId: string, sessionId?: string): Promise<IssuedAccessToken> {
    let active = await this.keys.active();
    active ??= await this.keys.ensureActive(await newSigningKey(new Date(this.now()).toISOString()));
    if (this.signing?.kid !== active.kid) {
      this.signing = { kid: active.kid, key: await importJWK(active.private_jwk, ACCESS_TOKEN_ALG) };
      if (!this.publicKeys.has(active.kid)) this.publicKeys.set(active.kid, { key: await importJWK(active.public_jwk, ACCESS_TOKEN_ALG), retiredAt: null });
    }
    const iat = Math.floor(this.now() / 1000);
    const claims: IssuedAccessToken['claims'] = {
      iss: ACCESS_TOKEN_ISSUER, aud: ACCESS_TOKEN_AUDIENCE, sub: userId, iat, exp: iat + ACCESS_TOKEN_TTL_S,
      jti: randomBytes(16).toString('base64url'), client_id: ACCESS_TOKEN_CLIENT_ID,
      ...(sessionId === undefined ? {} : { sid: sessionId }),
    };
    const token = await new SignJWT({ jti: claims.jti, client_id: claims.client_id, ...(claims.sid === undefined ? {} : { sid: claims.sid }) })
      .setProtectedHeader({ alg: ACCESS_TOKEN_ALG, kid: this.signing.kid, typ: ACCESS_TOKEN_TYPE })
      .setIssuer(claims.iss).setAudience(claims.aud).setSubject(claims.sub).setIssuedAt(claims.iat).setExpirationTime(claims.exp)
      .sign(this.signing.key);
    return { token, expiresIn: ACCESS_TOKEN_TTL_S, claims, kid: this.signing.kid };
  }

  /**
   * Verifies `token`. Throws AppError `expired_token` (401) for a genuine token past `exp`, and
   * `invalid_token` (401) for anything else that is not a valid access token of this server: a bad
   * signature, another algorithm (`none`, HS256, ...), an unknown or long-retired `kid`, a wrong `iss`,
   * `aud` or `typ`, a missing claim. Throws what the store throws when the keys cannot be read.
   */
  async verify(token: string): Promise<VerifiedAccessToken> {
    const now = this.now();
    const known = this.verified.get(token);
    if (known !== undefined) {
      if (known.expiresAt * 1000 > now) return known;
      this.verified.delete(token);
      throw new AppError('expired_token', 'The access token has expired; refresh it.');
    }
    if (now - this.keysLoadedAt >= KEY_RECHECK_MS) await this.reload();
    let payload: Record<string, unknown>;
    let header: JWTHeaderParameters;
    try {
      ({ payload, protectedHeader: header } = await jwtVerify(token, (h) => this.keyFor(h.kid, now), {
        algorithms: [ACCESS_TOKEN_ALG], issuer: ACCESS_TOKEN_ISSUER, audience: ACCESS_TOKEN_AUDIENCE, typ: ACCESS_TOKEN_TYPE,
        requiredClaims: [...REQUIRED_CLAIMS], currentDate: new Date(now), maxTokenAge: ACCESS_TOKEN_TTL_S,
      }));
    } catch (err) {
      if (err instanceof AppError) throw err;
      if (err instanceof errors.JWTExpired) throw new AppError('expired_token', 'The access token has expired; refresh it.');
      if (err instanceof errors.JOSEError) throw invalid('The access token is not valid.');
      throw err;
    }
    if (typeof payload.sub !== 'string' || typeof payload.jti !== 'string' || typeof payload.exp !== 'number' || typeof payload.iat !== 'number') {
      throw invalid('The access token is not valid.');
    }
    const result: VerifiedAccessToken = {
      userId: payload.sub, tokenId: payload.jti, sessionId: typeof payload.sid === 'string' ? payload.sid : null, kid: header.kid!,
      issuedAt: payload.iat, expiresAt: payload.exp,
    };
    // Remembered until it expires, or until its key's window closes if that is sooner.
    const retiredAt = this.publicKeys.get(result.kid)?.retiredAt ?? null;
    const windowEnd = retiredAt === null ? Number.POSITIVE_INFINITY : Math.floor(retiredAt / 1000) + ACCESS_TOKEN_TTL_S;
    const accepted = { ...result, expiresAt: Math.min(result.expiresAt, windowEnd) };
    this.verified.set(token, accepted);
    if (this.verified.size > this.cacheSize) this.verified.delete(this.verified.keys().next().value!);
    return accepted;
  }

  /** The public key for `kid`, reloading the keys once (at most every KEY_RELOAD_MIN_MS) when it is unknown. */
  private async keyFor(kid: string | undefined, now: number): Promise<Key> {
    if (typeof kid !== 'string' || kid === '') throw invalid('The access token names no signing key.');
    let entry = this.publicKeys.get(kid);
    if (entry === undefined && now - this.keysLoadedAt >= KEY_RELOAD_MIN_MS) {
      await this.reload();
      entry = this.publicKeys.get(kid);
    }
    if (entry === undefined) throw invalid('The access token was signed with an unknown key.');
    if (entry.retiredAt !== null && now >= entry.retiredAt + ACCESS_TOKEN_TTL_S * 1000) {
      throw invalid('The access token was signed with a retired key.');
    }
    return entry.key;
  }

  /** Re-reads the verifiable keys from the store (one read at a time). */
  private reload(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const now = this.now();
        this.keyLoads++;
        const rows = await this.keys.verifiable(new Date(now - ACCESS_TOKEN_TTL_S * 1000).toISOString());
        const seen = new Set<string>();
        for (const row of rows) {
          seen.add(row.kid);
          const retiredAt = row.retired_at === null ? null : Date.parse(row.retired_at);
          const entry = this.publicKeys.get(row.kid);
          if (entry) entry.retiredAt = retiredAt;
          else this.publicKeys.set(row.kid, { key: await importJWK(row.public_jwk, ACCESS_TOKEN_ALG), retiredAt });
        }
        for (const kid of [...this.publicKeys.keys()]) if (!seen.has(kid)) this.publicKeys.delete(kid);
        this.keysLoadedAt = now;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }
}
