import type { InvitationsPort } from '../ports.js';
import type { InvitationAcceptance, InvitationRecord, PendingInvitation } from '../records.js';
import type { MongoContext } from './context.js';
import { membershipId } from './memberships.js';
import type { InvitationDoc } from './schema.js';
import { lock, recordChanges } from './transactions.js';

const toDoc = (r: InvitationRecord): InvitationDoc => {
  const { id, ...rest } = r;
  return { _id: id, ...rest };
};

const fromDoc = (d: InvitationDoc): InvitationRecord => ({
  id: d._id, org_id: d.org_id, email: d.email, role: d.role, status: d.status, invited_by: d.invited_by ?? null,
  created_at: d.created_at, expires_at: d.expires_at, responded_at: d.responded_at ?? null,
});

/** The lock key of one e-mail's invitations to one organization (transactions.ts `lock`). */
const inviteeLock = (orgId: string, email: string) => `invitee/${orgId}/${email}`;

/**
 * InvitationsPort on MongoDB (collection `invitations`; at most one `pending` invitation per organization
 * and e-mail: a unique partial index). Each write is one transaction whose updates carry their conditions
 * (pending, not expired, the invitee's e-mail), so of two concurrent answers to one invitation one matches
 * and the other conflicts, runs again and matches nothing. `create` first locks the organization and
 * e-mail: the member check it reads and the replacement it writes then agree with a concurrent acceptance.
 * An acceptance that adds a membership records a `member` feed entry in its commit.
 */
export function createInvitations({ c, tx }: MongoContext): InvitationsPort {
  return {
    create(rec) {
      return tx(async (session): Promise<'created' | 'already_member'> => {
        await lock(c, session, inviteeLock(rec.org_id, rec.email));
        const user = await c.users.findOne({ email: rec.email }, { session, projection: { _id: 1 } });
        if (user !== null && (await c.memberships.countDocuments({ _id: membershipId(rec.org_id, user._id) }, { session, limit: 1 })) > 0) {
          return 'already_member';
        }
        await c.invitations.updateMany(
          { org_id: rec.org_id, email: rec.email, status: 'pending' }, { $set: { status: 'replaced', responded_at: rec.created_at } }, { session },
        );
        await c.invitations.insertOne(toDoc(rec), { session });
        return 'created';
      });
    },
    async get(id) {
      const d = await c.invitations.findOne({ _id: id });
      return d === null ? undefined : fromDoc(d);
    },
    async pendingFor(email, at, limit) {
      const docs = await c.invitations.find({ email, status: 'pending', expires_at: { $gt: at } }).sort({ created_at: -1, _id: -1 }).limit(limit).toArray();
      const names = new Map((await c.organizations.find({ _id: { $in: [...new Set(docs.map((d) => d.org_id))] } }, { projection: { name: 1 } }).toArray())
        .map((o) => [o._id, o.name]));
      // An invitation whose organization is gone is not listed (as SQLite's join would not).
      return docs.filter((d) => names.has(d.org_id)).map((d): PendingInvitation => ({ ...fromDoc(d), org_name: names.get(d.org_id)! }));
    },
    accept(id, email, userId, at) {
      return tx(async (session): Promise<InvitationAcceptance> => {
        const answered = await c.invitations.findOneAndUpdate(
          { _id: id, email, status: 'pending', expires_at: { $gt: at } }, { $set: { status: 'accepted', responded_at: at } }, { session },
        );
        if (answered === null) return { status: 'not_found' };
        await lock(c, session, inviteeLock(answered.org_id, email));
        const joined = await c.memberships.updateOne(
          { _id: membershipId(answered.org_id, userId) },
          { $setOnInsert: { org_id: answered.org_id, user_id: userId, role: answered.role, created_at: at } },
          { upsert: true, session },
        );
        if (joined.upsertedCount > 0) await recordChanges(c, session, [{ kind: 'member', org_id: answered.org_id, user_id: userId }], at);
        const m = await c.memberships.findOne({ _id: membershipId(answered.org_id, userId) }, { session, projection: { role: 1 } });
        const org = await c.organizations.findOne({ _id: answered.org_id }, { session, projection: { name: 1 } });
        if (m === null || org === null) throw new Error(`invitation ${id}: organization ${answered.org_id} or its membership is gone`);
        return { status: 'accepted', organization: { id: org._id, name: org.name, role: m.role } };
      });
    },
    async decline(id, email, at) {
      const r = await c.invitations.updateOne({ _id: id, email, status: 'pending', expires_at: { $gt: at } }, { $set: { status: 'declined', responded_at: at } });
      return r.modifiedCount > 0;
    },
  };
}
