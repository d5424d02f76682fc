/**
 * Refresh-token rotation as a model-based property test (fast-check `fc.commands` + `fc.asyncModelRun`)
 * against the running server: random sequences of login, refresh(i), replay(j), logout(i) and two
 * concurrent refreshes of one token, each checked against a model of the families (RFC 9700 section
 * 4.14.2): a live token refreshes once; a spent token presented again revokes its whole family; a
 * revoked family refreshes nothing; of two concurrent refreshes of a live token exactly one succeeds
 * (and the loser, a replay, then revokes the family).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type SessionBody, type TestServer } from '../helpers/server.js';

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer(); });
afterAll(async () => { await srv?.close(); });

interface Model {
  /** Every refresh token handed out, in order: its family and whether it was spent. */
  tokens: Array<{ family: number; spent: boolean }>;
  families: Array<{ revoked: boolean }>;
}

interface Real {
  email: string;
  password: string;
  /** The refresh tokens, parallel to Model.tokens. */
  tokens: string[];
}

const seen: Record<string, number> = {};
const count = (what: string) => { seen[what] = (seen[what] ?? 0) + 1; };

async function refresh(token: string): Promise<{ status: number; body: SessionBody | { error: { code: string } } }> {
  const res = await fetch(`${srv.url}/v1/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: token }) });
  return { status: res.status, body: await res.json() as SessionBody };
}

/** What the model says one refresh of token `i` does; applies it to the model. */
function expectRefresh(m: Model, i: number): 200 | 401 {
  const t = m.tokens[i]!;
  const family = m.families[t.family]!;
  if (family.revoked) return 401;
  if (t.spent) {
    family.revoked = true;
    return 401;
  }
  t.spent = true;
  return 200;
}

class Login implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const session = await srv.login(r.email, r.password);
    m.families.push({ revoked: false });
    m.tokens.push({ family: m.families.length - 1, spent: false });
    r.tokens.push(session.refresh_token);
    count('login');
  }
  toString = () => 'login';
}

class Refresh implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real) {
    const i = this.pick % m.tokens.length;
    const family = m.tokens[i]!.family;
    const expected = expectRefresh(m, i);
    const got = await refresh(r.tokens[i]!);
    expect(got.status, `refresh(${i})`).toBe(expected);
    if (expected === 200) {
      const next = got.body as SessionBody;
      m.tokens.push({ family, spent: false });
      r.tokens.push(next.refresh_token);
      const me = await fetch(`${srv.url}/v1/me`, { headers: { authorization: `Bearer ${next.access_token}` } });
      expect(me.status).toBe(200);
      count('refresh ok');
    } else {
      expect((got.body as { error: { code: string } }).error.code).toBe('invalid_refresh_token');
      count('refresh refused');
    }
  }
  toString = () => `refresh(${this.pick})`;
}

class Replay implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.tokens.some((t) => t.spent);
  async run(m: Model, r: Real) {
    const spent = m.tokens.map((t, i) => (t.spent ? i : -1)).filter((i) => i >= 0);
    const i = spent[this.pick % spent.length]!;
    const familyWasLive = !m.families[m.tokens[i]!.family]!.revoked;
    expect(expectRefresh(m, i)).toBe(401);
    const got = await refresh(r.tokens[i]!);
    expect(got.status, `replay(${i})`).toBe(401);
    count(familyWasLive ? 'replay revoked a live family' : 'replay on a revoked family');
  }
  toString = () => `replay(${this.pick})`;
}

class Logout implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real) {
    const i = this.pick % m.tokens.length;
    m.families[m.tokens[i]!.family]!.revoked = true;
    const res = await fetch(`${srv.url}/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: r.tokens[i] }) });
    expect(res.status).toBe(204);
    count('logout');
  }
  toString = () => `logout(${this.pick})`;
}

class ConcurrentRefresh implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real) {
    const i = this.pick % m.tokens.length;
    const t = m.tokens[i]!;
    const family = m.families[t.family]!;
    const live = !family.revoked && !t.spent;
    const results = await Promise.all([refresh(r.tokens[i]!), refresh(r.tokens[i]!)]);
    const statuses = results.map((x) => x.status).sort();
    if (live) {
      // Exactly one wins; the other is a replay of a spent token, which revokes the family.
      expect(statuses, `concurrent(${i})`).toEqual([200, 401]);
      t.spent = true;
      family.revoked = true;
      const winner = results.find((x) => x.status === 200)!.body as SessionBody;
      m.tokens.push({ family: t.family, spent: false });
      r.tokens.push(winner.refresh_token);
      count('concurrent: one of two won');
    } else {
      expect(statuses, `concurrent(${i})`).toEqual([401, 401]);
      family.revoked = true;
      count('concurrent: both refused');
    }
  }
  toString = () => `concurrentRefresh(${this.pick})`;
}

describe('refresh-token rotation (model-based)', () => {
  it('matches the model for random sequences of login, refresh, replay, logout and concurrent refresh', async () => {
    const pick = fc.nat({ max: 50 });
    const commands = fc.commands([
      fc.constant(new Login()),
      pick.map((n) => new Refresh(n)),
      pick.map((n) => new Replay(n)),
      pick.map((n) => new Logout(n)),
      pick.map((n) => new ConcurrentRefresh(n)),
    ], { maxCommands: 20 });
    await fc.assert(fc.asyncProperty(commands, async (cmds) => {
      const person = await srv.addPerson();
      const session = await srv.login(person.email, person.password);
      const setup = () => ({
        model: { tokens: [{ family: 0, spent: false }], families: [{ revoked: false }] } as Model,
        real: { email: person.email, password: person.password, tokens: [session.refresh_token] } as Real,
      });
      await fc.asyncModelRun(setup, cmds);
    }), { numRuns: 50 });
    console.log(`refresh rotation property: outcomes over all runs ${JSON.stringify(seen)}`);
    expect(seen['refresh ok'] ?? 0).toBeGreaterThan(0);
  });
});
