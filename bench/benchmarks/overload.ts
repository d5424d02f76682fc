/**
 * overload: what a server does at twice its capacity. First its capacity: the highest open-loop rate of
 * short turns (16 deltas, first after 20 ms) at which its added-TTFT p99 stays <= 50 ms (the capacity
 * search of short-turns, bench/benchmarks/capacity.ts). Then arrivals at 2x that rate for a few seconds:
 * goodput (streams completed OK by the window's end + one stream duration, per second) as a share of
 * capacity, the admitted streams' added TTFT, typed refusals (HTTP 503 `overloaded` + Retry-After) and
 * their latency, and every other failure (untyped). Targets: Parley (its admission control refuses new
 * turns past its limits), the baseline and the floor (no admission control: they slow down instead);
 * direct runs at the same rates as the reference (and shows whether the rig itself carries that rate).
 */
import type { OpenLoopResult, OpenLoopTarget } from '../lib/loadgen.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { baselineTarget, directTarget, flagHostBusy, flagLoadgenLate, floorTarget, fx, parleyTarget, perTarget, serverPid, startRig, type Ctx, type TargetName } from './common.js';
import { MIN_ARRIVALS, searchCapacity } from './capacity.js';

type OverloadTarget = 'parley' | 'baseline' | 'floor';
const SERVERS: OverloadTarget[] = ['parley', 'baseline', 'floor'];

interface Drive {
  capacity: number;
  rate: number;
  target: OpenLoopTarget;
  direct: OpenLoopTarget;
  goodputPerS: number;
  goodputShare: number;
  addedP50: number;
  addedP99: number;
  refusalShare: number;
  untyped: number;
}

