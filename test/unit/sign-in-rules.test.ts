/**
 * The building blocks of sign-in without a server: token buckets and the login throttle (a clock passed
 * in), the password hasher's concurrency bound and dummy verification, e-mail and password rules, and the
 * shape of opaque tokens. Literal expectations; no wall-clock bounds; no assertion inside an `if`.
 */
import { describe, expect, it } from 'vitest';
import { emailProblem, normalizeEmail, passwordProblem } from '../../src/auth/identity.js';
import { LoginThrottle } from '../../src/auth/login-throttle.js';
import { hashOpaqueToken, isOpaqueToken, newOpaqueToken } from '../../src/auth/opaque-tokens.js';
import { ARGON2_PARAMS, PasswordHasher } from '../../src/auth/passwords.js';
import { TokenBuckets } from '../../src/auth/token-buckets.js';

function clock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => { now += ms; } };
}

describe('token buckets', () => {
  it('allow a burst of capacity, then one per window/capacity', () => {
    const c = clock();
    const b = new TokenBuckets({ capacity: 3, windowMs: 3000, now: c.now });
    expect([b.take('a'), b.take('a'), b.take('a')]).toEqual([0, 0, 0]);
    expect(b.take('a')).toBe(1000);
    c.advance(400);
    expect(b.take('a')).toBe(600);
    c.advance(600);
    expect(b.take('a')).toBe(0);
    expect(b.take('a')).toBe(1000);
    // Another key has its own bucket.
    expect(b.take('b')).toBe(0);
  });

  it('refill up to capacity only, and refund gives one back', () => {
    const c = clock();
    const b = new TokenBuckets({ capacity: 2, windowMs: 1000, now: c.now });
    b.take('a');
    b.take('a');
    b.refund('a');
    expect(b.take('a')).toBe(0);
    expect(b.take('a')).toBe(500);
    c.advance(60_000);
    expect([b.take('a'), b.take('a'), b.take('a')]).toEqual([0, 0, 500]);
  });

  it('a process that shares the budget with others keeps its share of it, at least one token, in the same window', () => {
    const c = clock();
    let processes = 3;
    const b = new TokenBuckets({ capacity: 6, windowMs: 6000, now: c.now, divisor: () => processes });
    expect([b.take('a'), b.take('a'), b.take('a')]).toEqual([0, 0, 3000]);
    c.advance(3000);
    expect(b.take('a')).toBe(0);
    processes = 1;
    c.advance(6000);
    expect([b.take('a'), b.take('a'), b.take('a'), b.take('a'), b.take('a'), b.take('a'), b.take('a')]).toEqual([0, 0, 0, 0, 0, 0, 1000]);
    processes = 100;
    c.advance(60_000);
    expect([b.take('z'), b.take('z')]).toEqual([0, 6000]);
  });

  it('remember at most maxKeys keys, forgetting the least recently used', () => {
    const c = clock();
    const b = new TokenBuckets({ capacity: 1, windowMs: 1000, maxKeys: 2, now: c.now });
    b.take('a');
    b.take('b');
    b.take('a'); // a is now the most recently used
    b.take('c'); // forgets b
    expect(b.size).toBe(2);
    expect(b.take('b')).toBe(0);
    expect(b.take('c')).toBe(1000);
  });
});

describe('login throttle', () => {
  it('refuses with rate_limited and Retry-After once an account has used its failures; success gives the attempt back', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 2, perAddress: 100, windowMs: 60_000, now: c.now });
    t.take('ada@example.com', '10.0.0.1');
    const ok = t.take('ada@example.com', '10.0.0.1');
    t.refund(ok);
    t.take('ada@example.com', '10.0.0.2');
    let error: unknown;
    try { t.take('ada@example.com', '10.0.0.3'); } catch (err) { error = err; }
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, headers: { 'Retry-After': '30' } });
    // Other accounts from the same addresses are not affected.
    expect(t.take('bob@example.com', '10.0.0.3')).toEqual({ account: 'bob@example.com', address: '10.0.0.3' });
    c.advance(30_000);
    expect(t.take('ada@example.com', '10.0.0.3')).toEqual({ account: 'ada@example.com', address: '10.0.0.3' });
  });

  it('refuses an address that used its failures, for any account, and a refused attempt counts nowhere', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 100, perAddress: 2, windowMs: 10_000, now: c.now });
    t.take('a@example.com', '10.0.0.9');
    t.take('b@example.com', '10.0.0.9');
    expect(() => t.take('c@example.com', '10.0.0.9')).toThrow(expect.objectContaining({ code: 'rate_limited', headers: { 'Retry-After': '5' } }));
    // c's account bucket was not charged for the refused attempt: 100 more fit from elsewhere.
    for (let i = 0; i < 100; i++) t.take('c@example.com', `10.1.0.${i}`);
    expect(() => t.take('c@example.com', '10.2.0.1')).toThrow(expect.objectContaining({ code: 'rate_limited' }));
  });
});

