/**
 * /readyz during a drain (API.md "Operations"): after SIGTERM the port stops taking connections and a
 * connection still open (a load balancer's keep-alive probe) hears 503 `{"status":"draining"}` while running
 * turns finish. The start of a real process (503 `starting` until the credentials file is written) is in
 * test/e2e/startup.test.ts.
 */
import { Agent, request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgent } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';

let srv: TestServer | undefined;
afterAll(async () => { await srv?.close(); });

/** GET `path` on the kept connection of `agent`; status and parsed body. */
function get(agent: Agent, port: number, path: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => { text += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('/readyz during a drain', () => {
  it('answers 503 draining on a connection still open while a turn finishes', async () => {
    srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '40', PARLEY_SHUTDOWN_GRACE_MS: '10000' });
    const agentId = await createAgent(srv, { name: 'Slow' });
    const kept = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(kept, srv.parley.port, '/readyz')).toEqual({ status: 200, body: { status: 'ready', store: 'sqlite' } });
    let streaming = false;
    const turn = readSse(`${srv.url}/v1/agents/${agentId}/chat`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Tell me how streaming works, at length please', stream: true }),
    }, (e) => { if (e.data.type === 'token') streaming = true; });
    while (!streaming) await new Promise((r) => setTimeout(r, 10));
    const closing = srv.parley.close();
    expect(await get(kept, srv.parley.port, '/readyz')).toEqual({ status: 503, body: { status: 'draining' } });
    const { events } = await turn;
    expect(events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    await closing;
    kept.destroy();
  });
});
