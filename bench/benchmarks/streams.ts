/**
 * streams: the most concurrent paced SSE streams (mock: 64 deltas x 20 ms) a target sustains with no
 * stream silent longer than 10x the pacing interval and errors under 0.1%. Steps up the levels until
 * a target fails; each level keeps `level` streams running back to back on keep-alive connections
 * for a fixed time. Reports added inter-token gap, tokens/s, frames/s, server CPU per stream and per
 * relayed token against the mock's own, and the event-loop delay inside each server (its /metrics,
 * scraped while the streams run). Parley also runs every level over its WebSocket chat sockets
 * (`WebSocket` rows: the same streams, criteria and CPU ratios, frames over a socket instead of SSE).
 */
import type { StreamsResult } from '../lib/loadgen.js';
import type { WsTargetSpec } from '../lib/ws-load.js';
import { CpuMeter, tcpCounters, tcpDelta } from '../lib/proc.js';
import { loopDelayFromMetrics, type LoopDelay } from '../lib/prom-text.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { Panel } from '../lib/svg.js';
import {
  baselineTarget, directTarget, flagCeiling, flagHostBusy, floorTarget, nn, parleyTarget, perTarget, portkeyTarget, quietGate, serverPid, sleep, startRig, TARGETS,
  type Ctx, type TargetName,
} from './common.js';

interface LevelResult extends StreamsResult {
  level: number;
  pass: boolean;
  reason: string;
  cpu: { wallS: number; cpuS: Record<string, number>; sysS: Record<string, number> };
  serverCpuUsPerToken: number;
  mockCpuUsPerToken: number;
  serverCpuMsPerStream: number;
  mockCpuMsPerStream: number;
  tokensPerS: number;
  framesPerS: number;
  tcp: ReturnType<typeof tcpCounters>;
  /** Event-loop delay inside the server over the scrape window, or why it is missing. */
  loopDelay: LoopDelay | string | undefined;
  /** Run only for the event-loop row, after the target failed a lower level (does not count as sustained). */
  afterFailure: boolean;
  /** The host was still busy when the window started (after the quiet gate's wait). */
  busyStart: boolean;
}

/** The level at which the event-loop delay row is reported (the issue's "1,000 live streams"). */
const LOOP_DELAY_LEVEL = 1000;
/** Targets that publish event-loop delay on GET /metrics (Portkey cannot; direct is the mock). */
const WITH_METRICS: TargetName[] = ['parley', 'baseline', 'floor'];
/** What runs at each level, in order: every target over SSE, and Parley over WebSocket chat sockets right after Parley's SSE window. */
type Run = TargetName | 'parley-ws';
const RUNS: Run[] = ['direct', 'parley', 'parley-ws', 'baseline', 'floor', 'portkey'];

