/**
 * scale: several Parley processes serving as one (issue 36, DESIGN.md "Several processes"). Arms, each its
 * own processes on 127.0.0.1, all on one mock upstream:
 *
 * - `Parley x1`: one process (PARLEY_PROCESSES=1);
 * - `Parley x2`: PARLEY_PROCESSES=2, a primary and two children listening on one port (SO_REUSEPORT: the
 *   kernel gives each new connection to one of them);
 * - `floor x1`, `floor x2`: the floor relay (bench/floor/server.ts) as one process, and as two processes
 *   on one port (uSockets binds with SO_REUSEPORT too): what a second process gives a relay with nothing to
 *   share;
 * - `direct`: the mock itself;
 * - with `--reference <dir>`: `Parley ref`, a build of another checkout (the code before issue 36), for
 *   the targets that compare PARLEY_PROCESSES=1 with "today".
 *
 * Phases: first token at C=1 (interleaved request by request); 50 closed-loop clients of short turns;
 * short turns per second at added-TTFT p99 <= 10 ms (the capacity search of short-turns); sustained paced
 * streams; the first token of a turn forwarded to its conversation's owner against one sent straight to
 * it (two processes on their own ports on one data dir); SQLite's single writer (commits per second, one
 * and two processes on one database file). Every phase prints the CPU of every process: each server
 * process, the PARLEY_PROCESSES primary, the mock, the load generator, and the rest of the host. The load
 * generator picks a random pre-opened connection per turn, so turns spread over the processes of an arm
 * (the kernel hashes each connection to one); the share each Parley process ran comes from the group's
 * /metrics (`parley_turns_total` by `process`). bench/README.md explains every row.
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { startLoadGen, type LoadGen } from '../lib/loadgen-client.js';
import type { ClosedLoopResult, OpenLoopResult, SequentialResult, StreamsResult } from '../lib/loadgen.js';
import { CpuMeter } from '../lib/proc.js';
import {
  freePort, startFloorServer, startMock, startParleyServer, tempDir, type FloorProc, type MockProc, type ParleyProc,
} from '../lib/processes.js';
import { sumBy } from '../lib/prom-text.js';
import type { TargetSpec } from '../lib/raw-client.js';
import type { BenchOutcome, Columns, Row } from '../lib/report.js';
import { diffSummary, type Summary } from '../lib/stats.js';
import type { ChartSeries, Panel } from '../lib/svg.js';
import { MIN_ARRIVALS, searchCapacity, serverCpuS } from './capacity.js';
import { directTarget, floorTarget, fx, nn, parleyOptions, parleyTarget, quietGate, sleep, stopAll, type Ctx } from './common.js';

/** The arms of the main comparison (see the module comment). */
type Arm = 'p1' | 'p2' | 'f1' | 'f2' | 'direct' | 'ref';
/** The servers compared (every arm but direct and the reference build). */
const SERVER_ARMS = ['p1', 'p2', 'f1', 'f2'] as const;
type ServerArm = (typeof SERVER_ARMS)[number];

const BENCH = 'scale';
const INTERVAL_MS = 20;
const SHORT_MODEL = 'mock-deltas-16-ttft-20';
const C1_MODEL = 'mock-deltas-2';

/** CPU seconds of one window by process name (loadgen.ts `cpuPids` names), and its wall time. */
interface CpuWindow { cpuS: Record<string, number>; wallS: number }

