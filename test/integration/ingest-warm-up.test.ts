/**
 * PARLEY_INGEST_WARM_UP through the real server: the workers warm up at start without any upload,
 * /metrics counts them (`parley_ingest_workers`), and an upload to the warm server is ingested and ready.
 * Off, the gauge says no worker is warm. The warm-up itself: test/unit/warm-up.test.ts and
 * test/integration/ingestion-pool.test.ts.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { labelled } from '../helpers/metrics.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const servers: TestServer[] = [];
afterAll(async () => { await Promise.all(servers.map((s) => s.close())); });

/** The `parley_ingest_workers` gauge of `url` by state, e.g. {threads: 1, warm: 0}. */
const ingestWorkers = (url: string) => labelled(url, 'parley_ingest_workers', 'state');

describe('PARLEY_INGEST_WARM_UP', () => {
  it('is 0 (off) unless set, and takes 0 to 100 rounds', () => {
    expect(loadConfig({}).ingestWarmUpRounds).toBe(0);
    expect(loadConfig({ PARLEY_INGEST_WARM_UP: '6' }).ingestWarmUpRounds).toBe(6);
    expect(() => loadConfig({ PARLEY_INGEST_WARM_UP: '-1' })).toThrow(/PARLEY_INGEST_WARM_UP/);
    expect(() => loadConfig({ PARLEY_INGEST_WARM_UP: '101' })).toThrow(/PARLEY_INGEST_WARM_UP/);
  });

  it('warms the workers up at start, /metrics counts them, and uploads to the warm server are ingested', async () => {
    const srv = await startTestServer({ PARLEY_INGEST_WARM_UP: '1', PARLEY_INGEST_WORKERS: '2' });
    servers.push(srv);
    const deadline = Date.now() + 30_000;
    let gauge = await ingestWorkers(srv.url);
    while (gauge.warm !== 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      gauge = await ingestWorkers(srv.url);
    }
    expect(gauge).toEqual({ threads: 2, warm: 2 });

    const kb = ((await (await srv.api('/v1/knowledge-bases', { body: { name: 'Warm' } })).json()) as { id: string }).id;
    const res = await fetch(`${srv.url}/v1/knowledge-bases/${kb}/documents?title=Setup`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'text/markdown' },
      body: '# Setup\n\nThe service listens on port 8080 unless PARLEY_PORT says otherwise.\n',
    });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { id: string }).id;
    let doc = { status: 'processing', chunk_count: 0 };
    while (doc.status === 'processing' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      doc = (await (await srv.api(`/v1/knowledge-bases/${kb}/documents/${id}`)).json()) as typeof doc;
    }
    expect(doc).toMatchObject({ status: 'ready', chunk_count: 1 });
    // No worker was replaced or added by the upload.
    expect(await ingestWorkers(srv.url)).toEqual({ threads: 2, warm: 2 });
  });

  it('off: the gauge shows the configured workers and none warm', async () => {
    const srv = await startTestServer({ PARLEY_INGEST_WORKERS: '1' });
    servers.push(srv);
    expect(await ingestWorkers(srv.url)).toEqual({ threads: 1, warm: 0 });
  });
});
