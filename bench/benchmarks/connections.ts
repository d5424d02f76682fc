/**
 * connections: memory at start and per live SSE stream. N chat streams are opened and held live: the
 * mock sends the first delta at once and the next one 10 minutes later, so after the first token nothing
 * moves. The server's RSS (VmRSS) grows by (RSS with N open - RSS before) / N per stream. Then the client
 * closes them all and RSS is read again. The direct row is the mock itself holding N live streams.
 * Targets run one after another; every server is started at the beginning (in parallel) and its RSS at
 * start is read just before its own turn, before any request reaches it; each is stopped after its turn.
 */
import { startLoadGen } from '../lib/loadgen-client.js';
import type { ConnectionsOpenResult } from '../lib/loadgen.js';
import { CpuMeter, openFds, openFilesLimit, rssBytes, tcpCounters, tcpDelta } from '../lib/proc.js';
import { checkOpenFiles } from '../lib/ws-frames.js';
import type { WsOpenResult, WsTargetSpec } from '../lib/ws-load.js';
import { startBaselineServer, startFloorServer, startMock, startParleyServer, startPortkey, startWsBaselineServer, type Owned } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { TargetSpec } from '../lib/raw-client.js';
import {
  baselineTarget, directTarget, floorTarget, nn, parleyOptions, parleyTarget, perTarget, portkeyTarget, quietGate, sleep, stopAll, TARGETS,
  type Ctx, type TargetName,
} from './common.js';

interface ConnResult {
  open: ConnectionsOpenResult;
  rssAtStart: number;
  /** Server CPU (all threads) while idle at start, before any request: ms per second. */
  cpuIdleMsPerS: number;
  rssBefore: number;
  rssOpen: number;
  rssAfterClose: number;
  fdsOpen: number;
  stillOpenAfterSettle: number;
  closedByServer: number;
  bytesPerConnection: number;
  cpuOpenS: number;
  tcp: ReturnType<typeof tcpCounters>;
}

/** One server holding `n` idle authenticated WebSockets. */
interface WsConnResult {
  open: WsOpenResult;
  rssAtStart: number;
  rssBefore: number;
  rssOpen: number;
  rssAfterClose: number;
  fdsOpen: number;
  stillOpenAfterSettle: number;
  closedByServer: number;
  bytesPerSocket: number;
  cpuOpenS: number;
}

/** The WebSocket sides: Parley (a fresh server) and the `ws` package's server (bench/baseline/ws-server.ts). */
type WsSide = 'parley' | 'baseline';

/** Length of the system prompt of the agent in the prompt row (a Parley of its own), characters (ASCII: as many bytes). */
const PROMPT_CHARS = 6000;
const PROMPT_SENTENCE = 'You answer questions about the product, briefly, and cite the passages you use. ';

