/**
 * retrieval: what a knowledge search costs the conversations beside it. The Node.js docs corpus
 * (../shared/corpus/nodejs-api) is ingested three times (about 9,000 chunks in one FTS5 index), then for
 * a measured window two loads run at once on the same server:
 * - 50 paced plain streams (an agent without knowledge on the mock upstream: 64 deltas, 20 ms apart),
 *   back to back, whose inter-token gaps beyond the mock's 20 ms are recorded;
 * - knowledge turns at 20 per second (an agent with the corpus's knowledge base on the mock, 4 deltas):
 *   each runs a bm25 search (a few ms over this index) before its model call; their time to first token
 *   is recorded.
 * The same run is made with searches on the main thread's connection (`PARLEY_SQLITE_READER=main`, what
 * Parley did before the reader thread) and in the reader thread (`worker`, the default), on fresh
 * servers, side by side. `--smoke`: the corpus once and a 3-second window.
 */
import { percentile, Samples, summarize, type Summary } from '../lib/stats.js';
import { CpuMeter } from '../lib/proc.js';
import { buildTarget, ConnPool } from '../lib/raw-client.js';
import { startMock, startParleyServer } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { parleyOptions, parleyTarget, sleep, stopAll, nodeDocsCorpus, type Ctx } from './common.js';
import { corpusDocuments, uploadDocuments, waitProcessed } from './ingest.js';

/** The mock's pacing: one delta per this many ms. */
const INTERVAL_MS = 20;
/** Paced plain streams kept running during the window. */
const PLAIN_STREAMS = 50;
/** Knowledge turns per second (open loop). */
const KB_TURNS_PER_S = 20;
/** Questions the knowledge turns cycle through (each its own request bytes). */
const QUESTIONS = [
  'How do I read a file line by line with streams?',
  'What does the drain event on a writable stream mean?',
  'How can I spawn a child process and capture its output?',
  'How do I create an HTTP server that handles JSON requests?',
  'What is the difference between setImmediate and process.nextTick?',
];

type Reader = 'main' | 'worker';

interface ReaderRun {
  reader: Reader;
  chunks: number;
  /** Inter-token gaps of the plain streams beyond the mock's 20 ms, ms. */
  gaps: Summary;
  /** Their 99.9th percentile, ms. */
  gapP999: number;
  /** Time to first token of the knowledge turns, ms. */
  kbTtft: Summary;
  kbTurns: number;
  kbErrors: number;
  serverCpuS: number;
  windowS: number;
}

/** Chunks of every document of knowledge base `kbId`, paging the document list (API.md "Lists"). */
async function chunkCount(url: string, apiKey: string, kbId: string): Promise<number> {
  let total = 0;
  let after = '';
  for (;;) {
    const res = await fetch(`${url}/v1/knowledge-bases/${kbId}/documents?limit=100${after}`, { headers: { authorization: `Bearer ${apiKey}` } });
    const page = (await res.json()) as { data: Array<{ id: string; chunk_count: number }>; has_more: boolean };
    for (const d of page.data) total += d.chunk_count;
    if (!page.has_more || page.data.length === 0) return total;
    after = `&after=${page.data[page.data.length - 1]!.id}`;
  }
}

