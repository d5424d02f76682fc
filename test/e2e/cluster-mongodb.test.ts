/**
 * The three-process suite (cluster.suite.ts) on one MongoDB replica set (MONGODB_URI), each run in a
 * database of its own, dropped after it: three `node dist/src/main.js` with PARLEY_MONGODB_URI, which
 * follow each other's changes through their change streams. Says it was skipped when MONGODB_URI is not set.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { describe, it } from 'vitest';
import { describeCluster } from './cluster.suite.js';
import { withDatabase } from '../helpers/mongodb.js';

const uri = process.env.MONGODB_URI;

if (uri === undefined || uri === '') {
  describe('three processes on one MongoDB replica set', () => {
    it.skip('skipped: MONGODB_URI not set', () => {});
  });
} else {
  const database = `parley_cluster_${randomBytes(6).toString('hex')}`;
  const client = new MongoClient(uri);
  describeCluster('MongoDB replica set', {
    env: { PARLEY_MONGODB_URI: withDatabase(uri, database) },
    async webhookRecords() {
      const db = client.db(database);
      const events = (await db.collection<{ _id: string }>('webhook_events').find({ type: { $in: ['message.created', 'conversation.created'] } }, { projection: { _id: 1 } }).toArray()).map((e) => e._id);
      const interrupted = await db.collection<{ _id: string; delivery_id: string }>('webhook_attempts').find({ error: /^interrupted/ }, { projection: { delivery_id: 1 } }).toArray();
      const deliveries = await db.collection<{ _id: string; event_id: string }>('webhook_deliveries')
        .find({ _id: { $in: interrupted.map((a) => a.delivery_id) } }, { projection: { event_id: 1 } }).toArray();
      return { events, retried: new Set(deliveries.map((d) => d.event_id)) };
    },
    async messageCount(_dataDir, conversationId) {
      return client.db(database).collection('messages').countDocuments({ conversation_id: conversationId });
    },
    async cleanup() {
      await client.db(database).dropDatabase().catch(() => {});
      await client.close();
    },
  });
}
