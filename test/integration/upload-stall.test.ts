/**
 * Issue 35, finding 7: 50 parallel uploads of 9 MB stalled the event loop (2.4 s in the review, 0.6-1.3 s
 * measured here before the fix: the SQLite writer's batch postMessage cloned tens of uploads at once) and
 * grew the server by 1.1-1.5 GB. Against a real server process over HTTP, the event-loop delay is read
 * from its own sampler on /metrics (`parley_event_loop_delay_seconds{quantile="1"}`: the latest a 10 ms
 * timer ran since the previous scrape), scraped every 250 ms from the first upload until 2 s after the
 * last answer. The resident memory's peak is logged (not bounded: 50 uploads of 9 MB are 450 MB in flight).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialsOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { labelled } from '../helpers/metrics.js';

/** Uploads at once, and the size of each, bytes (the review's). */
const UPLOADS = 50;
const SIZE = 9 * 1024 * 1024;
/**
 * Longest event-loop stall allowed while they arrive, ms. Measured on the 2-core development machine:
 * 78-134 ms with this test alone, up to 476 ms beside the other test files of `npm test` (CPU contention
 * stretches every pause, a GC's most); at 39dfeb3, 1.3 s alone and 6.1 s beside them (the review: 2.4 s).
 */
const STALL_BOUND_MS = 1000;

const linux = process.platform === 'linux';
if (!linux) console.warn('skipped: reads resident memory from /proc');

describe.runIf(linux)('50 parallel uploads of 9 MB (issue 35, finding 7)', () => {
  let dir: string;
  let main: MainProcess;
  let headers: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-uploads-'));
    // The bootstrap's demo knowledge base is not ingested here (an empty docs folder): nothing else runs.
    const docs = mkdtempSync(join(tmpdir(), 'parley-no-docs-'));
    main = await startMain(dir, { PARLEY_DOCS_DIR: docs });
    headers = { authorization: `Bearer ${(await credentialsOf(dir)).api_key}` };
  }, 60_000);

  afterAll(async () => {
    main?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it(`do not stall the event loop for more than ${STALL_BOUND_MS} ms`, async () => {
    const kb = ((await (await fetch(`${main.url}/v1/knowledge-bases`, {
      method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Uploads' }),
    })).json()) as { id: string }).id;
    const line = 'Nine megabytes of plain prose about streams, buffers and the event loop, line after line.\n';
    const body = Buffer.from(line.repeat(Math.ceil(SIZE / line.length))).subarray(0, SIZE);
    const rss = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${main.child.pid}/status`, 'utf8'))![1]) / 1024;
    const before = rss();
    await labelled(main.url, 'parley_event_loop_delay_seconds', 'quantile'); // starts a new window

    let maxDelayS = 0;
    let peak = before;
    let scraping = true;
    const scraper = (async () => {
      while (scraping) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        peak = Math.max(peak, rss());
        maxDelayS = Math.max(maxDelayS, (await labelled(main.url, 'parley_event_loop_delay_seconds', 'quantile'))['1'] ?? 0);
      }
    })();
    const started = performance.now();
    const statuses = await Promise.all(Array.from({ length: UPLOADS }, async (_, i) => (await fetch(`${main.url}/v1/knowledge-bases/${kb}/documents?title=upload-${i}`, {
      method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body,
    })).status));
    const uploadMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    scraping = false;
    await scraper;
    console.log(`${UPLOADS} x ${SIZE / 2 ** 20} MiB uploads answered in ${uploadMs.toFixed(0)} ms; longest event-loop stall ${(maxDelayS * 1000).toFixed(0)} ms; server RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB`);
    expect(statuses).toEqual(Array.from({ length: UPLOADS }, () => 202));
    expect(maxDelayS * 1000).toBeGreaterThan(0); // the sampler ran
    expect(maxDelayS * 1000).toBeLessThan(STALL_BOUND_MS);
  }, 180_000);
});
