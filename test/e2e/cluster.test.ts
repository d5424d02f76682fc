/** The three-process suite (cluster.suite.ts) on one SQLite data dir. */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describeCluster } from './cluster.suite.js';

describeCluster('data dir', {
  env: {},
  async messageCount(dataDir, conversationId) {
    const db = new Database(join(dataDir, 'parley.db'), { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM messages WHERE conversation_id = ?').get(conversationId) as { n: number }).n;
    } finally {
      db.close();
    }
  },
  async webhookRecords(dataDir) {
    const db = new Database(join(dataDir, 'parley.db'), { readonly: true });
    try {
      const events = (db.prepare("SELECT id FROM webhook_events WHERE type IN ('message.created', 'conversation.created')").all() as Array<{ id: string }>).map((r) => r.id);
      const retried = (db.prepare(
        `SELECT DISTINCT d.event_id FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id WHERE a.error LIKE 'interrupted%'`,
      ).all() as Array<{ event_id: string }>).map((r) => r.event_id);
      return { events, retried: new Set(retried) };
    } finally {
      db.close();
    }
  },
});