export async function scale(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const reference = ctx.reference;
  const refLabel = reference === undefined ? '' : `Parley ref (${gitCommit(reference)})`;
  const arms: Arm[] = ['p1', 'p2', 'f1', 'f2', 'direct', ...(reference ? ['ref' as const] : [])];
  const label: Record<Arm, string> = { p1: 'Parley x1', p2: 'Parley x2', f1: 'floor x1', f2: 'floor x2', direct: 'direct', ref: refLabel };
  const columns: Columns = {
    values: arms.map((a) => ({ key: a, label: label[a] })),
    ratios: [
      { num: 'p2', den: 'p1', label: 'Px2/Px1' }, { num: 'f2', den: 'f1', label: 'Fx2/Fx1' },
      { num: 'p1', den: 'f1', label: 'Px1/Fx1' }, { num: 'p2', den: 'f2', label: 'Px2/Fx2' },
      ...(reference ? [{ num: 'p1', den: 'ref', label: 'Px1/ref' }] : []),
    ],
  };
  const series: ChartSeries[] = arms.map((a) => ({ key: a, label: label[a] }));
  const row = (metric: string, unit: string, better: Row['better'], f: (a: Arm) => number | null | undefined): Row => ({
    bench: BENCH, metric, unit, better, parley: null, baseline: null, direct: null, columns,
    values: Object.fromEntries(arms.map((a) => [a, nn(f(a) ?? undefined)])),
  });

  const c1Samples = smoke ? 10 : 300;
  const closed = { clients: 50, connections: smoke ? 60 : 200, windowMs: smoke ? 600 : 4000, rounds: smoke ? 1 : 2 };
  const shortStreamS = (20 + 15 * INTERVAL_MS) / 1000;
  const search = smoke ? { start: 50, factor: 2, max: 50, refine: 0 } : { start: 50, factor: 2, max: 6400, refine: 2, min: 12 };
  const probeWindowMs = smoke ? 500 : 4000;
  const streamDeltas = smoke ? 16 : 64;
  const streamModel = smoke ? `mock-deltas-${streamDeltas}` : 'bench';
  const levels = ctx.levels ?? (smoke ? [50] : [250, 500, 1000, 1500, 2000]);
  const streamMs = smoke ? 800 : 6000;
  const rampMs = smoke ? 300 : 1000;
  const stallMs = 10 * INTERVAL_MS;
  const forwardSamples = smoke ? 10 : 300;
  const forwardConversations = smoke ? 4 : 20;
  const warmupTurns = smoke ? 20 : 2000;
  const config = {
    arms: Object.fromEntries(arms.map((a) => [a, label[a]])),
    mock: { ttft_ms: 0, deltas: 64, interval_ms: INTERVAL_MS, c1_model: C1_MODEL, short_turn_model: SHORT_MODEL, streams_model: streamModel },
    warmup_turns_per_process: warmupTurns,
    concurrency_1: { samples_per_arm: c1Samples, mode: 'sequential, arms interleaved per request (one keep-alive connection per arm: one process of a group serves it)' },
    closed_loop: { ...closed, model: SHORT_MODEL, connection_pick: 'a random idle pre-opened connection per turn', ramp_ms: Math.round(shortStreamS * 1000), ramp: 'client starts spread over one stream duration; turns sent during the ramp not recorded' },
    short_turns: { search, window_ms: probeWindowMs, bound_added_ttft_p99_ms: 10, model: SHORT_MODEL, connection_pick: 'random' },
    streams: { levels, duration_ms: streamMs, ramp_ms: rampMs, stall_threshold_ms: stallMs, deltas: streamDeltas },
    forwarded: { samples: forwardSamples, conversations: forwardConversations, model: C1_MODEL },
    reference: reference ?? null,
  };

  const mock = await startMock(ctx.root, { ttftMs: 0, deltas: 64, intervalMs: INTERVAL_MS });
  const procs: { stop(graceMs?: number): Promise<void> }[] = [mock];
  try {
    ctx.log('scale: starting Parley x1, Parley x2 (PARLEY_PROCESSES=2), floor x1, floor x2 (two relays on one port)');
    // Both relays of floor x2 on one fixed port (Linux does not share a port it picked for a bind to 0).
    const floorPort = await freePort();
    const started = await Promise.allSettled([
      startParleyServer(ctx.root, { ...parleyOptions(ctx, mock.url, { PARLEY_PROCESSES: '1' }), name: 'parley-x1' }),
      startParleyServer(ctx.root, { ...parleyOptions(ctx, mock.url), processes: 2, name: 'parley-x2' }),
      startFloorServer(ctx.root, mock.url, 4096, 0, 'floor-x1'),
      startFloorServer(ctx.root, mock.url, 4096, floorPort, 'floor-x2a'),
      reference ? startParleyServer(reference, { ...parleyOptions(ctx, mock.url), name: 'parley-ref' }) : Promise.resolve(undefined),
      startLoadGen(ctx.root),
    ] as const);
    for (const s of started) if (s.status === 'fulfilled' && s.value) procs.push(s.value);
    const failure = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failure) throw failure.reason;
    const [p1, p2, f1, f2a, ref, loadgen] = started.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [ParleyProc, ParleyProc, FloorProc, FloorProc, ParleyProc | undefined, LoadGen];
    const f2b = await startFloorServer(ctx.root, mock.url, 4096, floorPort, 'floor-x2b');
    procs.push(f2b);
    const [child0, child1] = p2.children!;
    ctx.log(`scale: Parley x2 primary ${p2.pid}, children ${child0} and ${child1} on port ${p2.port}; floor x2 ${f2a.pid} and ${f2b.pid} on port ${f2a.port}`);

    /** Per arm, the processes whose CPU is measured: `server` (and `server.<n>`), the mock (direct: the mock is the server). */
    const pidsOf: Record<Arm, Record<string, number>> = {
      direct: { server: mock.pid },
      p1: { server: p1.pid, mock: mock.pid },
      p2: { server: child0!, 'server.2': child1!, 'server.primary': p2.pid, mock: mock.pid },
      f1: { server: f1.pid, mock: mock.pid },
      f2: { server: f2a.pid, 'server.2': f2b.pid, mock: mock.pid },
      ref: ref ? { server: ref.pid, mock: mock.pid } : {},
    };
    const parleys: Partial<Record<Arm, ParleyProc>> = { p1, p2, ...(ref ? { ref } : {}) };
    const agents: Partial<Record<Arm, Record<string, string>>> = {};
    for (const [a, p] of Object.entries(parleys) as [Arm, ParleyProc][]) {
      agents[a] = {};
      for (const m of [C1_MODEL, SHORT_MODEL, streamModel]) agents[a]![m] = await p.createAgent(m);
    }
    const spec = (a: Arm, model: string): TargetSpec => {
      if (a === 'direct') return directTarget(mock, model, true, a);
      if (a === 'f1') return floorTarget(f1, model, true, a);
      if (a === 'f2') return floorTarget(f2a, model, true, a);
      return parleyTarget(parleys[a]!, agents[a]![model]!, true, a);
    };

    ctx.log(`scale: warm-up (${warmupTurns} turns per process)`);
    for (const a of arms) {
      const perProcess = a === 'p2' || a === 'f2' ? 2 : 1;
      await loadgen.run({ type: 'warmup', target: spec(a, C1_MODEL), count: warmupTurns * perProcess, concurrency: 16, sse: true, timeoutMs: 60_000 }, 300_000);
    }

    const rows: Row[] = [];
    const notes: string[] = [];
    const charts: Panel[] = [];
    const results: Record<string, unknown> = {};

    // ---------------------------------------------------------------------------------------- C=1
    ctx.log(`scale: first token at C=1 (${c1Samples} per arm, interleaved)`);
    await quietGate(ctx, 'C=1');
    // Every process at once: the arms are interleaved request by request, and each arm's server processes
    // serve only its requests (the mock, the load generator and the rest of the host are for the whole run).
    const everyPid: Record<string, number> = { mock: mock.pid, loadgen: loadgen.pid };
    for (const a of arms) for (const [n, pid] of Object.entries(pidsOf[a])) if (n.startsWith('server') && a !== 'direct') everyPid[`${a}|${n}`] = pid;
    const c1Meter = new CpuMeter(everyPid).start();
    const seq = await loadgen.run<SequentialResult>({ type: 'sequential', targets: arms.map((a) => spec(a, C1_MODEL)), samples: c1Samples, deadlineMs: smoke ? 15_000 : 180_000, expectFirstMs: 0 }, 300_000);
    const c1Cpu = c1Meter.stop();
    const c1Server = (a: Arm, name?: string) => {
      const keys = Object.keys(c1Cpu.cpuS).filter((k) => (name === undefined ? k.startsWith(`${a}|server`) : k === `${a}|${name}`));
      return keys.length === 0 ? null : sum(keys.map((k) => c1Cpu.cpuS[k]!));
    };
    const c1 = (a: Arm) => seq.perTarget[a]!.ttft;
    const c1Added = (a: Arm, k: 'p50' | 'p99') => (a === 'direct' ? null : c1(a)[k] - c1('direct')[k]);
    rows.push(
      row('C=1 TTFT p50', 'ms', 'lower', (a) => c1(a).p50),
      row('C=1 TTFT p99', 'ms', 'lower', (a) => c1(a).p99),
    );
    const c1p50 = row('C=1 added TTFT p50', 'ms', 'lower', (a) => c1Added(a, 'p50'));
    if (ref) c1p50.target = withinOf(c1p50, 'p1', 'ref', 0.05, 'PARLEY_PROCESSES=1: C=1 added p50 within 5% of the reference build (today)', label.p1, smoke);
    rows.push(c1p50, row('C=1 added TTFT p99', 'ms', 'lower', (a) => c1Added(a, 'p99')));
    rows.push(row('C=1 errors', 'count', 'lower', (a) => seq.perTarget[a]!.errors.total));
    const c1Turns = (a: Arm) => seq.perTarget[a]!.ok + seq.perTarget[a]!.errors.total;
    const perS = (v: number | null) => (v === null ? null : v / c1Cpu.wallS);
    rows.push(
      row('C=1 server CPU per turn (all server processes; direct: the mock over the whole run, per turn of all arms)', 'ms', 'lower', (a) => {
        if (a === 'direct') return ((c1Cpu.cpuS.mock ?? Number.NaN) / sum(arms.map(c1Turns))) * 1000;
        const v = c1Server(a);
        return v === null ? null : (v / c1Turns(a)) * 1000;
      }),
      row('C=1 CPU: server process 1', 'CPU s/s', 'none', (a) => (a === 'direct' ? null : perS(c1Server(a, 'server')))),
      row('C=1 CPU: server process 2', 'CPU s/s', 'none', (a) => (a === 'direct' ? null : perS(c1Server(a, 'server.2')))),
      row('C=1 CPU: PARLEY_PROCESSES primary', 'CPU s/s', 'none', (a) => (a === 'direct' ? null : perS(c1Server(a, 'server.primary')))),
      row('C=1 CPU over the whole run (direct column): mock upstream', 'CPU s/s', 'none', (a) => (a === 'direct' ? perS(c1Cpu.cpuS.mock ?? null) : null)),
      row('C=1 CPU over the whole run (direct column): load generator', 'CPU s/s', 'none', (a) => (a === 'direct' ? perS(c1Cpu.cpuS.loadgen ?? null) : null)),
      row('C=1 CPU over the whole run (direct column): rest of the host', 'CPU s/s', 'none', (a) => (a === 'direct' ? perS(c1Cpu.cpuS.others ?? null) : null)),
    );
    results.concurrency_1 = { per_target: seq.perTarget, cpu: c1Cpu };

    // ---------------------------------------------------------------------------- 50 closed-loop clients
    const closedArms: Arm[] = ['direct', ...SERVER_ARMS];
    ctx.log(`scale: ${closed.clients} closed-loop clients of short turns (${closed.rounds} x ${closed.windowMs} ms per arm)`);
    const before50 = await groupCounters(p2.url);
    const cl = await loadgen.run<ClosedLoopResult>({
      type: 'closed-loop', targets: closedArms.map((a) => spec(a, SHORT_MODEL)), rounds: closed.rounds, clients: closed.clients, durationMs: closed.windowMs,
      drainMs: smoke ? 10_000 : 30_000, expectFirstMs: 20, stallTimeoutMs: 20_000, pauseMs: smoke ? 100 : 1000, cpuPids: pidsOf, connections: closed.connections,
      rampMs: Math.round(shortStreamS * 1000),
      ...(ctx.quiet ? { quiet: ctx.quiet } : {}),
    }, 900_000);
    const after50 = await groupCounters(p2.url);
    const cr = (a: Arm) => cl.perTarget[a];
    const clAdded = (a: Arm, k: 'p50' | 'p99') => {
      const x = cr(a);
      if (!x) return null;
      return a === 'direct' ? x.ttft[k] - 20 : x.ttft[k] - cr('direct')!.ttft[k];
    };
    const L50 = `C=${closed.clients} closed loop`;
    rows.push(
      row(`${L50} TTFT p50`, 'ms', 'lower', (a) => cr(a)?.ttft.p50),
      row(`${L50} TTFT p99`, 'ms', 'lower', (a) => cr(a)?.ttft.p99),
    );
    const added50 = row(`${L50} added TTFT p50 (direct: over the mock's 20 ms)`, 'ms', 'lower', (a) => clAdded(a, 'p50'));
    const p50x1 = added50.values!.p1 ?? null;
    const p50x2 = added50.values!.p2 ?? null;
    added50.target = {
      text: '2 processes halve the added p50 at 50 clients (Parley x2 <= 0.5x Parley x1)',
      pass: smoke || p50x1 === null || p50x2 === null || p50x1 <= 0 ? null : p50x2 <= 0.5 * p50x1,
      shown: { label: label.p2, value: p50x2 },
    };
    if (!smoke && p50x1 !== null && p50x1 <= 0) notes.push(`${L50}: Parley x1's added p50 is <= 0 (within noise of direct): "halve" is not defined this run (n/a).`);
    rows.push(added50, row(`${L50} added TTFT p99 (direct: over the mock's 20 ms)`, 'ms', 'lower', (a) => clAdded(a, 'p99')));
    rows.push(
      row(`${L50} time to conversation event p50`, 'ms', 'lower', (a) => (a === 'direct' ? null : cr(a)?.conversation.p50)),
      row(`${L50} turns completed`, 'turns/s', 'higher', (a) => (cr(a) ? cr(a)!.ok / cr(a)!.wallS : null)),
      row(`${L50} errors + unfinished`, 'count', 'lower', (a) => (cr(a) ? cr(a)!.errors.total + cr(a)!.unfinished : null)),
      row(`${L50} typed refusals (503 overloaded)`, 'count', 'none', (a) => cr(a)?.refused),
      row(`${L50} server CPU per turn (all server processes; direct: the mock's)`, 'ms', 'lower', (a) => (cr(a) && cr(a)!.ok > 0 ? (serverCpuS(cr(a)!) / cr(a)!.ok) * 1000 : null)),
      ...cpuRows(row, L50, (a) => (cr(a) ? { cpuS: cr(a)!.cpuS, wallS: cr(a)!.wallS } : undefined)),
      shareRow(row, `${L50} share of the turns run by the first process`, before50, after50),
    );
    results.closed_loop = cl.perTarget;

    // ----------------------------------------------------------------------- short turns per second
    ctx.log('scale: short turns per second at added-TTFT p99 <= 10 ms');
    const specs = Object.fromEntries(closedArms.map((a) => [a, spec(a, SHORT_MODEL)])) as Record<ServerArm | 'direct', TargetSpec>;
    const beforeCap = { p1: await groupCounters(p1.url), p2: await groupCounters(p2.url) };
    const cap = await searchCapacity<ServerArm>(ctx, {
      loadgen, cpuPids: pidsOf, specs, targets: [...SERVER_ARMS], search, boundMs: 10, mockTtftMs: 20, streamS: shortStreamS, windowMs: probeWindowMs,
      drainMs: smoke ? 10_000 : 20_000, pauseMs: smoke ? 100 : 500, thorough: !smoke, label: 'scale short-turns', pick: 'random',
    });
    const afterCap = { p1: await groupCounters(p1.url), p2: await groupCounters(p2.url) };
    const best = (a: Arm) => (a === 'ref' ? null : cap.best[a] ?? null);
    const bestRow = row('short turns/s at added-TTFT p99 <= 10 ms (16 tokens, TTFT 20 ms)', 'turns/s', 'higher', best);
    const b1 = best('p1');
    const b2 = best('p2');
    bestRow.target = {
      text: '2 processes give >= 1.3x one process\'s short turns/s', pass: smoke || b1 === null || b2 === null ? null : b1 > 0 ? b2 >= 1.3 * b1 : b2 > 0,
      shown: { label: `${label.p2} / ${label.p1}`, value: b1 ? (b2 ?? 0) / b1 : null, unit: 'x' },
    };
    const capFlags = [...cap.capped.map((t) => `capped(${t})`), ...cap.rigBound.map((t) => `rig-bound(${t})`)];
    if (capFlags.length > 0) bestRow.flags = capFlags;
    rows.push(bestRow);
    const first = (a: Arm) => cap.probes.find((p) => p.target === a && p.rate === search.start);
    const atBest = (a: Arm) => cap.probes.find((p) => p.target === a && p.pass && p.rate === cap.best[a as ServerArm | 'direct']);
    const s0 = search.start;
    rows.push(
      row(`@${s0}/s added TTFT p50 (direct: over the mock's 20 ms)`, 'ms', 'lower', (a) => first(a)?.addedP50),
      row(`@${s0}/s added TTFT p99 (direct: over the mock's 20 ms)`, 'ms', 'lower', (a) => first(a)?.addedP99),
      row(`@${s0}/s server CPU per turn (all server processes; direct: the mock's)`, 'ms', 'lower', (a) => first(a)?.serverCpuMsPerTurn),
      row('@own best rate server CPU per turn (all server processes)', 'ms', 'lower', (a) => atBest(a)?.serverCpuMsPerTurn),
      ...cpuRows(row, '@own best rate', (a) => {
        const p = atBest(a);
        return p ? { cpuS: p.result.cpuS, wallS: p.result.wallS } : undefined;
      }),
      row('@own best rate load-generator send lag p99', 'ms', 'none', (a) => atBest(a)?.result.sendLag.p99),
    );
    // SQLite commits per turn over the whole search (each Parley arm's own probes), for the capacity model.
    const capTurns = (a: 'p1' | 'p2') => sum(Object.values(afterCap[a].turns)) - sum(Object.values(beforeCap[a].turns));
    const capCommits = (a: 'p1' | 'p2') => sum(Object.values(afterCap[a].commits)) - sum(Object.values(beforeCap[a].commits));
    rows.push(
      row('short turns: SQLite commits per turn (all processes, over the search)', 'commits', 'lower', (a) => (a === 'p1' || a === 'p2' ? capCommits(a) / capTurns(a) : null)),
      row('short turns: SQLite commits/s at the own best rate (commits per turn x rate)', 'commits/s', 'none', (a) => (a === 'p1' || a === 'p2' ? (capCommits(a) / capTurns(a)) * (best(a) ?? Number.NaN) : null)),
      shareRow(row, 'short turns: share of the turns run by the first process (over the search)', beforeCap.p2, afterCap.p2),
      row('short turns: probes run', 'count', 'none', (a) => cap.probes.filter((p) => p.target === a).length),
    );
    notes.push(
      `short turns: rates ${search.start}, x${search.factor} up to ${search.max}/s, then ${search.refine} bisection step(s); windows of ${probeWindowMs} ms and at least ${MIN_ARRIVALS} arrivals; pass = added-TTFT p99 (the arm's p99 minus direct's at the same rate) <= 10 ms and < 0.1% failures. Each request takes a random pre-opened connection.`,
      ...cap.superseded.map((x) => `short turns: ${label[x.target]} at ${x.rate}/s was measured again (disturbed window: ${x.reason}).`),
      ...cap.probes.filter((p) => !p.pass).map((p) => `short turns: ${label[p.target]} failed at ${p.rate}/s: ${p.reason}`),
    );
    results.short_turns = { best: cap.best, capped: cap.capped, rig_bound: cap.rigBound, probes: cap.probes.map(({ result, ...p }) => ({ ...p, ttft: result.ttft, cpuS: result.cpuS, wallS: result.wallS, sendLag: result.sendLag })) };

    // CPU per turn of PARLEY_PROCESSES=1 against the reference build, same rate, interleaved windows.
    if (ref) {
      ctx.log(`scale: CPU per turn at ${s0}/s, Parley x1 against the reference build`);
      const cmp = await loadgen.run<OpenLoopResult>({
        type: 'open-loop', targets: [spec('p1', SHORT_MODEL), spec('ref', SHORT_MODEL)], rounds: smoke ? 1 : 3, rate: s0, durationMs: probeWindowMs, drainMs: 20_000,
        expectFirstMs: 20, stallTimeoutMs: 20_000, pauseMs: smoke ? 100 : 500, cpuPids: pidsOf, prewarm: Math.ceil(s0 * shortStreamS * 1.5) + 10,
        ...(ctx.quiet ? { quiet: ctx.quiet } : {}),
      }, 900_000);
      const perTurn = (a: Arm) => (a === 'p1' || a === 'ref' ? (serverCpuS(cmp.perTarget[a]!) / cmp.perTarget[a]!.requests) * 1000 : null);
      const r = row(`@${s0}/s server CPU per turn, Parley x1 against the reference build (interleaved windows)`, 'ms', 'lower', perTurn);
      r.target = withinOf(r, 'p1', 'ref', 0.05, 'PARLEY_PROCESSES=1: CPU per turn within 5% of the reference build (today)', label.p1, smoke);
      rows.push(r);
      results.reference_cpu_per_turn = cmp.perTarget;
    } else {
      notes.push('no --reference build: the "within 5% of today" targets (C=1 added p50, CPU per turn) are not measured; see bench/README.md "scale".');
    }

    // ------------------------------------------------------------------------- sustained paced streams
    const streamArms: Arm[] = ['direct', ...SERVER_ARMS];
    const byArm = new Map<Arm, { level: number; pass: boolean; reason: string; r: StreamsResult; cpu: CpuWindow; shares?: { before: Counters; after: Counters } }[]>();
    const failed = new Set<Arm>();
    for (const level of levels) {
      for (const a of streamArms) {
        if (failed.has(a)) continue;
        ctx.log(`scale: streams: ${label[a]} at ${level} concurrent paced streams`);
        await quietGate(ctx, `${a} streams at ${level}`);
        const meter = new CpuMeter({ ...pidsOf[a], loadgen: loadgen.pid }).start();
        const before = a === 'p2' ? await groupCounters(p2.url) : undefined;
        const r = await loadgen.run<StreamsResult>({
          type: 'streams', target: spec(a, streamModel), slots: level, durationMs: streamMs, rampMs, intervalMs: INTERVAL_MS, expectFirstMs: 0, stallMs,
          drainMs: 20_000, stallTimeoutMs: 15_000,
        }, 900_000);
        const cpu = meter.stop();
        const after = a === 'p2' ? await groupCounters(p2.url) : undefined;
        const errRate = r.started > 0 ? r.errors.total / r.started : 1;
        let reason = '';
        if (r.stalled > 0) reason = `${r.stalled} stream(s) silent > ${stallMs} ms`;
        if (errRate >= 0.001) reason += `${reason ? '; ' : ''}errors ${(errRate * 100).toFixed(2)}% ${JSON.stringify(r.errors.byCode)}`;
        const pass = reason === '';
        if (!pass) failed.add(a);
        const list = byArm.get(a) ?? [];
        list.push({ level, pass, reason, r, cpu, ...(before && after ? { shares: { before, after } } : {}) });
        byArm.set(a, list);
        ctx.log(`  ${pass ? 'ok  ' : 'FAIL'} ${r.started} streams, ${r.tokens} tokens, max silence ${fx(r.maxGap.max, 0)} ms, server CPU ${fx(serverCpuS(cpu))} s, mock ${fx(cpu.cpuS.mock)} s, loadgen ${fx(cpu.cpuS.loadgen)} s, others ${fx(cpu.cpuS.others)} s${reason ? ` — ${reason}` : ''}`);
        await sleep(smoke ? 100 : 1000);
      }
      if (streamArms.every((a) => failed.has(a))) break;
    }
    const maxLevel = (a: Arm) => Math.max(0, ...(byArm.get(a) ?? []).filter((x) => x.pass).map((x) => x.level));
    rows.push(row(`max sustained paced streams (${streamDeltas}x${INTERVAL_MS}ms, no silence > ${stallMs} ms)`, 'streams', 'higher', (a) => (a === 'ref' ? null : maxLevel(a))));
    // Per-stream figures at the highest level both Parley arms passed (else the first level).
    const refLevel = Math.min(maxLevel('p1'), maxLevel('p2')) || levels[0]!;
    const at = (a: Arm) => byArm.get(a)?.find((x) => x.level === refLevel);
    const S = `streams @${refLevel}`;
    rows.push(
      row(`${S} server CPU per stream (all server processes; direct: the mock's own)`, 'ms', 'lower', (a) => {
        const x = at(a);
        return x && x.r.started > 0 ? (serverCpuS(x.cpu) / x.r.started) * 1000 : null;
      }),
      row(`${S} server CPU per relayed token (all server processes; direct: the mock's own)`, 'us', 'lower', (a) => {
        const x = at(a);
        return x && x.r.tokens > 0 ? (serverCpuS(x.cpu) / x.r.tokens) * 1e6 : null;
      }),
      row(`${S} max silence in a stream`, 'ms', 'lower', (a) => at(a)?.r.maxGap.max),
      row(`${S} added inter-token gap p99`, 'ms', 'lower', (a) => at(a)?.r.addedGap.p99),
      ...cpuRows(row, S, (a) => at(a)?.cpu),
      shareRow(row, `${S} share of the turns run by the first process`, at('p2')?.shares?.before, at('p2')?.shares?.after),
    );
    for (const [a, list] of byArm) for (const x of list) if (!x.pass) notes.push(`streams: ${label[a]} failed at ${x.level}: ${x.reason}`);
    results.streams = Object.fromEntries([...byArm].map(([a, list]) => [a, list.map((x) => ({ level: x.level, pass: x.pass, reason: x.reason, started: x.r.started, tokens: x.r.tokens, maxGap: x.r.maxGap, addedGap: x.r.addedGap, cpu: x.cpu }))]));

    charts.push(
      { title: 'Added first token p50, 50 closed-loop clients of short turns', unit: 'ms', groups: [{ label: 'added p50', values: added50.values! }] },
      { title: 'Short turns per second at added-TTFT p99 <= 10 ms', unit: 'turns/s', groups: [{ label: 'highest passing rate', values: bestRow.values! }] },
      { title: 'Sustained paced streams', unit: 'streams', groups: [{ label: 'highest passing level', values: Object.fromEntries(streamArms.map((a) => [a, maxLevel(a)])) }] },
    );

    // --------------------------------------------------------------------------- forwarded first token
    await stopAll([p1, p2, f1, f2a, f2b, ref]);
    const fwd = await forwardedFirstToken(ctx, mock, loadgen, { samples: forwardSamples, conversations: forwardConversations, smoke });
    rows.push(...fwd.rows);
    notes.push(...fwd.notes);
    results.forwarded = fwd.results;

    // ------------------------------------------------------------------------------ SQLite's writer
    const sq = await sqliteWriter(ctx);
    rows.push(...sq.rows);
    notes.push(...sq.notes);
    results.sqlite_writer = sq.results;

    notes.unshift(
      'columns: Parley x1 = one process (PARLEY_PROCESSES=1); Parley x2 = PARLEY_PROCESSES=2 (a primary and two children on one port); floor x1 / x2 = bench/floor/server.ts as one relay and as two relays on one port; direct = the mock.',
      'added TTFT = the arm\'s percentile minus direct\'s percentile in the same run (per percentile, not per request).',
      'CPU rows: "server process 1/2" are the two children of Parley x2 (in process-id order) and the two floor x2 relays; the single-process arms have only process 1; the primary is PARLEY_PROCESSES\'s supervisor; direct\'s server is the mock.',
      'share of the turns run by the first process: from the group\'s /metrics (parley_turns_total by process) before and after the phase; 0.5 is an even spread.',
    );
    return { name: BENCH, rows, config, results, charts, series, notes };
  } finally {
    await stopAll(procs);
  }
}

