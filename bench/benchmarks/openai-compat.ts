/**
 * openai-compat: the first token through Parley's OpenAI-compatible endpoint (`POST /v1/chat/completions`,
 * chat.completion.chunk SSE) against the native SSE endpoint (`POST /v1/agents/{id}/chat`), the same turn
 * underneath, in one run: mock upstream, Parley and the load generator, each its own process. At
 * concurrency 1, requests one after another, the three targets (direct to the mock, native, chat
 * completions) interleaved request by request, so both endpoints see the same host.
 *
 * Then the server's own timing figures (API.md "Chat", Timing) are checked against the load generator's
 * clock: with a mock whose first delta comes 20 ms after the request, the model's share of the first
 * token (`upstream_first_byte_ms - setup_ms`) must be about 20 ms, Parley's share about its added first
 * token, and no turn may have reached the client before the server says it sent it.
 */
import type { SequentialResult, TimingResult, TimingTarget } from '../lib/loadgen.js';
import { startLoadGen } from '../lib/loadgen-client.js';
import { startMock, startParleyServer } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { diffSummary, type Summary } from '../lib/stats.js';
import { directTarget, parleyOptions, parleyOpenAITarget, parleyTarget, quietGate, stopAll, type Ctx } from './common.js';
import { cpuSeconds, hostBusySeconds } from '../lib/proc.js';

/** Turns per target before anything is measured (first-token.ts explains the count: V8 reaches its steady state). */
const WARMUP_TURNS = 2000;
/** The C=1 model: two deltas, the first at once (first-token.ts uses the same). */
const MODEL = 'mock-deltas-2';
/** The timing check's model: the first delta 20 ms after the request, so the model's share is known. */
const TIMED_TTFT_MS = 20;
const TIMED_MODEL = `mock-deltas-2-ttft-${TIMED_TTFT_MS}`;
/** The bound on what the OpenAI framing may add at C=1, ms of added first-token p50. */
const MAX_EXTRA_P50_MS = 0.2;

type Endpoint = 'native' | 'openai';
const NAMES: Record<Endpoint, string> = { native: 'parley', openai: 'parley-openai' };
const LABEL: Record<Endpoint, string> = { native: 'native SSE', openai: 'chat completions' };

