/**
 * Access tokens (src/auth/access-tokens.ts) without a server or a clock: a fixed time is passed in, keys
 * live in an in-memory SigningKeysPort. Expected values are literals; no assertion sits inside an `if`.
 */
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { AccessTokens, newSigningKey } from '../../src/auth/access-tokens.js';
import type { SigningKeysPort } from '../../src/store/ports.js';
import type { SigningKeyRecord } from '../../src/store/records.js';

/** 2023-11-14T22:13:20Z, in ms. */
const T = 1_700_000_000_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** SigningKeysPort in memory, with the store's semantics (one active key, verifiable by retirement time). */
function memoryKeys(): SigningKeysPort & { rows: SigningKeyRecord[] } {
  const rows: SigningKeyRecord[] = [];
  return {
    rows,
    async active() { return rows.find((k) => k.retired_at === null); },
    async verifiable(after) { return rows.filter((k) => k.retired_at === null || k.retired_at > after).reverse(); },
    async ensureActive(candidate) {
      const active = rows.find((k) => k.retired_at === null);
      if (active) return active;
      rows.push(candidate);
      return candidate;
    },
    async rotate(next, at) {
      const retired = rows.filter((k) => k.retired_at === null).map((k) => { k.retired_at = at; return k.kid; });
      rows.push(next);
      return retired;
    },
  };
}

/** A SigningKeysPort holding just `key`, active. */
function memoryKeysWith(key: SigningKeyRecord): SigningKeysPort {
  const keys = memoryKeys();
  keys.rows.push(key);
  return keys;
}

/** A clock the test moves by hand. */
function clock(start = T) {
  let now = start;
  return { now: () => now, set: (ms: number) => { now = ms; } };
}

/** A token signed with `key` (private JWK) with the given header and claims, whatever they are. */
async function sign(key: SigningKeyRecord, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const priv = await importJWK(key.private_jwk, 'EdDSA');
  return new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'at+jwt', ...header }).sign(priv);
}

const validClaims = (sec: number) => ({ iss: 'parley', aud: 'parley-api', sub: 'usr_1', iat: sec, exp: sec + 900, jti: 'jti-1', client_id: 'parley' });

async function setup() {
  const keys = memoryKeys();
  const c = clock();
  const tokens = new AccessTokens(keys, { now: c.now });
  await tokens.init();
  return { keys, c, tokens, key: keys.rows[0]! };
}

describe('access tokens: what is signed', () => {
  it('makes one Ed25519 key on init and names it by its RFC 7638 thumbprint', async () => {
    const { keys, key } = await setup();
    expect(keys.rows).toHaveLength(1);
    expect(key).toMatchObject({ algorithm: 'EdDSA', created_at: '2023-11-14T22:13:20.000Z', retired_at: null, public_jwk: { kty: 'OKP', crv: 'Ed25519' } });
    expect(key.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Object.keys(key.private_jwk).sort()).toEqual(['crv', 'd', 'kty', 'x']);
  });

  it('signs the RFC 9068 header and claims with a 900 s lifetime', async () => {
    const { tokens, key } = await setup();
    const issued = await tokens.issue('usr_42');
    expect(decodeProtectedHeader(issued.token)).toEqual({ alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' });
    const claims = decodeJwt(issued.token);
    expect(claims).toEqual({
      iss: 'parley', aud: 'parley-api', sub: 'usr_42', iat: 1_700_000_000, exp: 1_700_000_900,
      jti: claims.jti, client_id: 'parley',
    });
    expect(claims.jti).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(issued.expiresIn).toBe(900);
    expect(issued.kid).toBe(key.kid);
  });

  it('gives every token its own jti', async () => {
    const { tokens } = await setup();
    const a = decodeJwt((await tokens.issue('usr_1')).token).jti;
    const b = decodeJwt((await tokens.issue('usr_1')).token).jti;
    expect(a).not.toBe(b);
  });
});

describe('access tokens: verification', () => {
  it('accepts its own token until exp, then says expired_token', async () => {
    const { tokens, c, key } = await setup();
    const { token } = await tokens.issue('usr_1');
    c.set(T + 899_999);
    expect(await tokens.verify(token)).toEqual({ userId: 'usr_1', tokenId: decodeJwt(token).jti, sessionId: null, kid: key.kid, issuedAt: 1_700_000_000, expiresAt: 1_700_000_900 });
    c.set(T + 900_000);
    await expect(tokens.verify(token)).rejects.toMatchObject({ code: 'expired_token', status: 401 });
  });

  it('carries the sign-in as the sid claim when issued for one, and gives it back on verification', async () => {
    const { tokens, key } = await setup();
    const { token, claims } = await tokens.issue('usr_1', 'rtf_family1');
    expect(claims.sid).toBe('rtf_family1');
    expect(decodeJwt(token).sid).toBe('rtf_family1');
    expect(await tokens.verify(token)).toEqual({ userId: 'usr_1', tokenId: decodeJwt(token).jti, sessionId: 'rtf_family1', kid: key.kid, issuedAt: 1_700_000_000, expiresAt: 1_700_000_900 });
  });

  it('says expired_token for an unseen token past exp too (no cache involved)', async () => {
    const { tokens, c, key } = await setup();
    const token = await sign(key, validClaims(1_700_000_000));
    c.set(T + 901_000);
    await expect(tokens.verify(token)).rejects.toMatchObject({ code: 'expired_token' });
  });

  it('refuses a token whose iat is more than 900 s old, whatever its exp', async () => {
    const { tokens, c, key } = await setup();
    const token = await sign(key, { ...validClaims(1_700_000_000), exp: 1_800_000_000 });
    c.set(T + 900_999);
    expect((await new AccessTokens(memoryKeysWith(key), { now: c.now }).verify(token)).userId).toBe('usr_1');
    c.set(T + 901_000);
    await expect(tokens.verify(token)).rejects.toMatchObject({ code: 'expired_token' });
  });

  it.each([
    ['wrong iss', { iss: 'someone-else' }, {}],
    ['wrong aud', { aud: 'another-api' }, {}],
    ['no jti', { jti: undefined }, {}],
    ['no client_id', { client_id: undefined }, {}],
    ['no sub', { sub: undefined }, {}],
    ['typ JWT', {}, { typ: 'JWT' }],
    ['no typ', {}, { typ: undefined }],
    ['unknown kid', {}, { kid: 'no-such-key' }],
    ['no kid', {}, { kid: undefined }],
  ])('refuses a token with %s as invalid_token', async (_name, claims, header) => {
    const { tokens, key } = await setup();
    const token = await sign(key, { ...validClaims(1_700_000_000), ...claims }, header);
    await expect(tokens.verify(token)).rejects.toMatchObject({ code: 'invalid_token', status: 401 });
  });

  it('refuses alg none, and HS256 made with the public key as the secret (algorithm pinned)', async () => {
    const { tokens, key } = await setup();
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const none = `${b64({ alg: 'none', typ: 'at+jwt', kid: key.kid })}.${b64(validClaims(1_700_000_000))}.`;
    await expect(tokens.verify(none)).rejects.toMatchObject({ code: 'invalid_token' });
    const hs = await new SignJWT(validClaims(1_700_000_000)).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: key.kid })
      .sign(new TextEncoder().encode(JSON.stringify(key.public_jwk)));
    await expect(tokens.verify(hs)).rejects.toMatchObject({ code: 'invalid_token' });
  });

  it('refuses a token whose signature was changed', async () => {
    const { tokens } = await setup();
    const { token } = await tokens.issue('usr_1');
    const [h, p, sig] = token.split('.') as [string, string, string];
    const bytes = Buffer.from(sig, 'base64url');
    bytes[10] = bytes[10]! ^ 0x01;
    await expect(tokens.verify(`${h}.${p}.${bytes.toString('base64url')}`)).rejects.toMatchObject({ code: 'invalid_token' });
  });
});

