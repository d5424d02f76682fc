/**
 * webhooks: what outbound webhooks cost and what they do to streams (API.md "Webhooks").
 * - Throughput: a local receiver (node:http, 204, a process of its own) behind 10 endpoints subscribed to every event;
 *   operator messages (each a `message.created`: 10 deliveries) are posted as fast as `concurrency`
 *   clients allow; deliveries/s = arrivals / (last arrival - first post).
 * - Latency: p50/p99 from the post that caused an event (the change) to the receiver's arrival of
 *   its delivery, in the paced run below.
 * - Streams: the inter-token gap p99 of streamed chats (builtin model, one word every `wordDelayMs`)
 *   alone, and while operator messages are paced at `deliveriesPerS / 10` per second (so
 *   `deliveriesPerS` deliveries/s go out).
 */
import { join } from 'node:path';
import { readyLine, spawnNode, startParleyServer } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { summarize, type Summary } from '../lib/stats.js';
import { fx, sleep, stopAll, parleyOptions, type Ctx } from './common.js';

const ENDPOINTS = 10;

interface Stats { count: number; first: number; last: number; arrivals: Record<string, number[]> }

interface Receiver {
  url: string;
  stats(): Promise<Stats>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts bench/lib/webhook-receiver.ts (compiled) as a process of its own. */
async function startReceiver(root: string): Promise<Receiver> {
  const proc = spawnNode('webhook-receiver', join(root, 'dist/bench/lib/webhook-receiver.js'));
  const { port } = await readyLine<{ port: number }>(proc);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async stats() { return (await (await fetch(`${url}/__stats`)).json()) as Stats; },
    async reset() { await fetch(`${url}/__reset`, { method: 'POST' }); },
    stop: (graceMs?: number) => proc.stop(graceMs),
  };
}

/** Inter-token gaps (ms) of one streamed chat, read from the SSE body as it arrives. */
async function streamGaps(url: string, key: string, agentId: string): Promise<number[]> {
  const res = await fetch(`${url}/v1/agents/${agentId}/chat`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'Tell me everything about the service, in detail please.', stream: true }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`stream: ${res.status}`);
  const gaps: number[] = [];
  let lastToken = 0;
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk as Uint8Array, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (ev.includes('"type":"token"')) {
        const now = performance.now();
        if (lastToken !== 0) gaps.push(now - lastToken);
        lastToken = now;
      }
    }
  }
  return gaps;
}

