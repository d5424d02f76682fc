/** Shared pieces of the benchmarks: the run context, request targets, rows helpers. */
import type { TargetSpec } from '../lib/raw-client.js';
import { startLoadGen, type LoadGen } from '../lib/loadgen-client.js';
import { startBaselineServer, startMock, startParleyServer, type BaselineProc, type MockOptions, type MockProc, type ParleyProc } from '../lib/processes.js';
import type { Row } from '../lib/report.js';
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
  log(msg: string): void;
}

export type TargetName = 'parley' | 'baseline' | 'direct';
export const TARGETS: TargetName[] = ['direct', 'parley', 'baseline'];

const MESSAGE = 'hello';

export function parleyTarget(p: ParleyProc, agentId: string, stream: boolean, name: string = 'parley'): TargetSpec {
  return {
    name, port: p.port, flavor: 'events', method: 'POST', path: `/v1/agents/${agentId}/chat`,
    headers: { Authorization: `Bearer ${p.apiKey}`, 'Content-Type': 'application/json', Accept: stream ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify({ message: MESSAGE, stream }),
  };
}

export function baselineTarget(b: BaselineProc, model: string, stream: boolean, name: string = 'baseline'): TargetSpec {
  return {
    name, port: b.port, flavor: 'events', method: 'POST', path: '/v1/chat',
    headers: { Authorization: `Bearer ${b.apiKey}`, 'Content-Type': 'application/json', Accept: stream ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify({ message: MESSAGE, stream, model }),
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
    parley: s.parley ? nn(s.parley[k]) : null,
    baseline: s.baseline ? nn(s.baseline[k]) : null,
    direct: s.direct ? nn(s.direct[k]) : null,
  }));
}

export function nn(v: number | undefined): number | null {
  return v === undefined || Number.isNaN(v) ? null : v;
}

/** Adds `≈ceiling` when a higher-is-better Parley (or baseline) value is within 10% of the direct value. */
export function flagCeiling(r: Row): Row {
  if (r.better !== 'higher' || r.direct === null || r.direct <= 0) return r;
  const flags = [...(r.flags ?? [])];
  if (r.parley !== null && r.parley >= 0.9 * r.direct) flags.push('≈ceiling(Parley)');
  if (r.baseline !== null && r.baseline >= 0.9 * r.direct) flags.push('≈ceiling(baseline)');
  return flags.length > 0 ? { ...r, flags } : r;
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

/** The processes of a side-by-side run: the mock upstream, Parley and the baseline on it, the load generator. */
export interface Rig {
  mock: MockProc;
  parley: ParleyProc;
  baseline: BaselineProc;
  loadgen: LoadGen;
  /** Stops all four (load generator first). */
  stop(): Promise<void>;
}

/** Starts the mock with `mockOptions`, then Parley, the baseline and the load generator in parallel. */
export async function startRig(ctx: Ctx, mockOptions: MockOptions): Promise<Rig> {
  const mock = await startMock(ctx.root, mockOptions);
  const [parley, baseline, loadgen] = await Promise.all([
    startParleyServer(ctx.root, parleyOptions(ctx, mock.url)),
    startBaselineServer(ctx.root, mock.url),
    startLoadGen(ctx.root),
  ]);
  return { mock, parley, baseline, loadgen, stop: () => stopAll([loadgen, parley, baseline, mock]) };
}
