/**
 * The webhooks benchmark's receiver, a process of its own (so that its work does not slow the bench
 * process that measures stream gaps): answers every delivery 204 and keeps its arrival time (epoch ms)
 * by the event's `data.message_id`. `GET /__stats` returns `{count, first, last, arrivals}`;
 * `POST /__reset` forgets everything. Prints `{"port": N}` once it listens.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let arrivals: Record<string, number[]> = {};
let count = 0;
let first = 0;
let last = 0;

const server = createServer((req, res) => {
  if (req.url === '/__stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count, first, last, arrivals }));
    return;
  }
  if (req.url === '/__reset') {
    arrivals = {}; count = 0; first = 0; last = 0;
    res.writeHead(204).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = performance.now() + performance.timeOrigin;
    try {
      const key = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { message_id?: string } }).data?.message_id;
      if (key !== undefined) (arrivals[key] ??= []).push(at);
    } catch { /* counted anyway */ }
    if (count === 0) first = at;
    count++;
    last = at;
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
