import type Database from 'better-sqlite3';
import { join } from 'node:path';
import type { Store } from '../ports.js';
import { createAgents } from './agents.js';
import { createFeed, FeedSignal } from './feed.js';
import { createLeases, createProcesses } from './leases.js';
import { createApiKeys } from './api-keys.js';
import { createConversations } from './conversations.js';
import { openDatabase, type SqliteSync } from './database.js';
import { createMainThreadWriter, createWorkerWriter, type WriterKind } from './writer.js';
import { createKnowledge } from './knowledge.js';
import { createMainThreadReader, createWorkerReader, type ReaderKind } from './reader.js';
import { createInvitations } from './invitations.js';
import { createMemberships } from './memberships.js';
import { createOrganizations } from './organizations.js';
import { createRefreshTokens } from './refresh-tokens.js';
import { createSigningKeys } from './signing-keys.js';
import { createSocketTickets } from './socket-tickets.js';
import { createToolRuns } from './tool-runs.js';
import { createUsers } from './users.js';
import { createUsage, createWebhooks } from './webhooks.js';

/** Options of createSqliteStore. */
export interface SqliteStoreOptions {
  /** `PRAGMA synchronous` (default FULL: every commit survives power loss). */
  sync?: SqliteSync;
  /** Most chunks per completeDocument slice (default 64; see src/store/sqlite/knowledge.ts). */
  chunkSliceChunks?: number;
  /** A vector scan yields to the event loop after this long, ms (default 4; see src/store/sqlite/knowledge.ts). */
  vectorSliceMs?: number;
  /**
   * Where conversation and message writes commit (default `worker`): a writer thread with its own
   * connection, so their fsyncs and the WAL checkpoints never block the event loop; or `main`.
   */
  writer?: WriterKind;
  /**
   * Where knowledge searches run (default `worker`): a reader thread with its own connection, so a slow
   * full-text query never blocks the event loop; or `main`, the main thread's connection.
   */
  reader?: ReaderKind;
}

/**
 * The embedded store: one SQLite file `<dataDir>/parley.db` (WAL), opened and migrated by openDatabase(),
 * one module per port. better-sqlite3 is synchronous, so every method has completed its write (durable
 * per `sync`) before its promise resolves; conversation and message writes are group-committed (one
 * transaction per event-loop turn, see GroupCommit), and so are a document's chunks, in slices (see
 * createKnowledge). `db` is the connection itself, for the composition root and tests.
 * Throws what openDatabase() throws.
 */
export function createSqliteStore(dataDir: string, opts: SqliteStoreOptions = {}): Store & { db: Database.Database } {
  const sync = opts.sync ?? 'FULL';
  const file = join(dataDir, 'parley.db');
  const db = openDatabase(file, sync);
  const writer = (opts.writer ?? 'worker') === 'worker' ? createWorkerWriter(file, sync) : createMainThreadWriter(db, sync);
  const reader = (opts.reader ?? 'worker') === 'worker' ? createWorkerReader(file) : createMainThreadReader(db);
  const { stop: stopKnowledge, ...knowledge } = createKnowledge(db, writer, { chunkSliceChunks: opts.chunkSliceChunks, vectorSliceMs: opts.vectorSliceMs, reader });
  const ping = db.prepare('SELECT 1');
  const signal = new FeedSignal();
  return {
    kind: 'sqlite',
    db,
    organizations: createOrganizations(db),
    feed: createFeed(db, signal, writer),
    processes: createProcesses(db, writer),
    leases: createLeases(db, writer),
    apiKeys: createApiKeys(db, signal),
    users: createUsers(db, signal),
    memberships: createMemberships(db, signal),
    invitations: createInvitations(db, signal),
    refreshTokens: createRefreshTokens(db, writer, signal),
    signingKeys: createSigningKeys(db),
    socketTickets: createSocketTickets(writer),
    agents: createAgents(db, signal),
    knowledge,
    conversations: createConversations(db, writer),
    toolRuns: createToolRuns(db, writer),
    webhooks: createWebhooks(db, writer, signal),
    usage: createUsage(db, writer),
    async ping() {
      ping.get();
    },
    commits: () => writer.commits(),
    async close() {
      stopKnowledge();
      await reader.close();
      await writer.close();
      if (db.open) db.close();
    },
  };
}
