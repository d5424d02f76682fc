/**
 * A bare ingestion thread for the ingest floor (bench/floor/ingest-parse.ts): runs Parley's own ingestion
 * worker function (src/knowledge/ingest.worker.ts: decode, parse, chunk) on each document posted to it and
 * posts back `{ ok, chunks }` (the number of chunks, or the failure). No Piscina, no priority change, no store.
 */
import { parentPort } from 'node:worker_threads';
import ingest from '../../src/knowledge/ingest.worker.js';

if (parentPort === null) throw new Error('ingest-parse.worker runs as a worker thread');
const port = parentPort;
port.on('message', (content: Uint8Array) => {
  void ingest({ title: 'floor', contentType: 'text/markdown', content }).then((r) => {
    port.postMessage(r.ok ? { ok: true, chunks: r.chunks.length } : { ok: false, error: r.error });
  });
});
