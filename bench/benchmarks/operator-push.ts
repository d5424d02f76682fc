/**
 * operator-push: an operator's message (`POST /v1/conversations/{id}/messages`) reaching the visitors'
 * listening sockets (the listen-only `WS /v1/public/agents/{public_key}/conversations/{id}/ws`, authenticated
 * with the visitor token in its first frame). Measured in the load generator, one clock for both ends:
 * the time from the POST being issued to its `token` frame (role operator, the whole text) arriving on
 * each listener, p50/p99 over several pushes.
 * - one conversation, N listeners (a conversation watched from N tabs/devices; the fan-out of one push);
 * - N conversations, one listener each: pushes one at a time to one conversation after another (the
 *   latency of a push while N sockets are held), then bursts of N operator messages at once (one per
 *   conversation: every operator answering at the same moment).
 * N = 1,000 (smoke 50). The first push of each scenario is the barrier (every listener live and joined)
 * and is not counted.
 */
import { startLoadGen } from '../lib/loadgen-client.js';
import { CpuMeter, openFilesLimit } from '../lib/proc.js';
import { startMock, startParleyServer } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { Summary } from '../lib/stats.js';
import { checkOpenFiles } from '../lib/ws-frames.js';
import type { PushListenResult, PushRunResult } from '../lib/ws-load.js';
import { flagHostBusy, nn, parleyOptions, percentileRows, quietGate, sleep, stopAll, type Ctx } from './common.js';

/** A public conversation and its visitor token. */
interface Visitor { conversationId: string; token: string }

/** One measured scenario: its pushes and the server's CPU over them. */
interface Scenario {
  listen: PushListenResult;
  barrier: PushRunResult;
  runs: { name: string; result: PushRunResult; serverCpuS: number; othersCpuPerS: number }[];
  stillOpen: number;
}

