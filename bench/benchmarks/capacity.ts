/**
 * The capacity search shared by short-turns and overload: for every target, the highest open-loop
 * arrival rate of short turns at which its added-TTFT p99 (its p99 minus direct's p99 at the same rate)
 * stays within a bound, with under 0.1% failures (errors, typed refusals, streams unfinished at the
 * drain deadline). Rates come from one RateSearch per target (bench/lib/rate-search.ts); every probe
 * runs the direct upstream at the same rate first (once per rate), then the targets that asked for
 * that rate, one open-loop window each. Direct has its own search too (criterion: its TTFT p99 within
 * the bound of the mock's configured TTFT), which gives the rig's ceiling; a rate direct fails counts
 * as failed for every target ("bounded by the rig"). Every window has at least MIN_ARRIVALS arrivals; a
 * failed probe in a window the rig disturbed (load generator late, or other processes busy) is measured
 * once more and the repeat stands.
 */
import type { LoadGen } from '../lib/loadgen-client.js';
import type { OpenLoopResult, OpenLoopTarget } from '../lib/loadgen.js';
import { RateSearch, type RateSearchOptions } from '../lib/rate-search.js';
import type { TargetSpec } from '../lib/raw-client.js';
import { fx, HOST_BUSY_CPU_PER_S, LOADGEN_LATE_MS, serverPid, type Ctx, type Rig, type TargetName } from './common.js';

/** Every probe window has at least this many arrivals, so its p99 is not just its maximum. */
export const MIN_ARRIVALS = 200;

/** A window the rig disturbed: the load generator sent late, or the rest of the host took CPU. */
function isDisturbed(r: OpenLoopTarget): boolean {
  return r.sendLag.p99 > LOADGEN_LATE_MS || (r.cpuS.others ?? 0) / r.wallS > HOST_BUSY_CPU_PER_S;
}

/**
 * A target's server CPU seconds in a window: its `server` process plus every other process measured as
 * `server.<name>` (the children and the primary of a PARLEY_PROCESSES group, a second floor on one port).
 */
export function serverCpuS(r: Pick<OpenLoopTarget, 'cpuS'>): number {
  let sum = 0;
  for (const [k, v] of Object.entries(r.cpuS)) if (k === 'server' || k.startsWith('server.')) sum += v;
  return Object.keys(r.cpuS).some((k) => k === 'server' || k.startsWith('server.')) ? sum : Number.NaN;
}

/** One probe of one target. Times in ms. */
export interface ProbeRecord<T extends string = TargetName> {
  target: T;
  rate: number;
  pass: boolean;
  /** Why it failed (empty when it passed). */
  reason: string;
  addedP50: number;
  addedP99: number;
  ttftP99: number;
  requests: number;
  failures: number;
  refused: number;
  /** Server CPU per turn, ms (direct: the mock's). */
  serverCpuMsPerTurn: number;
  result: OpenLoopTarget;
}

/** The outcome of the search. Rates are arrivals per second. */
export interface CapacityResult<T extends string = TargetName> {
  best: Partial<Record<T | 'direct', number>>;
  /** Targets whose ladder reached the search's maximum without failing. */
  capped: (T | 'direct')[];
  /** Targets whose first failure was a rate direct itself failed (the rig's limit, not theirs). */
  rigBound: (T | 'direct')[];
  probes: ProbeRecord<T | 'direct'>[];
  /** Failed probes in windows the rig disturbed, measured once more (the repeat is in `probes`). */
  superseded: { target: T | 'direct'; rate: number; reason: string; sendLagP99: number; othersCpuPerS: number }[];
  directAt: Record<number, OpenLoopTarget>;
}

/**
 * What the search runs on: a side-by-side rig (its mock and servers), or any load generator with the
 * processes to measure per target (`cpuPids[target]`: `server` (and `server.<name>` for more processes of
 * one target) and `mock`; direct's `server` is the mock).
 */
export type CapacityRig = { rig: Rig } | { loadgen: LoadGen; cpuPids: Record<string, Record<string, number>> };

