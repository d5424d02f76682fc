import type { RefreshTokensPort } from '../ports.js';
import type { RefreshFamilyRecord, RefreshRotation, RefreshTokenRecord } from '../records.js';
import type { MongoContext } from './context.js';
import type { RefreshFamilyDoc } from './schema.js';
import { recordChanges } from './transactions.js';

const fromDoc = (d: RefreshFamilyDoc): RefreshFamilyRecord => ({
  id: d._id, user_id: d.user_id, created_at: d.created_at, absolute_expires_at: d.absolute_expires_at,
  revoked_at: d.revoked_at ?? null, revoked_reason: d.revoked_reason ?? null,
});

/** The filter of a live token: unspent and not idle-expired at `at` (the family is checked next, in the same transaction). */
export function liveToken(hash: string, at: string) {
  return { _id: hash, used_at: null, expires_at: { $gt: at } };
}

/** True when the family is neither revoked nor past its absolute expiry at `at`. */
export function familyLive(f: Pick<RefreshFamilyRecord, 'revoked_at' | 'absolute_expires_at'>, at: string): boolean {
  return f.revoked_at === null && f.absolute_expires_at > at;
}

/** The spend was rolled back because the token's family is not live: the caller finds out why. */
class FamilyNotLive extends Error {}

/**
 * RefreshTokensPort on MongoDB (collections `refresh_families`, `refresh_tokens`: `_id` the token hash).
 *
 * A token is single-use by a conditional update: the exchange is a transaction whose first write spends
 * the token only if it is still live (`used_at` null, not expired); of two concurrent exchanges of one
 * token the second conflicts with the first, runs again, and no longer matches. The family is then read
 * in the same transaction; a family that is not live rolls the spend back (the transaction is aborted).
 * Only an exchange that spent nothing reads why, in a transaction of its own that revokes the family of a
 * token found spent (reason `reuse`, RFC 9700 section 4.14.2) with its `session` feed entry.
 */
export function createRefreshTokens({ c, tx }: MongoContext): RefreshTokensPort {
  const ended = (families: Array<{ _id: string; user_id: string }>) =>
    families.map((f) => ({ kind: 'session' as const, session_id: f._id, user_id: f.user_id }));

  const spend = (hash: string, next: Omit<RefreshTokenRecord, 'family_id' | 'used_at'>, at: string) => tx(async (session): Promise<RefreshRotation> => {
    const spent = await c.refresh_tokens.findOneAndUpdate(liveToken(hash, at), { $set: { used_at: at } }, { session, projection: { family_id: 1 } });
    if (spent === null) return { status: 'unknown' };
    const doc = await c.refresh_families.findOne({ _id: spent.family_id }, { session });
    if (doc === null || !familyLive(fromDoc(doc), at)) throw new FamilyNotLive();
    const family = fromDoc(doc);
    const expiresAt = next.expires_at < family.absolute_expires_at ? next.expires_at : family.absolute_expires_at;
    const token: RefreshTokenRecord = { token_hash: next.token_hash, family_id: family.id, created_at: next.created_at, expires_at: expiresAt, used_at: null };
    await c.refresh_tokens.insertOne({
      _id: token.token_hash, family_id: token.family_id, created_at: token.created_at, expires_at: token.expires_at, used_at: null, expire_at: doc.expire_at,
    }, { session });
    return { status: 'rotated', family, token };
  });

  /** Why `hash` could not be spent at `at`; a spent token revokes its family (reuse). */
  const refused = (hash: string, at: string) => tx(async (session): Promise<RefreshRotation> => {
    const t = await c.refresh_tokens.findOne({ _id: hash }, { session });
    if (t === null) return { status: 'unknown' };
    const f = await c.refresh_families.findOne({ _id: t.family_id }, { session });
    if (f === null) return { status: 'unknown' };
    if (f.revoked_at !== null) return { status: 'revoked' };
    if (t.used_at !== null) {
      await c.refresh_families.updateOne({ _id: f._id, revoked_at: null }, { $set: { revoked_at: at, revoked_reason: 'reuse' } }, { session });
      await recordChanges(c, session, ended([f]), at);
      return { status: 'reused', family_id: f._id };
    }
    return { status: 'expired' };
  });

  return {
    async startFamily(f, first) {
      const expire_at = new Date(f.absolute_expires_at);
      await tx(async (session) => {
        await c.refresh_families.insertOne({ _id: f.id, user_id: f.user_id, created_at: f.created_at, absolute_expires_at: f.absolute_expires_at, revoked_at: f.revoked_at, revoked_reason: f.revoked_reason, expire_at }, { session });
        await c.refresh_tokens.insertOne({ _id: first.token_hash, family_id: f.id, created_at: first.created_at, expires_at: first.expires_at, used_at: first.used_at, expire_at }, { session });
      });
    },
    async rotate(hash, next, at) {
      try {
        const outcome = await spend(hash, next, at);
        if (outcome.status === 'rotated') return outcome;
      } catch (err) {
        if (!(err instanceof FamilyNotLive)) throw err;
      }
      return refused(hash, at);
    },
    revokeFamilyOf(hash, reason, at) {
      return tx(async (session) => {
        const t = await c.refresh_tokens.findOne({ _id: hash }, { session, projection: { family_id: 1 } });
        if (t === null) return false;
        const f = await c.refresh_families.findOneAndUpdate({ _id: t.family_id, revoked_at: null }, { $set: { revoked_at: at, revoked_reason: reason } }, { session, projection: { user_id: 1 } });
        if (f === null) return false;
        await recordChanges(c, session, ended([f]), at);
        return true;
      });
    },
    async familyIdOf(hash) {
      return (await c.refresh_tokens.findOne({ _id: hash }, { projection: { family_id: 1 } }))?.family_id;
    },
    revokeAllOf(userId, reason, at) {
      return tx(async (session) => {
        const live = await c.refresh_families.find({ user_id: userId, revoked_at: null }, { session, projection: { user_id: 1 } }).toArray();
        if (live.length === 0) return 0;
        await c.refresh_families.updateMany({ _id: { $in: live.map((f) => f._id) }, revoked_at: null }, { $set: { revoked_at: at, revoked_reason: reason } }, { session });
        await recordChanges(c, session, ended(live), at);
        return live.length;
      });
    },
    async getFamily(id) {
      const d = await c.refresh_families.findOne({ _id: id });
      return d === null ? undefined : fromDoc(d);
    },
    prune(before) {
      return tx(async (session) => {
        const old = (await c.refresh_families.find({ absolute_expires_at: { $lt: before } }, { session, projection: { _id: 1 } }).toArray()).map((f) => f._id);
        if (old.length === 0) return 0;
        await c.refresh_tokens.deleteMany({ family_id: { $in: old } }, { session });
        return (await c.refresh_families.deleteMany({ _id: { $in: old } }, { session })).deletedCount;
      });
    },
  };
}