describe('access tokens: key rotation', () => {
  it('signs with the new key after a rotation; tokens of the retired key verify for 900 s after the retirement, then no longer', async () => {
    const { tokens, keys, c, key: first } = await setup();
    const old = await tokens.issue('usr_1');
    const second = await newSigningKey(iso(T + 100_000));
    c.set(T + 100_000);
    expect(await keys.rotate(second, iso(T + 100_000))).toEqual([first.kid]);
    const fresh = await tokens.issue('usr_1');
    expect(decodeProtectedHeader(fresh.token).kid).toBe(second.kid);
    expect((await tokens.verify(old.token)).kid).toBe(first.kid);
    // A token of the retired key that is still inside its own lifetime (forged here with a later iat to
    // outlive the key's window) stops verifying when the window closes: retirement + 900 s.
    const late = await sign(first, validClaims(1_700_000_500));
    c.set(T + 999_999);
    expect(await tokens.verify(late)).toMatchObject({ kid: first.kid, expiresAt: 1_700_001_000 });
    c.set(T + 1_000_000);
    await expect(tokens.verify(late)).rejects.toMatchObject({ code: 'expired_token' });
    const unseen = await sign(first, { ...validClaims(1_700_000_500), jti: 'jti-2' });
    c.set(T + 1_000_000 + 60_000);
    await expect(tokens.verify(unseen)).rejects.toMatchObject({ code: 'invalid_token' });
  });

  it('learns a key made by another process on an unknown kid, reloading at most once per second', async () => {
    const { tokens, keys, c, key: first } = await setup();
    expect(tokens.keyLoads).toBe(1);
    // Another process (the CLI) rotates; this process has not signed with the new key yet.
    const second = await newSigningKey(iso(T));
    await keys.rotate(second, iso(T));
    const token = await sign(second, validClaims(1_700_000_000));
    // Within a second of the last load: no reload, the kid is unknown.
    c.set(T + 999);
    await expect(tokens.verify(token)).rejects.toMatchObject({ code: 'invalid_token' });
    expect(tokens.keyLoads).toBe(1);
    c.set(T + 1_000);
    expect((await tokens.verify(token)).kid).toBe(second.kid);
    expect(tokens.keyLoads).toBe(2);
    // Garbage kids in a burst cost at most one reload per second.
    for (let i = 0; i < 5; i++) await expect(tokens.verify(await sign(first, validClaims(1_700_000_000), { kid: `bogus-${i}` }))).rejects.toMatchObject({ code: 'invalid_token' });
    expect(tokens.keyLoads).toBe(2);
    c.set(T + 2_000);
    await expect(tokens.verify(await sign(first, validClaims(1_700_000_000), { kid: 'bogus-x' }))).rejects.toMatchObject({ code: 'invalid_token' });
    expect(tokens.keyLoads).toBe(3);
  });

  it('re-reads the keys at most once a minute on the verification path, and a verified token costs no read', async () => {
    const { tokens, c } = await setup();
    const { token } = await tokens.issue('usr_1');
    await tokens.verify(token);
    c.set(T + 59_999);
    await tokens.verify(token);
    const other = await tokens.issue('usr_2');
    await tokens.verify(other.token);
    expect(tokens.keyLoads).toBe(1);
    c.set(T + 60_000);
    await tokens.verify((await tokens.issue('usr_3')).token);
    expect(tokens.keyLoads).toBe(2);
  });
});