export async function streams(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const intervalMs = 20;
  const deltas = 64;
  // Smoke checks the code path with 16-delta streams (a 64-delta stream outlives a smoke window by 1.3 s).
  const perStream = smoke ? 16 : deltas;
  const model = smoke ? `mock-deltas-${perStream}` : 'bench';
  const levels = ctx.levels ?? (smoke ? [50] : [100, 250, 500, 1000, 1500, 2000]);
  const durationMs = smoke ? 800 : 6000;
  const rampMs = smoke ? 300 : 1000;
  const stallMs = 10 * intervalMs;
  const loopLevel = smoke ? levels[0]! : LOOP_DELAY_LEVEL;
  const metricsWindow = { fromMs: smoke ? rampMs + 100 : rampMs + 500, toMs: durationMs };
  const config = {
    mock: { ttft_ms: 0, deltas, interval_ms: intervalMs }, deltas_per_stream: perStream, model, levels, duration_ms: durationMs, ramp_ms: rampMs,
    stall_threshold_ms: stallMs, max_error_rate: 0.001,
    gap_definition: 'client-observed gap between consecutive tokens minus the 20 ms pacing, from the token2->token3 gap on (token1->token2 depends on the shared tick phase)',
    event_loop_delay: { from: 'GET /metrics of the server (monitorEventLoopDelay; p99 minus the monitor resolution)', scrape_window_ms: metricsWindow, reported_at_level: loopLevel },
  };
  const rig = await startRig(ctx, { ttftMs: 0, deltas, intervalMs }, true);
  const { mock, parley, baseline, floor, loadgen } = rig;
  const portkey = rig.portkey!;
  try {
    const agent = await parley.createAgent(model);
    const warm = await parley.createAgent('mock-deltas-2');
    const specs = {
      direct: directTarget(mock, model, true), parley: parleyTarget(parley, agent, true), baseline: baselineTarget(baseline, model, true),
      floor: floorTarget(floor, model, true), portkey: portkeyTarget(portkey, mock, model),
    };
    const warmSpecs = [
      directTarget(mock, 'mock-deltas-2', true), parleyTarget(parley, warm, true), baselineTarget(baseline, 'mock-deltas-2', true),
      floorTarget(floor, 'mock-deltas-2', true), portkeyTarget(portkey, mock, 'mock-deltas-2'),
    ];
    ctx.log('streams: warm-up');
    for (const t of warmSpecs) await loadgen.run({ type: 'warmup', target: t, count: smoke ? 2 : 300, concurrency: smoke ? 8 : 16, sse: true, timeoutMs: 20_000 });
    const byTarget: Record<TargetName, LevelResult[]> = { direct: [], parley: [], baseline: [], floor: [], portkey: [] };
    // Parley over WebSocket chat sockets (the socket twin of its SSE streams): same levels, same criteria.
    const wsLevels: LevelResult[] = [];
    const wsSpec: WsTargetSpec = {
      name: 'parley-ws', url: `ws://127.0.0.1:${parley.port}/v1/agents/${agent}/chat/ws`,
      headers: { Authorization: `Bearer ${parley.apiKey}` }, message: JSON.stringify({ type: 'message', message: 'hello' }),
    };
    ctx.log('streams: warm-up of Parley\'s chat sockets');
    await loadgen.run<StreamsResult>({
      type: 'ws-streams', port: parley.port, target: { ...wsSpec, url: `ws://127.0.0.1:${parley.port}/v1/agents/${warm}/chat/ws` },
      slots: smoke ? 4 : 16, durationMs: smoke ? 300 : 1500, rampMs: 100, intervalMs, expectFirstMs: 0, stallMs, drainMs: 10_000, stallTimeoutMs: 10_000,
    });
    const failed = new Set<Run>();
    /** One window: `level` streams of run `t` (a target over SSE, or Parley over WebSocket). */
    const measure = async (t: Run, level: number, afterFailure: boolean): Promise<LevelResult> => {
      const gate = await quietGate(ctx, `${t} at ${level}`);
      const server = t === 'parley-ws' ? parley.pid : serverPid(rig, t)!;
      const meter = new CpuMeter({ server, mock: mock.pid, loadgen: loadgen.pid }).start();
      const tcp0 = tcpCounters();
      const common = {
        slots: level, durationMs, rampMs, intervalMs, expectFirstMs: 0, stallMs, drainMs: 20_000, stallTimeoutMs: 15_000,
        ...(t === 'parley-ws' || WITH_METRICS.includes(t) ? { metrics: { path: '/metrics', ...metricsWindow } } : {}),
      };
      const r = t === 'parley-ws'
        ? await loadgen.run<StreamsResult>({ type: 'ws-streams', target: wsSpec, port: parley.port, ...common })
        : await loadgen.run<StreamsResult>({ type: 'streams', target: specs[t], ...common });
      const cpu = meter.stop();
      const tcp = tcpDelta(tcp0, tcpCounters());
      const errRate = r.started > 0 ? r.errors.server / r.started : 1;
      const clientRate = r.started > 0 ? r.errors.client / r.started : 0;
      let reason = '';
      if (r.stalled > 0) reason = `${r.stalled} stream(s) silent > ${stallMs} ms`;
      if (errRate >= 0.001) reason += `${reason ? '; ' : ''}server errors ${(errRate * 100).toFixed(2)}% ${JSON.stringify(r.errors.byCode)}`;
      if (clientRate >= 0.001) reason += `${reason ? '; ' : ''}load-generator limits ${(clientRate * 100).toFixed(2)}% ${JSON.stringify(r.errors.byCode)}`;
      const pass = reason === '';
      // A server that answers the first scrape late shortens the window: under half of it is no measurement.
      const wantedMs = metricsWindow.toMs - metricsWindow.fromMs;
      const loopDelay = r.metricsText === undefined ? r.metricsError
        : (r.metricsWindowMs ?? 0) < wantedMs / 2 ? `the scrape window shrank to ${Math.round(r.metricsWindowMs ?? 0)} ms of ${wantedMs} (the server answered the first /metrics late)`
          : loopDelayFromMetrics(r.metricsText);
      const lr: LevelResult = {
        ...r, level, pass: pass && !afterFailure, reason, cpu, tcp, loopDelay, afterFailure, busyStart: !gate.quiet,
        serverCpuUsPerToken: r.tokens > 0 ? ((cpu.cpuS.server ?? Number.NaN) / r.tokens) * 1e6 : Number.NaN,
        mockCpuUsPerToken: r.tokens > 0 ? ((cpu.cpuS.mock ?? Number.NaN) / r.tokens) * 1e6 : Number.NaN,
        serverCpuMsPerStream: r.started > 0 ? ((cpu.cpuS.server ?? Number.NaN) / r.started) * 1e3 : Number.NaN,
        mockCpuMsPerStream: r.started > 0 ? ((cpu.cpuS.mock ?? Number.NaN) / r.started) * 1e3 : Number.NaN,
        tokensPerS: r.tokens / cpu.wallS,
        framesPerS: r.frames / cpu.wallS,
      };
      delete lr.metricsText; // large; the parsed loop delay is kept
      const eld = typeof loopDelay === 'object' ? `, loop delay p99 ${loopDelay.p99Ms.toFixed(2)} ms` : '';
      ctx.log(`  ${pass ? 'ok  ' : 'FAIL'} ${r.started} streams, ${r.tokens} tokens (${lr.tokensPerS.toFixed(0)}/s), added gap p50 ${r.addedGap.p50.toFixed(2)} p99 ${r.addedGap.p99.toFixed(2)} ms, max silence ${r.maxGap.max.toFixed(0)} ms, server CPU ${(cpu.cpuS.server ?? 0).toFixed(2)} s (${lr.serverCpuUsPerToken.toFixed(2)} us/token), mock ${(cpu.cpuS.mock ?? 0).toFixed(2)} s, loadgen ${(cpu.cpuS.loadgen ?? 0).toFixed(2)} s, others on the host ${(cpu.cpuS.others ?? 0).toFixed(2)} s${eld}${reason ? ` — ${reason}` : ''}`);
      if (!pass) failed.add(t);
      return lr;
    };
    for (const level of levels) {
      for (const t of RUNS) {
        // The event-loop row wants every server at that level, even one that failed a lower level.
        const afterFailure = failed.has(t);
        if (afterFailure && !(level === loopLevel && (t === 'parley-ws' || WITH_METRICS.includes(t)))) continue;
        ctx.log(`streams: ${t} at ${level} concurrent streams${afterFailure ? ' (for the event-loop row only: it failed a lower level)' : ''}`);
        const lr = await measure(t, level, afterFailure);
        if (t === 'parley-ws') wsLevels.push(lr);
        else byTarget[t].push(lr);
        await sleep(smoke ? 100 : 1000);
      }
      if (failed.size === RUNS.length && level >= loopLevel) break;
    }

    const maxLevel = (t: TargetName) => Math.max(0, ...byTarget[t].filter((r) => r.pass).map((r) => r.level));
    // Report the per-stream figures at Parley's highest passing level (else its first level), for every target that ran it.
    const refLevel = maxLevel('parley') || levels[0]!;
    const atLevel = (t: TargetName, level: number) => byTarget[t].find((r) => r.level === level);
    const at = (t: TargetName) => atLevel(t, refLevel);
    const othersAt = (level: number) => Object.fromEntries(TARGETS.map((t) => {
      const r = atLevel(t, level);
      return [t, r ? (r.cpu.cpuS.others ?? Number.NaN) / r.cpu.wallS : null];
    }));
    const row = (metric: string, unit: string, better: Row['better'], f: (r: LevelResult, t: TargetName) => number | null, skip: TargetName[] = []): Row => flagHostBusy({
      bench: 'streams', metric: `@${refLevel} ${metric}`, unit, better,
      ...perTarget((t) => {
        const r = at(t);
        return r ? f(r, t) : null;
      }, skip),
    }, othersAt(refLevel));
    const direct = at('direct');
    const rows: Row[] = [];
    const maxRow = flagCeiling({
      bench: 'streams', metric: `max sustained paced streams (${perStream}x20ms)`, unit: 'streams', better: 'higher', ...perTarget(maxLevel),
    });
    maxRow.target = { text: '>= 0.9x direct', pass: smoke ? null : maxLevel('direct') > 0 ? maxLevel('parley') >= 0.9 * maxLevel('direct') : null };
    rows.push(maxRow);
    rows.push(row('added inter-token gap p50', 'ms', 'lower', (r) => r.addedGap.p50));
    rows.push(row('added inter-token gap p99', 'ms', 'lower', (r) => r.addedGap.p99));
    rows.push(row('max silence in a stream', 'ms', 'lower', (r) => r.maxGap.max));
    rows.push(flagCeiling(row('tokens delivered', 'tokens/s', 'higher', (r) => r.tokensPerS)));
    rows.push(flagCeiling(row('SSE frames delivered', 'frames/s', 'higher', (r) => r.framesPerS)));
    // direct: the mock is the server, so its "server CPU" is the mock's own.
    rows.push(row(`server CPU per stream (${perStream} tokens; direct: the mock's own)`, 'ms', 'lower', (r) => r.serverCpuMsPerStream));
    const perStreamRow = row('server CPU per stream / the mock\'s own CPU per stream (direct run)', 'x', 'lower',
      (r) => (direct ? r.serverCpuMsPerStream / direct.mockCpuMsPerStream : null), ['direct']);
    perStreamRow.target = { text: '<= 1.5x the mock\'s own CPU per stream', pass: smoke || perStreamRow.parley === null ? null : perStreamRow.parley <= 1.5 };
    rows.push(perStreamRow);
    rows.push(row('server CPU per relayed token (direct: the mock\'s own)', 'us', 'lower', (r) => r.serverCpuUsPerToken));
    const perToken = row('server CPU per relayed token / the mock\'s CPU per token (same run)', 'x', 'lower', (r) => r.serverCpuUsPerToken / r.mockCpuUsPerToken, ['direct']);
    perToken.target = { text: '<= 2.0x the mock\'s CPU per token', pass: smoke || perToken.parley === null ? null : perToken.parley <= 2 };
    rows.push(perToken);
    rows.push(row('  of which kernel (stime)', 'us', 'lower', (r) => ((r.cpu.sysS.server ?? Number.NaN) / r.tokens) * 1e6));
    rows.push(row('mock CPU per token', 'us', 'none', (r) => r.mockCpuUsPerToken));
    rows.push(row('load-generator CPU per token', 'us', 'none', (r) => ((r.cpu.cpuS.loadgen ?? Number.NaN) / r.tokens) * 1e6));
    rows.push(row('server CPU', 'CPU s/s', 'lower', (r) => (r.cpu.cpuS.server ?? Number.NaN) / r.cpu.wallS, ['direct']));
    rows.push(row('mock CPU (direct: the mock is the server)', 'CPU s/s', 'none', (r) => (r.cpu.cpuS.mock ?? Number.NaN) / r.cpu.wallS));
    rows.push(row('load-generator CPU', 'CPU s/s', 'none', (r) => (r.cpu.cpuS.loadgen ?? Number.NaN) / r.cpu.wallS));
    rows.push(row('host CPU used outside the measured processes', 'CPU s/s', 'none', (r) => (r.cpu.cpuS.others ?? Number.NaN) / r.cpu.wallS));
    rows.push(row('errors + stalls', 'count', 'lower', (r) => r.errors.total + r.stalled));
    rows.push(row('kernel SYN retransmits / listen overflows', 'count', 'none', (r) => r.tcp.synRetrans + r.tcp.listenOverflows));

    const loop = (t: TargetName) => {
      const d = atLevel(t, loopLevel)?.loopDelay;
      return typeof d === 'object' ? d : undefined;
    };
    const eld = flagHostBusy({ bench: 'streams', metric: `event-loop delay p99 @${loopLevel} live streams (in-server)`, unit: 'ms', better: 'lower', ...perTarget((t) => loop(t)?.p99Ms) }, othersAt(loopLevel));
    eld.target = { text: `<= 5 ms at ${LOOP_DELAY_LEVEL.toLocaleString('en-US')} live streams`, pass: smoke || eld.parley === null ? null : eld.parley <= 5 };
    rows.push(eld);
    rows.push({ bench: 'streams', metric: `event-loop delay max @${loopLevel} live streams (in-server)`, unit: 'ms', better: 'lower', ...perTarget((t) => loop(t)?.maxMs) });
    rows.push({ bench: 'streams', metric: `event-loop monitor resolution @${loopLevel} (subtracted)`, unit: 'ms', better: 'none', ...perTarget((t) => loop(t)?.resolutionMs) });

    // Parley over WebSocket chat sockets: the same rows and criteria, at the WebSocket run's own highest
    // passing level; the direct column is the mock serving the load generator at that level.
    const wsMax = Math.max(0, ...wsLevels.filter((r) => r.pass).map((r) => r.level));
    const wsRef = wsMax || levels[0]!;
    const ws = wsLevels.find((r) => r.level === wsRef);
    const directWs = atLevel('direct', wsRef);
    const wsOthers = { parley: ws ? (ws.cpu.cpuS.others ?? Number.NaN) / ws.cpu.wallS : null, direct: directWs ? (directWs.cpu.cpuS.others ?? Number.NaN) / directWs.cpu.wallS : null };
    const wsRow = (metric: string, unit: string, better: Row['better'], f: (r: LevelResult) => number | null, withDirect = true): Row => flagHostBusy({
      bench: 'streams', metric: `WebSocket @${wsRef} ${metric}`, unit, better, parley: ws ? nn(f(ws)) : null, baseline: null,
      direct: withDirect && directWs ? nn(f(directWs)) : null,
    }, wsOthers);
    const wsMaxRow = flagCeiling({
      bench: 'streams', metric: `WebSocket: max sustained paced streams (${perStream}x20ms; direct: SSE)`, unit: 'streams', better: 'higher',
      parley: wsMax, baseline: null, direct: maxLevel('direct'),
    });
    wsMaxRow.target = { text: '>= 0.9x direct', pass: smoke ? null : maxLevel('direct') > 0 ? wsMax >= 0.9 * maxLevel('direct') : null };
    rows.push(wsMaxRow);
    rows.push(wsRow('added inter-token gap p50', 'ms', 'lower', (r) => r.addedGap.p50));
    rows.push(wsRow('added inter-token gap p99', 'ms', 'lower', (r) => r.addedGap.p99));
    rows.push(wsRow('max silence in a stream', 'ms', 'lower', (r) => r.maxGap.max));
    rows.push(flagCeiling(wsRow('tokens delivered', 'tokens/s', 'higher', (r) => r.tokensPerS)));
    rows.push(flagCeiling(wsRow('frames delivered (direct: SSE frames)', 'frames/s', 'higher', (r) => r.framesPerS)));
    rows.push(wsRow(`server CPU per stream (${perStream} tokens; direct: the mock's own)`, 'ms', 'lower', (r) => r.serverCpuMsPerStream));
    const wsPerStream = wsRow('server CPU per stream / the mock\'s own CPU per stream (direct run)', 'x', 'lower',
      (r) => (directWs ? r.serverCpuMsPerStream / directWs.mockCpuMsPerStream : null), false);
    wsPerStream.target = { text: '<= 1.5x the mock\'s own CPU per stream (WebSocket)', pass: smoke || wsPerStream.parley === null ? null : wsPerStream.parley <= 1.5 };
    rows.push(wsPerStream);
    rows.push(wsRow('server CPU per relayed token (direct: the mock\'s own)', 'us', 'lower', (r) => r.serverCpuUsPerToken));
    const wsPerToken = wsRow('server CPU per relayed token / the mock\'s CPU per token (same run)', 'x', 'lower', (r) => r.serverCpuUsPerToken / r.mockCpuUsPerToken, false);
    wsPerToken.target = { text: '<= 2.0x the mock\'s CPU per token (WebSocket)', pass: smoke || wsPerToken.parley === null ? null : wsPerToken.parley <= 2 };
    rows.push(wsPerToken);
    rows.push(wsRow('  of which kernel (stime)', 'us', 'lower', (r) => ((r.cpu.sysS.server ?? Number.NaN) / r.tokens) * 1e6));
    rows.push(wsRow('load-generator CPU per token', 'us', 'none', (r) => ((r.cpu.cpuS.loadgen ?? Number.NaN) / r.tokens) * 1e6));
    rows.push(wsRow('host CPU used outside the measured processes', 'CPU s/s', 'none', (r) => (r.cpu.cpuS.others ?? Number.NaN) / r.cpu.wallS));
    rows.push(wsRow('errors + stalls', 'count', 'lower', (r) => r.errors.total + r.stalled));
    const wsLoop = wsLevels.find((r) => r.level === loopLevel)?.loopDelay;
    const wsEld: Row = {
      bench: 'streams', metric: `WebSocket: event-loop delay p99 @${loopLevel} live streams (in-server)`, unit: 'ms', better: 'lower',
      parley: typeof wsLoop === 'object' ? wsLoop.p99Ms : null, baseline: null, direct: null,
    };
    wsEld.target = { text: `<= 5 ms at ${LOOP_DELAY_LEVEL.toLocaleString('en-US')} live WebSocket streams`, pass: smoke || wsEld.parley === null ? null : wsEld.parley <= 5 };
    rows.push(wsEld);

    const charts: Panel[] = [
      {
        title: `Added inter-token gap at ${refLevel} streams`, unit: 'ms',
        groups: (['p50', 'p90', 'p99', 'max'] as const).map((k) => ({ label: k, values: Object.fromEntries(TARGETS.map((t) => [t, at(t)?.addedGap[k] ?? null])) })),
      },
      {
        title: 'Tokens delivered per level (missing bar: not run after an earlier failure)', unit: 'tokens/s',
        groups: levels.map((l) => ({ label: String(l), values: Object.fromEntries(TARGETS.map((t) => [t, atLevel(t, l)?.tokensPerS ?? null])) })),
      },
      {
        title: 'Parley over WebSocket: server CPU per relayed token per level (parley bar: WebSocket; direct: the mock)', unit: 'us',
        groups: levels.map((l) => ({ label: String(l), values: { parley: wsLevels.find((r) => r.level === l)?.serverCpuUsPerToken ?? null, direct: atLevel('direct', l)?.serverCpuUsPerToken ?? null } })),
      },
      {
        title: 'Server CPU per relayed token per level (direct: the mock)', unit: 'us',
        groups: levels.map((l) => ({ label: String(l), values: Object.fromEntries(TARGETS.map((t) => [t, atLevel(t, l)?.serverCpuUsPerToken ?? null])) })),
      },
      {
        title: `Event-loop delay inside the server at ${loopLevel} streams`, unit: 'ms',
        groups: [{ label: 'p99', values: { parley: eld.parley, baseline: eld.baseline, floor: eld.floor ?? null } }],
      },
    ];
    const notes = [
      `per-stream rows are at ${refLevel} streams (Parley's highest passing level) for every target that ran that level.`,
      `CPU per stream / per token ratios: per stream against the mock's own CPU per stream when it serves the load generator directly (direct run, same level); per token against the mock's CPU per token in the same run (the mock serving that relay). At a fixed ${perStream} tokens per stream both measure the server's CPU against the mock's; they differ in the denominator's run.`,
      `event-loop delay: the server's GET /metrics scraped at ${metricsWindow.fromMs} ms (resets the histogram) and ${metricsWindow.toMs} ms after the streams start; p99 of monitorEventLoopDelay minus its resolution. Portkey publishes none (—); direct is the mock.`,
      ...TARGETS.flatMap((t) => byTarget[t].filter((r) => !r.pass && !r.afterFailure).map((r) => `${t} failed at ${r.level}: ${r.reason}`)),
      `WebSocket rows: Parley's chat sockets (WS /v1/agents/{agent_id}/chat/ws, Authorization: Bearer sk_... on the upgrade, one socket per slot connected before the window, one {"type":"message"} frame per turn, a new conversation each), run right after Parley's SSE window at every level; rows at ${wsRef} (${wsMax > 0 ? 'the WebSocket run\'s highest passing level' : 'no level passed: its first level'}); the direct column is the mock at that level over HTTP.`,
      ...wsLevels.filter((r) => !r.pass && !r.afterFailure).map((r) => `parley-ws failed at ${r.level}: ${r.reason}`),
      ...(typeof wsLoop === 'string' ? [`parley-ws: no event-loop delay at ${loopLevel}: ${wsLoop}`] : wsLoop === undefined ? [`parley-ws: did not run ${loopLevel} streams, so no event-loop delay row`] : []),
      ...TARGETS.flatMap((t) => byTarget[t].filter((r) => r.afterFailure).map((r) => `${t} ran ${r.level} only for the event-loop row (it failed a lower level)${r.reason ? `: ${r.reason}` : ''}`)),
      ...(ctx.quiet ? [`quiet gate: ${TARGETS.reduce((a, t) => a + byTarget[t].filter((r) => r.busyStart).length, 0)} window(s) started on a host still busy after ${ctx.quiet.maxWaitMs / 1000} s of waiting.`] : []),
      ...WITH_METRICS.flatMap((t) => {
        const d = atLevel(t, loopLevel)?.loopDelay;
        if (typeof d === 'string') return [`${t}: no event-loop delay at ${loopLevel}: ${d}`];
        if (d === undefined) return [`${t}: did not run ${loopLevel} streams, so no event-loop delay row`];
        return d.resolutionSource === 'prom-client default' ? [`${t}: event-loop delay from prom-client's default ${d.resolutionMs} ms resolution (coarse sampling: a stall shorter than the period is partly missed); raw p99 ${d.rawP99Ms.toFixed(2)} ms`] : [];
      }),
    ];
    return { name: 'streams', rows, config, results: { levels: byTarget, reference_level: refLevel, websocket: { levels: wsLevels, reference_level: wsRef } }, charts, notes };
  } finally {
    await rig.stop();
  }
}
