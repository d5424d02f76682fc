/**
 * streams: the most concurrent paced SSE streams (mock: 64 deltas x 20 ms) a target sustains with no
 * stream silent longer than 10x the pacing interval and errors under 0.1%. Steps up the levels until
 * a target fails; each level keeps `level` streams running back to back on keep-alive connections
 * for a fixed time. Reports added inter-token gap, tokens/s, frames/s and CPU per relayed token.
 */
import type { StreamsResult } from '../lib/loadgen.js';
import { CpuMeter, tcpCounters, tcpDelta } from '../lib/proc.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { Panel } from '../lib/svg.js';
import { baselineTarget, directTarget, flagCeiling, parleyTarget, sleep, startRig, TARGETS, type Ctx, type TargetName } from './common.js';

interface LevelResult extends StreamsResult {
  level: number;
  pass: boolean;
  reason: string;
  cpu: { wallS: number; cpuS: Record<string, number>; sysS: Record<string, number> };
  serverCpuUsPerToken: number;
  mockCpuUsPerToken: number;
  tokensPerS: number;
  framesPerS: number;
  tcp: ReturnType<typeof tcpCounters>;
}

export async function streams(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const intervalMs = 20;
  const deltas = 64;
  const levels = ctx.levels ?? (smoke ? [50] : [100, 250, 500, 1000, 2000, 3000, 4000]);
  const durationMs = smoke ? 1500 : 6000;
  const rampMs = smoke ? 500 : 1000;
  const stallMs = 10 * intervalMs;
  const config = {
    mock: { ttft_ms: 0, deltas, interval_ms: intervalMs }, levels, duration_ms: durationMs, ramp_ms: rampMs,
    stall_threshold_ms: stallMs, max_error_rate: 0.001,
    gap_definition: 'client-observed gap between consecutive tokens minus the 20 ms pacing, from the token2->token3 gap on (token1->token2 depends on the shared tick phase)',
  };
  const rig = await startRig(ctx, { ttftMs: 0, deltas, intervalMs });
  const { mock, parley, baseline, loadgen } = rig;
  try {
    const agent = await parley.createAgent('bench');
    const warm = await parley.createAgent('mock-deltas-2');
    const specs = { direct: directTarget(mock, 'bench', true), parley: parleyTarget(parley, agent, true), baseline: baselineTarget(baseline, 'bench', true) };
    const warmSpecs = [directTarget(mock, 'mock-deltas-2', true), parleyTarget(parley, warm, true), baselineTarget(baseline, 'mock-deltas-2', true)];
    ctx.log('streams: warm-up');
    for (const t of warmSpecs) await loadgen.run({ type: 'warmup', target: t, count: smoke ? 30 : 300, concurrency: 16, sse: true, timeoutMs: 20_000 });
    const pids: Record<TargetName, number> = { direct: mock.pid, parley: parley.pid, baseline: baseline.pid };
    const byTarget: Record<TargetName, LevelResult[]> = { direct: [], parley: [], baseline: [] };
    const failed = new Set<TargetName>();
    for (const level of levels) {
      for (const t of TARGETS) {
        if (failed.has(t)) continue;
        ctx.log(`streams: ${t} at ${level} concurrent streams`);
        const meter = new CpuMeter({ server: pids[t], mock: mock.pid, loadgen: loadgen.pid }).start();
        const tcp0 = tcpCounters();
        const r = await loadgen.run<StreamsResult>({
          type: 'streams', target: specs[t], slots: level, durationMs, rampMs, intervalMs, expectFirstMs: 0,
          stallMs, drainMs: 20_000, stallTimeoutMs: 15_000,
        });
        const cpu = meter.stop();
        const tcp = tcpDelta(tcp0, tcpCounters());
        const errRate = r.started > 0 ? r.errors.server / r.started : 1;
        const clientRate = r.started > 0 ? r.errors.client / r.started : 0;
        let reason = '';
        if (r.stalled > 0) reason = `${r.stalled} stream(s) silent > ${stallMs} ms`;
        if (errRate >= 0.001) reason += `${reason ? '; ' : ''}server errors ${(errRate * 100).toFixed(2)}% ${JSON.stringify(r.errors.byCode)}`;
        if (clientRate >= 0.001) reason += `${reason ? '; ' : ''}load-generator limits ${(clientRate * 100).toFixed(2)}% ${JSON.stringify(r.errors.byCode)}`;
        const pass = reason === '';
        const lr: LevelResult = {
          ...r, level, pass, reason, cpu, tcp,
          serverCpuUsPerToken: r.tokens > 0 ? ((cpu.cpuS.server ?? Number.NaN) / r.tokens) * 1e6 : Number.NaN,
          mockCpuUsPerToken: r.tokens > 0 ? ((cpu.cpuS.mock ?? Number.NaN) / r.tokens) * 1e6 : Number.NaN,
          tokensPerS: r.tokens / cpu.wallS,
          framesPerS: r.frames / cpu.wallS,
        };
        byTarget[t].push(lr);
        ctx.log(`  ${pass ? 'ok  ' : 'FAIL'} ${r.started} streams, ${r.tokens} tokens (${lr.tokensPerS.toFixed(0)}/s), added gap p50 ${r.addedGap.p50.toFixed(2)} p99 ${r.addedGap.p99.toFixed(2)} ms, max silence ${r.maxGap.max.toFixed(0)} ms, server CPU ${(cpu.cpuS.server ?? 0).toFixed(2)} s (${lr.serverCpuUsPerToken.toFixed(2)} us/token), mock ${(cpu.cpuS.mock ?? 0).toFixed(2)} s, loadgen ${(cpu.cpuS.loadgen ?? 0).toFixed(2)} s${reason ? ` — ${reason}` : ''}`);
        if (!pass) failed.add(t);
        await sleep(smoke ? 200 : 1000);
      }
      if (failed.size === TARGETS.length) break;
    }

    const maxLevel = (t: TargetName) => Math.max(0, ...byTarget[t].filter((r) => r.pass).map((r) => r.level));
    // Report the per-stream figures at Parley's highest passing level (else its first level), for every target that ran it.
    const refLevel = maxLevel('parley') || levels[0]!;
    const at = (t: TargetName) => byTarget[t].find((r) => r.level === refLevel);
    const val = (t: TargetName, f: (r: LevelResult) => number) => {
      const r = at(t);
      return r ? f(r) : null;
    };
    const row = (metric: string, unit: string, better: Row['better'], f: (r: LevelResult) => number, skipDirect = false): Row => ({
      bench: 'streams', metric: `@${refLevel} ${metric}`, unit, better,
      parley: val('parley', f), baseline: val('baseline', f), direct: skipDirect ? null : val('direct', f),
    });
    const rows: Row[] = [];
    rows.push(flagCeiling({
      bench: 'streams', metric: 'max sustained paced streams (64x20ms)', unit: 'streams', better: 'higher',
      parley: maxLevel('parley'), baseline: maxLevel('baseline'), direct: maxLevel('direct'),
      target: { text: '>= 2,000 streams', pass: smoke ? null : maxLevel('parley') >= 2000 },
    }));
    rows.push(row('added inter-token gap p50', 'ms', 'lower', (r) => r.addedGap.p50));
    rows.push(row('added inter-token gap p99', 'ms', 'lower', (r) => r.addedGap.p99));
    rows.push(row('max silence in a stream', 'ms', 'lower', (r) => r.maxGap.max));
    rows.push(flagCeiling(row('tokens delivered', 'tokens/s', 'higher', (r) => r.tokensPerS)));
    rows.push(flagCeiling(row('SSE frames delivered', 'frames/s', 'higher', (r) => r.framesPerS)));
    const cpuRow = row('server CPU per relayed token', 'us', 'lower', (r) => r.serverCpuUsPerToken, true);
    cpuRow.target = { text: '<= 5 us per token', pass: cpuRow.parley === null ? null : cpuRow.parley <= 5 };
    rows.push(cpuRow);
    rows.push(row('  of which kernel (stime)', 'us', 'lower', (r) => ((r.cpu.sysS.server ?? Number.NaN) / r.tokens) * 1e6, true));
    rows.push(row('mock CPU per token', 'us', 'none', (r) => r.mockCpuUsPerToken));
    rows.push(row('load-generator CPU per token', 'us', 'none', (r) => ((r.cpu.cpuS.loadgen ?? Number.NaN) / r.tokens) * 1e6));
    rows.push(row('server CPU', 'CPU s/s', 'lower', (r) => (r.cpu.cpuS.server ?? Number.NaN) / r.cpu.wallS, true));
    rows.push(row('mock CPU (direct: the mock is the server)', 'CPU s/s', 'none', (r) => (r.cpu.cpuS.mock ?? Number.NaN) / r.cpu.wallS));
    rows.push(row('load-generator CPU', 'CPU s/s', 'none', (r) => (r.cpu.cpuS.loadgen ?? Number.NaN) / r.cpu.wallS));
    rows.push(row('errors + stalls', 'count', 'lower', (r) => r.errors.total + r.stalled));
    rows.push(row('kernel SYN retransmits / listen overflows', 'count', 'none', (r) => r.tcp.synRetrans + r.tcp.listenOverflows));

    const charts: Panel[] = [
      {
        title: `Added inter-token gap at ${refLevel} streams`, unit: 'ms',
        groups: (['p50', 'p90', 'p99', 'max'] as const).map((k) => ({ label: k, values: { parley: at('parley')?.addedGap[k] ?? null, baseline: at('baseline')?.addedGap[k] ?? null, direct: at('direct')?.addedGap[k] ?? null } })),
      },
      {
        title: 'Tokens delivered per level (missing bar: not run after an earlier failure)', unit: 'tokens/s',
        groups: levels.map((l) => ({ label: String(l), values: Object.fromEntries(TARGETS.map((t) => [t, byTarget[t].find((r) => r.level === l)?.tokensPerS ?? null])) })),
      },
      {
        title: 'Server CPU per relayed token per level', unit: 'us',
        groups: levels.map((l) => ({ label: String(l), values: { parley: byTarget.parley.find((r) => r.level === l)?.serverCpuUsPerToken ?? null, baseline: byTarget.baseline.find((r) => r.level === l)?.serverCpuUsPerToken ?? null } })),
      },
    ];
    const notes = [
      `per-stream rows are at ${refLevel} streams (Parley's highest passing level) for every target that ran that level.`,
      ...TARGETS.flatMap((t) => byTarget[t].filter((r) => !r.pass).map((r) => `${t} failed at ${r.level}: ${r.reason}`)),
    ];
    return { name: 'streams', rows, config, results: { levels: byTarget, reference_level: refLevel }, charts, notes };
  } finally {
    await rig.stop();
  }
}
