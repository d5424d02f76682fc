import { MongoClient, type Db } from 'mongodb';
import type { Logger } from '../../log/logger.js';
import type { Store } from '../ports.js';
import { createAgents } from './agents.js';
import { createApiKeys } from './api-keys.js';
import { clientOptions, connect, databaseOf, type MongoConnectionOptions } from './connection.js';
import type { MongoContext } from './context.js';
import { createConversations } from './conversations.js';
import { mapErrorsOf } from './errors.js';
import { ChangeStreamFeed } from './feed.js';
import { createInvitations } from './invitations.js';
import { createKnowledge } from './knowledge.js';
import { createLeases, createProcesses } from './leases.js';
import { createMemberships } from './memberships.js';
import { createOrganizations } from './organizations.js';
import { watchPool } from './pool-stats.js';
import { createRefreshTokens } from './refresh-tokens.js';
import { collections, ensureIndexes } from './schema.js';
import { createSigningKeys } from './signing-keys.js';
import { createSocketTickets } from './socket-tickets.js';
import { createToolRuns } from './tool-runs.js';
import { KeyedQueue, transactionRunner } from './transactions.js';
import { createUsers } from './users.js';
import { createUsage, createWebhooks } from './webhooks.js';

/** Options of createMongoStore. */
export interface MongoStoreOptions extends MongoConnectionOptions {
  /** The database; default: the one the URI names, else `parley`. */
  database?: string;
  /** Create the TTL indexes (default true; the contract tests turn them off: see schema.ts indexDefinitions). */
  ttlIndexes?: boolean;
  /** Where the feed's change stream reports its failures. */
  logger?: Logger;
}

/**
 * The MongoDB store (DESIGN.md "Store": the scale-out store several processes share): connects and checks
 * the server (connection.ts: a replica set, reachable within serverSelectionTimeoutMS), creates the
 * collections and indexes (idempotent), opens the feed's change stream on a client of its own, and builds
 * one module per port. Every port method's driver errors are mapped by errors.ts (pool exhaustion and an
 * unavailable database: 503 `overloaded`). Rejects with a MongoStartupError (no password in its message)
 * or what the driver throws while creating indexes.
 */
export async function createMongoStore(o: MongoStoreOptions): Promise<Store & { db: Db }> {
  const client = await connect(o);
  const pool = watchPool(client);
  let streamClient: MongoClient | undefined;
  let feed: ChangeStreamFeed | undefined;
  try {
    const name = o.database ?? databaseOf(o.uri) ?? 'parley';
    const db = client.db(name);
    await ensureIndexes(db, { ttl: o.ttlIndexes ?? true });
    // The feed's stream on its own client: its awaiting getMores never take a connection of the main pool.
    streamClient = new MongoClient(o.uri, { ...clientOptions({ ...o, maxPoolSize: 2 }), appName: `${o.appName ?? 'parley'}-feed` });
    await streamClient.connect();
    const ctx: MongoContext = { c: collections(db), tx: transactionRunner(client), queue: new KeyedQueue() };
    feed = new ChangeStreamFeed(ctx.c, streamClient.db(name), ctx.tx, o.logger);
    await feed.start();
    const started = feed;
    const opened = streamClient;
    return {
      kind: 'mongodb',
      db,
      feed: mapErrorsOf(started),
      processes: mapErrorsOf(createProcesses(ctx, () => started.position)),
      leases: mapErrorsOf(createLeases(ctx)),
      organizations: mapErrorsOf(createOrganizations(ctx)),
      apiKeys: mapErrorsOf(createApiKeys(ctx)),
      users: mapErrorsOf(createUsers(ctx)),
      memberships: mapErrorsOf(createMemberships(ctx)),
      invitations: mapErrorsOf(createInvitations(ctx)),
      refreshTokens: mapErrorsOf(createRefreshTokens(ctx)),
      signingKeys: mapErrorsOf(createSigningKeys(ctx)),
      socketTickets: mapErrorsOf(createSocketTickets(ctx)),
      agents: mapErrorsOf(createAgents(ctx)),
      knowledge: mapErrorsOf(createKnowledge(ctx)),
      conversations: mapErrorsOf(createConversations(ctx)),
      toolRuns: mapErrorsOf(createToolRuns(ctx)),
      webhooks: mapErrorsOf(createWebhooks(ctx)),
      usage: mapErrorsOf(createUsage(ctx)),
      async ping() {
        await db.command({ ping: 1 });
      },
      pool,
      async close() {
        await started.close();
        await opened.close();
        await client.close();
      },
    };
  } catch (err) {
    await feed?.close().catch(() => {});
    await streamClient?.close().catch(() => {});
    await client.close().catch(() => {});
    throw err;
  }
}