export async function operatorPush(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const n = smoke ? 50 : 1000;
  const pushes = smoke ? 5 : 30;
  const sequential = smoke ? 20 : 200;
  const bursts = smoke ? 1 : 3;
  const pauseMs = smoke ? 50 : 200;
  // Every listener is a distinct visitor in real life; here they all come from 127.0.0.1 (and, on one
  // conversation, share one visitor token), so the per-address and per-token rate limits are lifted.
  const env = { PARLEY_PUBLIC_REQUESTS_PER_MINUTE: '1000000', PARLEY_PUBLIC_VISITOR_REQUESTS_PER_MINUTE: '1000000' };
  const config = {
    listeners: n, pushes_one_conversation: pushes, pushes_sequential: sequential, bursts, pause_ms: pauseMs, parley_env: env,
    socket: 'WS /v1/public/agents/{public_key}/conversations/{conversation_id}/ws, first frame {"type":"auth","visitor_token"}',
    push: 'POST /v1/conversations/{id}/messages {"content":"bench push <n>"} with the API key',
    measured: 'POST issued -> the operator token frame on each listener (load generator clock)',
  };
  const mock = await startMock(ctx.root, { ttftMs: 0 });
  const started = await Promise.allSettled([startParleyServer(ctx.root, parleyOptions(ctx, mock.url, env)), startLoadGen(ctx.root)] as const);
  const parley = started[0].status === 'fulfilled' ? started[0].value : undefined;
  const loadgen = started[1].status === 'fulfilled' ? started[1].value : undefined;
  if (!parley || !loadgen) {
    await stopAll([loadgen, parley, mock]);
    throw started.find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason;
  }
  try {
    checkOpenFiles(`Parley (pid ${parley.pid})`, n, openFilesLimit(parley.pid));
    checkOpenFiles(`the load generator (pid ${loadgen.pid})`, n, openFilesLimit(loadgen.pid));
    const agent = await parley.createAgent('bench');
    const pub = await fetch(`${parley.url}/v1/agents/${agent}/publish`, { method: 'POST', headers: { authorization: `Bearer ${parley.apiKey}` } });
    const publicKey = ((await pub.json()) as { public_key?: string }).public_key;
    if (pub.status !== 200 || !publicKey) throw new Error(`publish: HTTP ${pub.status}`);
    ctx.log(`operator-push: ${n} public conversations`);
    const visitors = await createConversations(parley.url, publicKey, n);
    const listenPath = (v: Visitor) => `/v1/public/agents/${publicKey}/conversations/${v.conversationId}/ws`;
    const authFrame = (v: Visitor) => JSON.stringify({ type: 'auth', visitor_token: v.token });

    const scenario = async (label: string, listeners: Visitor[], plan: { name: string; rounds: string[][] }[], barrier: string[][]): Promise<Scenario> => {
      ctx.log(`operator-push: ${label}: ${listeners.length} listening sockets`);
      const listen = await loadgen.run<PushListenResult>({
        type: 'push-listen', port: parley.port, concurrency: 64, timeoutMs: 120_000,
        listeners: listeners.map((v) => ({ conversationId: v.conversationId, path: listenPath(v), first: authFrame(v) })),
      });
      const b = await loadgen.run<PushRunResult>({ type: 'push-run', port: parley.port, apiKey: parley.apiKey, rounds: barrier, pauseMs: 0, timeoutMs: 30_000 });
      ctx.log(`  ${listen.opened}/${listeners.length} opened, barrier push reached ${b.arrived}/${b.expected}${listen.errors.total > 0 ? `, errors ${JSON.stringify(listen.errors.byCode)}` : ''}`);
      const runs: Scenario['runs'] = [];
      for (const p of plan) {
        await quietGate(ctx, `${label} ${p.name}`);
        const meter = new CpuMeter({ server: parley.pid, loadgen: loadgen.pid }).start();
        const result = await loadgen.run<PushRunResult>({ type: 'push-run', port: parley.port, apiKey: parley.apiKey, rounds: p.rounds, pauseMs, timeoutMs: 30_000 });
        const cpu = meter.stop();
        runs.push({ name: p.name, result, serverCpuS: cpu.cpuS.server ?? Number.NaN, othersCpuPerS: (cpu.cpuS.others ?? Number.NaN) / cpu.wallS });
        ctx.log(`  ${p.name}: ${result.pushes} pushes, ${result.arrived}/${result.expected} frames, per listener p50 ${result.perSocket.p50.toFixed(2)} p99 ${result.perSocket.p99.toFixed(2)} ms, last listener p50 ${result.lastPerRound.p50.toFixed(2)} ms, POST p50 ${result.post.p50.toFixed(2)} ms, server CPU ${(cpu.cpuS.server ?? 0).toFixed(2)} s${result.errors.total > 0 ? `, errors ${JSON.stringify(result.errors.byCode)} ${result.errors.sample}` : ''}`);
      }
      const check = await loadgen.run<{ open: number; total: number }>({ type: 'push-check' });
      await loadgen.run({ type: 'push-close' });
      await sleep(smoke ? 100 : 1000);
      return { listen, barrier: b, runs, stillOpen: check.open };
    };

    const first = visitors[0]!;
    const one = await scenario('one conversation', Array.from({ length: n }, () => first), [
      { name: 'pushes', rounds: Array.from({ length: pushes }, () => [first.conversationId]) },
    ], [[first.conversationId]]);
    const ids = visitors.map((v) => v.conversationId);
    const many = await scenario(`${n} conversations`, visitors, [
      { name: 'one at a time', rounds: Array.from({ length: sequential }, (_, i) => [ids[i % ids.length]!]) },
      { name: 'bursts', rounds: Array.from({ length: bursts }, () => ids) },
    ], [ids]);

    const rows: Row[] = [];
    const only = (s: Summary | undefined) => ({ parley: s });
    const add = (scn: Scenario, run: string, label: string, pick: (r: PushRunResult) => Summary, keys: ('p50' | 'p90' | 'p99' | 'max')[] = ['p50', 'p99', 'max']) => {
      const r = scn.runs.find((x) => x.name === run);
      for (const row of percentileRows('operator-push', label, 'ms', only(r ? pick(r.result) : undefined))) {
        if (keys.some((k) => row.metric.endsWith(` ${k}`))) rows.push(flagHostBusy(row, { parley: r?.othersCpuPerS }));
      }
    };
    const count = (metric: string, unit: string, better: Row['better'], v: number | undefined): void => {
      rows.push({ bench: 'operator-push', metric, unit, better, parley: nn(v), baseline: null, direct: null });
    };
    const oneRun = one.runs[0];
    add(one, 'pushes', `1 conversation, ${n} listeners: POST -> frame on a listener`, (r) => r.perSocket, ['p50', 'p90', 'p99', 'max']);
    add(one, 'pushes', `1 conversation, ${n} listeners: POST -> frame on the last listener`, (r) => r.lastPerRound);
    add(one, 'pushes', '1 conversation: POST answered (201)', (r) => r.post, ['p50', 'p99']);
    count(`1 conversation: server CPU per push to ${n} listeners`, 'ms', 'lower', oneRun ? (oneRun.serverCpuS / oneRun.result.pushes) * 1000 : undefined);
    count('1 conversation: listeners live (got the barrier push)', 'count', 'higher', one.barrier.arrived);
    count('1 conversation: frames missed (measured pushes)', 'count', 'lower', oneRun?.result.missed);
    add(many, 'one at a time', `${n} conversations, one listener each: POST -> frame (one push at a time)`, (r) => r.perSocket, ['p50', 'p90', 'p99', 'max']);
    add(many, 'bursts', `${n} conversations: burst of ${n} pushes at once: POST -> frame`, (r) => r.perSocket);
    add(many, 'bursts', `${n} conversations: burst of ${n} pushes: start -> the last frame`, (r) => r.lastPerRound, ['p50', 'max']);
    const seqRun = many.runs.find((x) => x.name === 'one at a time');
    count(`${n} conversations: server CPU per push (one at a time)`, 'ms', 'lower', seqRun ? (seqRun.serverCpuS / seqRun.result.pushes) * 1000 : undefined);
    count(`${n} conversations: listeners live (got the barrier push)`, 'count', 'higher', many.barrier.arrived);
    count(`${n} conversations: frames missed (measured pushes)`, 'count', 'lower', many.runs.reduce((a, r) => a + r.result.missed, 0));
    count('1 conversation: listeners still open at the end', 'count', 'higher', one.stillOpen);
    count(`${n} conversations: listeners still open at the end`, 'count', 'higher', many.stillOpen);
    count('POST failures (all scenarios)', 'count', 'lower', [one, many].reduce((a, s) => a + s.barrier.errors.total + s.runs.reduce((b, r) => b + r.result.errors.total, 0), 0));

    const notes = [
      `listeners: the listen-only public socket, authenticated by the visitor token in its first frame; on one conversation all ${n} share its token. The per-address and per-visitor rate limits are lifted (${JSON.stringify(env)}): every socket comes from 127.0.0.1.`,
      'latency: from the POST being issued (load generator; to its pool of 64 keep-alive connections, so a burst includes the wait for a free one) to the operator token frame on each listener, read by the same process: one clock. The load generator reads every listener of a push in one event loop, so the last listener\'s time includes the client reading the frames before it.',
      'each push is stored (SQLite, PARLEY_SQLITE_SYNCHRONOUS default) before it is pushed; the POST answer and the frames race.',
      `the conversations were created with ${n} public one-shot chats (mock upstream, zero latency) before the sockets opened; the conversations are not handed off (an operator message is allowed in any status but closed).`,
      ...[one, many].flatMap((s, i) => (s.listen.errors.total > 0 ? [`${i === 0 ? 'one conversation' : 'many conversations'}: socket errors ${JSON.stringify(s.listen.errors.byCode)} ${s.listen.errors.sample}`] : [])),
      ...[one, many].flatMap((s, i) => s.runs.filter((r) => r.result.errors.total > 0).map((r) => `${i === 0 ? 'one conversation' : 'many conversations'} ${r.name}: POST errors ${JSON.stringify(r.result.errors.byCode)} ${r.result.errors.sample}`)),
    ];
    const panel = (title: string, s: Summary | undefined) => ({ title, unit: 'ms', groups: (['p50', 'p90', 'p99', 'max'] as const).map((k) => ({ label: k, values: { parley: s ? nn(s[k]) : null } })) });
    return {
      name: 'operator-push', rows, config, notes,
      results: { one_conversation: one, many_conversations: many },
      charts: [
        panel(`1 conversation, ${n} listeners: POST -> frame on a listener`, oneRun?.result.perSocket),
        panel(`${n} conversations: POST -> frame, one push at a time`, seqRun?.result.perSocket),
        panel(`${n} conversations: burst of ${n} pushes: POST -> frame`, many.runs.find((x) => x.name === 'bursts')?.result.perSocket),
      ],
    };
  } finally {
    await loadgen.run({ type: 'push-close' }).catch(() => undefined);
    await stopAll([loadgen, parley, mock]);
  }
}

/**
 * Creates `n` public conversations with one-shot chats (16 at a time; a 503 or 429 is retried after
 * 200 ms, up to 50 times); their ids and visitor tokens. Throws on any other failure.
 */
async function createConversations(baseUrl: string, publicKey: string, n: number): Promise<Visitor[]> {
  const out: Visitor[] = [];
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      for (let attempt = 0; ; attempt++) {
        const r = await fetch(`${baseUrl}/v1/public/agents/${publicKey}/chat`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hello' }),
        });
        const text = await r.text();
        if ((r.status === 503 || r.status === 429) && attempt < 50) {
          await sleep(200);
          continue;
        }
        if (r.status !== 200) throw new Error(`public chat: HTTP ${r.status} ${text.slice(0, 300)}`);
        const body = JSON.parse(text) as { conversation_id?: string; visitor_token?: string };
        if (!body.conversation_id || !body.visitor_token) throw new Error(`public chat: no conversation_id/visitor_token in ${text.slice(0, 300)}`);
        out.push({ conversationId: body.conversation_id, token: body.visitor_token });
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(16, n) }, worker));
  return out;
}