export type CapacityOptions<T extends string = TargetName> = CapacityRig & {
  specs: Partial<Record<T | 'direct', TargetSpec>>;
  /** Servers searched (direct is always searched too, as the reference). */
  targets: T[];
  search: RateSearchOptions;
  /** Bound on the added-TTFT p99, ms. */
  boundMs: number;
  /** The mock's configured time to first token, ms (direct's criterion). */
  mockTtftMs: number;
  /** Nominal stream duration, s (for the pre-opened connections). */
  streamS: number;
  windowMs: number;
  drainMs: number;
  /** Pause between two windows, ms. */
  pauseMs: number;
  /** Full runs: at least MIN_ARRIVALS per window, and a failed probe in a disturbed window measured once more (smoke: neither). */
  thorough: boolean;
  label: string;
  /** How a request picks its pre-opened connection (loadgen.ts `open-loop`); default the last released. */
  pick?: 'stack' | 'random';
};

/** Fraction of requests that failed in any way (errors, typed refusals, unfinished at the deadline). */
export function failureShare(r: OpenLoopTarget): number {
  return r.requests > 0 ? (r.errors.total + r.refused + r.unfinished) / r.requests : 1;
}

/** Runs the search (see the module comment); logs every probe. */
export async function searchCapacity<T extends string = TargetName>(ctx: Ctx, o: CapacityOptions<T>): Promise<CapacityResult<T>> {
  type N = T | 'direct';
  const names: N[] = ['direct', ...o.targets.filter((t) => t !== 'direct')];
  const searches = new Map(names.map((t) => [t, new RateSearch(o.search)]));
  const directAt = new Map<number, OpenLoopTarget>();
  const directPass = new Map<number, boolean>();
  const probes: ProbeRecord<N>[] = [];
  const superseded: CapacityResult<T>['superseded'] = [];
  const rigBound = new Set<N>();
  const loadgen = 'rig' in o ? o.rig.loadgen : o.loadgen;
  const cpuPids: Record<string, Record<string, number>> = 'rig' in o
    ? Object.fromEntries(names.map((t): [string, Record<string, number>] => [t, t === 'direct' ? { server: o.rig.mock.pid } : { server: serverPid(o.rig, t as TargetName)!, mock: o.rig.mock.pid }]))
    : o.cpuPids;
  for (let iteration = 0; iteration < 200; iteration++) {
    const wants = new Map<N, number>();
    for (const [t, s] of searches) {
      const r = s.next();
      if (r !== null) wants.set(t, r);
    }
    if (wants.size === 0) break;
    const rate = Math.min(...wants.values());
    const group = [...wants].filter(([t, r]) => r === rate && t !== 'direct').map(([t]) => t);
    const needDirect = !directAt.has(rate);
    const run: N[] = [...(needDirect ? ['direct' as const] : []), ...group];
    const durationMs = o.thorough ? Math.max(o.windowMs, Math.ceil((MIN_ARRIVALS / rate) * 1000)) : o.windowMs;
    const probe = async (targets: N[]): Promise<Record<string, OpenLoopTarget>> => {
      ctx.log(`${o.label}: ${rate}/s for ${durationMs} ms: ${targets.join(', ')}`);
      const res = await loadgen.run<OpenLoopResult>({
        type: 'open-loop', targets: targets.map((t) => o.specs[t]!), rounds: 1, rate, durationMs, drainMs: o.drainMs,
        expectFirstMs: o.mockTtftMs, stallTimeoutMs: 20_000, pauseMs: o.pauseMs, cpuPids,
        prewarm: Math.ceil(rate * o.streamS * 1.5) + 10, ...(ctx.quiet ? { quiet: ctx.quiet } : {}), ...(o.pick ? { pick: o.pick } : {}),
      }, 900_000);
      return res.perTarget;
    };
    const per = await probe(run);
    const direct = (): OpenLoopTarget => per.direct ?? directAt.get(rate)!;
    const verdict = (t: N): string => {
      const r = per[t]!;
      const share = failureShare(r);
      if (t === 'direct') {
        return r.ok > 0 && r.ttft.p99 - o.mockTtftMs <= o.boundMs && share < 0.001 ? '' : `direct TTFT p99 ${fx(r.ttft.p99, 1)} ms (> ${o.mockTtftMs} + ${o.boundMs}) or failures ${fx(share * 100)}%`;
      }
      if (verdict('direct') !== '' && per.direct !== undefined) return 'direct failed at this rate (the rig\'s limit)';
      if (per.direct === undefined && !directPass.get(rate)) return 'direct failed at this rate (the rig\'s limit)';
      const added = r.ttft.p99 - direct().ttft.p99;
      if (r.ok === 0) return 'no stream succeeded';
      if (!(added <= o.boundMs)) return `added TTFT p99 ${fx(added, 1)} ms > ${o.boundMs}`;
      if (share >= 0.001) return `failures ${fx(share * 100)}% ${JSON.stringify(r.errors.byCode)} refused ${r.refused} unfinished ${r.unfinished}`;
      return '';
    };
    // A failure in a window the rig disturbed (the load generator sent late, or the rest of the host took
    // CPU) says little about the target: measure it once more; the repeat stands (both are kept).
    const disturbed = o.thorough ? run.filter((t) => verdict(t) !== '' && isDisturbed(per[t]!)) : [];
    if (disturbed.length > 0) {
      for (const t of disturbed) superseded.push({ target: t, rate, reason: verdict(t), sendLagP99: per[t]!.sendLag.p99, othersCpuPerS: (per[t]!.cpuS.others ?? Number.NaN) / per[t]!.wallS });
      ctx.log(`  disturbed by the rig (send lag p99 > ${LOADGEN_LATE_MS} ms or host CPU outside the rig > ${HOST_BUSY_CPU_PER_S}): measuring ${disturbed.join(', ')} once more`);
      Object.assign(per, await probe(disturbed));
    }
    if (needDirect) {
      const d = per.direct!;
      const reason = verdict('direct');
      directAt.set(rate, d);
      directPass.set(rate, reason === '');
      searches.get('direct')!.record(rate, reason === '');
      probes.push(record('direct', rate, reason === '', reason, d, d, o));
    }
    const d = directAt.get(rate)!;
    for (const t of group) {
      const r = per[t]!;
      const reason = verdict(t);
      const pass = reason === '';
      if (!pass && !directPass.get(rate) && searches.get(t)!.lowestFail === null) rigBound.add(t);
      searches.get(t)!.record(rate, pass);
      probes.push(record(t, rate, pass, reason, r, d, o));
    }
    for (const p of probes.slice(-run.length)) {
      const others = (p.result.cpuS.others ?? Number.NaN) / p.result.wallS;
      ctx.log(`  ${p.pass ? 'ok  ' : 'FAIL'} ${p.target}: TTFT p99 ${fx(p.ttftP99, 1)} ms${p.target === 'direct' ? '' : `, added p50 ${fx(p.addedP50)} p99 ${fx(p.addedP99)} ms`}, ${p.failures} failed, ${p.refused} refused of ${p.requests}, server CPU ${fx(p.serverCpuMsPerTurn)} ms/turn, loadgen send lag p99 ${fx(p.result.sendLag.p99)} ms, others on the host ${fx(others)} CPU s/s${p.reason ? ` — ${p.reason}` : ''}`);
    }
  }
  const best: Partial<Record<N, number>> = {};
  const capped: N[] = [];
  for (const [t, s] of searches) {
    best[t] = s.best;
    if (s.capped) capped.push(t);
  }
  return { best, capped, rigBound: [...rigBound], probes, superseded, directAt: Object.fromEntries(directAt) };
}

function record<N extends string>(t: N, rate: number, pass: boolean, reason: string, r: OpenLoopTarget, d: OpenLoopTarget, o: { mockTtftMs: number }): ProbeRecord<N> {
  return {
    target: t, rate, pass, reason,
    addedP50: t === 'direct' ? r.ttft.p50 - o.mockTtftMs : r.ttft.p50 - d.ttft.p50,
    addedP99: t === 'direct' ? r.ttft.p99 - o.mockTtftMs : r.ttft.p99 - d.ttft.p99,
    ttftP99: r.ttft.p99,
    requests: r.requests, failures: r.errors.total + r.unfinished, refused: r.refused,
    serverCpuMsPerTurn: r.requests > 0 ? (serverCpuS(r) / r.requests) * 1000 : Number.NaN,
    result: r,
  };
}
