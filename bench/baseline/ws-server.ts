/**
 * The WebSocket baseline of the `connections` benchmark: the least a team would write to hold
 * authenticated sockets with the `ws` package (the most used Node WebSocket server). node:http, the
 * upgrade authenticated by `Authorization: Bearer <key>` (its SHA-256 compared with the stored hash;
 * 401 and no socket otherwise), then `ws` without permessage-deflate (Parley offers none either). A
 * `{"type":"ping"}` text frame is answered `{"type":"pong"}` (how the load generator knows a socket is
 * live); everything else is ignored. No store, no sessions, no timers: its memory per idle socket is the
 * floor of a Node WebSocket server on `ws`.
 *
 * CLI: `node dist/bench/baseline/ws-server.js --port 0`, key from `BASELINE_API_KEY`; prints
 * `{"url","port"}` once listening. Any path is accepted.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { WebSocketServer } from 'ws';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' } },
  strict: true,
});
const key = process.env.BASELINE_API_KEY;
if (!key) throw new Error('BASELINE_API_KEY is required');
const sha256 = (s: string) => createHash('sha256').update(s).digest();
const keyHash = sha256(key);

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false, maxPayload: 64 * 1024 });
const PONG = JSON.stringify({ type: 'pong' });

const server = http.createServer((_req, res) => {
  res.writeHead(426, { 'content-type': 'text/plain' });
  res.end('upgrade required\n');
});

server.on('upgrade', (req, socket, head) => {
  const auth = req.headers.authorization ?? '';
  const presented = auth.startsWith('Bearer ') ? sha256(auth.slice(7)) : undefined;
  if (presented === undefined || !timingSafeEqual(presented, keyHash)) {
    socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.on('message', (data: Buffer) => {
      try {
        if ((JSON.parse(data.toString('utf8')) as { type?: unknown }).type === 'ping') ws.send(PONG);
      } catch {
        // not JSON: ignored
      }
    });
    ws.on('error', () => ws.terminate());
  });
});

server.listen(Number(values.port), values.host, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://${values.host}:${port}`, port })}\n`);
});

for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => process.exit(0));
