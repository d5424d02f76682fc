import type { SigningKeysPort } from '../ports.js';
import type { SigningKeyRecord } from '../records.js';
import type { MongoContext } from './context.js';
import type { SigningKeyDoc } from './schema.js';
import { isDuplicateKey } from './transactions.js';

const fromDoc = (d: SigningKeyDoc): SigningKeyRecord => ({
  kid: d._id, algorithm: d.algorithm, public_jwk: d.public_jwk, private_jwk: d.private_jwk, created_at: d.created_at, retired_at: d.retired_at ?? null,
});

/** The fields of a new active key but `_id` and `active`. */
const keyFields = (k: SigningKeyRecord) => ({
  algorithm: k.algorithm, public_jwk: k.public_jwk, private_jwk: k.private_jwk, created_at: k.created_at, retired_at: null,
});

/**
 * SigningKeysPort on MongoDB (collection `signing_keys`, `_id` the kid). The active key carries
 * `active: true`, which a unique partial index allows on one key only. ensureActive is one upsert on
 * `{active: true}`: it inserts the candidate only when no key is active, and of two processes starting at
 * once the second's upsert meets the index, is retried by the server as an update, and changes nothing.
 */
export function createSigningKeys({ c, tx }: MongoContext): SigningKeysPort {
  return {
    async active() {
      const d = await c.signing_keys.findOne({ active: true });
      return d === null ? undefined : fromDoc(d);
    },
    async verifiable(retiredAfter) {
      const docs = await c.signing_keys.find({ $or: [{ retired_at: null }, { retired_at: { $gt: retiredAfter } }] }).sort({ created_at: -1, _id: -1 }).toArray();
      return docs.map(fromDoc);
    },
    async ensureActive(k) {
      try {
        // The filter's `active: true` goes into the inserted document.
        await c.signing_keys.updateOne({ active: true }, { $setOnInsert: { _id: k.kid, ...keyFields(k) } }, { upsert: true });
      } catch (err) {
        // A concurrent insert won (if the server did not retry the upsert itself): its key is the active one.
        if (!isDuplicateKey(err)) throw err;
      }
      return fromDoc((await c.signing_keys.findOne({ active: true }))!);
    },
    rotate(k, at) {
      return tx(async (session) => {
        const retired = (await c.signing_keys.find({ active: true }, { session, projection: { _id: 1 } }).toArray()).map((d) => d._id);
        await c.signing_keys.updateMany({ active: true }, { $set: { retired_at: at }, $unset: { active: '' } }, { session });
        await c.signing_keys.insertOne({ _id: k.kid, ...keyFields(k), active: true }, { session });
        return retired;
      });
    },
  };
}
