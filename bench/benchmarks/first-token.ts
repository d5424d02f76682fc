/**
 * first-token: time from sending the chat request to the first `token` event through Parley (SSE),
 * next to the time to the first delta when calling the mock upstream directly and through the
 * baseline relay. Concurrency 1: requests one after another, targets interleaved request by request.
 * Higher concurrency: open loop at a constant arrival rate = C / stream duration (Little's law), in
 * windows interleaved across targets.
 */
import type { OpenLoopResult, SequentialResult } from '../lib/loadgen.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { Panel } from '../lib/svg.js';
import { diffSummary, type Summary } from '../lib/stats.js';
import { baselineTarget, directTarget, parleyTarget, percentileRows, startRig, type Ctx, type TargetName } from './common.js';

export async function firstToken(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const intervalMs = 20;
  const deltas = smoke ? 16 : 64;
  const levels = smoke ? [20] : [100, 1000];
  const seqSamples = smoke ? 20 : 300;
  const rounds = smoke ? 1 : 2;
  const windowMs = (c: number) => (smoke ? 1000 : c >= 1000 ? 3000 : 5000);
  const streamS = (deltas * intervalMs) / 1000;
  const config = {
    mock: { ttft_ms: 0, deltas, interval_ms: intervalMs, concurrency_1_model: 'mock-deltas-2' },
    concurrency_1: { samples_per_target: seqSamples, mode: 'sequential, targets interleaved per request' },
    levels: levels.map((c) => ({ concurrency: c, rate_per_s: c / streamS, window_ms: windowMs(c), rounds })),
    latency_from: 'scheduled send time (open loop) / write of the request (concurrency 1)',
  };
  const rig = await startRig(ctx, { ttftMs: 0, deltas, intervalMs });
  const { mock, parley, baseline, loadgen } = rig;
  try {
    const agentLong = await parley.createAgent('bench');
    const agentShort = await parley.createAgent('mock-deltas-2');
    const short = [directTarget(mock, 'mock-deltas-2', true), parleyTarget(parley, agentShort, true), baselineTarget(baseline, 'mock-deltas-2', true)];
    const long = [directTarget(mock, 'bench', true), parleyTarget(parley, agentLong, true), baselineTarget(baseline, 'bench', true)];
    ctx.log('first-token: warm-up');
    for (const t of short) await loadgen.run({ type: 'warmup', target: t, count: smoke ? 30 : 200, concurrency: 8, sse: true, timeoutMs: 20_000 });

    ctx.log(`first-token: concurrency 1 (${seqSamples} per target)`);
    const seq = await loadgen.run<SequentialResult>({ type: 'sequential', targets: short, samples: seqSamples, deadlineMs: smoke ? 15_000 : 90_000, expectFirstMs: 0 });

    const cpuPids = { direct: { server: mock.pid }, parley: { server: parley.pid, mock: mock.pid }, baseline: { server: baseline.pid, mock: mock.pid } };
    const open: Record<number, OpenLoopResult> = {};
    for (const c of levels) {
      const rate = c / streamS;
      ctx.log(`first-token: concurrency ${c} (open loop, ${rate.toFixed(1)} req/s, ${rounds} round(s) x ${windowMs(c)} ms per target)`);
      open[c] = await loadgen.run<OpenLoopResult>({
        type: 'open-loop', targets: long, rounds, rate, durationMs: windowMs(c), drainMs: smoke ? 10_000 : 45_000,
        expectFirstMs: 0, stallTimeoutMs: 30_000, pauseMs: smoke ? 200 : 1000, cpuPids, prewarm: Math.ceil(c * 1.2),
      }, 900_000);
    }

    const rows: Row[] = [];
    const charts: Panel[] = [];
    const results: Record<string, unknown> = { concurrency_1: seq.perTarget, loadgen_cpu_s_concurrency_1: seq.cpuS };
    const addLevel = (label: string, s: Record<TargetName, Summary>, errors: Partial<Record<TargetName, number>>, extra: Row[], conv?: { parley: Summary; baseline: Summary }) => {
      rows.push(...percentileRows('first-token', `${label} TTFT`, 'ms', s));
      if (conv) {
        for (const k of ['p50', 'p99'] as const) {
          rows.push({ bench: 'first-token', metric: `${label} time to conversation event ${k}`, unit: 'ms', better: 'lower', parley: conv.parley[k], baseline: conv.baseline[k], direct: null });
        }
      }
      const addedP = diffSummary(s.parley, s.direct);
      const addedB = diffSummary(s.baseline, s.direct);
      for (const k of ['p50', 'p90', 'p99', 'max'] as const) {
        rows.push({ bench: 'first-token', metric: `${label} added TTFT ${k}`, unit: 'ms', better: 'lower', parley: addedP[k], baseline: addedB[k], direct: null });
      }
      rows.push({ bench: 'first-token', metric: `${label} errors`, unit: 'count', better: 'lower', parley: errors.parley ?? 0, baseline: errors.baseline ?? 0, direct: errors.direct ?? 0 });
      rows.push(...extra);
      charts.push({
        title: `Time to first token, ${label}`, unit: 'ms',
        groups: (['p50', 'p90', 'p99', 'max'] as const).map((k) => ({ label: k, values: { parley: s.parley[k], baseline: s.baseline[k], direct: s.direct[k] } })),
      });
      return { addedP, addedB };
    };

    const s1 = { parley: seq.perTarget.parley!.ttft, baseline: seq.perTarget.baseline!.ttft, direct: seq.perTarget.direct!.ttft };
    const e1 = { parley: seq.perTarget.parley!.errors.total, baseline: seq.perTarget.baseline!.errors.total, direct: seq.perTarget.direct!.errors.total };
    const c1 = addLevel('C=1', s1, e1, [], { parley: seq.perTarget.parley!.conversation, baseline: seq.perTarget.baseline!.conversation });
    const p50Row = rows.find((r) => r.metric === 'C=1 added TTFT p50');
    if (p50Row) p50Row.target = { text: 'added p50 <= 1 ms at C=1', pass: c1.addedP.p50 <= 1 };

    for (const c of levels) {
      const r = open[c]!;
      const pt = r.perTarget;
      const s = { parley: pt.parley!.ttft, baseline: pt.baseline!.ttft, direct: pt.direct!.ttft };
      const errors = { parley: pt.parley!.errors.total, baseline: pt.baseline!.errors.total, direct: pt.direct!.errors.total };
      const cpuPerReq = (t: TargetName) => (pt[t]!.ok > 0 ? ((pt[t]!.cpuS.server ?? Number.NaN) / pt[t]!.ok) * 1000 : null);
      const extra: Row[] = [
        { bench: 'first-token', metric: `C=${c} achieved mean in-flight`, unit: 'streams', better: 'none', parley: pt.parley!.inFlight.mean, baseline: pt.baseline!.inFlight.mean, direct: pt.direct!.inFlight.mean },
        { bench: 'first-token', metric: `C=${c} server CPU per stream`, unit: 'ms', better: 'lower', parley: cpuPerReq('parley'), baseline: cpuPerReq('baseline'), direct: cpuPerReq('direct') },
        { bench: 'first-token', metric: `C=${c} load-generator CPU`, unit: 's', better: 'none', parley: pt.parley!.cpuS.loadgen ?? null, baseline: pt.baseline!.cpuS.loadgen ?? null, direct: pt.direct!.cpuS.loadgen ?? null },
        { bench: 'first-token', metric: `C=${c} kernel SYN retransmits during the windows`, unit: 'count', better: 'none', parley: pt.parley!.tcp.synRetrans, baseline: pt.baseline!.tcp.synRetrans, direct: pt.direct!.tcp.synRetrans },
      ];
      const added = addLevel(`C=${c}`, s, errors, extra, { parley: pt.parley!.conversation, baseline: pt.baseline!.conversation });
      if (c === 1000) {
        const row = rows.find((x) => x.metric === `C=${c} added TTFT p99`);
        if (row) row.target = { text: 'added p99 <= 10 ms at C=1000', pass: added.addedP.p99 <= 10 };
      }
      results[`concurrency_${c}`] = { rate_per_s: r.rate, per_target: pt, added_parley_minus_direct: added.addedP, added_baseline_minus_direct: added.addedB };
    }
    if (smoke) rows.push({ bench: 'first-token', metric: 'C=1000 added TTFT p99', unit: 'ms', better: 'lower', parley: null, baseline: null, direct: null, target: { text: 'added p99 <= 10 ms at C=1000', pass: null } });
    results.added_concurrency_1 = c1;
    return {
      name: 'first-token', rows, config, results, charts,
      notes: [
        'added TTFT = Parley (or baseline) percentile minus the direct-upstream percentile of the same run.',
        `open-loop rate = concurrency / stream duration (${streamS} s); latency counts from each request's scheduled time.`,
      ],
    };
  } finally {
    await rig.stop();
  }
}
