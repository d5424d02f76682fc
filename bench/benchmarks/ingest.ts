/**
 * ingest: MB/s and documents/s ingesting the Node.js API docs corpus (../shared/corpus/nodejs-api)
 * with 1 and 2 ingestion workers as configured by default (they start cold, with the first document), and
 * with 2 workers warmed up at start (PARLEY_INGEST_WARM_UP=6: they start with the server and parse a
 * built-in sample first; the bench waits for /metrics to count them warm). Three times per server (pass 1 the
 * first corpus; passes 2 and 3 the same corpus into a second and a third knowledge base, the workers then
 * warm from the corpus itself, and by pass 3 done compiling): every .md uploaded as raw text/markdown with ?title=, then the
 * document list polled until every one is ready or failed. Wall time runs from the first upload to the
 * last document seen ready.
 *
 * Chat while ingesting: on the same server, builtin-model streams run back to back, four at a time (word
 * delay 10 ms), for a few seconds with no ingestion (idle), then during the ingestion; the p99 of the gaps between
 * consecutive `token` events of a stream is compared (target: during ingestion within 2x of idle). The streams'
 * agent answers from the knowledge base pass 1 fills, so they are measured idle twice: before pass 1 (nothing
 * to retrieve yet: pass 1's reference) and after it (retrieval and composed answers, as during passes 2 and 3:
 * their reference).
 *
 * The floor column: bench/floor/ingest-parse.ts, the same corpus parsed and chunked by the ingestion worker's
 * own function in bare worker threads (1 and 2, a fresh process each, threads created when pass 1's clock
 * starts), with no HTTP, no store and no chat beside it: what any ingestion on this parse code can reach here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createParser } from 'eventsource-parser';
import { summarize, type Summary } from '../lib/stats.js';
import { join } from 'node:path';
import { CpuMeter } from '../lib/proc.js';
import { parsePromText } from '../lib/prom-text.js';
import { readyLine, spawnNode, startParleyServer } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { WARM_UP_ROUNDS } from '../../src/knowledge/warm-up.js';
import { sleep, stopAll, parleyOptions, nodeDocsCorpus, type Ctx } from './common.js';

interface IngestRun {
  workers: number;
  /** Whether the server warmed its workers up at start (PARLEY_INGEST_WARM_UP), or started them cold with the first document (the default). */
  warmUp: boolean;
  /**
   * 1: the first corpus on a fresh server (workers cold, or warmed up on the built-in sample); 2: the same
   * corpus again, workers warm from it;
   * 3: once more, the steady state (V8 still compiles the parse code during pass 2: its background
   * threads used 50-90 ms of CPU each in pass 2 against 10-50 ms in later passes, measured here).
   */
  pass: Pass;
  documents: number;
  bytes: number;
  wallS: number;
  uploadS: number;
  mbPerS: number;
  docsPerS: number;
  failed: number;
  notReady: number;
  serverCpuS: number;
  /** Inter-token gaps of builtin streams, ms: with no ingestion, and during this ingestion. */
  gapsIdle: Summary;
  gapsIngest: Summary;
  /** Request to first token of those streams (builtin model: retrieval, then its first word), ms. */
  firstTokenIdle: Summary;
  firstTokenIngest: Summary;
}

/** Word delay of the builtin model in the gap probe, ms: the idle gap is about this. */
const WORD_DELAY_MS = 10;

/**
 * Chat streams the gap probe keeps running at once. An ingestion pass lasts 0.4 to 1 s, so one stream
 * gives 40 to 100 gaps and their "p99" is the worst one or two of them; four streams give four times the
 * samples (and the event loop a little more to do), so the p99 is a p99.
 */
const PROBE_STREAMS = 4;

/** {@link PROBE_STREAMS} probes of {@link streamGaps} at once; their gaps and first tokens together. */
async function probeGaps(url: string, apiKey: string, agentId: string, stop: () => boolean): Promise<{ gaps: number[]; firstTokens: number[] }> {
  const runs = await Promise.all(Array.from({ length: PROBE_STREAMS }, () => streamGaps(url, apiKey, agentId, stop)));
  return { gaps: runs.flatMap((r) => r.gaps), firstTokens: runs.flatMap((r) => r.firstTokens) };
}

