import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { TOOL_SECRET_ENV_PREFIX } from '../vocabulary/agent.js';
import { TrustedProxies, type ForwardedHeader } from '../net/trusted-proxies.js';

const int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

const bool = (def: boolean) =>
  z.enum(['true', 'false', '1', '0']).default(def ? 'true' : 'false').transform((v) => v === 'true' || v === '1');

/**
 * The environment variables Parley reads (the only place that reads `process.env`). Sizes in bytes,
 * durations in ms. README.md "Configuration" documents every one.
 */
const EnvSchema = z.object({
  PARLEY_HOST: z.string().default('0.0.0.0'),
  PARLEY_PORT: int(8080, 0, 65535),
  PARLEY_TLS_CERT_FILE: z.string().optional(),
  PARLEY_TLS_KEY_FILE: z.string().optional(),
  PARLEY_TRUSTED_PROXIES: z.string().optional(),
  PARLEY_FORWARDED_HEADER: z.enum(['x-forwarded-for', 'forwarded']).default('x-forwarded-for'),
  PARLEY_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  PARLEY_DATA_DIR: z.string().default('./data'),
  PARLEY_SQLITE_SYNCHRONOUS: z.enum(['full', 'normal']).default('full'),
  PARLEY_SQLITE_WRITER: z.enum(['worker', 'main']).default('worker'),
  PARLEY_SQLITE_READER: z.enum(['worker', 'main']).default('worker'),
  PARLEY_MONGODB_URI: z.string().regex(/^mongodb(\+srv)?:\/\/[^/?#]+/i, 'must be a mongodb:// or mongodb+srv:// connection string').optional(),
  PARLEY_MONGODB_MAX_POOL_SIZE: int(64, 1, 10_000),
  PARLEY_MONGODB_WAIT_QUEUE_TIMEOUT_MS: int(1000, 1, 600_000),
  PARLEY_MONGODB_SERVER_SELECTION_TIMEOUT_MS: int(10_000, 100, 600_000),
  PARLEY_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PARLEY_BODY_LIMIT_BYTES: int(1024 * 1024, 1024),
  PARLEY_DOCUMENT_LIMIT_BYTES: int(10 * 1024 * 1024, 1024),
  PARLEY_OPENAI_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  PARLEY_OPENAI_API_KEY: z.string().optional(),
  PARLEY_OPENAI_CONNECTIONS: int(4096, 1, 100_000),
  PARLEY_MODEL_TIMEOUT_MS: int(60_000, 1),
  PARLEY_EMBEDDINGS_MODEL: z.string().trim().min(1).optional(),
  PARLEY_EMBEDDINGS_BATCH: int(64, 1, 2048),
  PARLEY_INGEST_WORKERS: int(defaultIngestWorkers(), 1, 64),
  PARLEY_INGEST_TIMEOUT_MS: int(60_000, 100, 3_600_000),
  PARLEY_INGEST_MEMORY_MB: int(512, 32, 16_384),
  PARLEY_INGEST_MAX_EXPANDED_BYTES: int(128 * 1024 * 1024, 1024, 2 ** 40),
  PARLEY_INGEST_MAX_PROCESSING_PER_ORG: int(100, 1, 1_000_000),
  PARLEY_INGEST_NICE: int(10, 0, 19),
  PARLEY_INGEST_WARM_UP: int(0, 0, 100),
  PARLEY_IDLE_UNLOAD_MS: int(10_000, 1),
  PARLEY_MAX_QUEUED_TURNS: int(4, 0, 100),
  PARLEY_MAX_TOOL_STEPS: int(4, 1, 16),
  PARLEY_RETRIEVAL_K: int(4, 0, 20),
  PARLEY_HEARTBEAT_MS: int(15_000, 10),
  PARLEY_SSE_MAX_BUFFERED_BYTES: int(4 * 1024 * 1024, 1024),
  PARLEY_SHUTDOWN_GRACE_MS: int(10_000, 0),
  PARLEY_TURN_REPLAY_MS: int(5 * 60_000, 0),
  PARLEY_TURN_REPLAY_BYTES: int(64 * 1024 * 1024, 0),
  PARLEY_FEED_POLL_MS: int(100, 5, 1000),
  PARLEY_ADVERTISE_URL: z.url({ protocol: /^https?$/ }).optional(),
  PARLEY_INTERNAL_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  PARLEY_LEASE_MS: int(10_000, 300, 600_000),
  PARLEY_PROCESSES: z.union([z.literal('auto'), z.coerce.number().int().min(1).max(256)]).default(1),
  PARLEY_REPLACES_PROCESS: z.string().regex(/^proc_[0-9A-Z]{26}$/).optional(),
  PARLEY_GROUP_CHILD: bool(false),
  PARLEY_PROCESS_INDEX: z.coerce.number().int().min(0).max(255).optional(),
  PARLEY_BOOTSTRAP: bool(true),
  PARLEY_DOCS_DIR: z.string().optional(),
  PARLEY_DASHBOARD_DIR: z.string().optional(),
  PARLEY_WIDGET_DIR: z.string().optional(),
  PARLEY_BUILTIN_WORD_DELAY_MS: int(0, 0, 10_000),
  PARLEY_MAX_TURNS_IN_SETUP: int(64, 1, 100_000),
  PARLEY_ADMISSION_QUEUE: int(256, 0, 1_000_000),
  PARLEY_ADMISSION_WAIT_MS: int(100, 0, 60_000),
  PARLEY_MAX_LOOP_LAG_MS: int(40, 1, 3_600_000),
  PARLEY_TARGET_LOOP_LAG_MS: int(0, 0, 3_600_000),
  PARLEY_TARGET_LOOP_BUSY_PERCENT: int(0, 0, 100),
  PARLEY_MAX_LIVE_TURNS: int(100_000, 1, 10_000_000),
  PARLEY_REFRESH_IDLE_DAYS: int(14, 1, 3650),
  PARLEY_REFRESH_ABSOLUTE_DAYS: int(30, 1, 3650),
  PARLEY_PASSWORD_HASH_CONCURRENCY: int(defaultHashConcurrency(), 1, 64),
  PARLEY_LOGIN_FAILURES_PER_ACCOUNT: int(10, 1, 100_000),
  PARLEY_LOGIN_FAILURES_PER_ADDRESS: int(100, 1, 1_000_000),
  PARLEY_LOGIN_ACCOUNT_CEILING: int(100, 1, 1_000_000),
  PARLEY_PUBLIC_REQUESTS_PER_MINUTE: int(120, 1, 1_000_000),
  PARLEY_PUBLIC_VISITOR_REQUESTS_PER_MINUTE: int(60, 1, 1_000_000),
  PARLEY_WS_MAX_BUFFERED_BYTES: int(1024 * 1024, 1024),
  PARLEY_WS_IDLE_TIMEOUT_S: int(120, 8, 960),
  PARLEY_WS_AUTH_TIMEOUT_MS: int(5000, 1, 60_000),
  PARLEY_TOOLS_ALLOW_PRIVATE: bool(false),
  PARLEY_WEBHOOKS_ALLOW_PRIVATE: bool(false),
  PARLEY_WEBHOOK_RETRY_SCHEDULE_MS: z.string().regex(/^\d+(,\d+)*$/, 'a comma-separated list of ms, e.g. 0,5000,300000').optional(),
  PARLEY_WEBHOOK_TIMEOUT_MS: int(10_000, 1, 600_000),
  PARLEY_WEBHOOK_MAX_IN_FLIGHT: int(4, 1, 256),
  PARLEY_WEBHOOK_DISABLE_AFTER_MS: int(5 * 86_400_000, 1),
  PARLEY_WEBHOOK_SWEEP_MS: int(30_000, 10, 86_400_000),
  PARLEY_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').max(1024)
    .regex(/^[A-Za-z0-9\-._~+/]+=*$/, 'must be a bearer token: letters, digits and - . _ ~ + / (RFC 6750 b64token)').optional(),
});

/**
 * Every environment variable the configuration reads, in schema order, with `PARLEY_TOOL_SECRET_<NAME>`
 * standing for the secrets of HTTP tools (read by prefix). README.md "Configuration" lists exactly these
 * (test/unit/docs-truth.test.ts).
 */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze([...Object.keys(EnvSchema.shape), `${TOOL_SECRET_ENV_PREFIX}<NAME>`]);

/**
 * Ingestion workers by default: 1 on a machine with 2 cores or fewer, else 2. Measured on 2 vCPUs
 * (bench ingest, 2026-11-23): a second worker added no throughput (1.56 vs 1.54 MB/s: the machine is
 * CPU-bound, the main thread stores the chunks) and doubled a running stream's inter-token gap p99
 * during ingestion (1.9x idle with 1 worker, 4.2x with 2; before the workers ran at nice 10 and the chunks
 * were stored on the writer thread).
 */
function defaultIngestWorkers(): number {
  return availableParallelism() <= 2 ? 1 : 2;
}

/**
 * Password hashes computed at once by default: one core is kept for the event loop, and at most 2 hash
 * (1 on a 2-core machine, 2 on 3 cores and more).
 */
function defaultHashConcurrency(): number {
  return Math.min(2, Math.max(1, availableParallelism() - 1));
}

/**
 * The largest upload PARLEY_DOCUMENT_LIMIT_BYTES may allow with MongoDB, bytes (15 MiB): the upload is
 * stored in one document, and a BSON document holds at most 16 MiB (the rest is room for its fields).
 */
export const MONGODB_MAX_DOCUMENT_BYTES = 15 * 1024 * 1024;

/** The window the sign-in failure limits count over, ms (15 minutes). */
export const LOGIN_WINDOW_MS = 15 * 60_000;

/** Parsed, frozen configuration. */
export interface Config {
  host: string;
  port: number;
  /**
   * HTTPS and WSS on the public port (PARLEY_TLS_CERT_FILE, PARLEY_TLS_KEY_FILE: PEM files, absolute
   * paths), or undefined for plain HTTP. Both or neither. SIGHUP reads them again (docs/operations.md "TLS").
   */
  tls: { certFile: string; keyFile: string } | undefined;
  /**
   * Client addresses behind proxies (src/net/trusted-proxies.ts): the proxies whose `header`
   * (PARLEY_FORWARDED_HEADER) is believed (PARLEY_TRUSTED_PROXIES; empty: none, the socket peer is the client).
   */
  proxies: { trusted: TrustedProxies; header: ForwardedHeader };
  /**
   * The default `retention_days` of an organization that has not set its own (PARLEY_RETENTION_DAYS):
   * conversations with no activity for that many days are erased; undefined keeps everything.
   */
  retentionDays: number | undefined;
  dataDir: string;
  /**
   * SQLite `synchronous` in WAL mode: `full` syncs every commit (a stored message survives power loss);
   * `normal` survives process crashes only, and saves one fsync per group commit.
   */
  sqliteSynchronous: 'FULL' | 'NORMAL';
  /**
   * Where conversation and message writes commit: `worker`, a writer thread (their fsyncs and the WAL
   * checkpoints never block the event loop), or `main`, group commit on the main thread.
   */
  sqliteWriter: 'worker' | 'main';
  /** Where knowledge searches run: a reader thread (`worker`) or the main thread's connection (`main`). */
  sqliteReader: 'worker' | 'main';
  /**
   * The MongoDB store (PARLEY_MONGODB_URI; docs/operations.md "MongoDB"), or undefined: SQLite in `dataDir`.
   * `uri` a replica set's connection string (it may hold a password: never log it); `maxPoolSize`
   * connections per process to each server; `waitQueueTimeoutMS` the longest wait for one (then 503
   * `overloaded`); `serverSelectionTimeoutMS` the longest wait for a server (start-up fails after it).
   */
  mongodb: { uri: string; maxPoolSize: number; waitQueueTimeoutMS: number; serverSelectionTimeoutMS: number } | undefined;
  /** The MongoDB client settings above without the URI, set whether or not the store is MongoDB (`store copy` uses them). */
  mongodbClient: { maxPoolSize: number; waitQueueTimeoutMS: number; serverSelectionTimeoutMS: number };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Cap on a JSON request body, bytes (413 body_too_large past it). */
  bodyLimitBytes: number;
  /** Cap on a raw document upload, bytes. */
  documentLimitBytes: number;
  /** Provider `openai`; `connections` caps concurrent upstream streams (one stream per keep-alive connection). */
  openai: { baseUrl: string; apiKey: string | undefined; connections: number } | undefined;
  /** A model stream with no token for this long fails with model_timeout, ms. Also bounds one embeddings request. */
  modelTimeoutMs: number;
  /**
   * Optional embeddings (docs/knowledge-bases.md "Embeddings (optional)"): the embedding model of the
   * `openai` provider (PARLEY_EMBEDDINGS_MODEL) and the chunks sent per embeddings request (1-2048).
   * Undefined when no model is set: search is bm25 alone.
   */
  embeddings: { model: string; batch: number } | undefined;
  ingestWorkers: number;
  /** A document whose parse and chunking in the worker runs longer than this fails, ms. */
  ingestTimeoutMs: number;
  /**
   * Memory for parsing one document, MB: the JavaScript heap cap of each parser process, whose whole
   * memory the operating system caps at this plus 256 MB (src/knowledge/ingestion-pool.ts); a document
   * that needs more fails (`document_too_large`).
   */
  ingestMemoryMb: number;
  /**
   * The expansion limit of a document, bytes: most bytes a DOCX or PDF may decompress to (counted while
   * inflating) and most characters of text any document may yield; past it the document fails with
   * `document_too_large` (docs/knowledge-bases.md "Document size limits").
   */
  ingestMaxExpandedBytes: number;
  /**
   * Documents of one organization that may be `processing` (waiting or being parsed) at once, counted in
   * the store (so across every process on it); one upload more is refused with 429 `rate_limited`.
   */
  ingestMaxProcessingPerOrg: number;
  /** Nice value (0-19) of the ingestion worker threads, so that parsing yields the CPU to chat (Linux). */
  ingestNice: number;
  /**
   * Rounds of the built-in warm-up documents each ingestion worker parses when it starts
   * (src/knowledge/warm-up.ts; 6 is the measured choice): with 1 or more the workers start with the
   * server, warm up and keep running. 0 (the default): they start with the first document and stop after
   * 60 s without work, holding no memory in between.
   */
  ingestWarmUpRounds: number;
  /** A conversation actor idle this long is unloaded, ms. */
  idleUnloadMs: number;
  /** Visitor messages that may wait behind a running turn; one more gets 409 turn_in_progress. */
  maxQueuedTurns: number;
  /** Model calls per turn (tool loop bound). */
  maxToolSteps: number;
  /** Passages retrieved per turn. */
  retrievalK: number;
  /** SSE `: ping` interval, ms. */
  heartbeatMs: number;
  /** An SSE client with more than this many bytes its socket has not taken is disconnected, bytes. */
  sseMaxBufferedBytes: number;
  /** On SIGTERM, running turns get this long to finish, ms. */
  shutdownGraceMs: number;
  /** A finished turn's events stay replayable this long, ms. */
  turnReplayMs: number;
  /**
   * The replay of all finished turns together holds at most this much memory, bytes (estimated); past
   * it the oldest finished turns are dropped and resume answers 404 for them (their stored messages stay).
   */
  turnReplayBytes: number;
  /**
   * How often the store feed is read for changes made by other processes sharing the store (a revoked
   * key, a removed member, an unpublished agent), ms; this process's own changes apply at once.
   */
  feedPollMs: number;
  /**
   * Several processes on one store (DESIGN.md "Several processes", docs/scaling.md): the address the
   * neighbours reach this process at (default `http://127.0.0.1:<internal port, else port>`), a second
   * port this process also listens on, for its neighbours (PARLEY_PROCESSES gives each child one: the
   * shared port cannot reach one process in particular), how long a conversation lease lasts (ms), how
   * many processes `npm start` runs on the shared port (`auto`: one per core), and the id of the process
   * this one replaces (set by the primary process for a child it restarts: that one is dead).
   */
  cluster: {
    advertiseUrl: string | undefined; internalPort: number | undefined; leaseMs: number; processes: number; replaces: string | undefined;
    /** Set by the primary of PARLEY_PROCESSES for its children (internal): this process is one of a group, and its index there. */
    groupChild: boolean; index: number | undefined;
  };
  /** Create the demo organization, agent and key on first start with an empty data dir. */
  bootstrap: boolean;
  /** Folder ingested as the demo knowledge base; default: the project's docs/. */
  docsDir: string;
  /** The built dashboard served at /dashboard (read once at start); default: the project's dist/web/dashboard/. */
  dashboardDir: string;
  /** The built chat widget (`widget.js`) served at /widget.js (read once at start); default: the project's dist/web/widget/. */
  widgetDir: string;
  /** Pause between words of the builtin model, ms (0 = only yield to the event loop). */
  builtinWordDelayMs: number;
  /**
   * Admission control of new turns (src/runtime/admission.ts): turns in set-up at once, requests that
   * may wait for a slot and for how long (ms), the event-loop lag (ms) past which new turns are
   * refused with 503 overloaded, the lag (ms) and the busy share of the event loop (0..1) that the
   * adaptive limit on live turns steers to (0 = not used: the default), and the most live turns at once.
   */
  admission: {
    maxInSetup: number; maxWaiting: number; maxWaitMs: number; maxLagMs: number; retryAfterSeconds: number;
    targetLagMs: number; targetUtilization: number; maxLiveTurns: number;
  };
  /**
   * Person sign-in: refresh tokens expire after `refreshIdleMs` unused and `refreshAbsoluteMs` after the
   * login (ms); `passwordHashConcurrency` argon2 hashes run at once; failed sign-ins allowed within
   * `loginWindowMs` per account from one client address, per client address, and per account from all
   * addresses (the ceiling past which only addresses with no recent failure on the account may try), a
   * token bucket each (src/auth/login-throttle.ts), before 429 rate_limited.
   */
  auth: {
    refreshIdleMs: number; refreshAbsoluteMs: number; passwordHashConcurrency: number;
    loginFailuresPerAccount: number; loginFailuresPerAddress: number; loginAccountCeiling: number; loginWindowMs: number;
  };
  /**
   * Public endpoints and sockets of published agents (API.md "WebSockets"): requests (and socket
   * message frames) per client address and per visitor token per minute, token buckets; past them 429
   * `rate_limited` (an `error` frame on a socket).
   */
  publicLimits: { perAddressPerMinute: number; perVisitorPerMinute: number };
  /** When set, `GET /metrics` requires `Authorization: Bearer <metricsToken>` (API.md "Operations"). */
  metricsToken: string | undefined;
  /**
   * WebSockets: a socket with more than `maxBufferedBytes` unsent is closed with 1013 (bytes); one silent
   * for `idleTimeoutS` is closed (uWS pings before that; s); the listen-only socket's `auth` frame must
   * come within `authTimeoutMs` (API.md: 5 s; ms).
   */
  ws: { maxBufferedBytes: number; idleTimeoutS: number; authTimeoutMs: number };
  /**
   * HTTP tools of agents (docs/agents-and-models.md "HTTP tools"): `allowPrivate` lets tool URLs reach
   * loopback, private and link-local addresses (off by default: src/net/outbound-guard.ts); `secrets` are
   * the `PARLEY_TOOL_SECRET_*` variables (name -> value) a tool's `headers_from_env` may name, read once
   * at start and never logged or returned by the API.
   */
  tools: { allowPrivate: boolean; secrets: ReadonlyMap<string, string> };
  /**
   * Outbound webhooks (API.md "Webhooks"): `allowPrivate` lets endpoints reach loopback, private and
   * link-local addresses (tests, self-hosted set-ups; refused by default); `retryScheduleMs` is the delay
   * before each attempt (undefined: the default at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each
   * +-20%); `timeoutMs` bounds one attempt; `maxInFlight` attempts at once per endpoint; an endpoint
   * failing for `disableAfterMs` is disabled; the lease sweep runs every `sweepMs`. All durations ms.
   */
  webhooks: { allowPrivate: boolean; retryScheduleMs: number[] | undefined; timeoutMs: number; maxInFlight: number; disableAfterMs: number; sweepMs: number };
}

/**
 * What PARLEY_PROCESSES above 1 cannot work with, one line per variable (empty when nothing): every child
 * listens on the one PARLEY_PORT, so port 0 (any free port) would give each child a port of its own, and
 * none would be the service's; the primary gives each child an internal port of its own and each child
 * advertises its own address, so one PARLEY_ADVERTISE_URL or PARLEY_INTERNAL_PORT for all of them would
 * send every neighbour's forwarded request to one child (docs/scaling.md).
 */
function processGroupConflicts(e: { PARLEY_PORT: number; PARLEY_ADVERTISE_URL?: string | undefined; PARLEY_INTERNAL_PORT?: number | undefined }): string[] {
  const lines: string[] = [];
  if (e.PARLEY_PORT === 0) lines.push('PARLEY_PORT: 0 (any free port) cannot be shared by PARLEY_PROCESSES processes: give a port number');
  if (e.PARLEY_ADVERTISE_URL !== undefined) {
    lines.push('PARLEY_ADVERTISE_URL: cannot be set with PARLEY_PROCESSES above 1 (each process advertises its own internal port): unset it, or run the processes yourself, each with its own');
  }
  if (e.PARLEY_INTERNAL_PORT !== undefined) {
    lines.push('PARLEY_INTERNAL_PORT: cannot be set with PARLEY_PROCESSES above 1 (each process gets a free internal port of its own): unset it');
  }
  return lines;
}

/**
 * Parses configuration from an environment map (default `process.env`). Throws an Error listing every
 * invalid variable, and the variables PARLEY_PROCESSES above 1 cannot work with (processGroupConflicts). `projectRoot` resolves the default docs and dashboard folders.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, projectRoot = process.cwd()): Readonly<Config> {
  const parsed = EnvSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  if ((e.PARLEY_TLS_CERT_FILE === undefined) !== (e.PARLEY_TLS_KEY_FILE === undefined)) {
    throw new Error('Invalid configuration:\n  PARLEY_TLS_CERT_FILE and PARLEY_TLS_KEY_FILE: set both (HTTPS) or neither (plain HTTP)');
  }
  let trusted: TrustedProxies;
  try {
    trusted = new TrustedProxies((e.PARLEY_TRUSTED_PROXIES ?? '').split(','));
  } catch (err) {
    throw new Error(`Invalid configuration:\n  PARLEY_TRUSTED_PROXIES: ${(err as Error).message}`);
  }
  const processes = e.PARLEY_PROCESSES === 'auto' ? availableParallelism() : e.PARLEY_PROCESSES;
  if (processes > 1) {
    const refused = processGroupConflicts(e);
    if (refused.length > 0) throw new Error(`Invalid configuration:\n  ${refused.join('\n  ')}`);
  }
  if (e.PARLEY_EMBEDDINGS_MODEL !== undefined && e.PARLEY_OPENAI_BASE_URL === undefined) {
    throw new Error('Invalid configuration:\n  PARLEY_EMBEDDINGS_MODEL: needs PARLEY_OPENAI_BASE_URL (embeddings come from the OpenAI-compatible provider)');
  }
  if (e.PARLEY_MONGODB_URI !== undefined && e.PARLEY_DOCUMENT_LIMIT_BYTES > MONGODB_MAX_DOCUMENT_BYTES) {
    throw new Error(`Invalid configuration:\n  PARLEY_DOCUMENT_LIMIT_BYTES: at most ${MONGODB_MAX_DOCUMENT_BYTES} with PARLEY_MONGODB_URI (an upload is kept in one MongoDB document, and a document holds at most 16 MiB)`);
  }
  return Object.freeze({
    host: e.PARLEY_HOST,
    port: e.PARLEY_PORT,
    tls: e.PARLEY_TLS_CERT_FILE !== undefined && e.PARLEY_TLS_KEY_FILE !== undefined
      ? { certFile: resolve(e.PARLEY_TLS_CERT_FILE), keyFile: resolve(e.PARLEY_TLS_KEY_FILE) } : undefined,
    proxies: { trusted, header: e.PARLEY_FORWARDED_HEADER },
    retentionDays: e.PARLEY_RETENTION_DAYS,
    dataDir: resolve(e.PARLEY_DATA_DIR),
    sqliteSynchronous: e.PARLEY_SQLITE_SYNCHRONOUS === 'full' ? 'FULL' : 'NORMAL',
    sqliteWriter: e.PARLEY_SQLITE_WRITER,
    sqliteReader: e.PARLEY_SQLITE_READER,
    mongodb: e.PARLEY_MONGODB_URI === undefined ? undefined : {
      uri: e.PARLEY_MONGODB_URI, maxPoolSize: e.PARLEY_MONGODB_MAX_POOL_SIZE,
      waitQueueTimeoutMS: e.PARLEY_MONGODB_WAIT_QUEUE_TIMEOUT_MS, serverSelectionTimeoutMS: e.PARLEY_MONGODB_SERVER_SELECTION_TIMEOUT_MS,
    },
    mongodbClient: {
      maxPoolSize: e.PARLEY_MONGODB_MAX_POOL_SIZE, waitQueueTimeoutMS: e.PARLEY_MONGODB_WAIT_QUEUE_TIMEOUT_MS,
      serverSelectionTimeoutMS: e.PARLEY_MONGODB_SERVER_SELECTION_TIMEOUT_MS,
    },
    logLevel: e.PARLEY_LOG_LEVEL,
    bodyLimitBytes: e.PARLEY_BODY_LIMIT_BYTES,
    documentLimitBytes: e.PARLEY_DOCUMENT_LIMIT_BYTES,
    openai: e.PARLEY_OPENAI_BASE_URL
      ? { baseUrl: e.PARLEY_OPENAI_BASE_URL.replace(/\/+$/, ''), apiKey: e.PARLEY_OPENAI_API_KEY, connections: e.PARLEY_OPENAI_CONNECTIONS }
      : undefined,
    modelTimeoutMs: e.PARLEY_MODEL_TIMEOUT_MS,
    embeddings: e.PARLEY_EMBEDDINGS_MODEL !== undefined ? { model: e.PARLEY_EMBEDDINGS_MODEL, batch: e.PARLEY_EMBEDDINGS_BATCH } : undefined,
    ingestWorkers: e.PARLEY_INGEST_WORKERS,
    ingestTimeoutMs: e.PARLEY_INGEST_TIMEOUT_MS,
    ingestMemoryMb: e.PARLEY_INGEST_MEMORY_MB,
    ingestMaxExpandedBytes: e.PARLEY_INGEST_MAX_EXPANDED_BYTES,
    ingestMaxProcessingPerOrg: e.PARLEY_INGEST_MAX_PROCESSING_PER_ORG,
    ingestNice: e.PARLEY_INGEST_NICE,
    ingestWarmUpRounds: e.PARLEY_INGEST_WARM_UP,
    idleUnloadMs: e.PARLEY_IDLE_UNLOAD_MS,
    maxQueuedTurns: e.PARLEY_MAX_QUEUED_TURNS,
    maxToolSteps: e.PARLEY_MAX_TOOL_STEPS,
    retrievalK: e.PARLEY_RETRIEVAL_K,
    heartbeatMs: e.PARLEY_HEARTBEAT_MS,
    sseMaxBufferedBytes: e.PARLEY_SSE_MAX_BUFFERED_BYTES,
    shutdownGraceMs: e.PARLEY_SHUTDOWN_GRACE_MS,
    turnReplayMs: e.PARLEY_TURN_REPLAY_MS,
    turnReplayBytes: e.PARLEY_TURN_REPLAY_BYTES,
    feedPollMs: e.PARLEY_FEED_POLL_MS,
    cluster: {
      advertiseUrl: e.PARLEY_ADVERTISE_URL?.replace(/\/+$/, ''), internalPort: e.PARLEY_INTERNAL_PORT, leaseMs: e.PARLEY_LEASE_MS,
      processes, replaces: e.PARLEY_REPLACES_PROCESS,
      groupChild: e.PARLEY_GROUP_CHILD, index: e.PARLEY_PROCESS_INDEX,
    },
    bootstrap: e.PARLEY_BOOTSTRAP,
    docsDir: resolve(projectRoot, e.PARLEY_DOCS_DIR ?? 'docs'),
    dashboardDir: resolve(projectRoot, e.PARLEY_DASHBOARD_DIR ?? 'dist/web/dashboard'),
    widgetDir: resolve(projectRoot, e.PARLEY_WIDGET_DIR ?? 'dist/web/widget'),
    builtinWordDelayMs: e.PARLEY_BUILTIN_WORD_DELAY_MS,
    admission: {
      maxInSetup: e.PARLEY_MAX_TURNS_IN_SETUP, maxWaiting: e.PARLEY_ADMISSION_QUEUE,
      maxWaitMs: e.PARLEY_ADMISSION_WAIT_MS, maxLagMs: e.PARLEY_MAX_LOOP_LAG_MS, retryAfterSeconds: 1,
      targetLagMs: e.PARLEY_TARGET_LOOP_LAG_MS, targetUtilization: e.PARLEY_TARGET_LOOP_BUSY_PERCENT / 100,
      maxLiveTurns: e.PARLEY_MAX_LIVE_TURNS,
    },
    auth: {
      refreshIdleMs: e.PARLEY_REFRESH_IDLE_DAYS * 86_400_000, refreshAbsoluteMs: e.PARLEY_REFRESH_ABSOLUTE_DAYS * 86_400_000,
      passwordHashConcurrency: e.PARLEY_PASSWORD_HASH_CONCURRENCY,
      loginFailuresPerAccount: e.PARLEY_LOGIN_FAILURES_PER_ACCOUNT, loginFailuresPerAddress: e.PARLEY_LOGIN_FAILURES_PER_ADDRESS,
      loginAccountCeiling: e.PARLEY_LOGIN_ACCOUNT_CEILING,
      loginWindowMs: LOGIN_WINDOW_MS,
    },
    publicLimits: { perAddressPerMinute: e.PARLEY_PUBLIC_REQUESTS_PER_MINUTE, perVisitorPerMinute: e.PARLEY_PUBLIC_VISITOR_REQUESTS_PER_MINUTE },
    metricsToken: e.PARLEY_METRICS_TOKEN,
    ws: { maxBufferedBytes: e.PARLEY_WS_MAX_BUFFERED_BYTES, idleTimeoutS: e.PARLEY_WS_IDLE_TIMEOUT_S, authTimeoutMs: e.PARLEY_WS_AUTH_TIMEOUT_MS },
    tools: {
      allowPrivate: e.PARLEY_TOOLS_ALLOW_PRIVATE,
      secrets: new Map(Object.entries(env).filter((kv): kv is [string, string] => kv[0].startsWith(TOOL_SECRET_ENV_PREFIX) && typeof kv[1] === 'string' && kv[1] !== '')),
    },
    webhooks: {
      allowPrivate: e.PARLEY_WEBHOOKS_ALLOW_PRIVATE,
      retryScheduleMs: e.PARLEY_WEBHOOK_RETRY_SCHEDULE_MS?.split(',').map(Number),
      timeoutMs: e.PARLEY_WEBHOOK_TIMEOUT_MS, maxInFlight: e.PARLEY_WEBHOOK_MAX_IN_FLIGHT,
      disableAfterMs: e.PARLEY_WEBHOOK_DISABLE_AFTER_MS, sweepMs: e.PARLEY_WEBHOOK_SWEEP_MS,
    },
  });
}