export async function connections(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const n = smoke ? 200 : 10_000;
  // 200 new streams/s is a rate every server here takes (setting up a turn costs 3-5 ms of CPU in Parley,
  // the baseline and Portkey); at 2,000/s none keeps up on 2 vCPUs and Parley's admission control sheds
  // the burst, so the row would measure the opening storm, not the memory of a live stream.
  const rate = smoke ? 1000 : 200;
  const settleMs = smoke ? 250 : 3000;
  const startSettleMs = smoke ? 200 : 1000;
  // CPU at idle is read over this window before any request (the servers' clock ticks are 10 ms: a 5 s window resolves 2 ms/s).
  const idleMs = smoke ? 500 : 5000;
  // Every stream holds its upstream request (Parley's default cap, 4096, would leave the rest queued before the model call).
  const upstreamConnections = n + 1000;
  const config = {
    connections: n, open_rate_per_s: rate, settle_ms: settleMs, start_settle_ms: startSettleMs,
    mock: { ttft_ms: 0, deltas: 4, interval_ms: 600_000, warm_model: 'mock-deltas-1' },
    live_point: 'the first token arrived (every target); nothing moves after it for 10 minutes',
    upstream_connections: { parley: `PARLEY_OPENAI_CONNECTIONS=${upstreamConnections}`, floor: `--connections ${upstreamConnections}` },
    rss: 'VmRSS of the server process from /proc/<pid>/status',
  };
  const mock = await startMock(ctx.root, { ttftMs: 0, deltas: 4, intervalMs: 600_000 });
  const loadgen = await startLoadGen(ctx.root);
  const results: Partial<Record<TargetName, ConnResult>> = {};
  const notes: string[] = [];
  const servers: (Owned | undefined)[] = [];

  /** Measures `t`'s live streams on `proc`; the result goes to `results[t]`, or only to the caller when `store` is false. */
  const measure = async (t: TargetName, proc: Owned, spec: TargetSpec, warm: TargetSpec, store = true): Promise<ConnResult> => {
    await sleep(startSettleMs);
    const rssAtStart = rssBytes(proc.pid);
    // Idle: nothing has reached the server yet; what its own timers and threads cost per second.
    const idleMeter = new CpuMeter({ server: proc.pid }).start();
    await sleep(idleMs);
    const idle = idleMeter.stop();
    // Whole ms: /proc counts 10 ms ticks, and a float difference of equal readings must be exactly 0.
    const cpuIdleMsPerS = Math.round((idle.cpuS.server ?? Number.NaN) * 1000) / idle.wallS;
    ctx.log(`connections: ${t}: RSS at start ${(rssAtStart / 2 ** 20).toFixed(1)} MiB, CPU while idle ${cpuIdleMsPerS.toFixed(1)} ms/s; warm-up, then ${n} live streams at ${rate}/s`);
    await loadgen.run({ type: 'warmup', target: warm, count: smoke ? 2 : 300, concurrency: smoke ? 8 : 16, sse: true, timeoutMs: 20_000 });
    await sleep(smoke ? 200 : 1000);
    await quietGate(ctx, `${t}'s ${n} streams`);
    const rssBefore = rssBytes(proc.pid);
    const meter = new CpuMeter({ server: proc.pid }).start();
    const tcp0 = tcpCounters();
    const open = await loadgen.run<ConnectionsOpenResult>({ type: 'connections-open', target: spec, count: n, rate, timeoutMs: smoke ? 20_000 : Math.ceil((n / rate) * 1000) + 60_000, idleOn: 'token' });
    await sleep(settleMs);
    const cpuOpenS = meter.stop().cpuS.server ?? Number.NaN;
    const tcp = tcpDelta(tcp0, tcpCounters());
    const rssOpen = rssBytes(proc.pid);
    const fdsOpen = openFds(proc.pid);
    const check = await loadgen.run<{ open: number; closedByServer: number }>({ type: 'connections-check' });
    await loadgen.run({ type: 'connections-close' });
    await sleep(settleMs);
    const rssAfterClose = rssBytes(proc.pid);
    const r: ConnResult = {
      open, rssAtStart, cpuIdleMsPerS, rssBefore, rssOpen, rssAfterClose, fdsOpen, tcp, stillOpenAfterSettle: check.open, closedByServer: check.closedByServer, cpuOpenS,
      bytesPerConnection: open.idle > 0 ? (rssOpen - rssBefore) / open.idle : Number.NaN,
    };
    ctx.log(`  ${open.idle}/${n} live (${open.refused} typed refusals retried, ${open.errors.server} server failures, ${open.errors.client} load-generator limits ${JSON.stringify(open.errors.byCode)}), RSS ${(rssBefore / 2 ** 20).toFixed(1)} -> ${(rssOpen / 2 ** 20).toFixed(1)} MiB (${(r.bytesPerConnection / 1024).toFixed(2)} KiB/stream), after close ${(rssAfterClose / 2 ** 20).toFixed(1)} MiB`);
    if (store) results[t] = r;
    return r;
  };

  const wsResults: Partial<Record<WsSide, WsConnResult>> = {};
  const wsConcurrency = 64;
  /**
   * `n` idle authenticated sockets on one server: RSS before (after a warm-up of a few sockets opened and
   * dropped) and with all of them open and live (each answered a ping), per socket. Only the server's
   * process is read: the sockets' client side lives in the load generator, another process.
   */
  const measureWs = async (side: WsSide, proc: Owned, target: WsTargetSpec) => {
    checkOpenFiles(`${side} (pid ${proc.pid})`, n, openFilesLimit(proc.pid));
    checkOpenFiles(`the load generator (pid ${loadgen.pid})`, n, openFilesLimit(loadgen.pid));
    await sleep(startSettleMs);
    const rssAtStart = rssBytes(proc.pid);
    ctx.log(`connections: ${side} WebSockets: RSS at start ${(rssAtStart / 2 ** 20).toFixed(1)} MiB; warm-up, then ${n} idle authenticated sockets (${wsConcurrency} handshakes at a time)`);
    const warm = await loadgen.run<WsOpenResult>({ type: 'ws-open', target, count: smoke ? 20 : 500, concurrency: wsConcurrency, timeoutMs: 60_000 });
    if (warm.live === 0) throw new Error(`${side}: no WebSocket went live in the warm-up: ${JSON.stringify(warm.errors.byCode)} ${warm.errors.sample}`);
    await loadgen.run({ type: 'ws-close' });
    await sleep(smoke ? 200 : 1000);
    await quietGate(ctx, `${side}'s ${n} WebSockets`);
    const rssBefore = rssBytes(proc.pid);
    const meter = new CpuMeter({ server: proc.pid }).start();
    const open = await loadgen.run<WsOpenResult>({ type: 'ws-open', target, count: n, concurrency: wsConcurrency, timeoutMs: smoke ? 20_000 : 180_000 });
    await sleep(settleMs);
    const cpuOpenS = meter.stop().cpuS.server ?? Number.NaN;
    const rssOpen = rssBytes(proc.pid);
    const fdsOpen = openFds(proc.pid);
    const check = await loadgen.run<{ open: number; closedByServer: number }>({ type: 'ws-check' });
    await loadgen.run({ type: 'ws-close' });
    await sleep(settleMs);
    const rssAfterClose = rssBytes(proc.pid);
    const r: WsConnResult = {
      open, rssAtStart, rssBefore, rssOpen, rssAfterClose, fdsOpen, stillOpenAfterSettle: check.open, closedByServer: check.closedByServer, cpuOpenS,
      bytesPerSocket: open.live > 0 ? (rssOpen - rssBefore) / open.live : Number.NaN,
    };
    ctx.log(`  ${open.live}/${n} live (${open.errors.total} failures ${JSON.stringify(open.errors.byCode)}), RSS ${(rssBefore / 2 ** 20).toFixed(1)} -> ${(rssOpen / 2 ** 20).toFixed(1)} MiB (${(r.bytesPerSocket / 1024).toFixed(2)} KiB/socket), after close ${(rssAfterClose / 2 ** 20).toFixed(1)} MiB`);
    wsResults[side] = r;
  };

  try {
    // Direct first: the mock's own cost of a live streaming response.
    await measure('direct', mock, directTarget(mock, 'bench', true), directTarget(mock, 'mock-deltas-1', true));

    const started = await Promise.allSettled([
      startParleyServer(ctx.root, parleyOptions(ctx, mock.url, { PARLEY_MODEL_TIMEOUT_MS: '900000', PARLEY_OPENAI_CONNECTIONS: String(upstreamConnections) })),
      startBaselineServer(ctx.root, mock.url),
      startFloorServer(ctx.root, mock.url, upstreamConnections),
      startPortkey(ctx.root),
      // A fresh Parley for the WebSocket rows (the one above will have held 10,000 SSE streams), and the ws baseline.
      startParleyServer(ctx.root, parleyOptions(ctx, mock.url)),
      startWsBaselineServer(ctx.root),
      // A fresh Parley for the streams of an agent with a long system prompt.
      startParleyServer(ctx.root, parleyOptions(ctx, mock.url, { PARLEY_MODEL_TIMEOUT_MS: '900000', PARLEY_OPENAI_CONNECTIONS: String(upstreamConnections) })),
    ] as const);
    for (const r of started) if (r.status === 'fulfilled') servers.push(r.value);
    const failure = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
    const [parley, baseline, floor, portkey, parleyWs, wsBaseline, parleyPrompt] = started.map((r) => (r as PromiseFulfilledResult<unknown>).value) as [
      Awaited<ReturnType<typeof startParleyServer>>, Awaited<ReturnType<typeof startBaselineServer>>,
      Awaited<ReturnType<typeof startFloorServer>>, Awaited<ReturnType<typeof startPortkey>>,
      Awaited<ReturnType<typeof startParleyServer>>, Awaited<ReturnType<typeof startWsBaselineServer>>,
      Awaited<ReturnType<typeof startParleyServer>>,
    ];
    const agent = await parley.createAgent('bench');
    const warmAgent = await parley.createAgent('mock-deltas-1');
    await measure('parley', parley, parleyTarget(parley, agent, true), parleyTarget(parley, warmAgent, true));
    await parley.stop(3000); // its turns keep streaming upstream after the clients left; free the mock

    // The same with a realistic system prompt: what a live stream holds of its upstream request body.
    const prompt = PROMPT_SENTENCE.repeat(Math.ceil(PROMPT_CHARS / PROMPT_SENTENCE.length)).slice(0, PROMPT_CHARS);
    const promptAgent = await parleyPrompt.createAgent('bench', prompt);
    const promptWarmAgent = await parleyPrompt.createAgent('mock-deltas-1', prompt);
    const promptResult = await measure('parley', parleyPrompt, parleyTarget(parleyPrompt, promptAgent, true), parleyTarget(parleyPrompt, promptWarmAgent, true), false);
    await parleyPrompt.stop(3000);

    await measure('baseline', baseline, baselineTarget(baseline, 'bench', true), baselineTarget(baseline, 'mock-deltas-1', true));
    await baseline.stop(3000);

    await measure('floor', floor, floorTarget(floor, 'bench', true), floorTarget(floor, 'mock-deltas-1', true));
    await floor.stop(3000);

    await measure('portkey', portkey, portkeyTarget(portkey, mock, 'bench'), portkeyTarget(portkey, mock, 'mock-deltas-1'));
    await portkey.stop(3000);

    // WebSockets: idle authenticated chat sockets (Authorization: Bearer sk_... on the upgrade), Parley then the ws baseline.
    const wsAgent = await parleyWs.createAgent('bench');
    try {
      await measureWs('parley', parleyWs, {
        name: 'parley-ws', url: `ws://127.0.0.1:${parleyWs.port}/v1/agents/${wsAgent}/chat/ws`, headers: { Authorization: `Bearer ${parleyWs.apiKey}` }, message: '',
      });
      await parleyWs.stop(3000);
      await measureWs('baseline', wsBaseline, { name: 'ws-baseline', url: `ws://127.0.0.1:${wsBaseline.port}/v1/ws`, headers: { Authorization: `Bearer ${wsBaseline.apiKey}` }, message: '' });
      await wsBaseline.stop(3000);
    } catch (err) {
      notes.push(`WebSocket rows missing: ${err instanceof Error ? err.message : String(err)}`);
      ctx.log(`connections: WebSockets FAILED: ${err instanceof Error ? err.message : String(err)}`);
    }

    const v = (f: (r: ConnResult) => number) => perTarget((t) => (results[t] ? f(results[t]!) : null));
    const row = (metric: string, unit: string, better: Row['better'], f: (r: ConnResult) => number): Row => ({ bench: 'connections', metric, unit, better, ...v(f) });
    const atStart = row('RSS at start (before any request; direct: the mock)', 'MiB', 'lower', (r) => r.rssAtStart / 2 ** 20);
    atStart.target = { text: '<= 120 MiB at start', pass: atStart.parley === null ? null : atStart.parley <= 120 };
    const kib = row(`RSS per live SSE stream (${n})`, 'KiB', 'lower', (r) => r.bytesPerConnection / 1024);
    const direct = results.direct?.bytesPerConnection;
    const vsDirect: Row = {
      bench: 'connections', metric: `RSS per live SSE stream (${n}) / direct's`, unit: 'x', better: 'lower',
      ...perTarget((t) => (results[t] && direct ? results[t]!.bytesPerConnection / direct : null), ['direct']),
    };
    vsDirect.target = { text: '<= 2.0x direct per live stream', pass: smoke || vsDirect.parley === null ? null : vsDirect.parley <= 2 };
    const withPrompt: Row = {
      bench: 'connections', metric: `RSS per live SSE stream (${n}), agent with a ${PROMPT_CHARS.toLocaleString('en-US')}-character system prompt`, unit: 'KiB', better: 'lower',
      ...perTarget((t) => (t === 'parley' ? promptResult.bytesPerConnection / 1024 : null)),
    };
    const rows: Row[] = [
      atStart,
      row(`server CPU while idle at start (${idleMs / 1000} s before any request; all threads)`, 'ms/s', 'lower', (r) => r.cpuIdleMsPerS),
      kib,
      vsDirect,
      withPrompt,
      row('live streams established', 'count', 'higher', (r) => r.open.idle),
      row('server failures while opening', 'count', 'lower', (r) => r.open.errors.server),
      row('typed refusals while opening (each retried after 1-2 s)', 'count', 'none', (r) => r.open.refused),
      row('load-generator limit errors (EMFILE, EADDRNOTAVAIL)', 'count', 'none', (r) => r.open.errors.client),
      row('streams still open after settle', 'count', 'higher', (r) => r.stillOpenAfterSettle),
      row('RSS before (after warm-up)', 'MiB', 'lower', (r) => r.rssBefore / 2 ** 20),
      row(`RSS with ${n} open`, 'MiB', 'lower', (r) => r.rssOpen / 2 ** 20),
      row('RSS after the clients closed', 'MiB', 'lower', (r) => r.rssAfterClose / 2 ** 20),
      row('server open fds with all open', 'count', 'none', (r) => r.fdsOpen),
      row('server CPU to accept them', 'ms per conn', 'lower', (r) => (r.open.idle > 0 ? (r.cpuOpenS / r.open.idle) * 1000 : Number.NaN)),
      row('time to open them all', 's', 'lower', (r) => r.open.wallS),
      row('kernel SYN retransmits while opening', 'count', 'none', (r) => r.tcp.synRetrans),
    ];
    const wsRow = (metric: string, unit: string, better: Row['better'], f: (r: WsConnResult) => number): Row => ({
      bench: 'connections', metric: `WebSocket: ${metric}`, unit, better,
      parley: wsResults.parley ? nn(f(wsResults.parley)) : null, baseline: wsResults.baseline ? nn(f(wsResults.baseline)) : null, direct: null,
    });
    const perSocket = wsRow(`RSS per idle authenticated socket (${n}; baseline: the ws package's server)`, 'KiB', 'lower', (r) => r.bytesPerSocket / 1024);
    perSocket.target = { text: '<= 4 KiB per idle WebSocket', pass: smoke || perSocket.parley === null ? null : perSocket.parley <= 4 };
    rows.push(
      perSocket,
      wsRow('sockets live (answered a ping)', 'count', 'higher', (r) => r.open.live),
      wsRow('failures while opening', 'count', 'lower', (r) => r.open.errors.total),
      wsRow('sockets still open after settle', 'count', 'higher', (r) => r.stillOpenAfterSettle),
      wsRow('RSS at start', 'MiB', 'none', (r) => r.rssAtStart / 2 ** 20),
      wsRow('RSS before (after warm-up)', 'MiB', 'none', (r) => r.rssBefore / 2 ** 20),
      wsRow(`RSS with ${n} idle sockets`, 'MiB', 'none', (r) => r.rssOpen / 2 ** 20),
      wsRow('RSS after the clients left', 'MiB', 'none', (r) => r.rssAfterClose / 2 ** 20),
      wsRow('server open fds with all open', 'count', 'none', (r) => r.fdsOpen),
      wsRow('server CPU to accept one (upgrade, auth, ping)', 'ms per socket', 'lower', (r) => (r.open.live > 0 ? (r.cpuOpenS / r.open.live) * 1000 : Number.NaN)),
      wsRow('time to open them all', 's', 'lower', (r) => r.open.wallS),
    );
    notes.push(`one "stream" is a visitor's SSE stream after its first token, including the server's upstream request (Parley's pool cap raised to ${upstreamConnections} so none waits in the queue; the floor's likewise).`);
    notes.push('Parley keeps a turn running after its client leaves (by design), so its "after close" RSS still holds those turns.');
    notes.push(`"agent with a ${PROMPT_CHARS}-character system prompt": a third, fresh Parley whose agent has ${PROMPT_CHARS} ASCII characters of instructions, so every upstream request carries them; Parley only (the peers have no agents).`);
    notes.push('Parley, the baseline, the floor and Portkey each hold one upstream socket per live stream (about 2 fds per visitor): see "server open fds".');
    notes.push(`WebSocket rows: ${n} idle chat sockets (WS /v1/agents/{agent_id}/chat/ws with Authorization: Bearer sk_... on the upgrade) on a fresh Parley, against bench/baseline/ws-server.ts (the ws package's server on node:http, the same Bearer check, no store) in the baseline column. A socket counts when the server answered its {"type":"ping"} with pong; ${wsConcurrency} handshakes in flight at a time. Only the server process's RSS is read (the client sockets live in the load generator, another process).`);
    for (const side of ['parley', 'baseline'] as const) {
      const e = wsResults[side]?.open.errors;
      if (e && e.total > 0) notes.push(`${side} WebSockets: open errors ${JSON.stringify(e.byCode)}${e.sample ? ` e.g. ${e.sample}` : ''}`);
    }
    for (const t of TARGETS) {
      const e = results[t]?.open.errors;
      if (e && e.total > 0) notes.push(`${t}: open errors ${JSON.stringify(e.byCode)}${e.sample ? ` e.g. ${e.sample}` : ''}`);
    }
    const chartValues = (f: (r: ConnResult) => number) => Object.fromEntries(TARGETS.map((t) => [t, results[t] ? f(results[t]!) : null]));
    return {
      name: 'connections', rows, config, results: { ...results, websocket: wsResults }, notes,
      charts: [
        { title: `RSS per live SSE stream (${n} streams)`, unit: 'KiB', groups: [{ label: 'per stream', values: chartValues((r) => r.bytesPerConnection / 1024) }] },
        {
          title: `RSS per idle authenticated WebSocket (${n}; baseline bar: the ws package's server)`, unit: 'KiB',
          groups: [{ label: 'per socket', values: { parley: wsResults.parley ? wsResults.parley.bytesPerSocket / 1024 : null, baseline: wsResults.baseline ? wsResults.baseline.bytesPerSocket / 1024 : null } }],
        },
        {
          title: 'Server RSS', unit: 'MiB',
          groups: [
            { label: 'at start', values: chartValues((r) => r.rssAtStart / 2 ** 20) },
            { label: 'before', values: chartValues((r) => r.rssBefore / 2 ** 20) },
            { label: `${n} open`, values: chartValues((r) => r.rssOpen / 2 ** 20) },
            { label: 'after close', values: chartValues((r) => r.rssAfterClose / 2 ** 20) },
          ],
        },
      ],
    };
  } finally {
    await loadgen.run({ type: 'connections-close' }).catch(() => undefined);
    await loadgen.run({ type: 'ws-close' }).catch(() => undefined);
    await stopAll([loadgen, ...servers, mock]);
  }
}
