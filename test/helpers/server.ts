import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateApiKey, hashApiKey } from '../../src/auth/api-keys.js';
import { loadConfig } from '../../src/config/config.js';
import { newId } from '../../src/ids/ids.js';
import { createLogger } from '../../src/log/logger.js';
import { startParley, type Parley } from '../../src/parley.js';
import type { Role } from '../../src/vocabulary/role.js';

let personSeq = 0;

/** A person made by addPerson. */
export interface TestPerson {
  userId: string;
  email: string;
  password: string;
  orgId: string | null;
}

/** The body of a login or refresh (API.md "Auth endpoints"). */
export interface SessionBody {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  user: { id: string; email: string };
  organizations: Array<{ id: string; name: string; role: Role }>;
}

/** A Parley server for integration tests: real uWS on a free port, real SQLite in a temp dir. */
export interface TestServer {
  parley: Parley;
  url: string;
  dataDir: string;
  /** Organization and API key seeded at start. */
  orgId: string;
  apiKey: string;
  /** Creates another organization with its own key (for cross-org checks). */
  addOrganization(name?: string): Promise<{ orgId: string; apiKey: string; keyId: string }>;
  /**
   * Creates a person with a password (random unless given) and, unless `orgId` is null, a membership with
   * `role` (default owner) in `orgId` (default the seeded organization).
   */
  addPerson(opts?: { email?: string; password?: string; role?: Role; orgId?: string | null }): Promise<TestPerson>;
  /** POST /v1/auth/login; throws unless 200. */
  login(email: string, password: string): Promise<SessionBody>;
  /** A new person (see addPerson) signed in: their session and the headers of their requests in `orgId`. */
  signIn(opts?: { email?: string; password?: string; role?: Role; orgId?: string | null }): Promise<TestPerson & { session: SessionBody; headers: Record<string, string> }>;
  /** Log lines written so far, parsed (only with `captureLogs`; empty otherwise). */
  logs(): Array<Record<string, unknown> & { level: number; msg: string }>;
  /**
   * `fetch` with the seeded key and JSON headers; `headers` override them (pass a person's
   * `authorization` and `x-org-id` to call as that person).
   */
  api(path: string, init?: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Starts Parley with `env` overrides (PARLEY_* variables) on 127.0.0.1:0 with logging silenced and
 * no bootstrap, then seeds one organization and API key. With `captureLogs` the log lines (level
 * `debug` and up) are kept in memory for `logs()` instead of being silenced.
 */
export async function startTestServer(env: Record<string, string> = {}, opts: { captureLogs?: boolean } = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-test-'));
  const config = loadConfig({
    PARLEY_HOST: '127.0.0.1', PARLEY_PORT: '0', PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: 'silent',
    PARLEY_BOOTSTRAP: 'false', PARLEY_SHUTDOWN_GRACE_MS: '2000',
    // Load shedding on event-loop lag is tested on its own; here a GC pause must not refuse a chat.
    // The adaptive limit on live turns likewise (a test that opens many streams on a busy machine).
    PARLEY_MAX_LOOP_LAG_MS: '60000', PARLEY_TARGET_LOOP_LAG_MS: '0', PARLEY_TARGET_LOOP_BUSY_PERCENT: '0',
    // Most tests ingest nothing: no ingestion workers started and warmed per server (the warm-up has tests of its own).
    PARLEY_INGEST_WARM_UP: '0', ...env,
  });
  const lines: string[] = [];
  const logger = opts.captureLogs ? createLogger('debug', { write: (line: string) => { lines.push(line); } }) : undefined;
  const parley = await startParley(config, logger ? { logger } : {});
  const store = parley.store;

  async function addOrganization(name = 'Test org') {
    const orgId = newId('org');
    const now = new Date().toISOString();
    await store.organizations.create({ id: orgId, name, created_at: now });
    const apiKey = generateApiKey();
    const keyId = newId('key');
    await store.apiKeys.create({ id: keyId, org_id: orgId, name: 'test', key_hash: hashApiKey(apiKey), last4: apiKey.slice(-4), created_at: now, revoked_at: null, expires_at: null });
    return { orgId, apiKey, keyId };
  }
  const first = await addOrganization();

  async function addPerson(opts: { email?: string; password?: string; role?: Role; orgId?: string | null } = {}): Promise<TestPerson> {
    const email = opts.email ?? `person${++personSeq}-${newId('usr').slice(-6).toLowerCase()}@example.com`;
    const password = opts.password ?? `pw-${newId('req')}`;
    const user = await parley.directory.createUser(email, password);
    const orgId = opts.orgId === undefined ? first.orgId : opts.orgId;
    if (orgId !== null) await store.memberships.add({ org_id: orgId, user_id: user.id, role: opts.role ?? 'owner', created_at: new Date().toISOString() });
    return { userId: user.id, email: user.email, password, orgId };
  }

  async function login(email: string, password: string): Promise<SessionBody> {
    const res = await fetch(`${parley.url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${text}`);
    return JSON.parse(text) as SessionBody;
  }

  return {
    parley, url: parley.url, dataDir, orgId: first.orgId, apiKey: first.apiKey, addOrganization, addPerson, login,
    async signIn(opts = {}) {
      const person = await addPerson(opts);
      const session = await login(person.email, person.password);
      const headers: Record<string, string> = { authorization: `Bearer ${session.access_token}` };
      if (person.orgId !== null) headers['x-org-id'] = person.orgId;
      return { ...person, session, headers };
    },
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown> & { level: number; msg: string }),
    api(path, init = {}) {
      const headers: Record<string, string> = { authorization: `Bearer ${init.key ?? first.apiKey}`, ...init.headers };
      let body: string | undefined;
      if (init.body !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
      }
      return fetch(`${parley.url}${path}`, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, ...(body === undefined ? {} : { body }) });
    },
    async close() {
      await parley.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