export async function openAICompat(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const samples = smoke ? 10 : 600;
  const timedSamples = smoke ? 5 : 150;
  const config = {
    mock: { ttft_ms: 0, concurrency_1_model: MODEL, timing_model: TIMED_MODEL }, warmup_turns: smoke ? 2 : WARMUP_TURNS,
    concurrency_1: { samples_per_target: samples, mode: 'sequential, targets interleaved per request' },
    timing_check: { samples_per_endpoint: timedSamples, model_ttft_ms: TIMED_TTFT_MS },
  };
  const mock = await startMock(ctx.root, { ttftMs: 0 });
  const [parley, loadgen] = await Promise.all([startParleyServer(ctx.root, parleyOptions(ctx, mock.url)), startLoadGen(ctx.root)]).catch(async (err: unknown) => {
    await stopAll([mock]);
    throw err;
  });
  try {
    const agent = await parley.createAgent(MODEL);
    const timedAgent = await parley.createAgent(TIMED_MODEL);
    const specs = [directTarget(mock, MODEL, true), parleyTarget(parley, agent, true, NAMES.native), parleyOpenAITarget(parley, agent, NAMES.openai)];
    ctx.log('openai-compat: warm-up');
    for (const t of specs) await loadgen.run({ type: 'warmup', target: t, count: config.warmup_turns, concurrency: 8, sse: true, timeoutMs: 120_000 });

    ctx.log(`openai-compat: concurrency 1 (${samples} per target)`);
    const gate = await quietGate(ctx, 'concurrency 1');
    /** CPU seconds of the whole host and of the rig's processes (this one included), and the time, for the `others` row. */
    const hostCpu = () => ({
      at: performance.now(), host: hostBusySeconds(),
      rig: cpuSeconds(mock.pid) + cpuSeconds(parley.pid) + cpuSeconds(loadgen.pid) + (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    });
    const cpu0 = hostCpu();
    const seq = await loadgen.run<SequentialResult>({ type: 'sequential', targets: specs, samples, deadlineMs: smoke ? 15_000 : 180_000, expectFirstMs: 0 }, 300_000);

    const cpu1 = hostCpu();
    if (parley.child.exitCode !== null || parley.child.signalCode !== null) {
      throw new Error(`the Parley server exited during the C=1 window (${parley.child.exitCode ?? parley.child.signalCode}):\n${parley.tail()}`);
    }
    const othersPerS = ((cpu1.host - cpu0.host) - (cpu1.rig - cpu0.rig)) / ((cpu1.at - cpu0.at) / 1000);

    ctx.log(`openai-compat: the server's timing against the client's clock (${timedSamples} per endpoint, first delta after ${TIMED_TTFT_MS} ms)`);
    const timed = await loadgen.run<TimingResult>({
      type: 'timing', targets: [directTarget(mock, TIMED_MODEL, true), parleyTarget(parley, timedAgent, true, NAMES.native), parleyOpenAITarget(parley, timedAgent, NAMES.openai)],
      samples: timedSamples, deadlineMs: smoke ? 15_000 : 120_000, expectFirstMs: TIMED_TTFT_MS,
    }, 300_000);

    const bench = 'openai-compat';
    const direct = seq.perTarget.direct!.ttft;
    const ttft = (e: Endpoint): Summary => seq.perTarget[NAMES[e]]!.ttft;
    const added = (e: Endpoint): Summary => diffSummary(ttft(e), direct);
    const rows: Row[] = [];
    for (const e of ['native', 'openai'] as const) {
      for (const k of ['p50', 'p90', 'p99'] as const) {
        rows.push({ bench, metric: `C=1 TTFT ${k}, ${LABEL[e]}`, unit: 'ms', better: 'lower', parley: ttft(e)[k], baseline: null, direct: direct[k] });
      }
    }
    for (const e of ['native', 'openai'] as const) {
      for (const k of ['p50', 'p99'] as const) rows.push({ bench, metric: `C=1 added TTFT ${k}, ${LABEL[e]}`, unit: 'ms', better: 'lower', parley: added(e)[k], baseline: null, direct: null });
    }
    const extra = added('openai').p50 - added('native').p50;
    rows.push({
      bench, metric: 'C=1 added TTFT p50, chat completions minus native SSE', unit: 'ms', better: 'lower', parley: extra, baseline: null, direct: null,
      target: { text: `chat completions within ${MAX_EXTRA_P50_MS} ms of native SSE (added p50 at C=1)`, pass: Number.isFinite(extra) ? extra <= MAX_EXTRA_P50_MS : null },
    });
    rows.push({ bench, metric: 'C=1 host CPU used outside the measured processes', unit: 'CPU s/s', better: 'none', parley: othersPerS, baseline: null, direct: null });
    for (const e of ['native', 'openai'] as const) {
      rows.push({ bench, metric: `C=1 errors, ${LABEL[e]}`, unit: 'count', better: 'lower', parley: seq.perTarget[NAMES[e]]!.errors.total, baseline: null, direct: seq.perTarget.direct!.errors.total });
    }
    // The mock's real time to its first delta (its timer, loopback, its parse) as the load generator sees it.
    const directTimed = timed.perTarget.direct!.clientTtft;
    rows.push({ bench, metric: `timing (model TTFT ${TIMED_TTFT_MS} ms): client TTFT p50, direct`, unit: 'ms', better: 'none', parley: null, baseline: null, direct: directTimed.p50 });
    for (const e of ['native', 'openai'] as const) {
      const t: TimingTarget = timed.perTarget[NAMES[e]]!;
      const row = (metric: string, s: Summary, k: 'p50' | 'p99' = 'p50'): Row => ({ bench, metric: `${metric} ${k}, ${LABEL[e]}`, unit: 'ms', better: 'none', parley: s[k], baseline: null, direct: null });
      rows.push(
        row(`timing (model TTFT ${TIMED_TTFT_MS} ms): client TTFT`, t.clientTtft),
        row('timing: server first_token_ms', t.serverFirstToken),
        row('timing: server setup_ms', t.serverSetup),
        {
          ...row('timing: model share (upstream_first_byte - setup)', t.model), direct: directTimed.p50,
          // libuv's timers count whole ms from a cached loop time: the mock's 20 ms timer can fire up to 1 ms early.
          target: { text: `at least the mock's ${TIMED_TTFT_MS} ms less its 1 ms timer granularity, in every turn (the model's time is never counted as Parley's)`, pass: t.model.count > 0 ? t.model.min >= TIMED_TTFT_MS - 1 : null },
        },
        row('timing: Parley share (setup + first_token - upstream_first_byte)', t.parley),
        row('timing: client TTFT - model share (all but the model, server figures)', t.clientMinusModel),
        { bench, metric: `timing: client TTFT p50 - direct TTFT p50 (all but the model, client clock alone), ${LABEL[e]}`, unit: 'ms', better: 'none', parley: t.clientTtft.p50 - directTimed.p50, baseline: null, direct: null },
        row('timing: client TTFT - server first_token_ms', t.clientMinusServer),
        row('timing: client TTFT - server first_token_ms', t.clientMinusServer, 'p99'),
        {
          bench, metric: `timing: turns the client saw before the server's first_token_ms, ${LABEL[e]}`, unit: 'count', better: 'lower', parley: t.negative, baseline: null, direct: null,
          target: { text: 'none (the server\'s clock starts after the client\'s)', pass: t.ok > 0 ? t.negative === 0 : null },
        },
        { bench, metric: `timing: turns without a readable timing, ${LABEL[e]}`, unit: 'count', better: 'lower', parley: t.unreadable + t.errors.total, baseline: null, direct: null },
      );
    }
    const notes = [
      ...(gate.quiet ? [] : [`the host was busy when the C=1 window started (other tenants): the interleaving keeps the comparison fair, the absolute figures are high.`]),
      'added TTFT = the endpoint\'s percentile minus the direct-upstream percentile of the same run (per percentile, not per request); both endpoints run the same turn (ChatService.send) on the same agent.',
      'chat completions minus native SSE: the OpenAI chunk framing and request mapping, over the native endpoint\'s own added first token.',
      `timing rows: from the server's own figures (the usage event; parley.timing on the last chunk) against the load generator's clock, ${TIMED_TTFT_MS} ms mock TTFT; those turns decode their bodies, so their client TTFT is not a latency measurement.`,
    ];
    return {
      name: bench, rows, config, results: { concurrency_1: seq.perTarget, added: { native: added('native'), openai: added('openai') }, timing: timed.perTarget },
      charts: (['native', 'openai'] as const).map((e) => ({
        title: `Time to first token, C=1, ${LABEL[e]}`, unit: 'ms',
        groups: (['p50', 'p90', 'p99'] as const).map((k) => ({ label: k, values: { parley: ttft(e)[k], direct: direct[k] } })),
      })),
      notes,
    };
  } finally {
    await stopAll([loadgen, parley, mock]);
  }
}
