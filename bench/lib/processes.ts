/**
 * Spawning the benchmark's processes (mock upstream, Parley, baseline, floor, Portkey, load generator) with a raised
 * open-files limit, readiness waits, and a guaranteed kill when the runner exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childPids, OPEN_FILES_WANTED } from './proc.js';

/** A spawned process the runner owns. */
export interface Owned {
  name: string;
  child: ChildProcess;
  pid: number;
  /** The last bytes of stdout+stderr, for error messages. */
  tail(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
}

const owned = new Set<Owned>();
/** Processes the runner did not spawn itself but must not leave behind (a PARLEY_PROCESSES primary's children). */
const adopted = new Set<number>();
const tempDirs = new Set<string>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const o of owned) {
      try { process.kill(o.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    for (const pid of adopted) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    for (const d of tempDirs) {
      try { rmSync(d, { recursive: true, force: true }); } catch { /* best effort */ }
    }
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench: ${sig}, stopping child processes\n`);
      process.exit(130);
    });
  }
}

/** A temp dir removed when the runner exits. */
export function tempDir(prefix: string): string {
  hookExit();
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(d);
  return d;
}

export function removeTempDir(d: string): void {
  tempDirs.delete(d);
  rmSync(d, { recursive: true, force: true });
}

/** A port that was free a moment ago on 127.0.0.1 (bind to 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Spawns `node <nodeArgs> <script> <args>` through `bash -c 'ulimit -n N; exec node ...'` so it gets
 * the raised open-files limit (capped at the hard limit) and keeps the same pid. With `ipc`, an IPC
 * channel is attached (fd 3 survives the exec).
 */
export function spawnNode(name: string, script: string, opts: {
  args?: string[]; nodeArgs?: string[]; env?: Record<string, string>; cwd?: string; ipc?: boolean;
} = {}): Owned {
  hookExit();
  const argv = [...(opts.nodeArgs ?? []), script, ...(opts.args ?? [])].map(shellQuote).join(' ');
  const cmd = `ulimit -n ${OPEN_FILES_WANTED} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec ${shellQuote(process.execPath)} ${argv}`;
  const child = spawn('bash', ['-c', cmd], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not spawn ${name}`);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail += chunk.toString('utf8');
    if (tail.length > 16_384) tail = tail.slice(-8192);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const o: Owned = {
    name, child, pid: child.pid, exited,
    tail: () => tail,
    async stop(graceMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) {
        owned.delete(o);
        return;
      }
      child.kill('SIGTERM');
      const gone = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
      if (!gone) {
        child.kill('SIGKILL');
        await Promise.race([exited, sleep(2000)]);
      }
      owned.delete(o);
    },
  };
  owned.add(o);
  void exited.then(() => owned.delete(o));
  return o;
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Resolves with the first stdout line parsed as JSON (the "ready" line), or rejects on exit/timeout. */
export function readyLine<T>(o: Owned, timeoutMs = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => finish(new Error(`${o.name}: no ready line within ${timeoutMs} ms\n${o.tail()}`)), timeoutMs);
    const onData = (c: Buffer) => {
      buf += c.toString('utf8');
      const i = buf.indexOf('\n');
      if (i < 0) return;
      try {
        finish(undefined, JSON.parse(buf.slice(0, i)) as T);
      } catch (err) {
        finish(new Error(`${o.name}: bad ready line ${buf.slice(0, i)}: ${String(err)}`));
      }
    };
    const onExit = (code: number | null) => finish(new Error(`${o.name} exited (${code}) before it was ready\n${o.tail()}`));
    function finish(err: Error | undefined, v?: T) {
      clearTimeout(timer);
      o.child.stdout?.off('data', onData);
      o.child.off('exit', onExit);
      if (err) reject(err);
      else resolve(v as T);
    }
    o.child.stdout?.on('data', onData);
    o.child.once('exit', onExit);
  });
}

