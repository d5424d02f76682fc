/**
 * The one factory of stores (DESIGN.md "Store"): PARLEY_MONGODB_URI set means MongoDB, otherwise SQLite in
 * PARLEY_DATA_DIR. The composition root (src/parley.ts) and the command line (src/cli/) both ask it.
 */
import type { Config } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import type { Store } from './ports.js';
import { hostsOf } from './mongodb/connection.js';
import { createMongoStore } from './mongodb/mongo-store.js';
import { createSqliteStore } from './sqlite/sqlite-store.js';

/** Who opens the store: the server, or a command of the command line (SQLite then commits on its main thread). */
export type StoreUser = 'server' | 'cli';

/**
 * Opens the store `config` selects. The server's SQLite store commits in a writer thread and searches in a
 * reader thread as configured; a command's commits on its main thread (it writes a few rows and exits).
 * Rejects with what the adapter throws: for MongoDB a MongoStartupError whose message names the hosts and
 * the cause and never the password (an unreachable server, after `serverSelectionTimeoutMS`; a standalone
 * server), for SQLite what opening and migrating the file throws.
 */
export async function createStore(config: Readonly<Config>, opts: { user: StoreUser; logger?: Logger }): Promise<Store> {
  if (config.mongodb !== undefined) {
    return createMongoStore({ ...config.mongodb, appName: opts.user === 'cli' ? 'parley-cli' : 'parley', logger: opts.logger });
  }
  return createSqliteStore(config.dataDir, {
    sync: config.sqliteSynchronous,
    writer: opts.user === 'cli' ? 'main' : config.sqliteWriter,
    reader: opts.user === 'cli' ? 'main' : config.sqliteReader,
  });
}

/** Where the store `config` selects lives, for messages: the MongoDB hosts (no password) or the SQLite file's folder. */
export function describeStore(config: Readonly<Config>): string {
  if (config.mongodb === undefined) return `SQLite in ${config.dataDir}`;
  return `MongoDB at ${hostsOf(config.mongodb.uri)}`;
}
