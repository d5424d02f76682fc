/**
 * A small ingestion run for profiling: the Node.js API corpus (../shared/corpus/nodejs-api) through the
 * real KnowledgeService, ingestion pool and SQLite store, timed from the first upload to the last ready
 * document (workers warmed first). Usage: `npm run build && node --cpu-prof scripts/profile-ingest.mjs [threads]`
 * (Node writes one profile per thread: the main thread and each ingestion worker). An optional second
 * argument sets the store's chunks per slice (default 64). Prints MB/s and how busy the main thread was.
 */
import { readdirSync, readFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { pino } from 'pino';
const D = new URL('../dist/src', import.meta.url).href;
const { createSqliteStore } = await import(`${D}/store/sqlite/sqlite-store.js`);
const { IngestionPool } = await import(`${D}/knowledge/ingestion-pool.js`);
const { KnowledgeService } = await import(`${D}/knowledge/knowledge-service.js`);
const { EventBus } = await import(`${D}/events/event-bus.js`);
const corpus = new URL('../../shared/corpus/nodejs-api', import.meta.url).pathname;
if (!(await import('node:fs')).existsSync(corpus)) { console.log(`skipped: ${corpus} not found`); process.exit(0); }
const threads = Number(process.argv[2] ?? 2);
const store = createSqliteStore(mkdtempSync(join(tmpdir(), 'kfprof-')), { chunkSliceChunks: Number(process.argv[3] ?? 64), sync: process.env.PARLEY_SQLITE_SYNC ?? 'FULL' });
const pool = new IngestionPool({ threads });
const ks = new KnowledgeService(store, pool, new EventBus(() => {}), pino({ level: 'silent' }));
const kb = { id: 'kb_1', org_id: 'o', name: 'n', created_at: new Date().toISOString() };
await store.knowledge.createBase(kb);
// warm the workers
await Promise.all(Array.from({ length: threads }, () => pool.run({ title: 'w', contentType: 'text/plain', content: 'warm up' })));
const files = readdirSync(corpus).filter((f) => f.endsWith('.md'));
let bytes = 0;
const elu0 = performance.eventLoopUtilization();
const t0 = performance.now();
for (const f of files) { const c = new Uint8Array(readFileSync(join(corpus, f))); bytes += c.length; await ks.upload(kb, { title: f, contentType: 'text/markdown', content: c }); }
await ks.settled();
const s = (performance.now() - t0) / 1000;
const elu = performance.eventLoopUtilization(elu0);
console.log(`${threads} workers: ${(bytes / 1e6).toFixed(2)} MB in ${s.toFixed(2)} s = ${(bytes / 1e6 / s).toFixed(2)} MB/s; main thread busy ${(elu.active / 1000).toFixed(2)} s (${(elu.utilization * 100).toFixed(0)}%)`);
console.log(globalThis.__threadCpu?.() ?? ""); await pool.close(); await store.close();
