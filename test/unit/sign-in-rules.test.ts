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
  const refusal = (f: () => unknown) => {
    try { f(); } catch (err) { return err; }
    return 'allowed';
  };

  it('refuses an address that used its failures on an account, with rate_limited and Retry-After; success gives the attempt back', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 2, perAddress: 100, accountCeiling: 100, windowMs: 60_000, now: c.now });
    t.take('ada@example.com', '10.0.0.1');
    const ok = t.take('ada@example.com', '10.0.0.1');
    t.refund(ok);
    t.take('ada@example.com', '10.0.0.1');
    expect(refusal(() => t.take('ada@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited', status: 429, headers: { 'Retry-After': '30' } });
    // Other accounts from the same address are not affected, and neither is this account from another address.
    expect(t.take('bob@example.com', '10.0.0.1')).toMatchObject({ account: 'bob@example.com', address: '10.0.0.1' });
    expect(t.take('ada@example.com', '10.0.0.2')).toMatchObject({ account: 'ada@example.com', address: '10.0.0.2' });
    c.advance(30_000);
    expect(t.take('ada@example.com', '10.0.0.1')).toMatchObject({ account: 'ada@example.com', address: '10.0.0.1' });
  });

  it('a process among several keeps its share of the budget: with 2 processes, half the failures per address and account', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 4, perAddress: 100, accountCeiling: 100, windowMs: 60_000, now: c.now, processes: () => 2 });
    t.take('ada@example.com', '10.0.0.1');
    t.take('ada@example.com', '10.0.0.1');
    expect(refusal(() => t.take('ada@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited', status: 429, headers: { 'Retry-After': '30' } });
  });

  it('refuses an address that used its failures, for any account, and a refused attempt counts nowhere', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 100, perAddress: 2, accountCeiling: 100, windowMs: 10_000, now: c.now });
    t.take('a@example.com', '10.0.0.9');
    t.take('b@example.com', '10.0.0.9');
    expect(refusal(() => t.take('c@example.com', '10.0.0.9'))).toMatchObject({ code: 'rate_limited', headers: { 'Retry-After': '5' } });
    // c's buckets were not charged for the refused attempt: its ceiling of 100 fits from elsewhere.
    for (let i = 0; i < 100; i++) t.take('c@example.com', `10.1.0.${i}`);
    // Past the ceiling an address that failed on c within the window is refused...
    expect(refusal(() => t.take('c@example.com', '10.1.0.7'))).toMatchObject({ code: 'rate_limited' });
    // ...while one that never failed on c still gets its attempt (security review, finding 10).
    expect(t.take('c@example.com', '10.2.0.1')).toMatchObject({ account: 'c@example.com', address: '10.2.0.1', countedOnAccount: false });
  });

  it('failures from other addresses never stop the owner from a clean address (the review\'s lockout: 11 wrong passwords, then one every 90 s)', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 10, perAddress: 100, accountCeiling: 100, windowMs: 15 * 60_000, now: c.now });
    for (let i = 0; i < 11; i++) refusal(() => t.take('owner@example.com', '203.0.113.9'));
    expect(refusal(() => t.take('owner@example.com', '203.0.113.9'))).toMatchObject({ code: 'rate_limited' });
    const owner = t.take('owner@example.com', '198.51.100.4');
    t.refund(owner);
    // The attacker keeps trying once every 90 s for an hour: the owner still signs in every time.
    for (let minute = 0; minute < 60; minute += 1.5) {
      c.advance(90_000);
      refusal(() => t.take('owner@example.com', '203.0.113.9'));
      const again = t.take('owner@example.com', '198.51.100.4');
      t.refund(again);
    }
    expect(t.take('owner@example.com', '198.51.100.4')).toMatchObject({ address: '198.51.100.4' });
  });

  it('past the ceiling each address gets one guess per window on the account; a clean address passes, once', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 3, windowMs: 60_000, now: c.now });
    for (const a of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) t.take('ada@example.com', a);
    // Ceiling used: 10.0.0.1 failed 0 s ago and may not try for 20 s (the ceiling's next token) at most.
    expect(refusal(() => t.take('ada@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited', headers: { 'Retry-After': '20' } });
    // A clean address passes (not counted on the ceiling) and is then marked: its second try is refused.
    expect(t.take('ada@example.com', '10.0.0.4')).toMatchObject({ countedOnAccount: false });
    expect(refusal(() => t.take('ada@example.com', '10.0.0.4'))).toMatchObject({ code: 'rate_limited' });
  });

  it('the latest failure of an address restarts its window', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 1, windowMs: 60_000, now: c.now });
    t.take('ada@example.com', '10.0.0.1'); // the ceiling is used
    expect(t.take('ada@example.com', '10.0.0.5')).toMatchObject({ countedOnAccount: false }); // clean: fails at 0 s
    c.advance(60_000);
    expect(t.take('ada@example.com', '10.0.0.5')).toMatchObject({ countedOnAccount: true }); // the ceiling's token: fails at 60 s
    c.advance(40_000);
    // Clean 60 s after its first failure it would pass now; its second failure keeps it out until 120 s.
    expect(refusal(() => t.take('ada@example.com', '10.0.0.5'))).toMatchObject({ code: 'rate_limited', headers: { 'Retry-After': '20' } });
    c.advance(20_000);
    expect(t.take('ada@example.com', '10.0.0.5')).toMatchObject({ address: '10.0.0.5' });
  });

  it('a refused attempt takes nothing: the address, the pair and the account get back what they gave', () => {
    const c = clock();
    // Refused by the pair: the address keeps its token.
    const t = new LoginThrottle({ perAccount: 1, perAddress: 2, accountCeiling: 100, windowMs: 60_000, now: c.now });
    t.take('a@example.com', '10.0.0.1');
    expect(refusal(() => t.take('a@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited', message: 'Too many failed sign-ins; retry in 60 s.' });
    expect(t.take('b@example.com', '10.0.0.1')).toMatchObject({ account: 'b@example.com' });
    // Refused by the address, again and again: it gets nothing back that it had not given.
    expect(refusal(() => t.take('c@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited' });
    expect(refusal(() => t.take('d@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited' });
    // ...and the pair (d, 10.0.0.1) was given back: half a window later the address has one token, and d may use it.
    c.advance(30_000);
    expect(t.take('d@example.com', '10.0.0.1')).toMatchObject({ account: 'd@example.com' });

    // Refused by the address: the account's ceiling token comes back too.
    const u = new LoginThrottle({ perAccount: 5, perAddress: 1, accountCeiling: 1, windowMs: 60_000, now: c.now });
    u.take('z@example.com', '10.0.0.9');
    expect(refusal(() => u.take('a@example.com', '10.0.0.9'))).toMatchObject({ code: 'rate_limited' });
    expect(u.take('a@example.com', '10.0.0.8')).toMatchObject({ countedOnAccount: true });
  });

  it('past the ceiling a failed address waits for the earlier of the ceiling\'s next token and its own 15 minutes', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 1, windowMs: 60_000, now: c.now });
    t.take('a@example.com', '10.0.0.1'); // fails at 0: the ceiling is used, refilled at 60 s
    c.advance(59_000);
    t.take('a@example.com', '10.0.0.2'); // clean: passes uncounted; 10.0.0.1 is clean again at 60 s
    expect(refusal(() => t.take('a@example.com', '10.0.0.1'))).toMatchObject({ headers: { 'Retry-After': '1' } });
  });

  it('a success gives back the ceiling\'s token it took, and only that', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 1, windowMs: 60_000, now: c.now });
    t.refund(t.take('a@example.com', '10.0.0.1'));
    expect(t.take('a@example.com', '10.0.0.1')).toMatchObject({ countedOnAccount: true }); // the token came back
    const clean = t.take('a@example.com', '10.0.0.2');
    expect(clean).toMatchObject({ countedOnAccount: false });
    t.refund(clean); // took no ceiling token: gives none
    expect(refusal(() => t.take('a@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited' });
  });

  it('of two attempts from one address at once, a success of the first leaves the failure of the second marked', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 2, windowMs: 60_000, now: c.now });
    const first = t.take('a@example.com', '10.0.0.1');
    const second = t.take('a@example.com', '10.0.0.1'); // still being checked when the first succeeds
    expect(second).toMatchObject({ countedOnAccount: true });
    t.refund(first); // its ceiling token comes back...
    t.take('a@example.com', '10.0.0.8'); // ...and another address takes it
    expect(refusal(() => t.take('a@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited' });
  });

  it('a success keeps the address\'s earlier failure marked', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 2, windowMs: 60_000, now: c.now });
    t.take('a@example.com', '10.0.0.1'); // fails at 0
    c.advance(10_000);
    t.refund(t.take('a@example.com', '10.0.0.1')); // succeeds at 10 s
    t.take('a@example.com', '10.0.0.7');
    t.take('a@example.com', '10.0.0.8'); // the ceiling is used
    c.advance(5_000);
    expect(refusal(() => t.take('a@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited' });
  });

  it('remembers the failures of at most maxKeys account-address pairs, forgetting the least recently marked', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 2, windowMs: 60_000, maxKeys: 2, now: c.now });
    t.take('a@example.com', '10.0.0.1');
    t.take('a@example.com', '10.0.0.2'); // both marked; the ceiling is used
    expect(refusal(() => t.take('a@example.com', '10.0.0.1'))).toMatchObject({ code: 'rate_limited' });
    expect(refusal(() => t.take('a@example.com', '10.0.0.2'))).toMatchObject({ code: 'rate_limited' });
    t.take('a@example.com', '10.0.0.3'); // clean, marked: 10.0.0.1 is forgotten
    expect(t.take('a@example.com', '10.0.0.1')).toMatchObject({ countedOnAccount: false });
  });

  it('a success puts the address back as clean: the owner\'s own sign-ins never mark it', () => {
    const c = clock();
    const t = new LoginThrottle({ perAccount: 5, perAddress: 1000, accountCeiling: 1, windowMs: 60_000, now: c.now });
    t.refund(t.take('ada@example.com', '10.0.0.1')); // the owner signs in
    t.take('ada@example.com', '10.0.0.9'); // an attacker uses the ceiling
    expect(t.take('ada@example.com', '10.0.0.1')).toMatchObject({ countedOnAccount: false });
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