describe('password hasher', () => {
  it('hashes with argon2id and the documented parameters, and verifies', async () => {
    const h = new PasswordHasher({ concurrency: 1, maxWaiting: 10 });
    const phc = await h.hash('correct horse battery');
    expect(phc).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(ARGON2_PARAMS).toEqual({ memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32 });
    expect(await h.verify(phc, 'correct horse battery')).toBe(true);
    expect(await h.verify(phc, 'correct horse batterY')).toBe(false);
  });

  it('verifying for a missing person is false after the same work (a dummy hash), and a broken hash is false', async () => {
    const h = new PasswordHasher({ concurrency: 1, maxWaiting: 10 });
    expect(await h.verify(null, 'anything at all')).toBe(false);
    expect(await h.verify('not-a-phc-string', 'anything at all')).toBe(false);
  });

  it('runs at most `concurrency` hashes at once and refuses past maxWaiting with overloaded', async () => {
    const h = new PasswordHasher({ concurrency: 2, maxWaiting: 3 });
    let peak = 0;
    const watch = setInterval(() => { peak = Math.max(peak, h.running); }, 1);
    const work = Array.from({ length: 5 }, (_, i) => h.hash(`password-${i}`));
    const refused = await h.hash('one too many').then(() => 'hashed', (err: { code: string; headers: Record<string, string> }) => [err.code, err.headers]);
    await Promise.all(work);
    clearInterval(watch);
    expect(refused).toEqual(['overloaded', { 'Retry-After': '1' }]);
    expect(peak).toBe(2);
    expect(h.running).toBe(0);
  });
});

describe('e-mail and password rules', () => {
  it('normalizes e-mails by trimming and lower-casing', () => {
    expect(normalizeEmail('  Ada.Lovelace@Example.COM ')).toBe('ada.lovelace@example.com');
  });

  it('accepts e-mail addresses only', () => {
    expect(emailProblem('ada@example.com')).toBeUndefined();
    expect(emailProblem('ada')).toBe('must be an e-mail address of at most 254 characters');
    expect(emailProblem(`${'a'.repeat(250)}@example.com`)).toBe('must be an e-mail address of at most 254 characters');
  });

  it('wants 8..128 characters, counted as code points', () => {
    expect(passwordProblem('1234567')).toBe('must be at least 8 characters');
    expect(passwordProblem('12345678')).toBeUndefined();
    expect(passwordProblem('😀'.repeat(128))).toBeUndefined();
    expect(passwordProblem('x'.repeat(129))).toBe('must be at most 128 characters');
  });
});

describe('opaque tokens', () => {
  it('are prefix + 43 base64url characters (256 bits), stored as SHA-256 hex', () => {
    const rt = newOpaqueToken('rt');
    const wst = newOpaqueToken('wst');
    expect(rt).toMatch(/^rt_[A-Za-z0-9_-]{43}$/);
    expect(wst).toMatch(/^wst_[A-Za-z0-9_-]{43}$/);
    expect([isOpaqueToken(rt, 'rt'), isOpaqueToken(rt, 'wst'), isOpaqueToken(wst, 'wst'), isOpaqueToken(`${rt}x`, 'rt')]).toEqual([true, false, true, false]);
    expect(hashOpaqueToken('rt_abc')).toBe('069d93dc853db1a9c58a1b4ee4bbb256fe68981275e4c98518f241b370461633');
    expect(newOpaqueToken('rt')).not.toBe(rt);
  });
});
