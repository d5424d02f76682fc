/**
 * vector-scan: the cost of the brute-force vector search of optional embeddings (KnowledgePort.vectorSearch
 * on SQLite, src/store/sqlite/knowledge.ts), in process: one knowledge base of 20,000 chunks with
 * 1536-dimension vectors (the size of OpenAI's text-embedding-3-small; random unit vectors from a fixed
 * seed, so every run stores the same data), then one scan for the best 50 against a random query, repeated.
 *
 * Rows: the scan's wall time (p50, max) and per 10k chunks, the same arithmetic over vectors already in
 * memory (what the scan costs beyond reading SQLite rows), the longest the event loop went without a turn
 * during a scan (the scan yields every few ms, so other conversations keep streaming), and the chunk count
 * at which one scan would take 100 ms, extrapolated linearly from the measured time per chunk (the scan
 * is linear: every page is the same work). docs/knowledge-bases.md "Embeddings (optional)" quotes it.
 * `--smoke` stores the same 20,000 chunks and scans 3 times instead of 10.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewChunk } from '../../src/store/records.js';
import { cosine, norm, TopK } from '../../src/store/vectors.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { Ctx } from './common.js';
import { prng } from '../lib/prng.js';

const CHUNKS = 20_000;
const DIMS = 1536;
const K = 50;
const MODEL = 'bench-embed-1536';
const ORG = 'org_bench';
const KB = 'kb_bench';

function randomUnit(rand: () => number): Float32Array {
  const v = new Float32Array(DIMS);
  for (let i = 0; i < DIMS; i++) v[i] = rand() * 2 - 1;
  const n = norm(v);
  for (let i = 0; i < DIMS; i++) v[i]! /= n;
  return v;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Runs `fn` while a setImmediate ticker records the longest gap between its turns, ms. */
async function withLoopWatch<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; longestGapMs: number; turns: number }> {
  let last = performance.now();
  let longest = 0;
  let turns = 0;
  let running = true;
  const tick = (): void => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const started = performance.now();
  const value = await fn();
  const ms = performance.now() - started;
  running = false;
  longest = Math.max(longest, performance.now() - last);
  return { value, ms, longestGapMs: longest, turns };
}

export async function vectorScan(ctx: Ctx): Promise<BenchOutcome> {
  const repeats = ctx.smoke ? 3 : 10;
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-vectors-'));
  const store = createSqliteStore(dir, { sync: 'NORMAL' });
  try {
    const rand = prng(20261126);
    const at = new Date().toISOString();
    await store.knowledge.createBase({ id: KB, org_id: ORG, name: 'Vectors', created_at: at });
    await store.knowledge.createDocument({
      id: 'doc_bench', org_id: ORG, knowledge_base_id: KB, title: 'Vectors', content_type: 'text/plain', status: 'processing',
      error: null, error_code: null, chunk_count: 0, bytes: 1, created_at: at, updated_at: at,
    }, 'x');
    const vectors: Float32Array[] = [];
    const chunks: NewChunk[] = [];
    for (let i = 0; i < CHUNKS; i++) {
      const vector = randomUnit(rand);
      vectors.push(vector);
      chunks.push({ ord: i, heading: '', text: `Passage ${i} of the vector benchmark, about a hundred characters of text like a short chunk.`, embedding: { model: MODEL, vector } });
    }
    ctx.log(`vector-scan: storing ${CHUNKS} chunks x ${DIMS} dims`);
    const storeStarted = performance.now();
    if (!(await store.knowledge.completeDocument('doc_bench', chunks, at))) throw new Error('the benchmark document was not stored');
    const storeMs = performance.now() - storeStarted;

    const query = randomUnit(rand);
    // Warm-up: the first scan pays for reading the file into the OS page cache.
    const warm = await store.knowledge.vectorSearch(ORG, [KB], MODEL, query, K);
    if (warm.length !== K) throw new Error(`expected ${K} hits, got ${warm.length}`);
    const scans: Array<{ ms: number; longestGapMs: number; turns: number }> = [];
    for (let r = 0; r < repeats; r++) {
      const run = await withLoopWatch(() => store.knowledge.vectorSearch(ORG, [KB], MODEL, query, K));
      if (run.value[0]!.chunk_id !== warm[0]!.chunk_id) throw new Error('scans disagree on the best chunk');
      scans.push({ ms: run.ms, longestGapMs: run.longestGapMs, turns: run.turns });
      ctx.log(`vector-scan: scan ${r + 1}/${repeats}: ${run.ms.toFixed(1)} ms, longest event-loop gap ${run.longestGapMs.toFixed(1)} ms`);
    }
    // The same arithmetic over vectors already in memory: what the scan costs beyond reading rows.
    const memory: number[] = [];
    const qn = norm(query);
    for (let r = 0; r < repeats; r++) {
      const started = performance.now();
      const top = new TopK<number>(K);
      for (let i = 0; i < vectors.length; i++) top.offer(i, cosine(query, vectors[i]!, qn));
      memory.push(performance.now() - started);
    }

    const scanMs = median(scans.map((s) => s.ms));
    const per10k = (scanMs / CHUNKS) * 10_000;
    const at100ms = Math.floor((100 / scanMs) * CHUNKS);
    const longestGap = Math.max(...scans.map((s) => s.longestGapMs));
    const row = (metric: string, unit: string, better: Row['better'], v: number): Row => ({ bench: 'vector-scan', metric, unit, better, parley: v, baseline: null, direct: null });
    const rows: Row[] = [
      row(`scan ${CHUNKS / 1000}k chunks x ${DIMS} dims, top ${K}, p50`, 'ms', 'lower', scanMs),
      row(`scan ${CHUNKS / 1000}k chunks x ${DIMS} dims, top ${K}, max`, 'ms', 'lower', Math.max(...scans.map((s) => s.ms))),
      row('scan per 10k chunks', 'ms', 'lower', per10k),
      row('same arithmetic on vectors in memory, per 10k chunks', 'ms', 'lower', (median(memory) / CHUNKS) * 10_000),
      row('longest event-loop gap during a scan', 'ms', 'lower', longestGap),
      row('chunks one scan covers in 100 ms (linear extrapolation)', 'chunks', 'higher', at100ms),
      row(`storing ${CHUNKS / 1000}k chunks with vectors`, 'ms', 'lower', storeMs),
    ];
    return {
      name: 'vector-scan', rows,
      config: { chunks: CHUNKS, dims: DIMS, k: K, repeats, smoke: ctx.smoke },
      results: { scans, memory_ms: memory, store_ms: storeMs, vector_bytes: CHUNKS * DIMS * 4 },
      charts: [{ title: `One vector scan, ${CHUNKS} x ${DIMS}`, unit: 'ms', groups: [
        { label: 'scan p50', values: { parley: scanMs } }, { label: 'longest loop gap', values: { parley: longestGap } },
      ] }],
      notes: [
        `in process, SQLite store (WAL, synchronous NORMAL), ${((CHUNKS * DIMS * 4) / 2 ** 20).toFixed(0)} MiB of vectors read per scan from the OS page cache (warm).`,
        'the scan is linear in the chunks of the searched knowledge bases; the 100 ms figure extrapolates the measured time per chunk.',
      ],
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
