/**
 * AccessCache (src/auth/access-cache.ts): person checks and ended sign-ins read once, then from memory,
 * until a forget (the feed told of a change), the entry's time to live, or the size bound drops them; a
 * read in flight across a forget is answered but not kept.
 */
import { describe, expect, it } from 'vitest';
import { AccessCache } from '../../src/auth/access-cache.js';
import type { MemberCheck, RefreshFamilyRecord } from '../../src/store/records.js';

/** A store stand-in that counts reads and answers from maps the test changes; `hold` delays answers. */
function fakeStore() {
  const members = new Map<string, MemberCheck>();
  const families = new Map<string, RefreshFamilyRecord>();
  let release: (() => void) | undefined;
  const held = { on: false };
  const reads = { member: 0, family: 0 };
  const wait = () => (held.on ? new Promise<void>((r) => { release = r; }) : Promise.resolve());
  return {
    members, families, reads, held, release: () => release?.(),
    memberships: { check: async (org: string, user: string) => { reads.member++; const v = members.get(`${org}/${user}`) ?? { status: 'no_user' as const }; await wait(); return v; } },
    refreshTokens: { getFamily: async (id: string) => { reads.family++; const v = families.get(id); await wait(); return v; } },
  };
}

const member = (role: 'owner' | 'admin' | 'operator'): MemberCheck => ({ status: 'member', role, access_valid_after: null });
const family = (id: string, revoked_at: string | null): RefreshFamilyRecord => ({ id, user_id: 'usr_1', created_at: 't', absolute_expires_at: 't', revoked_at, revoked_reason: null });

describe('AccessCache', () => {
  it('reads a member check once, then answers synchronously from memory', async () => {
    const s = fakeStore();
    s.members.set('org_1/usr_1', member('admin'));
    const cache = new AccessCache(s.memberships, s.refreshTokens);
    const first = cache.member('org_1', 'usr_1');
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toEqual(member('admin'));
    expect(cache.member('org_1', 'usr_1')).toEqual(member('admin'));
    expect(s.reads.member).toBe(1);
    expect(cache.size).toBe(1);
  });

  it('forgetMember drops that member only; forgetUser drops the person in every organization', async () => {
    const s = fakeStore();
    s.members.set('org_1/usr_1', member('admin'));
    s.members.set('org_2/usr_1', member('owner'));
    s.members.set('org_1/usr_2', member('operator'));
    const cache = new AccessCache(s.memberships, s.refreshTokens);
    for (const [o, u] of [['org_1', 'usr_1'], ['org_2', 'usr_1'], ['org_1', 'usr_2']] as const) await cache.member(o, u);
    s.members.set('org_1/usr_1', { status: 'not_a_member', access_valid_after: null });
    cache.forgetMember('org_1', 'usr_1');
    expect(await cache.member('org_1', 'usr_1')).toEqual({ status: 'not_a_member', access_valid_after: null });
    expect(cache.member('org_2', 'usr_1')).toEqual(member('owner'));
    expect(s.reads.member).toBe(4);
    s.members.set('org_2/usr_1', member('operator'));
    cache.forgetUser('usr_1');
    expect(cache.member('org_1', 'usr_2')).toEqual(member('operator'));
    expect(await cache.member('org_2', 'usr_1')).toEqual(member('operator'));
    expect(cache.member('org_1', 'usr_1')).toBeInstanceOf(Promise);
    expect(s.reads.member).toBe(6);
  });

  it('sessionEnded: revoked or unknown families are ended; forgetSession makes it read again', async () => {
    const s = fakeStore();
    s.families.set('rtf_live', family('rtf_live', null));
    s.families.set('rtf_gone', family('rtf_gone', '2025-01-01T00:00:00.000Z'));
    const cache = new AccessCache(s.memberships, s.refreshTokens);
    expect(await cache.sessionEnded('rtf_live')).toBe(false);
    expect(await cache.sessionEnded('rtf_gone')).toBe(true);
    expect(await cache.sessionEnded('rtf_unknown')).toBe(true);
    expect(cache.sessionEnded('rtf_live')).toBe(false);
    expect(s.reads.family).toBe(3);
    s.families.set('rtf_live', family('rtf_live', '2025-01-02T00:00:00.000Z'));
    cache.forgetSession('rtf_live');
    expect(await cache.sessionEnded('rtf_live')).toBe(true);
    expect(cache.sessionEnded('rtf_live')).toBe(true);
    expect(s.reads.family).toBe(4);
  });

  it('a read that was in flight when something was forgotten is answered but not kept', async () => {
    const s = fakeStore();
    s.members.set('org_1/usr_1', member('admin'));
    s.families.set('rtf_1', family('rtf_1', null));
    const cache = new AccessCache(s.memberships, s.refreshTokens);
    s.held.on = true;
    const pending = cache.member('org_1', 'usr_1');
    cache.forgetMember('org_1', 'usr_1');
    s.release();
    expect(await pending).toEqual(member('admin'));
    s.held.on = false;
    expect(cache.member('org_1', 'usr_1')).toBeInstanceOf(Promise);
    s.held.on = true;
    const session = cache.sessionEnded('rtf_1');
    cache.forgetUser('usr_9');
    s.release();
    expect(await session).toBe(false);
    s.held.on = false;
    expect(cache.sessionEnded('rtf_1')).toBeInstanceOf(Promise);
  });

  it('entries expire after their time to live; clear drops everything; the oldest go past the bound', async () => {
    let now = 1_000;
    const s = fakeStore();
    for (const u of ['usr_1', 'usr_2', 'usr_3']) s.members.set(`org_1/${u}`, member('admin'));
    const cache = new AccessCache(s.memberships, s.refreshTokens, { ttlMs: 100, maxEntries: 2, now: () => now });
    await cache.member('org_1', 'usr_1');
    now = 1_099;
    expect(cache.member('org_1', 'usr_1')).toEqual(member('admin'));
    now = 1_100;
    expect(cache.member('org_1', 'usr_1')).toBeInstanceOf(Promise);
    await cache.member('org_1', 'usr_1');
    await cache.member('org_1', 'usr_2');
    await cache.member('org_1', 'usr_3');
    expect(cache.size).toBe(2);
    expect(cache.member('org_1', 'usr_3')).toEqual(member('admin'));
    expect(cache.member('org_1', 'usr_1')).toBeInstanceOf(Promise);
    await cache.sessionEnded('rtf_x');
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
