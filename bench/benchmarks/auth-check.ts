/**
 * auth-check: what checking a request's credential costs Parley's event loop, in process, on the real
 * SQLite store (issue 35: access that ends at once must not slow the chat path). AccessService.authenticate
 * on a chat route's access rule, repeated, for:
 * - an API key (the chat hot path of the first-token bench: a cached lookup);
 * - a person's access token with its checks cached (src/auth/access-cache.ts: the person, their role and
 *   `access_valid_after`, and whether the sign-in ended: no store read);
 * - the same token with every check read from the store (the cache dropped before each request): what
 *   every person request cost before the cache (one membership read), plus the session read;
 * - the raw reads, for reference (MembershipsPort.check, RefreshTokensPort.getFamily).
 * Rows: microseconds per request, median of 5 rounds of 20,000 (smoke: 1 round of 2,000).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessCache } from '../../src/auth/access-cache.js';
import { AccessTokens } from '../../src/auth/access-tokens.js';
import { generateApiKey, hashApiKey } from '../../src/auth/api-keys.js';
import { ACCESS, AccessService } from '../../src/runtime/services/access.js';
import { withApiKeyCache } from '../../src/store/cached-api-keys.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { Ctx } from './common.js';

const ORG = 'org_bench';
const USER = 'usr_bench';
const SESSION = 'rtf_bench';

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export async function authCheck(ctx: Ctx): Promise<BenchOutcome> {
  const rounds = ctx.smoke ? 1 : 5;
  const perRound = ctx.smoke ? 2000 : 20_000;
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-auth-'));
  const raw = createSqliteStore(dir, { reader: 'main' });
  const store = withApiKeyCache(raw);
  try {
    const at = new Date().toISOString();
    await store.organizations.create({ id: ORG, name: 'Bench', created_at: at });
    await store.users.create({ id: USER, email: 'bench@example.com', password_hash: null, access_valid_after: null, created_at: at, updated_at: at });
    await store.memberships.add({ org_id: ORG, user_id: USER, role: 'owner', created_at: at });
    await store.refreshTokens.startFamily(
      { id: SESSION, user_id: USER, created_at: at, absolute_expires_at: new Date(Date.now() + 86_400_000).toISOString(), revoked_at: null, revoked_reason: null },
      { token_hash: 'h-bench', family_id: SESSION, created_at: at, expires_at: new Date(Date.now() + 86_400_000).toISOString(), used_at: null },
    );
    const secret = generateApiKey();
    await store.apiKeys.create({ id: 'key_bench', org_id: ORG, name: 'bench', key_hash: hashApiKey(secret), last4: secret.slice(-4), created_at: at, revoked_at: null, expires_at: null });
    const tokens = new AccessTokens(store.signingKeys);
    await tokens.init();
    const { token } = await tokens.issue(USER, SESSION);
    const cache = new AccessCache(store.memberships, store.refreshTokens);
    const access = new AccessService(store, tokens, cache);
    const query = new URLSearchParams();
    const keyHeaders = { authorization: `Bearer ${secret}` };
    const personHeaders = { authorization: `Bearer ${token}`, 'x-org-id': ORG };

    const time = async (label: string, run: () => Promise<unknown>): Promise<number> => {
      for (let i = 0; i < Math.min(perRound, 2000); i++) await run();
      const perReq: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const t0 = performance.now();
        for (let i = 0; i < perRound; i++) await run();
        perReq.push(((performance.now() - t0) * 1000) / perRound);
      }
      ctx.log(`auth-check: ${label}: ${median(perReq).toFixed(2)} us/request`);
      return median(perReq);
    };
    const apiKey = await time('API key', () => access.authenticate(keyHeaders, query, ACCESS.member));
    const personCached = await time('person token, checks cached', () => access.authenticate(personHeaders, query, ACCESS.member));
    const personUncached = await time('person token, checks read', () => {
      cache.clear();
      return access.authenticate(personHeaders, query, ACCESS.member);
    });
    const memberRead = await time('membership read', () => store.memberships.check(ORG, USER));
    const sessionRead = await time('session read', () => store.refreshTokens.getFamily(SESSION));

    const bench = 'auth-check';
    const row = (metric: string, v: number): Row => ({ bench, metric, unit: 'us', better: 'lower', parley: v, baseline: null, floor: null, portkey: null, direct: null });
    const rows: Row[] = [
      row('API key, per request (the chat path)', apiKey),
      row('person access token, checks cached, per request', personCached),
      row('person access token, checks read from the store, per request', personUncached),
      row('one membership read (what every person request cost before the cache)', memberRead),
      row('one session read', sessionRead),
    ];
    return {
      name: bench, rows, config: { rounds, per_round: perRound, store: 'sqlite, reader on the main thread' },
      results: { api_key_us: apiKey, person_cached_us: personCached, person_uncached_us: personUncached, membership_read_us: memberRead, session_read_us: sessionRead },
      charts: [], notes: ['In process, no HTTP: the cost of the check alone. The first-token bench (API keys) shows the chat path end to end.'],
    };
  } finally {
    await raw.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