/** The Node.js docs corpus: every .md file of `corpus`, title without `.md`, body as bytes. */
export function corpusDocuments(corpus: string): Array<{ title: string; body: Buffer }> {
  return readdirSync(corpus).filter((f) => f.endsWith('.md')).sort()
    .map((f) => ({ title: f.replace(/\.md$/, ''), body: readFileSync(join(corpus, f)) }));
}

/** Uploads `docs` to knowledge base `kbId` as text/markdown, 4 at a time; resolves the document ids (each answered 202). */
export async function uploadDocuments(url: string, apiKey: string, kbId: string, docs: Array<{ title: string; body: Buffer }>): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const uploader = async () => {
    while (next < docs.length) {
      const d = docs[next++]!;
      const res = await fetch(`${url}/v1/knowledge-bases/${kbId}/documents?title=${encodeURIComponent(d.title)}`, {
        method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'text/markdown' }, body: d.body,
      });
      const body = (await res.json()) as { id?: string };
      if (res.status !== 202 || !body.id) throw new Error(`upload ${d.title}: ${res.status} ${JSON.stringify(body)}`);
      ids.push(body.id);
    }
  };
  await Promise.all(Array.from({ length: 4 }, uploader));
  return ids;
}

/**
 * Polls the document list of `kbId` every 25 ms until each of `ids` is ready or failed, or until
 * `timeoutMs` passed; resolves how many failed and the ids still processing. One list request per poll
 * (not one per document), so the polling itself costs the server little: it reads the newest 100
 * documents, so `ids` must be the latest uploads and at most 100 (throws RangeError otherwise).
 */
export async function waitProcessed(url: string, apiKey: string, kbId: string, ids: string[], timeoutMs: number): Promise<{ failed: number; pending: Set<string> }> {
  if (ids.length > 100) throw new RangeError(`waitProcessed sees the newest 100 documents; got ${ids.length} to wait for`);
  const pending = new Set(ids);
  let failed = 0;
  const deadline = Date.now() + timeoutMs;
  while (pending.size > 0 && Date.now() < deadline) {
    const res = await fetch(`${url}/v1/knowledge-bases/${kbId}/documents?limit=100`, { headers: { authorization: `Bearer ${apiKey}` } });
    const list = (await res.json()) as { data?: Array<{ id: string; status: string }> };
    for (const d of list.data ?? []) {
      if (!pending.has(d.id)) continue;
      if (d.status === 'ready') pending.delete(d.id);
      else if (d.status === 'failed') { failed++; pending.delete(d.id); }
    }
    if (pending.size > 0) await sleep(25);
  }
  return { failed, pending };
}

/** Creates a knowledge base; resolves its id. */
export async function createKnowledgeBase(url: string, apiKey: string, name: string): Promise<string> {
  const res = await fetch(`${url}/v1/knowledge-bases`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name }),
  });
  const body = (await res.json()) as { id?: string };
  if (res.status !== 201 || !body.id) throw new Error(`create knowledge base: ${res.status} ${JSON.stringify(body)}`);
  return body.id;
}

/**
 * Runs builtin-model chat streams one after another until `stop()` resolves true, and collects the gaps
 * between consecutive `token` events of the same stream, ms.
 */
