import type { MembershipsPort } from '../ports.js';
import type { MemberCheck, MemberRecord, UserOrganization } from '../records.js';
import { toPage, unknownCursor } from '../list-page.js';
import type { MongoContext } from './context.js';
import type { MembershipDoc } from './schema.js';
import { lock, recordChanges } from './transactions.js';
import { ownersLock } from './users.js';

/** The `_id` of the membership of `userId` in `orgId`: one per person and organization. */
export const membershipId = (orgId: string, userId: string): string => `${orgId}/${userId}`;

/**
 * MembershipsPort on MongoDB (collection `memberships`, `_id` `<org_id>/<user_id>`; e-mails from `users`).
 *
 * The last-owner rule: setRole and remove are transactions that first lock the organization's owners
 * (transactions.ts `lock`), then count the other owners, then write. Two concurrent demotions of an
 * organization's two owners both lock the same key: the second conflicts, runs again, and sees the first
 * one's demotion, so it refuses (`last_owner`). Every change records a `member` feed entry in its commit.
 */
export function createMemberships({ c, tx }: MongoContext): MembershipsPort {
  const withEmails = async (docs: MembershipDoc[]): Promise<MemberRecord[]> => {
    const users = await c.users.find({ _id: { $in: docs.map((d) => d.user_id) } }, { projection: { email: 1 } }).toArray();
    const emails = new Map(users.map((u) => [u._id, u.email]));
    // A membership whose person is gone is not listed (as SQLite's join would not).
    return docs.filter((d) => emails.has(d.user_id)).map((d) => ({ org_id: d.org_id, user_id: d.user_id, role: d.role, created_at: d.created_at, email: emails.get(d.user_id)! }));
  };
  /** Whether `userId` may stop being an owner of `orgId` now: another owner remains (read under the owners' lock). */
  const otherOwner = async (orgId: string, userId: string, session: Parameters<Parameters<typeof tx>[0]>[0]) =>
    (await c.memberships.countDocuments({ org_id: orgId, role: 'owner', user_id: { $ne: userId } }, { session, limit: 1 })) > 0;
  const changed = (orgId: string, userId: string) => [{ kind: 'member' as const, org_id: orgId, user_id: userId }];

  return {
    add(m) {
      return tx(async (session) => {
        const r = await c.memberships.updateOne(
          { _id: membershipId(m.org_id, m.user_id) },
          { $setOnInsert: { org_id: m.org_id, user_id: m.user_id, role: m.role, created_at: m.created_at } },
          { upsert: true, session },
        );
        if (r.upsertedCount === 0) return false;
        await recordChanges(c, session, changed(m.org_id, m.user_id), new Date().toISOString());
        return true;
      });
    },
    async check(orgId, userId): Promise<MemberCheck> {
      const user = await c.users.findOne({ _id: userId }, { projection: { access_valid_after: 1 } });
      if (user === null) return { status: 'no_user' };
      const access_valid_after = user.access_valid_after ?? null;
      const m = await c.memberships.findOne({ _id: membershipId(orgId, userId) }, { projection: { role: 1 } });
      return m === null ? { status: 'not_a_member', access_valid_after } : { status: 'member', role: m.role, access_valid_after };
    },
    async get(orgId, userId) {
      const m = await c.memberships.findOne({ _id: membershipId(orgId, userId) });
      return m === null ? undefined : (await withEmails([m]))[0];
    },
    async list(orgId, page) {
      if (page.after !== undefined && (await c.memberships.countDocuments({ _id: membershipId(orgId, page.after) }, { limit: 1 })) === 0) {
        throw unknownCursor('member');
      }
      const filter = page.after === undefined ? { org_id: orgId } : { org_id: orgId, user_id: { $lt: page.after } };
      const docs = await c.memberships.find(filter).sort({ user_id: -1 }).limit(page.limit + 1).toArray();
      return toPage(await withEmails(docs), page, (m) => m);
    },
    async organizationsOf(userId): Promise<UserOrganization[]> {
      const ms = await c.memberships.find({ user_id: userId }).toArray();
      const orgs = await c.organizations.find({ _id: { $in: ms.map((m) => m.org_id) } }).sort({ _id: 1 }).toArray();
      const roles = new Map(ms.map((m) => [m.org_id, m.role]));
      return orgs.map((o) => ({ id: o._id, name: o.name, role: roles.get(o._id)! }));
    },
    setRole(orgId, userId, role) {
      return tx(async (session): Promise<'updated' | 'not_found' | 'last_owner'> => {
        await lock(c, session, ownersLock(orgId));
        const m = await c.memberships.findOne({ _id: membershipId(orgId, userId) }, { session });
        if (m === null) return 'not_found';
        if (m.role === 'owner' && role !== 'owner' && !(await otherOwner(orgId, userId, session))) return 'last_owner';
        await c.memberships.updateOne({ _id: m._id }, { $set: { role } }, { session });
        await recordChanges(c, session, changed(orgId, userId), new Date().toISOString());
        return 'updated';
      });
    },
    remove(orgId, userId) {
      return tx(async (session): Promise<'removed' | 'not_found' | 'last_owner'> => {
        await lock(c, session, ownersLock(orgId));
        const m = await c.memberships.findOne({ _id: membershipId(orgId, userId) }, { session });
        if (m === null) return 'not_found';
        if (m.role === 'owner' && !(await otherOwner(orgId, userId, session))) return 'last_owner';
        await c.memberships.deleteOne({ _id: m._id }, { session });
        await recordChanges(c, session, changed(orgId, userId), new Date().toISOString());
        return 'removed';
      });
    },
  };
}
