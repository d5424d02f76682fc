/**
 * A real webhook receiver for tests: a node:http server on 127.0.0.1:0 that keeps every request (raw
 * body bytes, headers, arrival time) and answers with what `respond` says (status, headers, body), or
 * never answers (`'hang'`).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as sent. */
  raw: string;
  /** The body parsed (the envelope). */
  json: { id: string; type: string; created_at: string; org_id: string; data: Record<string, unknown> };
  at: number;
}

/** What to answer: a status with optional headers and body, or `'hang'` (never answer). */
export type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/** A running receiver. */
export interface Receiver {
  url: string;
  port: number;
  got: Received[];
  /** Resolves when `pred` holds for the requests received so far (polls; rejects after `timeoutMs`). */
  waitFor(pred: (got: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** Starts a receiver; `respond` decides each answer (default 200 "ok"). */
export async function startReceiver(respond: (req: Received, n: number) => Reply = () => ({ status: 200, body: 'ok' })): Promise<Receiver> {
  const got: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let json: Received['json'];
      try { json = JSON.parse(raw) as Received['json']; } catch { json = { id: '', type: '', created_at: '', org_id: '', data: {} }; }
      const r: Received = { path: req.url ?? '/', headers: req.headers, raw, json, at: Date.now() };
      got.push(r);
      const reply = respond(r, got.length);
      if (reply === 'hang') { hanging.push(res); return; }
      res.writeHead(reply.status, reply.headers ?? {});
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`, port, got,
    async waitFor(pred, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pred(got)) {
        if (Date.now() > deadline) throw new Error(`receiver: condition not met in ${timeoutMs} ms; got ${got.map((g) => `${g.path} ${g.json.type}`).join(', ')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return got;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
