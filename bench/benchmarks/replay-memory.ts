/**
 * replay-memory: what Parley keeps in memory for the replay of finished turns (API.md "Chat": a dropped
 * client resumes a turn's stream from a sequence number; docs/chat.md). A finished turn's events stay for
 * PARLEY_TURN_REPLAY_MS (default 5 min) and all of them together within PARLEY_TURN_REPLAY_BYTES (default
 * 64 MiB, as the registry estimates it: src/runtime/turn/turn-registry.ts `retainedBytesOf`, 2 bytes per
 * character kept plus a fixed overhead per turn); past that the oldest fall back to their stored messages.
 *
 * Two Parley processes on one zero-latency mock (no knowledge base), one after the other: the defaults,
 * and PARLEY_TURN_REPLAY_BYTES=0 (nothing kept but the newest turn). Each serves N short new-conversation
 * turns (100,000; smoke 500; 32 at a time); the rows are RSS and V8's used heap before and after, the
 * turns kept and the bytes the budget counted for them (the server's /metrics: `parley_turn_replay_turns`,
 * `parley_turn_replay_bytes`), and what a kept turn costs measured against what the estimate says: the
 * difference between the two processes after N turns, divided by the turns the first one keeps.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startLoadGen, type LoadGen } from '../lib/loadgen-client.js';
import type { Errors } from '../lib/loadgen.js';
import { rssBytes } from '../lib/proc.js';
import { pollUntil, startMock, startParleyServer, tempDir, type ParleyProc } from '../lib/processes.js';
import { parsePromText } from '../lib/prom-text.js';
import type { BenchOutcome, Columns, Row } from '../lib/report.js';
import { fx, nn, parleyOptions, sleep, stopAll, type Ctx } from './common.js';

const BENCH = 'replay-memory';
type Arm = 'kept' | 'none';

/**
 * V8's used heap after a full garbage collection: the process was started with
 * `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<dir>`; SIGUSR2 makes it write a heap snapshot, which V8
 * takes after collecting every unreachable object, on the main thread: once the file exists, the next
 * /metrics answer comes after the snapshot is written, and its heap gauge is read (the snapshot is then
 * deleted). NaN when no snapshot appeared.
 */
async function heapAfterFullGc(p: ParleyProc, dir: string): Promise<number> {
  const snapshots = () => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot')) : []);
  process.kill(p.pid, 'SIGUSR2');
  try {
    await pollUntil('the heap snapshot', () => (snapshots().length > 0 ? true : undefined), { proc: p, timeoutMs: 60_000, everyMs: 100 });
    return (await read(p)).heapUsedBytes;
  } catch {
    return Number.NaN;
  } finally {
    for (const f of snapshots()) rmSync(join(dir, f), { force: true });
  }
}

/** One reading of a Parley process: RSS, V8's used heap, and its replay gauges. */
interface Reading { rssBytes: number; heapUsedBytes: number; replayTurns: number; replayBytes: number }

async function read(p: ParleyProc): Promise<Reading> {
  const text = await (await fetch(`${p.url}/metrics`)).text();
  // One process: the sum of its series of each (unlabelled alone, or labelled in a group); NaN when absent.
  const samples = parsePromText(text);
  const value = (name: string) => {
    const v = [...samples].filter(([key]) => key === name || key.startsWith(`${name}{`)).map(([, n]) => n);
    return v.length === 0 ? Number.NaN : v.reduce((a, b) => a + b, 0);
  };
  return {
    rssBytes: rssBytes(p.pid),
    heapUsedBytes: value('nodejs_heap_size_used_bytes'),
    replayTurns: value('parley_turn_replay_turns'),
    replayBytes: value('parley_turn_replay_bytes'),
  };
}

