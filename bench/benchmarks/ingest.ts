/**
 * ingest: MB/s and documents/s ingesting the Node.js API docs corpus (../shared/corpus/nodejs-api)
 * with 1 and 2 ingestion workers: every .md uploaded as raw text/markdown with ?title=, then polled
 * until ready. Wall time runs from the first upload to the last document seen ready.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CpuMeter } from '../lib/proc.js';
import { startParleyServer } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import { sleep, stopAll, parleyOptions, type Ctx } from './common.js';

interface IngestRun {
  workers: number;
  documents: number;
  bytes: number;
  wallS: number;
  uploadS: number;
  mbPerS: number;
  docsPerS: number;
  failed: number;
  notReady: number;
  serverCpuS: number;
}

export async function ingest(ctx: Ctx): Promise<BenchOutcome> {
  const corpus = resolve(ctx.root, '../shared/corpus/nodejs-api');
  if (!existsSync(corpus)) {
    ctx.log(`ingest: skipped: ${corpus} not found`);
    return { name: 'ingest', rows: [], config: { corpus }, results: { skipped: `${corpus} not found` }, charts: [], notes: [`skipped: ${corpus} not found`] };
  }
  const files = readdirSync(corpus).filter((f) => f.endsWith('.md')).sort();
  const docs = files.map((f) => ({ title: f.replace(/\.md$/, ''), body: readFileSync(join(corpus, f)) }));
  const bytes = docs.reduce((a, d) => a + d.body.length, 0);
  const config = { corpus, documents: docs.length, bytes, workers: [1, 2], upload_concurrency: 4, poll_every_ms: 25 };
  const runs: IngestRun[] = [];
  for (const workers of [1, 2]) {
    ctx.log(`ingest: ${docs.length} documents, ${(bytes / 1e6).toFixed(2)} MB, ${workers} worker(s)`);
    const parley = await startParleyServer(ctx.root, parleyOptions(ctx, undefined, { PARLEY_INGEST_WORKERS: String(workers) }));
    try {
      const auth = { authorization: `Bearer ${parley.apiKey}` };
      const kb = parley.knowledgeBaseId;
      const meter = new CpuMeter({ server: parley.pid }).start();
      const start = performance.now();
      const ids: string[] = [];
      let next = 0;
      const uploader = async () => {
        for (let i = 0; i < docs.length && next < docs.length; i++) {
          const d = docs[next++]!;
          const res = await fetch(`${parley.url}/v1/knowledge-bases/${kb}/documents?title=${encodeURIComponent(d.title)}`, {
            method: 'POST', headers: { ...auth, 'content-type': 'text/markdown' }, body: d.body,
          });
          const body = (await res.json()) as { id?: string };
          if (res.status !== 202 || !body.id) throw new Error(`upload ${d.title}: ${res.status} ${JSON.stringify(body)}`);
          ids.push(body.id);
        }
      };
      await Promise.all(Array.from({ length: 4 }, uploader));
      const uploadS = (performance.now() - start) / 1000;
      const pending = new Set(ids);
      let failed = 0;
      const deadline = Date.now() + (ctx.smoke ? 60_000 : 300_000);
      for (let i = 0; i < 100_000 && pending.size > 0 && Date.now() < deadline; i++) {
        await Promise.all([...pending].map(async (id) => {
          const res = await fetch(`${parley.url}/v1/knowledge-bases/${kb}/documents/${id}`, { headers: auth });
          const body = (await res.json()) as { status?: string };
          if (body.status === 'ready') pending.delete(id);
          else if (body.status === 'failed') { failed++; pending.delete(id); }
        }));
        if (pending.size > 0) await sleep(25);
      }
      const wallS = (performance.now() - start) / 1000;
      const cpu = meter.stop();
      const run: IngestRun = {
        workers, documents: docs.length, bytes, wallS, uploadS, mbPerS: bytes / 1e6 / wallS, docsPerS: docs.length / wallS,
        failed, notReady: pending.size, serverCpuS: cpu.cpuS.server ?? Number.NaN,
      };
      runs.push(run);
      ctx.log(`  ${wallS.toFixed(2)} s: ${run.mbPerS.toFixed(2)} MB/s, ${run.docsPerS.toFixed(1)} docs/s, server CPU ${run.serverCpuS.toFixed(2)} s, failed ${failed}, not ready ${pending.size}`);
    } finally {
      await stopAll([parley]);
    }
  }
  const rows: Row[] = runs.flatMap((r) => [
    { bench: 'ingest', metric: `${r.workers} worker(s) throughput`, unit: 'MB/s', better: 'higher' as const, parley: r.mbPerS, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) documents`, unit: 'docs/s', better: 'higher' as const, parley: r.docsPerS, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) wall, first upload -> last ready`, unit: 's', better: 'lower' as const, parley: r.wallS, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) server CPU (all threads)`, unit: 's', better: 'lower' as const, parley: r.serverCpuS, baseline: null, direct: null },
    { bench: 'ingest', metric: `${r.workers} worker(s) failed or not ready`, unit: 'count', better: 'lower' as const, parley: r.failed + r.notReady, baseline: null, direct: null },
  ]);
  return {
    name: 'ingest', rows, config, results: { runs },
    charts: [
      { title: 'Ingest throughput', unit: 'MB/s', groups: runs.map((r) => ({ label: `${r.workers} worker(s)`, values: { parley: r.mbPerS } })) },
      { title: 'Ingest documents/s', unit: 'docs/s', groups: runs.map((r) => ({ label: `${r.workers} worker(s)`, values: { parley: r.docsPerS } })) },
    ],
    notes: ['no baseline or direct row: ingestion has no upstream; the 1 vs 2 worker rows are the comparison.', 'polling every 25 ms bounds the wall-time resolution.'],
  };
}