/** Polls `check` every `everyMs` until it returns a value, the process dies, or `timeoutMs` passes. */
export async function pollUntil<T>(what: string, check: () => Promise<T | undefined> | T | undefined, opts: { timeoutMs?: number; everyMs?: number; proc?: Owned } = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  for (let i = 0; i < 100_000; i++) {
    if (opts.proc && opts.proc.child.exitCode !== null) throw new Error(`${opts.proc.name} exited while waiting for ${what}\n${opts.proc.tail()}`);
    let v: T | undefined;
    try { v = await check(); } catch { v = undefined; }
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${opts.proc ? `\n${opts.proc.tail()}` : ''}`);
    await sleep(opts.everyMs ?? 50);
  }
  throw new Error(`gave up waiting for ${what}`);
}

// ---------------------------------------------------------------------------------------------- mock

export interface MockProc extends Owned {
  url: string;
  port: number;
}

/** Mock upstream options, as its CLI takes them. */
export interface MockOptions {
  ttftMs: number;
  /** Paced mode when set: this many deltas, one per `intervalMs` (one shared timer tick). */
  deltas?: number;
  intervalMs?: number;
}

export async function startMock(root: string, o: MockOptions, name = 'mock'): Promise<MockProc> {
  const args = ['--port', '0', '--ttft-ms', String(o.ttftMs), '--no-record'];
  if (o.deltas !== undefined) args.push('--deltas', String(o.deltas), '--interval-ms', String(o.intervalMs ?? 20));
  const p = spawnNode(name, join(root, 'dist/test/helpers/mock-upstream.js'), { args, cwd: root });
  const ready = await readyLine<{ url: string; port: number }>(p);
  return Object.assign(p, { url: ready.url, port: ready.port });
}

// -------------------------------------------------------------------------------------------- parley

export interface ParleyProc extends Owned {
  url: string;
  port: number;
  apiKey: string;
  organizationId: string;
  knowledgeBaseId: string;
  dataDir: string;
  /**
   * With PARLEY_PROCESSES=N (N >= 2): the process ids of the primary's N children, in start order as the
   * kernel numbered them (`pid` is the primary's). Absent for a single process.
   */
  children?: number[];
  /** Every process id of this Parley: the primary and its children, or the one process. */
  readonly pids: number[];
  /** Creates an `openai` agent with this model name (and `instructions`, its system prompt, default none); returns its id. */
  createAgent(model: string, instructions?: string): Promise<string>;
}

/** Options of {@link startParleyServer}. */
export interface ParleyStartOptions {
  upstreamUrl?: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  /**
   * PARLEY_PROCESSES: with N >= 2 the spawned process is the primary of N children on one port
   * (src/process-group.ts); the start waits until every child serves and they see each other (each
   * child's series in the group's /metrics). Default: a single process (the variable unset).
   */
  processes?: number;
  /**
   * Serve the data dir of this already running Parley (its own port, no bootstrap): two processes on one
   * store (DESIGN.md "Several processes"). The credentials are the other's.
   */
  shareDataOf?: ParleyProc;
  /** Name of the process in error messages (default `parley`). */
  name?: string;
}

/**
 * Starts `node dist/src/main.js` (under `root`: another checkout's build works too) on a free port with
 * bootstrap on an empty data dir (and an empty docs dir, so no demo ingestion runs in the background),
 * then waits for initial-credentials.json and /healthz. `env` adds PARLEY_* variables. See
 * {@link ParleyStartOptions} for a group of processes and for a second process on the same data dir.
 */
export async function startParleyServer(root: string, opts: ParleyStartOptions = {}): Promise<ParleyProc> {
  const shared = opts.shareDataOf;
  const dataDir = shared?.dataDir ?? tempDir('parley-bench-data-');
  const docsDir = join(dataDir, 'empty-docs');
  if (!shared) mkdirSync(docsDir);
  const port = await freePort();
  const env: Record<string, string> = {
    PARLEY_HOST: '127.0.0.1', PARLEY_PORT: String(port), PARLEY_DATA_DIR: join(dataDir, 'data'), PARLEY_LOG_LEVEL: 'warn',
    PARLEY_BOOTSTRAP: shared ? 'false' : 'true', PARLEY_DOCS_DIR: docsDir, PARLEY_SHUTDOWN_GRACE_MS: '1000',
    ...(opts.upstreamUrl ? { PARLEY_OPENAI_BASE_URL: opts.upstreamUrl } : {}),
    ...(opts.processes !== undefined ? { PARLEY_PROCESSES: String(opts.processes) } : {}),
    ...opts.env,
  };
  const p = spawnNode(opts.name ?? 'parley', join(root, 'dist/src/main.js'), { env, cwd: root, ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}) });
  const credsFile = join(dataDir, 'data', 'initial-credentials.json');
  const creds = await pollUntil('parley initial-credentials.json', () => {
    if (!existsSync(credsFile)) return undefined;
    const c = JSON.parse(readFileSync(credsFile, 'utf8')) as { api_key?: string; organization_id?: string; knowledge_base_id?: string };
    return c.api_key ? c : undefined;
  }, { proc: p, timeoutMs: 30_000 });
  const url = `http://127.0.0.1:${port}`;
  await pollUntil('parley /healthz', async () => ((await fetch(`${url}/healthz`)).ok ? true : undefined), { proc: p });
  let children: number[] | undefined;
  if (opts.processes !== undefined && opts.processes >= 2) {
    const n = opts.processes;
    children = await pollUntil(`${n} children of the Parley primary`, () => {
      const c = childPids(p.pid);
      return c.length === n ? c : undefined;
    }, { proc: p, timeoutMs: 30_000, everyMs: 100 });
    for (const c of children) adopted.add(c);
    // Every child serves, and knows the others: the group's /metrics (from whichever child answers) has
    // a series of each (its `process` label is its index).
    await pollUntil('every Parley child in the group\'s /metrics', async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return Array.from({ length: n }, (_, i) => text.includes(`process="${i}"`)).every(Boolean) ? true : undefined;
    }, { proc: p, timeoutMs: 30_000, everyMs: 200 });
  }
  const apiKey = creds.api_key!;
  const stopPrimary = p.stop.bind(p);
  return Object.assign(p, {
    url, port, apiKey, dataDir,
    organizationId: creds.organization_id ?? '',
    knowledgeBaseId: creds.knowledge_base_id ?? '',
    ...(children ? { children } : {}),
    pids: [p.pid, ...(children ?? [])],
    async stop(graceMs?: number) {
      await stopPrimary(graceMs);
      // The primary passes SIGTERM on and waits for its children; one it left (killed itself) must not stay.
      for (const c of children ?? []) {
        try { process.kill(c, 'SIGKILL'); } catch { /* gone, as it should be */ }
        adopted.delete(c);
      }
    },
    async createAgent(model: string, instructions?: string): Promise<string> {
      const res = await fetch(`${url}/v1/agents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bench', model: { provider: 'openai', name: model }, knowledge_base_ids: [], tools: [], ...(instructions === undefined ? {} : { instructions }) }),
      });
      const body = (await res.json()) as { id?: string };
      if (res.status !== 201 && res.status !== 200) throw new Error(`create agent: ${res.status} ${JSON.stringify(body)}`);
      if (!body.id) throw new Error(`create agent: no id in ${JSON.stringify(body)}`);
      return body.id;
    },
  });
}

// ------------------------------------------------------------------------------------------ baseline

export interface BaselineProc extends Owned {
  url: string;
  port: number;
  apiKey: string;
}

/** The baseline's fixed bench key (the server stores only its SHA-256). */
export const BASELINE_KEY = 'sk_bench_baseline_key_0123456789abcdef';

export async function startBaselineServer(root: string, upstreamUrl: string): Promise<BaselineProc> {
  const dir = tempDir('parley-bench-baseline-');
  const p = spawnNode('baseline', join(root, 'dist/bench/baseline/server.js'), {
    args: ['--port', '0', '--db', join(dir, 'baseline.db'), '--upstream', upstreamUrl],
    env: { BASELINE_API_KEY: BASELINE_KEY },
    cwd: root,
  });
  const ready = await readyLine<{ url: string; port: number }>(p);
  return Object.assign(p, { url: ready.url, port: ready.port, apiKey: BASELINE_KEY });
}

// --------------------------------------------------------------------------------------------- floor

export interface FloorProc extends Owned {
  url: string;
  port: number;
}

/**
 * Starts bench/floor/server.ts (uWS + undici + eventsource-parser, no auth/store) on `upstreamUrl`;
 * `connections` caps its upstream pool (default 4096, Parley's default PARLEY_OPENAI_CONNECTIONS). `port`:
 * 0 (default) for any free one, or a fixed one: uSockets binds with SO_REUSEPORT, so two floors started
 * on the same fixed port both listen there and the kernel spreads new connections over them (two relays
 * on one port). The port must be fixed for both: Linux does not share a port it picked for a bind to 0.
 */
export async function startFloorServer(root: string, upstreamUrl: string, connections = 4096, port = 0, name = 'floor'): Promise<FloorProc> {
  const p = spawnNode(name, join(root, 'dist/bench/floor/server.js'), {
    args: ['--port', String(port), '--upstream', upstreamUrl, '--connections', String(connections)],
    cwd: root,
  });
  const ready = await readyLine<{ url: string; port: number }>(p);
  return Object.assign(p, { url: ready.url, port: ready.port });
}

// ------------------------------------------------------------------------------------------- portkey

export interface PortkeyProc extends Owned {
  url: string;
  port: number;
}

/**
 * Starts Portkey's open-source gateway as shipped (`node node_modules/@portkey-ai/gateway/build/start-server.js
 * --port=<free port> --headless`, bench/README.md and ../shared/PEERS.md) and waits until it answers HTTP.
 * It routes to the mock per request (headers `x-portkey-provider: openai`, `x-portkey-custom-host`).
 */
export async function startPortkey(root: string): Promise<PortkeyProc> {
  const script = join(root, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  if (!existsSync(script)) throw new Error(`Portkey gateway not installed (${script}); it is a devDependency`);
  const port = await freePort();
  const p = spawnNode('portkey', script, { args: [`--port=${port}`, '--headless'], cwd: root });
  const url = `http://127.0.0.1:${port}`;
  await pollUntil('portkey HTTP', async () => ((await fetch(`${url}/`)).status > 0 ? true : undefined), { proc: p, timeoutMs: 30_000, everyMs: 100 });
  return Object.assign(p, { url, port });
}

// --------------------------------------------------------------------------------- WebSocket baseline

export interface WsBaselineProc extends Owned {
  url: string;
  port: number;
  apiKey: string;
}

/** Starts bench/baseline/ws-server.ts (the `ws` package's server holding authenticated idle sockets; key {@link BASELINE_KEY}). */
export async function startWsBaselineServer(root: string): Promise<WsBaselineProc> {
  const p = spawnNode('ws-baseline', join(root, 'dist/bench/baseline/ws-server.js'), {
    args: ['--port', '0'], env: { BASELINE_API_KEY: BASELINE_KEY }, cwd: root,
  });
  const ready = await readyLine<{ url: string; port: number }>(p);
  return Object.assign(p, { url: ready.url, port: ready.port, apiKey: BASELINE_KEY });
}