async function runOnce(ctx: Ctx, reader: Reader, mockUrl: string, docs: ReturnType<typeof corpusDocuments>, copies: number, windowS: number): Promise<ReaderRun> {
  const parley = await startParleyServer(ctx.root, parleyOptions(ctx, mockUrl, { PARLEY_SQLITE_READER: reader, PARLEY_INGEST_WORKERS: '2' }));
  const pools: ConnPool[] = [];
  try {
    const kb = parley.knowledgeBaseId;
    for (let i = 0; i < copies; i++) {
      const ids = await uploadDocuments(parley.url, parley.apiKey, kb, docs);
      const { failed, pending } = await waitProcessed(parley.url, parley.apiKey, kb, ids, 300_000);
      if (failed > 0 || pending.size > 0) throw new Error(`retrieval: ${failed} documents failed and ${pending.size} not ready`);
    }
    const chunks = await chunkCount(parley.url, parley.apiKey, kb);
    const createAgent = async (model: string, kbIds: string[]): Promise<string> => {
      const res = await fetch(`${parley.url}/v1/agents`, {
        method: 'POST', headers: { authorization: `Bearer ${parley.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'retrieval bench', model: { provider: 'openai', name: model }, knowledge_base_ids: kbIds, tools: [] }),
      });
      const id = ((await res.json()) as { id?: string }).id;
      if (res.status !== 201 || !id) throw new Error(`retrieval: create agent ${res.status}`);
      return id;
    };
    const plainPool = new ConnPool(buildTarget(parleyTarget(parley, await createAgent('bench', []), true)));
    const kbAgent = await createAgent('mock-deltas-4', [kb]);
    const kbPools = QUESTIONS.map((q) => new ConnPool(buildTarget({ ...parleyTarget(parley, kbAgent, true), body: JSON.stringify({ message: q, stream: true }) })));
    pools.push(plainPool, ...kbPools);
    await plainPool.prewarm(PLAIN_STREAMS + 10);

    let gaps = new Samples(1 << 16);
    let ttft: number[] = [];
    let kbErrors = 0;
    let stop = false;
    const plain = Array.from({ length: PLAIN_STREAMS }, async () => {
      while (!stop) {
        const c = plainPool.acquire();
        await c.ready;
        const ex = c.send({ sse: true, gaps, intervalMs: INTERVAL_MS });
        await ex.done;
        plainPool.release(c, ex);
      }
    });
    const inFlight: Promise<void>[] = [];
    const kbLoop = (async () => {
      const t0 = performance.now();
      for (let i = 0; !stop; i++) {
        const due = t0 + (i * 1000) / KB_TURNS_PER_S;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const pool = kbPools[i % kbPools.length]!;
        const c = pool.acquire();
        await c.ready;
        const ex = c.send({ sse: true, t0: due });
        inFlight.push(ex.done.then((r) => {
          pool.release(c, ex);
          if (r.ok) ttft.push(r.ttftMs);
          else kbErrors++;
        }));
      }
    })();
    // Warm-up, then the measured window.
    await sleep(ctx.smoke ? 1000 : 3000);
    gaps = new Samples(1 << 16);
    ttft = [];
    kbErrors = 0;
    const meter = new CpuMeter({ server: parley.pid }).start();
    await sleep(windowS * 1000);
    const cpu = meter.stop();
    const measuredGaps = gaps;
    const measuredTtft = ttft;
    const errors = kbErrors;
    stop = true;
    await Promise.all([...plain, kbLoop, ...inFlight]);
    const sortedGaps = Float64Array.from(measuredGaps.values()).sort();
    return {
      reader, chunks, gaps: summarize(sortedGaps), gapP999: percentile(sortedGaps, 99.9), kbTtft: summarize(measuredTtft), kbTurns: measuredTtft.length, kbErrors: errors,
      serverCpuS: cpu.cpuS.server ?? Number.NaN, windowS,
    };
  } finally {
    for (const p of pools) p.closeAll();
    await stopAll([parley]);
  }
}

export async function retrieval(ctx: Ctx): Promise<BenchOutcome> {
  const { corpus, skipped } = nodeDocsCorpus(ctx, 'retrieval');
  if (skipped) return skipped;
  const docs = corpusDocuments(corpus);
  const copies = ctx.smoke ? 1 : 3;
  const windowS = ctx.smoke ? 3 : 15;
  const config = { corpus, copies, window_s: windowS, plain_streams: PLAIN_STREAMS, plain_stream: `64 deltas x ${INTERVAL_MS} ms (mock model bench)`, kb_turns_per_s: KB_TURNS_PER_S, kb_turn_model: 'mock-deltas-4', questions: QUESTIONS };
  const mock = await startMock(ctx.root, { ttftMs: 0, deltas: 64, intervalMs: INTERVAL_MS });
  const runs: ReaderRun[] = [];
  try {
    for (const reader of ['main', 'worker'] as const) {
      ctx.log(`retrieval: searches on ${reader === 'main' ? 'the main thread' : 'the reader thread'}: corpus x${copies}, ${windowS} s window`);
      const run = await runOnce(ctx, reader, mock.url, docs, copies, windowS);
      ctx.log(`  ${run.chunks} chunks; plain-stream added gap p99 ${run.gaps.p99.toFixed(2)} ms; knowledge-turn TTFT p50 ${run.kbTtft.p50.toFixed(2)} ms`);
      runs.push(run);
    }
  } finally {
    await stopAll([mock]);
  }
  const label = (r: ReaderRun) => (r.reader === 'main' ? 'searches on the main thread' : 'searches in the reader thread');
  const row = (metric: string, unit: string, better: Row['better'], value: number): Row => ({ bench: 'retrieval', metric, unit, better, parley: value, baseline: null, direct: null });
  const rows: Row[] = runs.flatMap((r) => [
    row(`plain-stream added gap p50, ${label(r)}`, 'ms', 'lower', r.gaps.p50),
    row(`plain-stream added gap p99, ${label(r)}`, 'ms', 'lower', r.gaps.p99),
    row(`plain-stream added gap p99.9, ${label(r)}`, 'ms', 'lower', r.gapP999),
    row(`plain-stream added gap max, ${label(r)}`, 'ms', 'lower', r.gaps.max),
    row(`knowledge-turn TTFT p50, ${label(r)}`, 'ms', 'lower', r.kbTtft.p50),
    row(`knowledge-turn TTFT p99, ${label(r)}`, 'ms', 'lower', r.kbTtft.p99),
    row(`knowledge turns answered, ${label(r)}`, 'count', 'none', r.kbTurns),
    row(`knowledge turns failed, ${label(r)}`, 'count', 'lower', r.kbErrors),
    row(`server CPU per second, ${label(r)}`, 's/s', 'lower', r.serverCpuS / r.windowS),
  ]);
  const [main, worker] = runs;
  if (main && worker) rows.push(row('plain-stream added gap p99, reader thread / main thread', 'x', 'lower', worker.gaps.p99 / main.gaps.p99));
  return {
    name: 'retrieval', rows, config, results: { runs },
    charts: [
      { title: 'Plain-stream added gap beside retrieval turns', unit: 'ms', groups: (['p50', 'p99'] as const).flatMap((k) => runs.map((r) => ({ label: `${k}, ${r.reader}`, values: { parley: r.gaps[k] } }))) },
      { title: 'Knowledge-turn time to first token', unit: 'ms', groups: (['p50', 'p99'] as const).flatMap((k) => runs.map((r) => ({ label: `${k}, ${r.reader}`, values: { parley: r.kbTtft[k] } }))) },
    ],
    notes: [
      `no baseline or direct row: the comparison is the same server with its searches on the main thread (PARLEY_SQLITE_READER=main) and in the reader thread (the default).`,
      `added gap: an inter-token gap of a plain stream minus the mock's ${INTERVAL_MS} ms.`,
    ],
  };
}
