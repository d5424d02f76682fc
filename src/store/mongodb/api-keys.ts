import type { Document } from 'mongodb';
import type { ApiKeysPort } from '../ports.js';
import type { ApiKeyRecord } from '../records.js';
import { toPage } from '../list-page.js';
import type { MongoContext } from './context.js';
import { newestFirst } from './pagination.js';
import type { ApiKeyDoc } from './schema.js';
import { recordChanges } from './transactions.js';

const toDoc = (k: ApiKeyRecord): ApiKeyDoc => ({
  _id: k.id, org_id: k.org_id, name: k.name, key_hash: k.key_hash, last4: k.last4, created_at: k.created_at, revoked_at: k.revoked_at, expires_at: k.expires_at,
});

const fromDoc = (d: ApiKeyDoc): ApiKeyRecord => ({
  id: d._id, org_id: d.org_id, name: d.name, key_hash: d.key_hash, last4: d.last4, created_at: d.created_at,
  revoked_at: d.revoked_at ?? null, expires_at: d.expires_at ?? null,
});

/** The filter of a key of `orgId` that is still usable at `at`: not revoked, no `expires_at` at or before `at`. */
export function usableKey(orgId: string, id: string, at: string): Document {
  return { _id: id, org_id: orgId, revoked_at: null, $or: [{ expires_at: null }, { expires_at: { $gt: at } }] };
}

/**
 * The update that ends a rotated key: revoked at `at` when there is no grace period (`ends` null), else
 * `expires_at` set to `ends` unless an earlier `expires_at` is already set (an update pipeline, so the
 * comparison and the write are one atomic step).
 */
export function endKey(at: string, ends: string | null): Document | Document[] {
  if (ends === null) return { $set: { revoked_at: at } };
  return [{ $set: { expires_at: { $cond: [{ $or: [{ $eq: ['$expires_at', null] }, { $gt: ['$expires_at', ends] }] }, ends, '$expires_at'] } } }];
}

/**
 * ApiKeysPort on MongoDB (collection `api_keys`, `key_hash` unique). Revoking and rotating are
 * transactions: the conditional update that ends the key, the new key (rotation) and the `api_key` feed
 * entry commit together, or nothing does. Of two concurrent rotations of one key, the second's update
 * conflicts with the first's, runs again, and no longer finds a usable key (when the first revoked it).
 */
export function createApiKeys({ c, tx }: MongoContext): ApiKeysPort {
  return {
    async create(k) {
      await c.api_keys.insertOne(toDoc(k));
    },
    async findByHash(hash) {
      const d = await c.api_keys.findOne({ key_hash: hash });
      return d === null ? undefined : fromDoc(d);
    },
    async get(orgId, id) {
      const d = await c.api_keys.findOne({ _id: id, org_id: orgId });
      return d === null ? undefined : fromDoc(d);
    },
    async list(orgId, page) {
      return toPage(await newestFirst(c.api_keys, { org_id: orgId }, page, 'API key'), page, fromDoc);
    },
    revoke(orgId, id, at) {
      return tx(async (session) => {
        const r = await c.api_keys.updateOne({ _id: id, org_id: orgId, revoked_at: null }, { $set: { revoked_at: at } }, { session });
        if (r.matchedCount === 0) return false;
        await recordChanges(c, session, [{ kind: 'api_key', org_id: orgId, key_id: id }], at);
        return true;
      });
    },
    rotate(orgId, id, next, graceEndsAt, at) {
      return tx(async (session) => {
        const r = await c.api_keys.updateOne(usableKey(orgId, id, at), endKey(at, graceEndsAt), { session });
        if (r.matchedCount === 0) return false;
        await c.api_keys.insertOne(toDoc(next), { session });
        await recordChanges(c, session, [{ kind: 'api_key', org_id: orgId, key_id: id }], at);
        return true;
      });
    },
  };
}