/** A target within `share` of another column's value (lower is better), e.g. x1 within 5% of the reference build. */
function withinOf(r: Row, a: string, b: string, share: number, text: string, shownLabel: string, smoke: boolean): Row['target'] {
  const va = r.values?.[a] ?? null;
  const vb = r.values?.[b] ?? null;
  return { text, pass: smoke || va === null || vb === null ? null : va <= vb + Math.abs(vb) * share, shown: { label: shownLabel, value: va } };
}

function sum(xs: number[]): number {
  return xs.reduce((s, x) => s + x, 0);
}

/**
 * The counters of a Parley by process label, from its /metrics, which shows every process serving the same
 * store (a group's children, labelled by index; processes started on their own, by process id): turns that
 * succeeded, SQLite commits.
 */
interface Counters { turns: Record<string, number>; commits: Record<string, number> }

async function groupCounters(url: string): Promise<Counters> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return {
    turns: sumBy(text, 'parley_turns_total', 'process', { outcome: 'succeeded' }),
    commits: sumBy(text, 'parley_sqlite_commits_total', 'process'),
  };
}

type RowFn = (metric: string, unit: string, better: Row['better'], f: (a: Arm) => number | null | undefined) => Row;

/** The CPU of every process of a window, CPU s/s, one row each (see the notes). */
function cpuRows(row: RowFn, phase: string, w: (a: Arm) => CpuWindow | undefined): Row[] {
  const perS = (a: Arm, name: string) => {
    const x = w(a);
    return x ? (x.cpuS[name] ?? Number.NaN) / x.wallS : null;
  };
  return [
    row(`${phase} CPU: all server processes (direct: the mock)`, 'CPU s/s', 'none', (a) => {
      const x = w(a);
      return x ? serverCpuS(x) / x.wallS : null;
    }),
    row(`${phase} CPU: server process 1`, 'CPU s/s', 'none', (a) => (a === 'direct' ? null : perS(a, 'server'))),
    row(`${phase} CPU: server process 2`, 'CPU s/s', 'none', (a) => (a === 'p2' || a === 'f2' ? perS(a, 'server.2') : null)),
    row(`${phase} CPU: PARLEY_PROCESSES primary`, 'CPU s/s', 'none', (a) => (a === 'p2' ? perS(a, 'server.primary') : null)),
    row(`${phase} CPU: mock upstream`, 'CPU s/s', 'none', (a) => (a === 'direct' ? perS(a, 'server') : perS(a, 'mock'))),
    row(`${phase} CPU: load generator`, 'CPU s/s', 'none', (a) => perS(a, 'loadgen')),
    row(`${phase} CPU: rest of the host`, 'CPU s/s', 'none', (a) => perS(a, 'others')),
  ];
}