async function streamGaps(url: string, apiKey: string, agentId: string, stop: () => boolean): Promise<{ gaps: number[]; firstTokens: number[] }> {
  const gaps: number[] = [];
  const firstTokens: number[] = [];
  while (!stop()) {
    const sent = performance.now();
    const res = await fetch(`${url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'How do I upload a document to a knowledge base and how is it chunked?', stream: true }),
    });
    if (res.status !== 200 || !res.body) throw new Error(`gap probe chat: ${res.status} ${await res.text()}`);
    let last = Number.NaN;
    const parser = createParser({
      onEvent: (ev) => {
        const type = (JSON.parse(ev.data) as { type?: string }).type;
        if (type !== 'token') return;
        const now = performance.now();
        if (Number.isFinite(last)) gaps.push(now - last);
        else firstTokens.push(now - sent);
        last = now;
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  }
  return { gaps, firstTokens };
}

/** An ingestion pass of one server: see {@link IngestRun.pass}. */
type Pass = 1 | 2 | 3;

/**
 * Row name prefix of a run: `2 worker(s)`, then `, warm-up at start` for a server started with
 * PARLEY_INGEST_WARM_UP, then `, warm` for pass 2 and `, steady` for pass 3 (the default setup's rows keep
 * the names of earlier runs).
 */
function runLabel(r: IngestRun): string {
  return `${r.workers} worker(s)${r.warmUp ? ', warm-up at start' : ''}${r.pass === 1 ? '' : r.pass === 2 ? ', warm' : ', steady'}`;
}

/** A run for chart labels: `2 workers + warm-up, first corpus` (short: the chart writes them vertically). */
function chartLabel(r: IngestRun): string {
  return `${r.workers} worker${r.workers === 1 ? '' : 's'}${r.warmUp ? ' + warm-up' : ''}, ${r.pass === 1 ? 'first corpus' : r.pass === 2 ? 'second' : 'third'}`;
}

/** One pass of the ingest floor (bench/floor/ingest-parse.ts): wall and process CPU, ms. */
interface FloorPass { pass: number; wallMs: number; cpuMs: number; chunks: number; failed: number }

/** Runs the ingest floor with `workers` threads for 3 passes in a fresh process; resolves its passes. Throws if it fails. */
async function runFloor(root: string, corpus: string, workers: number): Promise<FloorPass[]> {
  const proc = spawnNode('ingest-floor', join(root, 'dist/bench/floor/ingest-parse.js'), { args: ['--corpus', corpus, '--workers', String(workers), '--passes', '3'] });
  try {
    const out = await readyLine<{ passes: FloorPass[] }>(proc, 120_000);
    for (const p of out.passes) if (p.failed > 0) throw new Error(`ingest floor: ${p.failed} document(s) failed in pass ${p.pass}`);
    return out.passes;
  } finally {
    await proc.stop();
  }
}

/** Setups measured, each on a fresh server: workers, and whether they warm up at start (off by default). */
const SETUPS: ReadonlyArray<{ workers: number; warmUp: boolean }> = [
  { workers: 1, warmUp: false }, { workers: 2, warmUp: false }, { workers: 2, warmUp: true },
];

/** Polls /metrics until `parley_ingest_workers{state="warm"}` reaches `threads`; resolves the wait, ms. Throws after `timeoutMs`. */
async function waitWarm(url: string, threads: number, timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const warm = parsePromText(await (await fetch(`${url}/metrics`)).text()).get('parley_ingest_workers{state="warm"}');
    if (warm !== undefined && warm >= threads) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`ingestion workers not warm after ${timeoutMs} ms: ${warm === undefined ? 'no parley_ingest_workers gauge' : `${warm} of ${threads} warm`}`);
    await sleep(20);
  }
}

export async function ingest(ctx: Ctx): Promise<BenchOutcome> {
  const { corpus, skipped } = nodeDocsCorpus(ctx, 'ingest');
  if (skipped) return skipped;
  const docs = corpusDocuments(corpus);
  const bytes = docs.reduce((a, d) => a + d.body.length, 0);
  const idleS = ctx.smoke ? 1.5 : 4;
  const config = { corpus, documents: docs.length, bytes, setups: SETUPS, warm_up_rounds: WARM_UP_ROUNDS, upload_concurrency: 4, poll_every_ms: 25, gap_probe_word_delay_ms: WORD_DELAY_MS, gap_probe_streams: PROBE_STREAMS, gap_probe_idle_s: idleS };
  const runs: IngestRun[] = [];
  // The floor first, on a quiet machine: 1 and 2 bare threads, 3 passes each.
  const floors = new Map<number, FloorPass[]>();
  for (const workers of [1, 2]) {
    const passes = await runFloor(ctx.root, corpus, workers);
    floors.set(workers, passes);
    ctx.log(`ingest floor, ${workers} bare thread(s): ${passes.map((p) => `pass ${p.pass} ${(p.wallMs / 1000).toFixed(2)} s = ${(bytes / 1e3 / p.wallMs).toFixed(2)} MB/s (CPU ${(p.cpuMs / 1000).toFixed(2)} s)`).join(', ')}`);
  }
  // The floor of a run: the same thread count and pass; none for warm-up rows (the floor's threads do not warm up).
  const floorOf = (r: IngestRun): FloorPass | undefined => (r.warmUp ? undefined : floors.get(r.workers)?.find((p) => p.pass === r.pass));
  for (const { workers, warmUp } of SETUPS) {
    ctx.log(`ingest: ${docs.length} documents, ${(bytes / 1e6).toFixed(2)} MB, ${workers} worker(s)${warmUp ? `, warm-up at start (${WARM_UP_ROUNDS} rounds)` : ''}`);
    const parley = await startParleyServer(ctx.root, parleyOptions(ctx, undefined, {
      PARLEY_INGEST_WORKERS: String(workers), PARLEY_BUILTIN_WORD_DELAY_MS: String(WORD_DELAY_MS), ...(warmUp ? { PARLEY_INGEST_WARM_UP: String(WARM_UP_ROUNDS) } : {}),
    }));
    try {
      // The idle reference below must not overlap the warm-up (it would make idle look worse).
      if (warmUp) ctx.log(`  workers warm ${(await waitWarm(parley.url, workers, 30_000)).toFixed(0)} ms after /healthz`);
      const auth = { authorization: `Bearer ${parley.apiKey}` };
      const kb = parley.knowledgeBaseId;
      const agentRes = await fetch(`${parley.url}/v1/agents`, {
        method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'gap probe', model: { provider: 'builtin', name: 'builtin' }, knowledge_base_ids: [kb] }),
      });
      const agentId = ((await agentRes.json()) as { id?: string }).id;
      if (agentRes.status !== 201 || !agentId) throw new Error(`gap probe agent: ${agentRes.status}`);
      // Idle: streams alone, their knowledge base still empty (pass 1 fills it).
      const idleUntil = performance.now() + idleS * 1000;
      const idleEmpty = await probeGaps(parley.url, parley.apiKey, agentId, () => performance.now() >= idleUntil);

      // Pass 1: no worker running yet (they start with the first document), or, with warm-up, the workers
      // warmed up on the built-in sample; passes 2 and 3 upload the same corpus into new knowledge bases on
      // the same server, the workers warm from it, which is what a long import sees after its first few MB.
      let idle = idleEmpty;
      for (const pass of [1, 2, 3] as const) {
        if (pass === 2) {
          // The probe's knowledge base (the default one) now holds the corpus: its turns retrieve and
          // compose real answers, as they do during passes 2 and 3, so those compare with this.
          const until = performance.now() + idleS * 1000;
          idle = await probeGaps(parley.url, parley.apiKey, agentId, () => performance.now() >= until);
        }
        const kbId = pass === 1 ? kb : await createKnowledgeBase(parley.url, parley.apiKey, `ingest pass ${pass}`);
        let ingesting = true;
        const probe = probeGaps(parley.url, parley.apiKey, agentId, () => !ingesting);
        const meter = new CpuMeter({ server: parley.pid }).start();
        const start = performance.now();
        const ids = await uploadDocuments(parley.url, parley.apiKey, kbId, docs);
        const uploadS = (performance.now() - start) / 1000;
        const { failed, pending } = await waitProcessed(parley.url, parley.apiKey, kbId, ids, ctx.smoke ? 60_000 : 300_000);
        const wallS = (performance.now() - start) / 1000;
        const cpu = meter.stop();
        ingesting = false;
        const during = await probe;
        const run: IngestRun = {
          workers, warmUp, pass, documents: docs.length, bytes, wallS, uploadS, mbPerS: bytes / 1e6 / wallS, docsPerS: docs.length / wallS,
          failed, notReady: pending.size, serverCpuS: cpu.cpuS.server ?? Number.NaN,
          gapsIdle: summarize(idle.gaps), gapsIngest: summarize(during.gaps),
          firstTokenIdle: summarize(idle.firstTokens), firstTokenIngest: summarize(during.firstTokens),
        };
        runs.push(run);
        ctx.log(`  pass ${pass}: ${wallS.toFixed(2)} s: ${run.mbPerS.toFixed(2)} MB/s, ${run.docsPerS.toFixed(1)} docs/s, server CPU ${run.serverCpuS.toFixed(2)} s, failed ${failed}, not ready ${pending.size}`);
        ctx.log(`  inter-token gap p99: idle ${run.gapsIdle.p99.toFixed(1)} ms (${run.gapsIdle.count} gaps, knowledge base ${pass === 1 ? 'empty' : 'filled'}), during ingestion ${run.gapsIngest.p99.toFixed(1)} ms (${run.gapsIngest.count} gaps)`);
      }
    } finally {
      await stopAll([parley]);
    }
  }
  const rows: Row[] = runs.flatMap((r) => {
    const floor = floorOf(r);
    return [
    { bench: 'ingest', metric: `${r.workers} worker(s) throughput`, unit: 'MB/s', better: 'higher' as const, parley: r.mbPerS, baseline: null, floor: floor ? bytes / 1e3 / floor.wallMs : null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) documents`, unit: 'docs/s', better: 'higher' as const, parley: r.docsPerS, baseline: null, floor: floor ? docs.length / (floor.wallMs / 1000) : null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) wall, first upload -> last ready`, unit: 's', better: 'lower' as const, parley: r.wallS, baseline: null, floor: floor ? floor.wallMs / 1000 : null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) server CPU (all threads)`, unit: 's', better: 'lower' as const, parley: r.serverCpuS, baseline: null, floor: floor ? floor.cpuMs / 1000 : null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) failed or not ready`, unit: 'count', better: 'lower' as const, parley: r.failed + r.notReady, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) inter-token gap p99, idle`, unit: 'ms', better: 'lower' as const, parley: r.gapsIdle.p99, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) inter-token gap p99, during ingestion`, unit: 'ms', better: 'lower' as const, parley: r.gapsIngest.p99, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) gap p99 ratio, ingesting / idle (target <= 2)`, unit: 'x', better: 'lower' as const, parley: r.gapsIngest.p99 / r.gapsIdle.p99, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) chat first token p50, idle`, unit: 'ms', better: 'lower' as const, parley: r.firstTokenIdle.p50, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) chat first token p50, during ingestion`, unit: 'ms', better: 'lower' as const, parley: r.firstTokenIngest.p50, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) chat first token p99, idle`, unit: 'ms', better: 'lower' as const, parley: r.firstTokenIdle.p99, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) chat first token p99, during ingestion`, unit: 'ms', better: 'lower' as const, parley: r.firstTokenIngest.p99, baseline: null, direct: null },
    ].map((row) => ({ ...row, metric: row.metric.replace(`${r.workers} worker(s)`, runLabel(r)) }));
  });
  return {
    name: 'ingest', rows, config, results: { runs, floor: Object.fromEntries(floors) },
    charts: [
      { title: 'Ingest throughput', unit: 'MB/s', groups: runs.map((r) => {
        const floor = floorOf(r);
        return { label: chartLabel(r), values: floor ? { parley: r.mbPerS, floor: bytes / 1e3 / floor.wallMs } : { parley: r.mbPerS } };
      }) },
      { title: 'Ingest documents/s', unit: 'docs/s', groups: runs.map((r) => ({ label: chartLabel(r), values: { parley: r.docsPerS } })) },
      { title: 'Inter-token gap p99', unit: 'ms', groups: runs.flatMap((r) => [
        { label: `${chartLabel(r)}: idle`, values: { parley: r.gapsIdle.p99 } },
        { label: `${chartLabel(r)}: ingesting`, values: { parley: r.gapsIngest.p99 } },
      ]) },
    ],
    notes: [
      'no baseline or direct row: ingestion has no upstream; the 1 vs 2 worker rows are the comparison.',
      'floor: bench/floor/ingest-parse.ts, the ingestion worker\'s parse and chunk in bare threads (no HTTP, no store, no chat), a fresh process per thread count; pass 1 counts thread start, as the service\'s first corpus does. Warm-up rows have no floor.',
      'polling the document list every 25 ms bounds the wall-time resolution.',
      "idle reference: pass 1 against the probe streams before any ingestion (their knowledge base empty: nothing to retrieve); passes 2 and 3 against the probe streams measured again after pass 1 (the same knowledge base, now holding the corpus, as during those passes).",
      `target (issue 12): >= 5 MB/s with 2 workers, and the gap p99 during ingestion within 2x of idle (builtin model, ${WORD_DELAY_MS} ms word delay, one stream at a time).`,
    ],
  };
}
