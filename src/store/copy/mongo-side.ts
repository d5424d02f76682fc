/**
 * The MongoDB side of `store copy`: a database as the source (read in one snapshot session: every
 * collection as of one point in time) or as the target.
 */
import type { AnyBulkWriteOperation, Document, MongoClient } from 'mongodb';
import { connect, databaseOf, hostsOf, type MongoConnectionOptions } from '../mongodb/connection.js';
import { ensureIndexes, COLLECTION_NAMES } from '../mongodb/schema.js';
import { CopyRefused, type CopySource, type CopyTarget } from './copy-side.js';
import { documentToRow, rowToDocument } from './row-mapping.js';
import { COPIED_TABLES, type CopyRow } from './tables.js';

/** The database a URI names, else `parley` (as the store itself: src/store/mongodb/mongo-store.ts). */
const databaseName = (uri: string): string => databaseOf(uri) ?? 'parley';

/**
 * The MongoDB store at `o.uri` as a snapshot: one snapshot session (`readConcern: snapshot`), so every
 * collection is read as of the same moment, whatever a running server writes meanwhile. The server keeps
 * a snapshot readable for `minSnapshotHistoryWindowInSeconds` (300 s by default): a longer copy fails with
 * SnapshotTooOld (docs/operations.md says what to do). Rejects like createMongoStore's connect.
 */
export async function openMongoSource(o: MongoConnectionOptions): Promise<CopySource> {
  const client = await connect(o);
  const db = client.db(databaseName(o.uri));
  const session = client.startSession({ snapshot: true });
  return {
    description: `MongoDB at ${hostsOf(o.uri)}/${db.databaseName}`,
    async count(t) {
      return db.collection(t.name).countDocuments({}, { session });
    },
    async *rows(t, batch) {
      const sort: Document = t.name === 'messages' ? { conversation_id: 1, seq: 1 } : { _id: 1 };
      let rows: CopyRow[] = [];
      for await (const doc of db.collection(t.name).find({}, { session, batchSize: batch }).sort(sort)) {
        rows.push(documentToRow(t, doc));
        if (rows.length === batch) { yield rows; rows = []; }
      }
      if (rows.length > 0) yield rows;
    },
    async close() {
      await session.endSession();
      await client.close();
    },
  };
}

/**
 * Sets what the copied rows imply and MongoDB keeps apart (schema.ts): chunks of `ready` documents
 * `ready: true`, each conversation's `message_seq` (its newest message's `seq`), and each refresh token's
 * `expire_at` (its family's absolute expiry).
 */
async function finishMongo(client: MongoClient, dbName: string): Promise<void> {
  const db = client.db(dbName);
  let ready: string[] = [];
  const flushReady = async () => {
    if (ready.length > 0) await db.collection('chunks').updateMany({ doc_id: { $in: ready } }, { $set: { ready: true } });
    ready = [];
  };
  for await (const d of db.collection<{ _id: string }>('documents').find({ status: 'ready' }, { projection: { _id: 1 } })) {
    ready.push(d._id);
    if (ready.length === 500) await flushReady();
  }
  await flushReady();
  const bulk = async (collection: string, ops: Array<AnyBulkWriteOperation<{ _id: string }>>) => {
    if (ops.length > 0) await db.collection<{ _id: string }>(collection).bulkWrite(ops, { ordered: false });
  };
  let seqs: Array<AnyBulkWriteOperation<{ _id: string }>> = [];
  for await (const m of db.collection<{ _id: string }>('messages').aggregate<{ _id: string; seq: number }>([{ $group: { _id: '$conversation_id', seq: { $max: '$seq' } } }])) {
    seqs.push({ updateOne: { filter: { _id: m._id }, update: { $set: { message_seq: m.seq } } } });
    if (seqs.length === 500) { await bulk('conversations', seqs); seqs = []; }
  }
  await bulk('conversations', seqs);
  let expiries: Array<AnyBulkWriteOperation<{ _id: string }>> = [];
  for await (const f of db.collection<{ _id: string; expire_at: Date }>('refresh_families').find({}, { projection: { expire_at: 1 } })) {
    expiries.push({ updateMany: { filter: { family_id: f._id }, update: { $set: { expire_at: f.expire_at } } } });
    if (expiries.length === 500) { await bulk('refresh_tokens', expiries); expiries = []; }
  }
  await bulk('refresh_tokens', expiries);
}

/**
 * The MongoDB store at `o.uri` as the target: its collections and indexes are created as the store
 * creates them; rows are inserted as the store's documents (row-mapping.ts), `batch` per insertMany with
 * majority write concern. clear() deletes every document of every collection (the indexes stay).
 */
export async function openMongoTarget(o: MongoConnectionOptions): Promise<CopyTarget> {
  const client = await connect(o);
  const name = databaseName(o.uri);
  const db = client.db(name);
  try {
    await ensureIndexes(db, { ttl: true });
  } catch (err) {
    await client.close();
    throw err;
  }
  return {
    description: `MongoDB at ${hostsOf(o.uri)}/${name}`,
    async nonEmpty() {
      const out: string[] = [];
      for (const t of COPIED_TABLES) if ((await db.collection(t.name).countDocuments({}, { limit: 1 })) > 0) out.push(t.name);
      return out;
    },
    async clear() {
      for (const n of COLLECTION_NAMES) await db.collection(n).deleteMany({});
    },
    async insert(t, rows) {
      await db.collection(t.name).insertMany(rows.map((r) => rowToDocument(t, r)), { ordered: true });
    },
    finish: () => finishMongo(client, name),
    async count(t) {
      return db.collection(t.name).countDocuments({});
    },
    async close() {
      await client.close();
    },
  };
}

export { CopyRefused };
