import type { ClientSession } from 'mongodb';
import type { UsersPort } from '../ports.js';
import type { UserRecord } from '../records.js';
import type { MongoContext } from './context.js';
import type { UserDoc } from './schema.js';
import type { Collections } from './schema.js';
import { isDuplicateKey, lock, recordChanges } from './transactions.js';

const fromDoc = (d: UserDoc): UserRecord => ({
  id: d._id, email: d.email, password_hash: d.password_hash ?? null, access_valid_after: d.access_valid_after ?? null,
  created_at: d.created_at, updated_at: d.updated_at,
});

/** The lock key of an organization's owners (see transactions.ts `lock`): taken by every write that could remove its last owner. */
export const ownersLock = (orgId: string): string => `owners/${orgId}`;

/**
 * Whether `userId` is the only owner of one of its organizations, read in the transaction of `session`
 * after locking each of those organizations' owners (so a concurrent demotion or removal conflicts).
 */
export async function soleOwnerAnywhere(c: Collections, session: ClientSession, userId: string): Promise<boolean> {
  const owned = await c.memberships.find({ user_id: userId, role: 'owner' }, { session, projection: { org_id: 1 } }).toArray();
  for (const m of owned) {
    await lock(c, session, ownersLock(m.org_id));
    const others = await c.memberships.countDocuments({ org_id: m.org_id, role: 'owner', user_id: { $ne: userId } }, { session, limit: 1 });
    if (others === 0) return true;
  }
  return false;
}

/**
 * UsersPort on MongoDB (collection `users`, `email` unique). Deleting a person is one transaction that
 * refuses an organization's only owner (checked under the owners' lock), then deletes the person with
 * their memberships, refresh-token families and tokens, and socket tickets, and records a `user` feed entry.
 */
export function createUsers({ c, tx }: MongoContext): UsersPort {
  return {
    async create(u) {
      try {
        await c.users.insertOne({
          _id: u.id, email: u.email, password_hash: u.password_hash, access_valid_after: u.access_valid_after, created_at: u.created_at, updated_at: u.updated_at,
        });
        return true;
      } catch (err) {
        if (isDuplicateKey(err)) return false;
        throw err;
      }
    },
    async get(id) {
      const d = await c.users.findOne({ _id: id });
      return d === null ? undefined : fromDoc(d);
    },
    async findByEmail(email) {
      const d = await c.users.findOne({ email });
      return d === null ? undefined : fromDoc(d);
    },
    setPasswordHash(id, hash, at) {
      return tx(async (session) => {
        const r = await c.users.updateOne({ _id: id }, { $set: { password_hash: hash, access_valid_after: at, updated_at: at } }, { session });
        if (r.matchedCount === 0) return false;
        await recordChanges(c, session, [{ kind: 'user', user_id: id }], at);
        return true;
      });
    },
    delete(id) {
      return tx(async (session): Promise<'deleted' | 'not_found' | 'last_owner'> => {
        if (await soleOwnerAnywhere(c, session, id)) return 'last_owner';
        if ((await c.users.deleteOne({ _id: id }, { session })).deletedCount === 0) return 'not_found';
        await c.memberships.deleteMany({ user_id: id }, { session });
        const families = (await c.refresh_families.find({ user_id: id }, { session, projection: { _id: 1 } }).toArray()).map((f) => f._id);
        await c.refresh_tokens.deleteMany({ family_id: { $in: families } }, { session });
        await c.refresh_families.deleteMany({ user_id: id }, { session });
        await c.socket_tickets.deleteMany({ user_id: id }, { session });
        await recordChanges(c, session, [{ kind: 'user', user_id: id }], new Date().toISOString());
        return 'deleted';
      });
    },
  };
}
