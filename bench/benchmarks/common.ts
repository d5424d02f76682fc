/** Shared pieces of the benchmarks: the run context, request targets (direct, Parley, baseline, floor, Portkey), rows helpers, the rig. */
import type { TargetSpec } from '../lib/raw-client.js';
import { startLoadGen, type LoadGen } from '../lib/loadgen-client.js';
import {
  startBaselineServer, startFloorServer, startMock, startParleyServer, startPortkey,
  type BaselineProc, type FloorProc, type MockOptions, type MockProc, type ParleyProc, type PortkeyProc,
} from '../lib/processes.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { BenchOutcome, Row } from '../lib/report.js';
import { waitForQuietHost, type QuietGate } from '../lib/proc.js';
import type { Summary } from '../lib/stats.js';

export interface Ctx {
  root: string;
  smoke: boolean;
  /** Extra node flags for the Parley server (e.g. --cpu-prof). */
  parleyNodeArgs: string[];
  /** Extra PARLEY_* variables for every Parley server (--parley-env). */
  parleyEnv: Record<string, string>;
  /** Streams levels override (--levels). */
  levels: number[] | undefined;
  /** Wait (bounded) for a quiet host before each measurement window; undefined: don't (smoke, --no-quiet-gate). */
  quiet: QuietGate | undefined;
  /**
   * The root of another built checkout of Parley (--reference), run as a reference arm by the scale
   * benchmark (e.g. the code before issue 36, for "PARLEY_PROCESSES=1 within 5% of today").
   */
  reference?: string | undefined;
  log(msg: string): void;
}

export type TargetName = 'parley' | 'baseline' | 'floor' | 'portkey' | 'direct';
/** Every target, in the order windows run (direct first: the reference). */
export const TARGETS: TargetName[] = ['direct', 'parley', 'baseline', 'floor', 'portkey'];
/** The servers under comparison (every target but direct). */
export const SERVERS: Exclude<TargetName, 'direct'>[] = ['parley', 'baseline', 'floor', 'portkey'];

const MESSAGE = 'hello';