/** The share of the turns (succeeded) process "0" of Parley x2 ran between two readings of its group's /metrics. */
function shareRow(row: RowFn, metric: string, before: Counters | undefined, after: Counters | undefined): Row {
  let share: number | null = null;
  if (before && after) {
    const d = (k: string) => (after.turns[k] ?? 0) - (before.turns[k] ?? 0);
    const all = sum(Object.keys(after.turns).map(d));
    share = all > 0 ? d('0') / all : null;
  }
  return row(metric, 'share', 'none', (a) => (a === 'p2' ? share : null));
}

function gitCommit(dir: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    return dir;
  }
}

/**
 * The first token of a turn continuing a conversation owned by another process, forwarded to its owner
 * (src/runtime/placement/remote-turns.ts), against the same sent straight to the owner: two Parley
 * processes on their own ports on one data dir (A, the owner of every conversation, created through it;
 * B, which forwards), C=1, interleaved request by request with the direct upstream. Each request continues
 * the next of `conversations` conversations (round robin; B's list starts half-way, so the two never
 * continue the same conversation back to back).
 */
async function forwardedFirstToken(ctx: Ctx, mock: MockProc, loadgen: LoadGen, o: { samples: number; conversations: number; smoke: boolean }): Promise<{ rows: Row[]; notes: string[]; results: unknown }> {
  ctx.log('scale: forwarded first token (two Parley processes on their own ports, one data dir)');
  const owner = await startParleyServer(ctx.root, { ...parleyOptions(ctx, mock.url), name: 'parley-owner' });
  let forwarder: ParleyProc | undefined;
  try {
    forwarder = await startParleyServer(ctx.root, { ...parleyOptions(ctx, mock.url), shareDataOf: owner, name: 'parley-forwarder' });
    const fw = forwarder;
    const agent = await owner.createAgent(C1_MODEL);
    const conversations: string[] = [];
    for (let i = 0; i < o.conversations; i++) {
      const res = await fetch(`${owner.url}/v1/agents/${agent}/chat`, {
        method: 'POST', headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hello', stream: false }),
      });
      const body = (await res.json()) as { conversation_id?: string };
      if (!res.ok || !body.conversation_id) throw new Error(`forwarded: could not start a conversation on the owner: ${res.status} ${JSON.stringify(body)}`);
      conversations.push(body.conversation_id);
    }
    const bodies = conversations.map((id) => JSON.stringify({ message: 'hello', stream: true, conversation_id: id }));
    const half = Math.floor(bodies.length / 2);
    const straight: TargetSpec = { ...parleyTarget(owner, agent, true, 'owner'), bodies };
    const forwarded: TargetSpec = { ...parleyTarget(forwarder, agent, true, 'forwarded'), bodies: [...bodies.slice(half), ...bodies.slice(0, half)] };
    const direct = directTarget(mock, C1_MODEL, true, 'direct');
    for (const t of [straight, forwarded]) await loadgen.run({ type: 'warmup', target: t, count: o.smoke ? 4 : 300, concurrency: 1, sse: true, timeoutMs: 60_000 }, 300_000);
    // Each process's /metrics shows itself first (then the neighbours it knows of); a process's label is
    // the first of a series every process has. Turns are read from each process's own series.
    const ownLabel = async (p: ParleyProc) => Object.keys(sumBy(await (await fetch(`${p.url}/metrics`)).text(), 'process_cpu_user_seconds_total', 'process'))[0];
    const labels = { owner: await ownLabel(owner), forwarder: await ownLabel(forwarder) };
    const turnsOf = async () => ({
      owner: (await groupCounters(owner.url)).turns[labels.owner ?? ''] ?? 0,
      forwarder: (await groupCounters(fw.url)).turns[labels.forwarder ?? ''] ?? 0,
    });
    const turns0 = await turnsOf();
    await quietGate(ctx, 'forwarded C=1');
    const meter = new CpuMeter({ owner: owner.pid, forwarder: forwarder.pid, mock: mock.pid, loadgen: loadgen.pid }).start();
    const seq = await loadgen.run<SequentialResult>({ type: 'sequential', targets: [direct, straight, forwarded], samples: o.samples, deadlineMs: o.smoke ? 15_000 : 180_000, expectFirstMs: 0 }, 300_000);
    const cpu = meter.stop();
    const turns1 = await turnsOf();
    type Fw = 'owner' | 'forwarded' | 'direct';
    const cols: Columns = {
      values: [{ key: 'owner', label: 'straight to the owner' }, { key: 'forwarded', label: 'forwarded to the owner' }, { key: 'direct', label: 'direct' }],
      ratios: [{ num: 'forwarded', den: 'owner', label: 'fwd/straight' }],
    };
    const r = (metric: string, unit: string, better: Row['better'], f: (k: Fw) => number | null | undefined): Row => ({
      bench: BENCH, metric: `forwarded: ${metric}`, unit, better, parley: null, baseline: null, direct: null, columns: cols,
      values: Object.fromEntries((['owner', 'forwarded', 'direct'] as Fw[]).map((k) => [k, nn(f(k) ?? undefined)])),
    });
    const s = (k: Fw): Summary => seq.perTarget[k]!.ttft;
    const added = (k: Fw) => diffSummary(s(k), s('direct'));
    const ran = (who: 'owner' | 'forwarder') => (labels.owner === undefined || labels.owner === labels.forwarder ? Number.NaN : turns1[who] - turns0[who]);
    const rows: Row[] = [
      r('C=1 TTFT p50', 'ms', 'lower', (k) => s(k).p50),
      r('C=1 TTFT p99', 'ms', 'lower', (k) => s(k).p99),
      r('C=1 added TTFT p50', 'ms', 'lower', (k) => (k === 'direct' ? null : added(k).p50)),
      r('C=1 added TTFT p99', 'ms', 'lower', (k) => (k === 'direct' ? null : added(k).p99)),
      r('forwarding cost: TTFT p50 forwarded minus straight', 'ms', 'lower', (k) => (k === 'forwarded' ? s('forwarded').p50 - s('owner').p50 : null)),
      r('forwarding cost: TTFT p99 forwarded minus straight', 'ms', 'lower', (k) => (k === 'forwarded' ? s('forwarded').p99 - s('owner').p99 : null)),
      r('C=1 time to conversation event p50', 'ms', 'lower', (k) => (k === 'direct' ? null : seq.perTarget[k]!.conversation.p50)),
      r('errors', 'count', 'lower', (k) => seq.perTarget[k]!.errors.total),
      r('turns run, by process: the owner / the process that forwards (it must run none)', 'turns', 'none', (k) => (k === 'owner' ? ran('owner') : k === 'forwarded' ? ran('forwarder') : null)),
      r('CPU per turn of the owner process (both columns\' turns)', 'ms', 'none', (k) => (k === 'owner' ? ((cpu.cpuS.owner ?? Number.NaN) / (2 * o.samples)) * 1000 : null)),
      r('CPU per forwarded turn of the forwarding process', 'ms', 'none', (k) => (k === 'forwarded' ? ((cpu.cpuS.forwarder ?? Number.NaN) / o.samples) * 1000 : null)),
      r('CPU: mock, load generator, rest of the host', 'CPU s/s', 'none', (k) => (k === 'direct' ? ((cpu.cpuS.mock ?? 0) + (cpu.cpuS.loadgen ?? 0) + (cpu.cpuS.others ?? 0)) / cpu.wallS : null)),
    ];
    const notes = [
      `forwarded: ${o.conversations} conversations started through the owner; each request continues the next one, straight to the owner or through the other process (which forwards it over the signed internal route); ${o.samples} each, interleaved with direct, one at a time.`,
    ];
    return { rows, notes, results: { per_target: seq.perTarget, cpu, turns_before: turns0, turns_after: turns1, process_labels: labels } };
  } finally {
    await stopAll([forwarder, owner]);
  }
}