export async function webhooks(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const config = {
    endpoints: ENDPOINTS, concurrency: smoke ? 8 : 32, throughputChanges: smoke ? 200 : 3000,
    deliveriesPerS: 1000, pacedS: smoke ? 2 : 10, wordDelayMs: 15, streams: smoke ? 2 : 8,
  };
  const rx = await startReceiver(ctx.root);
  const parley = await startParleyServer(ctx.root, parleyOptions(ctx, undefined, {
    PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_BUILTIN_WORD_DELAY_MS: String(config.wordDelayMs), PARLEY_WEBHOOK_MAX_IN_FLIGHT: '16',
  }));
  try {
    const headers = { authorization: `Bearer ${parley.apiKey}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${parley.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${text}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    const agent = await post('/v1/agents', { name: 'bench hooks' });
    const agentId = agent.id as string;
    const conv = (await post(`/v1/agents/${agentId}/chat`, { message: 'hello' })).conversation_id as string;
    for (let i = 0; i < ENDPOINTS; i++) await post('/v1/webhooks', { url: `${rx.url}/e${i}`, events: ['message.created'] });

    /** Posts one operator message; its message id and when the post started (epoch ms). */
    const change = async (): Promise<[string, number]> => {
      const at = performance.now() + performance.timeOrigin;
      const m = await post(`/v1/conversations/${conv}/messages`, { content: 'status update' });
      return [m.id as string, at];
    };
    const waitDelivered = async (expected: number, timeoutMs: number): Promise<Stats> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const st = await rx.stats();
        if (st.count >= expected || Date.now() > deadline) return st;
        await sleep(50);
      }
    };

    // Throughput.
    ctx.log(`webhooks: throughput, ${config.throughputChanges} changes x ${ENDPOINTS} endpoints, ${config.concurrency} clients`);
    await rx.reset();
    const t0 = performance.now() + performance.timeOrigin;
    let left = config.throughputChanges;
    await Promise.all(Array.from({ length: config.concurrency }, async () => {
      while (left-- > 0) await change();
    }));
    const postedS = (performance.now() + performance.timeOrigin - t0) / 1000;
    const done = await waitDelivered(config.throughputChanges * ENDPOINTS, smoke ? 30_000 : 120_000);
    const delivered = done.count;
    ctx.log(`  posts done after ${fx(postedS)} s`);
    const deliveriesPerS = delivered / ((done.last - t0) / 1000);
    ctx.log(`  ${delivered} deliveries, ${fx(deliveriesPerS, 0)}/s`);

    // Streams alone.
    const gapsAlone: number[] = [];
    for (let i = 0; i < config.streams; i++) gapsAlone.push(...await streamGaps(parley.url, parley.apiKey, agentId));

    // Streams while deliveries are paced, and the change -> arrival latency of those deliveries.
    ctx.log(`webhooks: ${config.deliveriesPerS} deliveries/s for ${config.pacedS} s beside streams`);
    await rx.reset();
    const sent: Array<[string, number]> = [];
    let pacing = true;
    const perS = config.deliveriesPerS / ENDPOINTS;
    const pacer = (async () => {
      const start = performance.now();
      let n = 0;
      const inflight: Promise<void>[] = [];
      while (pacing) {
        const due = start + (n * 1000) / perS;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        n++;
        inflight.push(change().then((s) => { sent.push(s); }, () => {}));
      }
      await Promise.all(inflight);
    })();
    const gapsLoaded: number[] = [];
    const until = Date.now() + config.pacedS * 1000;
    do {
      gapsLoaded.push(...await streamGaps(parley.url, parley.apiKey, agentId));
    } while (Date.now() < until);
    pacing = false;
    await pacer;
    // The streams' own messages are delivered too (message.created), so wait for the paced ids themselves.
    let paced = await rx.stats();
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; paced = await rx.stats()) {
      if (sent.every(([id]) => (paced.arrivals[id]?.length ?? 0) >= ENDPOINTS)) break;
      await sleep(100);
    }
    const latencies: number[] = [];
    for (const [id, at] of sent) for (const arrived of paced.arrivals[id] ?? []) latencies.push(arrived - at);
    const lat: Summary = summarize(latencies);
    const alone = summarize(gapsAlone);
    const loaded = summarize(gapsLoaded);
    ctx.log(`  latency p50 ${fx(lat.p50)} ms p99 ${fx(lat.p99)} ms; gap p99 alone ${fx(alone.p99)} ms, loaded ${fx(loaded.p99)} ms`);

    const row = (metric: string, unit: string, better: Row['better'], v: number): Row =>
      ({ bench: 'webhooks', metric, unit, better, parley: Number.isFinite(v) ? v : null, baseline: null, direct: null });
    const rows: Row[] = [
      row(`deliveries/s, ${ENDPOINTS} endpoints`, 'deliveries/s', 'higher', deliveriesPerS),
      row('change -> receiver arrival p50', 'ms', 'lower', lat.p50),
      row('change -> receiver arrival p99', 'ms', 'lower', lat.p99),
      row('stream inter-token gap p99, no deliveries', 'ms', 'lower', alone.p99),
      row(`stream inter-token gap p99, ${config.deliveriesPerS} deliveries/s`, 'ms', 'lower', loaded.p99),
      row('deliveries missing after the paced run', 'count', 'lower', sent.length * ENDPOINTS - latencies.length),
    ];
    return {
      name: 'webhooks', rows, config,
      results: { deliveriesPerS, delivered, latency: lat, gapsAlone: alone, gapsLoaded: loaded, pacedChanges: sent.length },
      charts: [{ title: 'Inter-token gap p99', unit: 'ms', groups: [{ label: 'no deliveries', values: { parley: alone.p99 } }, { label: `${config.deliveriesPerS}/s`, values: { parley: loaded.p99 } }] }],
      notes: [
        `the builtin model emits a word every ${config.wordDelayMs} ms, so a gap near that is the floor.`,
        'latency is measured from the start of the POST that caused the event, so it includes that request and its commit.',
        'no baseline row: the baseline has no webhooks.',
      ],
    };
  } finally {
    await stopAll([parley, rx]);
  }
}
