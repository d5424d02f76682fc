/**
 * one-shot: requests/s and latency of one-shot chat (stream=false) against the zero-latency mock, in a
 * closed loop of 64 keep-alive connections for a fixed time, targets interleaved in rounds. Targets:
 * direct, Parley, the baseline and the floor (Portkey is compared on streaming only).
 */
import type { OneShotResult } from '../lib/loadgen.js';
import { CpuMeter } from '../lib/proc.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { Samples } from '../lib/stats.js';
import { baselineTarget, directTarget, flagCeiling, floorTarget, parleyTarget, percentileRows, perTarget, quietGate, serverPid, sleep, startRig, type Ctx, type TargetName } from './common.js';

type OneShotTarget = Exclude<TargetName, 'portkey'>;
const TARGETS: OneShotTarget[] = ['direct', 'parley', 'baseline', 'floor'];

export async function oneShot(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const connections = 64;
  const durationMs = smoke ? 700 : 10_000;
  const rounds = 1;
  const config = { mock: 'zero latency (no TTFT, "You said: hello" as word deltas)', connections, duration_ms_per_window: durationMs, rounds };
  const rig = await startRig(ctx, { ttftMs: 0 });
  const { mock, parley, baseline, floor, loadgen } = rig;
  try {
    const agent = await parley.createAgent('bench');
    const specs = { direct: directTarget(mock, 'bench', false), parley: parleyTarget(parley, agent, false), baseline: baselineTarget(baseline, 'bench', false), floor: floorTarget(floor, 'bench', false) };
    ctx.log('one-shot: warm-up');
    for (const t of TARGETS) await loadgen.run({ type: 'warmup', target: specs[t], count: smoke ? 10 : 2000, concurrency: 16, sse: false, timeoutMs: 20_000 });
    const runs: Record<OneShotTarget, { result: OneShotResult; cpu: { wallS: number; cpuS: Record<string, number>; sysS: Record<string, number> } }[]> = { direct: [], parley: [], baseline: [], floor: [] };
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < TARGETS.length; k++) {
        const t = TARGETS[(round + k) % TARGETS.length]!;
        ctx.log(`one-shot: ${t}, ${connections} connections, ${durationMs} ms`);
        await quietGate(ctx, `one-shot ${t}`);
        const meter = new CpuMeter({ server: serverPid(rig, t)!, mock: mock.pid, loadgen: loadgen.pid }).start();
        const result = await loadgen.run<OneShotResult>({ type: 'one-shot', target: specs[t], connections, durationMs, timeoutMs: 10_000 });
        runs[t].push({ result, cpu: meter.stop() });
        ctx.log(`  ${result.rps.toFixed(0)} req/s, p99 ${result.latency.p99.toFixed(2)} ms, errors ${result.errors.total}`);
        await sleep(300);
      }
    }
    // Percentiles of the rounds combined are not recoverable from summaries; report per-round medians of
    // each statistic when there are several rounds (rounds are equal-length).
    const combine = (t: OneShotTarget) => {
      const rs = runs[t];
      const med = (f: (r: OneShotResult) => number) => {
        const s = new Samples(4);
        for (const r of rs) s.push(f(r.result));
        return s.summary().p50;
      };
      const ok = rs.reduce((a, r) => a + r.result.ok, 0);
      const cpu = (n: string) => rs.reduce((a, r) => a + (r.cpu.cpuS[n] ?? 0), 0);
      const wall = rs.reduce((a, r) => a + r.cpu.wallS, 0);
      return {
        rps: ok / rs.reduce((a, r) => a + r.result.wallS, 0),
        latency: { count: ok, min: med((r) => r.latency.min), p50: med((r) => r.latency.p50), p90: med((r) => r.latency.p90), p99: med((r) => r.latency.p99), max: Math.max(...rs.map((r) => r.result.latency.max)), mean: med((r) => r.latency.mean) },
        errors: rs.reduce((a, r) => a + r.result.errors.total, 0),
        serverCpuMsPerReq: ok > 0 ? (cpu('server') / ok) * 1000 : Number.NaN,
        serverCpu: cpu('server') / wall, mockCpu: cpu('mock') / wall, loadgenCpu: cpu('loadgen') / wall, othersCpu: cpu('others') / wall,
      };
    };
    const c = { direct: combine('direct'), parley: combine('parley'), baseline: combine('baseline'), floor: combine('floor') };
    const col = (f: (x: ReturnType<typeof combine>) => number) => perTarget((t) => (t === 'portkey' ? null : f(c[t])));
    const rows: Row[] = [
      flagCeiling({ bench: 'one-shot', metric: 'requests/s (64 conns, closed loop)', unit: 'req/s', better: 'higher', ...col((x) => x.rps) }),
      ...percentileRows('one-shot', 'latency', 'ms', { parley: c.parley.latency, baseline: c.baseline.latency, floor: c.floor.latency, direct: c.direct.latency }),
      { bench: 'one-shot', metric: 'server CPU per request', unit: 'ms', better: 'lower', ...col((x) => x.serverCpuMsPerReq) },
      { bench: 'one-shot', metric: 'server CPU', unit: 'CPU s/s', better: 'none', ...col((x) => x.serverCpu) },
      { bench: 'one-shot', metric: 'mock CPU', unit: 'CPU s/s', better: 'none', ...col((x) => x.mockCpu) },
      { bench: 'one-shot', metric: 'load-generator CPU', unit: 'CPU s/s', better: 'none', ...col((x) => x.loadgenCpu) },
      { bench: 'one-shot', metric: 'host CPU used outside the measured processes', unit: 'CPU s/s', better: 'none', ...col((x) => x.othersCpu) },
      { bench: 'one-shot', metric: 'errors', unit: 'count', better: 'lower', ...col((x) => x.errors) },
    ];
    return {
      name: 'one-shot', rows, config, results: { combined: c, runs },
      charts: [
        { title: 'One-shot latency', unit: 'ms', groups: (['p50', 'p90', 'p99', 'max'] as const).map((k) => ({ label: k, values: Object.fromEntries(TARGETS.map((t) => [t, c[t].latency[k]])) })) },
        { title: 'One-shot throughput', unit: 'req/s', groups: [{ label: 'requests/s', values: Object.fromEntries(TARGETS.map((t) => [t, c[t].rps])) }] },
      ],
      notes: [
        rounds > 1 ? `latency percentiles are the median over ${rounds} interleaved rounds of that percentile; max is the overall max.` : 'one round per target.',
        'direct = the mock answering the same chat-completions request (stream=false) itself: the ceiling of mock + load generator.',
        'the floor streams from the mock and answers once the stream ended (as Parley does); the baseline asks the mock for stream=false.',
      ],
    };
  } finally {
    await rig.stop();
  }
}