export async function replayMemory(ctx: Ctx): Promise<BenchOutcome> {
  const turns = ctx.smoke ? 200 : 100_000;
  const concurrency = 32;
  const settleMs = ctx.smoke ? 300 : 2000;
  const envs: Record<Arm, Record<string, string>> = { kept: {}, none: { PARLEY_TURN_REPLAY_BYTES: '0' } };
  const label: Record<Arm, string> = { kept: 'replay kept (defaults: 64 MiB, 5 min)', none: 'PARLEY_TURN_REPLAY_BYTES=0' };
  const config = { turns, concurrency, settle_ms: settleMs, arms_run: ctx.smoke ? 'at the same time' : 'one after the other', mock: 'zero latency, "You said: hello" as word deltas', env: envs, arms: label };
  const mock = await startMock(ctx.root, { ttftMs: 0 });
  const readings: Partial<Record<Arm, { start: Reading; end: Reading; heapAfterGcBytes: number; wallS: number; ok: number; errors: Errors }>> = {};
  /** One arm: its own Parley and load generator, N turns, the readings. */
  const runArm = async (arm: Arm): Promise<void> => {
    const diagnostics = tempDir('parley-bench-heap-');
    const opts = parleyOptions(ctx, mock.url, envs[arm]);
    let p: ParleyProc | undefined;
    let loadgen: LoadGen | undefined;
    try {
      [p, loadgen] = await Promise.all([
        startParleyServer(ctx.root, { ...opts, nodeArgs: [...opts.nodeArgs, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${diagnostics}`], name: `parley-${arm}` }),
        startLoadGen(ctx.root),
      ]);
      const agent = await p.createAgent('bench');
      await sleep(settleMs);
      const start = await read(p);
      ctx.log(`replay-memory: ${label[arm]}: RSS at start ${fx(start.rssBytes / 2 ** 20, 1)} MiB; ${turns} turns, ${concurrency} at a time`);
      const t0 = performance.now();
      const r = await loadgen.run<{ ok: number; errors: Errors }>({
        type: 'warmup', target: {
          name: arm, port: p.port, flavor: 'events', method: 'POST', path: `/v1/agents/${agent}/chat`,
          headers: { Authorization: `Bearer ${p.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
          body: JSON.stringify({ message: 'hello', stream: true }),
        }, count: turns, concurrency, sse: true, timeoutMs: 1_800_000,
      }, 1_900_000);
      const wallS = (performance.now() - t0) / 1000;
      await sleep(settleMs);
      const end = await read(p);
      const heapAfterGcBytes = await heapAfterFullGc(p, diagnostics);
      readings[arm] = { start, end, heapAfterGcBytes, wallS, ok: r.ok, errors: r.errors };
      ctx.log(`  ${label[arm]}: ${r.ok} turns in ${fx(wallS, 1)} s (${r.errors.total} failed${r.errors.total > 0 ? `: ${JSON.stringify(r.errors.byCode)}` : ''}); RSS ${fx(end.rssBytes / 2 ** 20, 1)} MiB, heap used ${fx(end.heapUsedBytes / 2 ** 20, 1)} MiB (${fx(heapAfterGcBytes / 2 ** 20, 1)} after a full GC), ${end.replayTurns} turns kept, ${fx(end.replayBytes / 2 ** 20, 1)} MiB counted`);
    } finally {
      await stopAll([loadgen, p]);
    }
  };
  try {
    // Smoke: both at once (start-up is most of its time); full: one after the other, each with the machine to itself.
    if (ctx.smoke) await Promise.all([runArm('kept'), runArm('none')]);
    else for (const arm of ['kept', 'none'] as const) await runArm(arm);
  } finally {
    await stopAll([mock]);
  }
  const columns: Columns = {
    values: (['kept', 'none'] as const).map((a) => ({ key: a, label: label[a] })),
    ratios: [{ num: 'kept', den: 'none', label: 'kept/none' }],
  };
  const row = (metric: string, unit: string, better: Row['better'], f: (a: Arm) => number | null | undefined): Row => ({
    bench: BENCH, metric, unit, better, parley: null, baseline: null, direct: null, columns,
    values: Object.fromEntries((['kept', 'none'] as const).map((a) => [a, nn(f(a) ?? undefined)])),
  });
  const MiB = 2 ** 20;
  const g = (a: Arm) => readings[a];
  const kept = g('kept');
  const none = g('none');
  // What one kept turn costs, measured: the difference between the two processes after the same turns,
  // per turn the first one keeps; and what the budget's estimate counts per kept turn.
  const perTurn = (f: (r: Reading) => number) => (kept && none && kept.end.replayTurns > 0 ? (f(kept.end) - f(none.end)) / kept.end.replayTurns : null);
  const estimate = kept && kept.end.replayTurns > 0 ? kept.end.replayBytes / kept.end.replayTurns : null;
  const rssPerTurn = perTurn((r) => r.rssBytes);
  const heapPerTurn = perTurn((r) => r.heapUsedBytes);
  const gcPerTurn = kept && none && kept.end.replayTurns > 0 ? (kept.heapAfterGcBytes - none.heapAfterGcBytes) / kept.end.replayTurns : null;
  const rows: Row[] = [
    row('turns served', 'turns', 'none', (a) => g(a)?.ok),
    row('failed turns (typed refusals included)', 'count', 'lower', (a) => g(a)?.errors.total),
    row('turns per second', 'turns/s', 'none', (a) => (g(a) ? g(a)!.ok / g(a)!.wallS : null)),
    row('RSS at start (after the agent is created)', 'MiB', 'lower', (a) => (g(a) ? g(a)!.start.rssBytes / MiB : null)),
    row(`RSS after ${turns.toLocaleString('en-US')} turns`, 'MiB', 'lower', (a) => (g(a) ? g(a)!.end.rssBytes / MiB : null)),
    row('RSS growth', 'MiB', 'lower', (a) => (g(a) ? (g(a)!.end.rssBytes - g(a)!.start.rssBytes) / MiB : null)),
    row('V8 heap used at start', 'MiB', 'lower', (a) => (g(a) ? g(a)!.start.heapUsedBytes / MiB : null)),
    row(`V8 heap used after ${turns.toLocaleString('en-US')} turns`, 'MiB', 'lower', (a) => (g(a) ? g(a)!.end.heapUsedBytes / MiB : null)),
    row('finished turns kept for replay (parley_turn_replay_turns)', 'turns', 'none', (a) => g(a)?.end.replayTurns),
    row('bytes the replay budget counts for them (parley_turn_replay_bytes)', 'MiB', 'none', (a) => (g(a) ? g(a)!.end.replayBytes / MiB : null)),
    row('per kept turn: the estimate (retainedBytesOf)', 'bytes', 'none', (a) => (a === 'kept' ? estimate : null)),
    row('per kept turn: RSS measured (RSS difference between the two / turns kept)', 'bytes', 'none', (a) => (a === 'kept' ? rssPerTurn : null)),
    row(`V8 heap used after ${turns.toLocaleString('en-US')} turns and a full garbage collection`, 'MiB', 'lower', (a) => (g(a) ? g(a)!.heapAfterGcBytes / MiB : null)),
    row('per kept turn: V8 heap measured (heap difference / turns kept)', 'bytes', 'none', (a) => (a === 'kept' ? heapPerTurn : null)),
    row('per kept turn: live V8 heap measured (difference after a full GC / turns kept)', 'bytes', 'none', (a) => (a === 'kept' ? gcPerTurn : null)),
    row('RSS measured / the estimate', 'x', 'none', (a) => (a === 'kept' && estimate && rssPerTurn !== null ? rssPerTurn / estimate : null)),
    row('V8 heap measured / the estimate', 'x', 'none', (a) => (a === 'kept' && estimate && heapPerTurn !== null ? heapPerTurn / estimate : null)),
    row('live V8 heap measured / the estimate', 'x', 'none', (a) => (a === 'kept' && estimate && gcPerTurn !== null ? gcPerTurn / estimate : null)),
  ];
  const notes = [
    'The process with PARLEY_TURN_REPLAY_BYTES=0 keeps only its newest finished turn, so the difference after the same turns is what the kept turns cost: in RSS and in V8\'s used heap (nodejs_heap_size_used_bytes) as they are (both include what the last collections left), and in the live heap, read after a full collection (each process writes a heap snapshot on SIGUSR2, which V8 takes after collecting all garbage; the snapshot is deleted).',
    'Failed turns are counted by code: a typed refusal by its error code, a stream that ended without its done event as no_done. The budget only bounds what later readers can resume (a turn\'s own response gets every event whatever the budget kept), so both columns serve the same turns and the memory compared is that of the same work.',
    'An estimate far from the measured cost per turn means the budget bounds a different amount of memory than PARLEY_TURN_REPLAY_BYTES says (src/runtime/turn/turn-registry.ts CHANNEL_OVERHEAD_BYTES).',
  ];
  return {
    name: BENCH, rows, config, notes, results: readings,
    charts: [{ title: `RSS after ${turns.toLocaleString('en-US')} short turns`, unit: 'MiB', groups: [{ label: 'at start', values: { kept: kept ? kept.start.rssBytes / MiB : null, none: none ? none.start.rssBytes / MiB : null } }, { label: 'after', values: { kept: kept ? kept.end.rssBytes / MiB : null, none: none ? none.end.rssBytes / MiB : null } }] }],
    series: (['kept', 'none'] as const).map((a) => ({ key: a, label: label[a] })),
  };
}