export async function overload(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const intervalMs = 20;
  const deltas = 16;
  const ttftMs = 20;
  const boundMs = 50;
  const streamS = (ttftMs + (deltas - 1) * intervalMs) / 1000;
  const search = smoke ? { start: 50, factor: 2, max: 50, refine: 0 } : { start: 25, factor: 2, max: 6400, refine: 1 };
  const probeWindowMs = smoke ? 500 : 3000;
  const overloadMs = smoke ? 700 : 5000;
  const graceMs = Math.round(streamS * 1000);
  const config = {
    mock: { ttft_ms: ttftMs, deltas, interval_ms: intervalMs }, stream_s: streamS,
    capacity: { bound_added_ttft_p99_ms: boundMs, search, window_ms: probeWindowMs, max_failure_share: 0.001 },
    overload: { factor: 2, window_ms: overloadMs, goodput: `streams completed OK by window end + ${graceMs} ms, per window second` },
    refusal: 'HTTP 503, Retry-After header, JSON body {"error":{"type":"api_error","code":"overloaded",...}}',
  };
  const rig = await startRig(ctx, { ttftMs, deltas, intervalMs }, false);
  const { mock, parley, baseline, floor, loadgen } = rig;
  try {
    const agent = await parley.createAgent('bench');
    const specs = {
      direct: directTarget(mock, 'bench', true), parley: parleyTarget(parley, agent, true),
      baseline: baselineTarget(baseline, 'bench', true), floor: floorTarget(floor, 'bench', true),
    };
    ctx.log('overload: warm-up');
    for (const t of ['direct', ...SERVERS] as const) await loadgen.run({ type: 'warmup', target: specs[t], count: smoke ? 2 : 300, concurrency: smoke ? 8 : 16, sse: true, timeoutMs: 20_000 });
    const cap = await searchCapacity(ctx, {
      rig, specs, targets: SERVERS, search, boundMs, mockTtftMs: ttftMs, streamS, windowMs: probeWindowMs, drainMs: smoke ? 10_000 : 20_000, pauseMs: smoke ? 100 : 500, thorough: !smoke, label: 'overload capacity',
    });

    const drives: Partial<Record<OverloadTarget, Drive>> = {};
    const notes: string[] = [];
    // Targets with the same 2x rate share one job (and one direct window at that rate).
    const byRate = new Map<number, OverloadTarget[]>();
    for (const t of SERVERS) {
      const capacity = cap.best[t] ?? 0;
      if (capacity <= 0) {
        notes.push(`${t}: no capacity found (failed at ${search.start}/s), so no overload run.`);
        continue;
      }
      byRate.set(2 * capacity, [...(byRate.get(2 * capacity) ?? []), t]);
    }
    for (const [rate, group] of [...byRate].sort((a, b) => a[0] - b[0])) {
      ctx.log(`overload: ${group.join(', ')} at 2 x ${rate / 2} = ${rate}/s for ${overloadMs} ms (direct first, at the same rate)`);
      const cpuPids: Record<string, Record<string, number>> = { direct: { server: mock.pid } };
      for (const t of group) cpuPids[t] = { server: serverPid(rig, t)!, mock: mock.pid };
      const res = await loadgen.run<OpenLoopResult>({
        type: 'open-loop', targets: [specs.direct, ...group.map((t) => specs[t])], rounds: 1, rate, durationMs: overloadMs, drainMs: smoke ? 15_000 : 30_000,
        expectFirstMs: ttftMs, stallTimeoutMs: 20_000, pauseMs: smoke ? 100 : 500, cpuPids, prewarm: Math.ceil(rate * streamS * 1.5) + 10, goodputGraceMs: graceMs,
        ...(ctx.quiet ? { quiet: ctx.quiet } : {}),
      }, 900_000);
      const d = res.perTarget.direct!;
      for (const t of group) {
        const capacity = rate / 2;
        const r = res.perTarget[t]!;
        const goodputPerS = r.okInWindow / r.windowS;
        const drive: Drive = {
          capacity, rate, target: r, direct: d, goodputPerS, goodputShare: goodputPerS / capacity,
          addedP50: r.ttft.p50 - d.ttft.p50, addedP99: r.ttft.p99 - d.ttft.p99,
          refusalShare: r.requests > 0 ? r.refused / r.requests : Number.NaN,
          untyped: r.errors.total + r.unfinished,
        };
        drives[t] = drive;
        ctx.log(`  ${t}: ${r.requests} arrivals, ${r.ok} ok (${r.okInWindow} in the window: ${fx(goodputPerS, 0)}/s = ${fx(drive.goodputShare * 100, 0)}% of capacity), admitted added TTFT p99 ${fx(drive.addedP99, 1)} ms, refused ${r.refused} (p99 ${fx(r.refusalLatency.p99)} ms), untyped ${drive.untyped} ${JSON.stringify(r.errors.byCode)}`);
      }
      ctx.log(`  direct at ${rate}/s: TTFT p99 ${fx(d.ttft.p99, 1)} ms, ${d.errors.total + d.unfinished} failed`);
      if (d.errors.total + d.unfinished > 0 || !(d.ttft.p99 - ttftMs <= boundMs)) notes.push(`${group.join(', ')}: direct itself did not carry ${rate}/s (TTFT p99 ${fx(d.ttft.p99, 1)} ms, ${d.errors.total + d.unfinished} failed): these overload rows are bounded by the rig.`);
    }

    const bench = 'overload';
    const col = (f: (d: Drive) => number | null, direct?: (d: Drive) => number | null): Pick<Row, 'parley' | 'baseline' | 'floor' | 'portkey' | 'direct'> => ({
      ...perTarget((t) => (t === 'direct' || t === 'portkey' ? null : drives[t] ? f(drives[t]!) : null)),
      // direct runs once per 2x rate; show the run at Parley's rate.
      direct: direct && drives.parley ? direct(drives.parley) : null,
    });
    const busy = Object.fromEntries(SERVERS.map((t) => [t, drives[t] ? (drives[t]!.target.cpuS.others ?? Number.NaN) / drives[t]!.target.wallS : null])) as Partial<Record<TargetName, number | null>>;
    if (drives.parley) busy.direct = (drives.parley.direct.cpuS.others ?? Number.NaN) / drives.parley.direct.wallS;
    const lagP99 = Object.fromEntries(SERVERS.map((t) => [t, drives[t]?.target.sendLag.p99])) as Partial<Record<TargetName, number | undefined>>;
    if (drives.parley) lagP99.direct = drives.parley.direct.sendLag.p99;
    const capRow: Row = { bench, metric: `capacity: arrivals/s at added-TTFT p99 <= ${boundMs} ms (direct: the rig's)`, unit: 'turns/s', better: 'higher', ...perTarget((t) => (t === 'portkey' ? null : cap.best[t] ?? null)) };
    const goodShare: Row = { bench, metric: 'goodput at 2x capacity, share of capacity', unit: '%', better: 'higher', ...col((d) => d.goodputShare * 100) };
    goodShare.target = { text: '>= 90% of capacity at 2x overload', pass: smoke || goodShare.parley === null ? null : goodShare.parley >= 90 };
    const admitted: Row = { bench, metric: 'admitted streams\' added TTFT p99 at 2x capacity', unit: 'ms', better: 'lower', ...col((d) => d.addedP99) };
    admitted.target = { text: `admitted added TTFT p99 <= ${boundMs} ms at 2x overload`, pass: smoke || admitted.parley === null ? null : admitted.parley <= boundMs };
    const refP99: Row = { bench, metric: 'refusal latency p99', unit: 'ms', better: 'lower', ...col((d) => (d.target.refused > 0 ? d.target.refusalLatency.p99 : null)) };
    const parleyRefused = drives.parley?.target.refused ?? 0;
    refP99.target = { text: 'every refusal fast: p99 < 5 ms', pass: smoke || drives.parley === undefined || parleyRefused === 0 ? null : refP99.parley! < 5 };
    const untyped: Row = { bench, metric: 'untyped failures (errors, resets, timeouts, unfinished)', unit: 'count', better: 'lower', ...col((d) => d.untyped) };
    untyped.target = { text: 'no untyped failure at 2x overload (every refusal typed)', pass: smoke || untyped.parley === null ? null : untyped.parley === 0 };
    const rows: Row[] = ([
      capRow,
      { bench, metric: 'offered rate (2x capacity)', unit: 'arrivals/s', better: 'none', ...col((d) => d.rate, (d) => d.rate) },
      { bench, metric: 'goodput at 2x capacity (completed streams/s; direct: at Parley\'s rate)', unit: 'streams/s', better: 'higher', ...col((d) => d.goodputPerS, (d) => d.direct.okInWindow / d.direct.windowS) },
      goodShare,
      admitted,
      { bench, metric: 'admitted streams\' added TTFT p50 at 2x capacity', unit: 'ms', better: 'lower', ...col((d) => d.addedP50) },
      { bench, metric: 'TTFT p99 at 2x capacity (direct: at Parley\'s rate)', unit: 'ms', better: 'lower', ...col((d) => d.target.ttft.p99, (d) => d.direct.ttft.p99) },
      { bench, metric: 'refusals', unit: 'count', better: 'none', ...col((d) => d.target.refused) },
      { bench, metric: 'refusals, share of arrivals', unit: '%', better: 'none', ...col((d) => d.refusalShare * 100) },
      { bench, metric: 'refusal latency p50', unit: 'ms', better: 'lower', ...col((d) => (d.target.refused > 0 ? d.target.refusalLatency.p50 : null)) },
      refP99,
      untyped,
      { bench, metric: 'mean in flight at 2x capacity', unit: 'streams', better: 'none', ...col((d) => d.target.inFlight.mean, (d) => d.direct.inFlight.mean) },
      { bench, metric: 'server CPU at 2x capacity', unit: 'CPU s/s', better: 'none', ...col((d) => (d.target.cpuS.server ?? Number.NaN) / d.target.wallS, (d) => (d.direct.cpuS.server ?? Number.NaN) / d.direct.wallS) },
      { bench, metric: 'load-generator CPU at 2x capacity', unit: 'CPU s/s', better: 'none', ...col((d) => (d.target.cpuS.loadgen ?? Number.NaN) / d.target.wallS, (d) => (d.direct.cpuS.loadgen ?? Number.NaN) / d.direct.wallS) },
      { bench, metric: 'load-generator send lag p99 at 2x capacity', unit: 'ms', better: 'none', ...col((d) => d.target.sendLag.p99, (d) => d.direct.sendLag.p99) },
      { bench, metric: 'host CPU used outside the measured processes', unit: 'CPU s/s', better: 'none', ...col((d) => (d.target.cpuS.others ?? Number.NaN) / d.target.wallS, (d) => (d.direct.cpuS.others ?? Number.NaN) / d.direct.wallS) },
      { bench, metric: 'kernel SYN retransmits during the overload window', unit: 'count', better: 'none', ...col((d) => d.target.tcp.synRetrans, (d) => d.direct.tcp.synRetrans) },
    ] as Row[]).map((r) => (r === capRow || r.better === 'none' ? r : flagLoadgenLate(flagHostBusy(r, busy), lagP99)));
    notes.push(...cap.superseded.map((x) => `capacity: ${x.target} at ${x.rate}/s was measured again: the first window failed (${x.reason}) while disturbed by the rig (send lag p99 ${fx(x.sendLagP99)} ms, host CPU outside the rig ${fx(x.othersCpuPerS)} CPU s/s).`));
    if (ctx.quiet) {
      const windows = [...cap.probes.map((p) => p.result), ...Object.values(drives).flatMap((d) => [d.target, d.direct])];
      notes.push(`quiet gate: waited ${(windows.reduce((a, w) => a + w.quietWaitMs, 0) / 1000).toFixed(0)} s for a quiet host in all; ${windows.reduce((a, w) => a + w.busyStarts, 0)} window(s) started on a busy host anyway.`);
    }
    if (parleyRefused === 0 && drives.parley) notes.push('Parley refused nothing at 2x its capacity: the refusal-latency target is n/a; the admitted-latency and in-flight rows show what it did instead.');
    const sample = drives.parley?.target.errors.sample;
    if (sample) notes.push(`Parley: an untyped failure looked like: ${sample}`);
    for (const t of SERVERS) {
      const e = drives[t]?.target.errors;
      if (e && e.total > 0) notes.push(`${t}: failures at 2x ${JSON.stringify(e.byCode)}${e.sample ? ` e.g. ${e.sample}` : ''}`);
    }
    notes.unshift(
      `capacity: ladder from ${search.start}/s x${search.factor} to ${search.max}/s, ${search.refine} bisection step(s), windows of ${probeWindowMs} ms and at least ${MIN_ARRIVALS} arrivals; added TTFT = target p99 minus direct p99 at the same rate.`,
      `overload: ${overloadMs} ms of arrivals at 2x capacity (direct first at the same rate), then a drain; goodput = OK streams ending by window end + ${graceMs} ms (one nominal stream) / window length; latencies from each request's scheduled time.`,
      'the baseline and the floor have no admission control: they accept everything and slow down (see their added TTFT and in-flight rows).',
    );
    const share = (t: OverloadTarget) => drives[t]?.goodputShare ?? null;
    return {
      name: 'overload', rows, config, notes,
      results: {
        capacity: cap.best, capped: cap.capped, rig_bound: cap.rigBound, superseded: cap.superseded,
        probes: cap.probes.map(({ result, ...p }) => ({ ...p, ttft: result.ttft, errors: result.errors })),
        drives,
      },
      charts: [
        { title: 'Capacity (added-TTFT p99 <= 50 ms)', unit: 'turns/s', groups: [{ label: 'capacity', values: { direct: cap.best.direct ?? null, parley: cap.best.parley ?? null, baseline: cap.best.baseline ?? null, floor: cap.best.floor ?? null } }] },
        { title: 'Goodput at 2x capacity, share of capacity', unit: '%', groups: [{ label: 'goodput', values: { parley: share('parley') === null ? null : share('parley')! * 100, baseline: share('baseline') === null ? null : share('baseline')! * 100, floor: share('floor') === null ? null : share('floor')! * 100 } }] },
        { title: 'Admitted streams\' added TTFT p99 at 2x capacity', unit: 'ms', groups: [{ label: 'p99', values: { parley: drives.parley?.addedP99 ?? null, baseline: drives.baseline?.addedP99 ?? null, floor: drives.floor?.addedP99 ?? null } }] },
      ],
    };
  } finally {
    await rig.stop();
  }
}

