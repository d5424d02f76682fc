/**
 * The ingest floor: the least any ingestion built on Parley's parse code can take on this machine. N bare
 * worker threads run the ingestion worker's own function (bench/floor/ingest-parse.worker.ts) over the
 * corpus, one document in flight per thread, in file-name order, with no HTTP, no store, no Piscina and
 * normal thread priority. Pass 1 starts the clock before the threads are created, as the service's first
 * corpus does (its workers start with the first document); passes 2 and 3 reuse the same threads, warm.
 *
 * CLI: `node dist/bench/floor/ingest-parse.js --corpus <dir> [--workers 2] [--passes 3]`; prints one JSON line:
 * `{"workers","documents","bytes","passes":[{"pass","wallMs","cpuMs","chunks","failed"}]}`, where `cpuMs` is the
 * process's CPU (user + system, all threads) during the pass. Throws if the corpus has no `.md` file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';

const { values } = parseArgs({
  options: { corpus: { type: 'string' }, workers: { type: 'string', default: '2' }, passes: { type: 'string', default: '3' } },
  strict: true,
});
if (!values.corpus) throw new Error('--corpus <directory of .md files> is required');
const corpus = values.corpus;
const threads = Number(values.workers);
const passes = Number(values.passes);
const docs = readdirSync(corpus).filter((f) => f.endsWith('.md')).sort().map((f) => new Uint8Array(readFileSync(join(corpus, f))));
if (docs.length === 0) throw new Error(`no .md file in ${corpus}`);

interface Reply { ok: boolean; chunks?: number; error?: string }
interface PassResult { pass: number; wallMs: number; cpuMs: number; chunks: number; failed: number }

const workers: Worker[] = [];
const results: PassResult[] = [];
for (let pass = 1; pass <= passes; pass++) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (pass === 1) for (let i = 0; i < threads; i++) workers.push(new Worker(new URL('./ingest-parse.worker.js', import.meta.url)));
  let next = 0;
  let chunks = 0;
  let failed = 0;
  await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    const onMessage = (r: Reply) => {
      if (r.ok) chunks += r.chunks ?? 0;
      else failed++;
      feed();
    };
    const feed = () => {
      if (next < docs.length) {
        w.postMessage(docs[next++]);
        return;
      }
      w.off('message', onMessage);
      w.off('error', onError);
      resolve();
    };
    w.on('message', onMessage);
    w.on('error', onError);
    feed();
  })));
  const cpu = process.cpuUsage(cpu0);
  results.push({ pass, wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, chunks, failed });
}
await Promise.all(workers.map((w) => w.terminate()));
console.log(JSON.stringify({ workers: threads, documents: docs.length, bytes: docs.reduce((n, d) => n + d.byteLength, 0), passes: results }));