/** One run of bench/lib/sqlite-commit-probe.ts (see there). */
interface ProbeOut { writes: number; commits: number; wall_s: number; errors: number; first_error: string; latency_ms: { p50: number; p99: number; max: number } }

function runProbe(ctx: Ctx, args: string[]): Promise<ProbeOut> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ctx.root, 'dist/bench/lib/sqlite-commit-probe.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
    child.once('error', reject);
    child.once('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        resolve(JSON.parse(out.trim().split('\n').pop()!) as ProbeOut);
      } catch (e) {
        reject(new Error(`sqlite-commit-probe ${args.join(' ')}: ${String(e)}\n${err.slice(-2000)}`));
      }
    });
  });
}

/**
 * SQLite's single writer: new conversations (one acknowledged write each) through Parley's store, as fast
 * as one process (or two on the same database file) commits them, with 1 and 64 writes in flight per
 * process, at `synchronous` FULL (Parley's default) and NORMAL. Commits per second bound every process's
 * writes together (docs/scaling.md).
 */
async function sqliteWriter(ctx: Ctx): Promise<{ rows: Row[]; notes: string[]; results: unknown }> {
  const ms = ctx.smoke ? 300 : 3000;
  const cases = ctx.smoke
    ? [{ procs: 1, inflight: 64 }, { procs: 2, inflight: 64 }]
    : [{ procs: 1, inflight: 1 }, { procs: 1, inflight: 64 }, { procs: 2, inflight: 1 }, { procs: 2, inflight: 64 }];
  const syncs = ['full', 'normal'] as const;
  const cols: Columns = {
    values: [{ key: 'full', label: 'synchronous=FULL' }, { key: 'normal', label: 'synchronous=NORMAL' }],
    ratios: [{ num: 'normal', den: 'full', label: 'NORMAL/FULL' }],
  };
  const out: Record<string, Partial<Record<(typeof syncs)[number], ProbeOut[]>>> = {};
  for (const c of cases) {
    const key = `${c.procs}x${c.inflight}`;
    out[key] = {};
    // Smoke: FULL only (NORMAL runs the same code).
    for (const sync of syncs.filter((x) => !ctx.smoke || x === 'full')) {
      ctx.log(`scale: SQLite writer: ${c.procs} process(es), ${c.inflight} write(s) in flight each, synchronous=${sync.toUpperCase()}, ${ms} ms`);
      const dir = tempDir('parley-bench-sqlite-');
      const args = ['--dir', dir, '--sync', sync, '--ms', String(ms), '--inflight', String(c.inflight)];
      await quietGate(ctx, 'SQLite writer probe');
      if (c.procs === 1) {
        out[key]![sync] = [await runProbe(ctx, args)];
      } else {
        // Several processes on one new file: the schema first (by one), then all start together.
        await runProbe(ctx, ['--dir', dir, '--ms', '0']);
        const startAt = Date.now() + (ctx.smoke ? 700 : 1500);
        out[key]![sync] = await Promise.all(Array.from({ length: c.procs }, () => runProbe(ctx, [...args, '--start-at', String(startAt)])));
      }
    }
  }
  const rows: Row[] = [];
  for (const c of cases) {
    const key = `${c.procs}x${c.inflight}`;
    const what = `${c.procs === 1 ? '1 process' : `${c.procs} processes on one file`}, ${c.inflight} in flight${c.procs > 1 ? ' each' : ''}`;
    const mk = (metric: string, unit: string, better: Row['better'], f: (list: ProbeOut[]) => number): Row => ({
      bench: BENCH, metric: `SQLite writer, ${what}: ${metric}`, unit, better, parley: null, baseline: null, direct: null, columns: cols,
      values: Object.fromEntries(syncs.map((s) => [s, out[key]![s] ? nn(f(out[key]![s]!)) : null])),
    });
    const wall = (l: ProbeOut[]) => Math.max(...l.map((p) => p.wall_s));
    rows.push(
      mk('commits/s (all processes)', 'commits/s', 'higher', (l) => sum(l.map((p) => p.commits)) / wall(l)),
      mk('acknowledged writes/s (all processes)', 'writes/s', 'higher', (l) => sum(l.map((p) => p.writes)) / wall(l)),
      mk('write latency p50 (the slowest process)', 'ms', 'lower', (l) => Math.max(...l.map((p) => p.latency_ms.p50))),
      mk('write latency p99 (the slowest process)', 'ms', 'lower', (l) => Math.max(...l.map((p) => p.latency_ms.p99))),
      mk('write latency max', 'ms', 'lower', (l) => Math.max(...l.map((p) => p.latency_ms.max))),
    );
    if (c.procs > 1) {
      rows.push(
        mk('share of the writes made by the process that made the fewest', 'share', 'none', (l) => Math.min(...l.map((p) => p.writes)) / Math.max(1, sum(l.map((p) => p.writes)))),
        mk('failed writes (SQLITE_BUSY after the 5 s busy timeout)', 'count', 'lower', (l) => sum(l.map((p) => p.errors))),
      );
    }
  }
  const notes = [
    `SQLite writer: bench/lib/sqlite-commit-probe.ts opens Parley's SQLite store (its writer thread, group commit) and starts new conversations (conversation + first message + lease, one transaction each) for ${ms} ms; "2 processes" are two probes on one database file, started together: SQLite lets one process write at a time, and a process that finds the file locked tries again every 50-200 µs, for up to 5 s (src/store/sqlite/write-lock.ts).`,
  ];
  return { rows, notes, results: out };
}
