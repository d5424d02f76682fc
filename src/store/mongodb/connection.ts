/**
 * Connecting to MongoDB: the client options Parley uses, the start-up checks (reachable, a replica set),
 * and their messages, which name the hosts and the cause and never a password.
 */
import { MongoClient, type Document, type MongoClientOptions } from 'mongodb';

/** Connection settings (PARLEY_MONGODB_*, docs/configuration.md). Durations in ms. */
export interface MongoConnectionOptions {
  /** `mongodb://` or `mongodb+srv://` connection string of a replica set (or a sharded cluster). */
  uri: string;
  /** Connections per process to each server, at most (the driver's `maxPoolSize`). */
  maxPoolSize: number;
  /** Longest wait for a free connection; past it the operation fails and the request gets 503 `overloaded`. */
  waitQueueTimeoutMS: number;
  /** Longest wait for a server to talk to (start-up, and every operation during a failover). */
  serverSelectionTimeoutMS: number;
  /** Shown in the server's logs and `currentOp` (default `parley`). */
  appName?: string;
}

/**
 * The driver options of a Parley client: majority writes and reads on the primary (a write acknowledged
 * to a client survives a failover; a read never sees a write that could be rolled back), retryable writes
 * and reads, a bounded pool with a bounded wait, and `ignoreUndefined` (a field left `undefined` in a
 * patch is not written).
 */
export function clientOptions(o: Omit<MongoConnectionOptions, 'uri'>): MongoClientOptions {
  return {
    appName: o.appName ?? 'parley',
    maxPoolSize: o.maxPoolSize,
    waitQueueTimeoutMS: o.waitQueueTimeoutMS,
    serverSelectionTimeoutMS: o.serverSelectionTimeoutMS,
    writeConcern: { w: 'majority' },
    readConcern: { level: 'majority' },
    readPreference: 'primary',
    retryWrites: true,
    retryReads: true,
    ignoreUndefined: true,
  };
}

/**
 * The hosts of a connection string, without user, password, database or options
 * (`mongodb://u:p@a:27017,b:27017/db?x=1` -> `a:27017,b:27017`). Never throws: a string that is not a
 * connection string gives `(unparsable MongoDB URI)`.
 */
export function hostsOf(uri: string): string {
  const m = /^mongodb(?:\+srv)?:\/\/(?:[^@/?#]*@)?([^/?#]*)/i.exec(uri);
  return m === null || m[1] === '' ? '(unparsable MongoDB URI)' : m[1]!;
}

/** The password of a connection string as written and, when that differs, decoded; none when it has none. */
function passwordsOf(uri: string): string[] {
  const raw = /^mongodb(?:\+srv)?:\/\/[^:@/?#]*:([^@/?#]+)@/i.exec(uri)?.[1];
  if (raw === undefined) return [];
  try {
    const decoded = decodeURIComponent(raw);
    return decoded === raw ? [raw] : [raw, decoded];
  } catch {
    return [raw];
  }
}

/** `text` with every occurrence of the URI's password (as written and decoded) replaced by `***`. */
export function withoutPassword(text: string, uri: string): string {
  let out = text;
  for (const secret of passwordsOf(uri)) out = out.split(secret).join('***');
  return out;
}

/**
 * The database a connection string names in its path (`mongodb://h/parley_prod` -> `parley_prod`), or
 * undefined when it names none.
 */
export function databaseOf(uri: string): string | undefined {
  const m = /^mongodb(?:\+srv)?:\/\/[^/?#]*\/([^?#]*)/i.exec(uri);
  const name = m?.[1] === undefined ? '' : decodeURIComponent(m[1]);
  return name === '' ? undefined : name;
}

/**
 * Why the server `hello` describes cannot serve Parley, or undefined when it can: a replica set member
 * (`setName`) or a mongos (`msg: "isdbgrid"`). A standalone server has neither transactions nor change
 * streams, which the store needs (a message and its events are one transaction; every process follows
 * the feed with a change stream).
 */
export function topologyProblem(hello: Document, hosts: string): string | undefined {
  if (typeof hello.setName === 'string' || hello.msg === 'isdbgrid') return undefined;
  return `MongoDB at ${hosts} is a standalone server, not a replica set: Parley needs transactions and change streams, `
    + 'which MongoDB offers only on a replica set (a single-member replica set will do: start mongod with --replSet rs0, '
    + 'run rs.initiate() once, and add ?replicaSet=rs0 to PARLEY_MONGODB_URI).';
}

/** The message of a start-up that could not reach MongoDB (no password, even when the cause quotes one). */
export function unreachableMessage(uri: string, cause: unknown, timeoutMs: number): string {
  const why = cause instanceof Error ? cause.message : String(cause);
  return withoutPassword(`Could not connect to MongoDB at ${hostsOf(uri)} (server selection timeout ${timeoutMs} ms): ${why}`, uri);
}

/** A failed start-up of the MongoDB store; the message is safe to print and log. */
export class MongoStartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MongoStartupError';
  }
}

/**
 * Connects a client and checks the server: it must be reachable within `serverSelectionTimeoutMS` and be
 * a replica set member or a mongos. Resolves with the connected client. Rejects with a MongoStartupError
 * whose message names the hosts and the cause, never the password (the client is closed then).
 */
export async function connect(o: MongoConnectionOptions): Promise<MongoClient> {
  let client: MongoClient;
  try {
    client = new MongoClient(o.uri, clientOptions(o));
  } catch (err) {
    throw new MongoStartupError(withoutPassword(`PARLEY_MONGODB_URI is not a valid MongoDB connection string (${hostsOf(o.uri)}): ${(err as Error).message}`, o.uri));
  }
  try {
    await client.connect();
    const hello = await client.db('admin').command({ hello: 1 });
    const problem = topologyProblem(hello, hostsOf(o.uri));
    if (problem !== undefined) throw new MongoStartupError(problem);
    return client;
  } catch (err) {
    await client.close().catch(() => { /* it never connected */ });
    if (err instanceof MongoStartupError) throw err;
    throw new MongoStartupError(unreachableMessage(o.uri, err, o.serverSelectionTimeoutMS));
  }
}