export function parleyTarget(p: ParleyProc, agentId: string, stream: boolean, name: string = 'parley'): TargetSpec {
  return {
    name, port: p.port, flavor: 'events', method: 'POST', path: `/v1/agents/${agentId}/chat`,
    headers: { Authorization: `Bearer ${p.apiKey}`, 'Content-Type': 'application/json', Accept: stream ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify({ message: MESSAGE, stream }),
  };
}

/**
 * Parley's OpenAI-compatible endpoint (`POST /v1/chat/completions`, the agent as the model): the same turn
 * as parleyTarget underneath, answered as OpenAI chunks (counted like direct's).
 */
export function parleyOpenAITarget(p: ParleyProc, agentId: string, name: string = 'parley-openai'): TargetSpec {
  return {
    name, port: p.port, flavor: 'openai', method: 'POST', path: '/v1/chat/completions',
    headers: { Authorization: `Bearer ${p.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ model: agentId, messages: [{ role: 'user', content: MESSAGE }], stream: true }),
  };
}

export function baselineTarget(b: BaselineProc, model: string, stream: boolean, name: string = 'baseline'): TargetSpec {
  return {
    name, port: b.port, flavor: 'events', method: 'POST', path: '/v1/chat',
    headers: { Authorization: `Bearer ${b.apiKey}`, 'Content-Type': 'application/json', Accept: stream ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify({ message: MESSAGE, stream, model }),
  };
}

/** The floor (bench/floor/server.ts): no auth; the agent id in the path is the upstream model name. */
export function floorTarget(f: FloorProc, model: string, stream: boolean, name: string = 'floor'): TargetSpec {
  return {
    name, port: f.port, flavor: 'events', method: 'POST', path: `/v1/agents/${encodeURIComponent(model)}/chat`,
    headers: { 'Content-Type': 'application/json', Accept: stream ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify({ message: MESSAGE, stream }),
  };
}

/**
 * Portkey's gateway routing the chat-completions request to the mock (`x-portkey-provider: openai`,
 * `x-portkey-custom-host: <mock>/v1`); it answers OpenAI chunks, counted like direct's.
 */
export function portkeyTarget(k: PortkeyProc, m: MockProc, model: string, name: string = 'portkey'): TargetSpec {
  return {
    name, port: k.port, flavor: 'openai', method: 'POST', path: '/v1/chat/completions',
    headers: {
      'Content-Type': 'application/json', Accept: 'text/event-stream',
      'x-portkey-provider': 'openai', 'x-portkey-custom-host': m.url.replace(/\/+$/, ''),
    },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: MESSAGE }], stream: true }),
  };
}

/** The same chat-completions request Parley makes upstream, straight to the mock. */
export function directTarget(m: MockProc, model: string, stream: boolean, name: string = 'direct'): TargetSpec {
  const path = `${new URL(m.url).pathname.replace(/\/+$/, '')}/chat/completions`;
  return {
    name, port: m.port, flavor: 'openai', method: 'POST', path,
    headers: { 'Content-Type': 'application/json', Accept: stream ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify({
      model, messages: [{ role: 'user', content: MESSAGE }], stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    }),
  };
}

/** Rows for p50/p90/p99/max of a summary per target. */
export function percentileRows(bench: string, prefix: string, unit: string, s: Partial<Record<TargetName, Summary | undefined>>, better: Row['better'] = 'lower'): Row[] {
  const keys = ['p50', 'p90', 'p99', 'max'] as const;
  return keys.map((k) => ({
    bench, metric: `${prefix} ${k}`, unit, better,
    ...perTarget((t) => (s[t] ? nn(s[t]![k]) : null)),
  }));
}

/** The five value columns of a row from one function of the target (null where it does not apply). */
export function perTarget(f: (t: TargetName) => number | null | undefined, skip: TargetName[] = []): Pick<Row, 'parley' | 'baseline' | 'floor' | 'portkey' | 'direct'> {
  const v = (t: TargetName) => (skip.includes(t) ? null : nn(f(t) ?? undefined));
  return { parley: v('parley'), baseline: v('baseline'), floor: v('floor'), portkey: v('portkey'), direct: v('direct') };
}

export function nn(v: number | null | undefined): number | null {
  return v === undefined || v === null || Number.isNaN(v) ? null : v;
}

/** Adds `≈ceiling(...)` for every server whose higher-is-better value is within 10% of the direct value. */
export function flagCeiling(r: Row): Row {
  if (r.better !== 'higher' || r.direct === null || r.direct <= 0) return r;
  const flags = [...(r.flags ?? [])];
  const names: Record<Exclude<TargetName, 'direct'>, string> = { parley: 'Parley', baseline: 'baseline', floor: 'floor', portkey: 'Portkey' };
  for (const t of SERVERS) {
    const v = r[t];
    if (v !== null && v !== undefined && v >= 0.9 * r.direct) flags.push(`≈ceiling(${names[t]})`);
  }
  return flags.length > 0 ? { ...r, flags } : r;
}

/**
 * Host CPU (CPU seconds per second) used outside the measured processes above which a window counts as
 * measured on a busy host: other sessions on a shared machine take CPU the rig does not see.
 */
export const HOST_BUSY_CPU_PER_S = 0.25;

/**
 * Adds `host-busy(<target>,...)` to a row for every target whose window(s) ran while the rest of the host
 * used more than HOST_BUSY_CPU_PER_S CPU s/s (`othersPerS`: CPU s/s outside the measured processes).
 */
export function flagHostBusy(r: Row, othersPerS: Partial<Record<TargetName, number | null | undefined>>): Row {
  const busy = TARGETS.filter((t) => {
    const v = othersPerS[t];
    const value = r[t];
    return typeof v === 'number' && v > HOST_BUSY_CPU_PER_S && value !== null && value !== undefined;
  });
  if (busy.length === 0) return r;
  return { ...r, flags: [...(r.flags ?? []), `host-busy(${busy.join(',')})`] };
}

/** Load-generator send lag p99 (ms) above which its own lateness is part of the measured latency. */
export const LOADGEN_LATE_MS = 5;

/**
 * Adds `loadgen-late(<target>,...)` for every target whose window(s) the load generator sent with a lag
 * p99 above LOADGEN_LATE_MS (`sendLagP99`, ms): latencies count from the scheduled time, so that lag is in
 * the row's latency; the rig, not the server.
 */
export function flagLoadgenLate(r: Row, sendLagP99: Partial<Record<TargetName, number | null | undefined>>): Row {
  const late = TARGETS.filter((t) => {
    const v = sendLagP99[t];
    const value = r[t];
    return typeof v === 'number' && v > LOADGEN_LATE_MS && value !== null && value !== undefined;
  });
  if (late.length === 0) return r;
  return { ...r, flags: [...(r.flags ?? []), `loadgen-late(${late.join(',')})`] };
}

/** `v.toFixed(digits)`, or '—' for NaN / null / undefined (for log lines). */
export function fx(v: number | null | undefined, digits = 2): string {
  return typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : '—';
}

/** Waits for a quiet host when the run asks for it (ctx.quiet); logs a wait longer than a second. */
export async function quietGate(ctx: Ctx, what: string): Promise<{ waitedMs: number; quiet: boolean }> {
  if (!ctx.quiet) return { waitedMs: 0, quiet: true };
  const q = await waitForQuietHost(ctx.quiet);
  if (!q.quiet) ctx.log(`  host still busy (${q.busyCpuPerS.toFixed(2)} CPU s/s) after ${(q.waitedMs / 1000).toFixed(0)} s; measuring ${what} anyway`);
  else if (q.waitedMs > 1500) ctx.log(`  waited ${(q.waitedMs / 1000).toFixed(1)} s for a quiet host before ${what}`);
  return q;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Stops every process, ignoring failures (used in finally blocks). */
export async function stopAll(procs: ({ stop(graceMs?: number): Promise<void> } | undefined)[]): Promise<void> {
  await Promise.all(procs.map((p) => p?.stop(4000).catch(() => undefined)));
}

/** Options for startParleyServer: the mock as upstream, the run's node flags and env overrides. */
export function parleyOptions(ctx: Ctx, upstreamUrl: string | undefined, env: Record<string, string> = {}) {
  return { ...(upstreamUrl ? { upstreamUrl } : {}), nodeArgs: ctx.parleyNodeArgs, env: { ...env, ...ctx.parleyEnv } };
}

/** The processes of a side-by-side run: the mock upstream, the servers on it, the load generator. */
export interface Rig {
  mock: MockProc;
  parley: ParleyProc;
  baseline: BaselineProc;
  floor: FloorProc;
  /** Only when asked for (first-token, streams, short-turns). */
  portkey: PortkeyProc | undefined;
  loadgen: LoadGen;
  /** Stops them all (load generator first). */
  stop(): Promise<void>;
}

/**
 * Starts the mock with `mockOptions`, then Parley, the baseline, the floor, Portkey (when `withPortkey`)
 * and the load generator in parallel, each its own process. If one fails to start, the others are stopped.
 */
export async function startRig(ctx: Ctx, mockOptions: MockOptions, withPortkey = false): Promise<Rig> {
  const mock = await startMock(ctx.root, mockOptions);
  const started = await Promise.allSettled([
    startParleyServer(ctx.root, parleyOptions(ctx, mock.url)),
    startBaselineServer(ctx.root, mock.url),
    startFloorServer(ctx.root, mock.url),
    withPortkey ? startPortkey(ctx.root) : Promise.resolve(undefined),
    startLoadGen(ctx.root),
  ] as const);
  const [parley, baseline, floor, portkey, loadgen] = started.map((r) => (r.status === 'fulfilled' ? r.value : undefined)) as [
    ParleyProc | undefined, BaselineProc | undefined, FloorProc | undefined, PortkeyProc | undefined, LoadGen | undefined,
  ];
  const failure = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure || !parley || !baseline || !floor || !loadgen) {
    await stopAll([loadgen, parley, baseline, floor, portkey, mock]);
    throw failure ? failure.reason : new Error('rig did not start');
  }
  return { mock, parley, baseline, floor, portkey, loadgen, stop: () => stopAll([loadgen, parley, baseline, floor, portkey, mock]) };
}

/** A target's server process id in a rig (direct: the mock). */
export function serverPid(rig: Rig, t: TargetName): number | undefined {
  if (t === 'direct') return rig.mock.pid;
  return rig[t]?.pid;
}

/**
 * The Node.js docs corpus (`../shared/corpus/nodejs-api` beside the project) for the benchmarks that
 * ingest it: `{corpus}` when it is there, else also `skipped`, the outcome to return (logged, no rows).
 */
export function nodeDocsCorpus(ctx: Ctx, bench: string): { corpus: string; skipped?: BenchOutcome } {
  const corpus = resolve(ctx.root, '../shared/corpus/nodejs-api');
  if (existsSync(corpus)) return { corpus };
  ctx.log(`${bench}: skipped: ${corpus} not found`);
  return { corpus, skipped: { name: bench, rows: [], config: { corpus }, results: { skipped: `${corpus} not found` }, charts: [], notes: [`skipped: ${corpus} not found`] } };
}
