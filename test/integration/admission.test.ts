import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

let srv: TestServer;
let agentId: string;

beforeAll(async () => {
  // Shed load once the event loop lags a median 60 ms: far above what a busy test machine causes by itself.
  srv = await startTestServer({ PARLEY_MAX_LOOP_LAG_MS: '60' });
  const res = await srv.api('/v1/agents', { body: { name: 'Admission bot' } });
  agentId = ((await res.json()) as { id: string }).id;
  await new Promise((r) => setTimeout(r, 500)); // start-up work is over, and so is its lag
});
afterAll(async () => { await srv.close(); });

/** Keeps this process's event loop (the server runs in it) behind: `ms` of busy work on every turn, `forMs` long. */
async function overload(ms: number, forMs: number): Promise<void> {
  const end = performance.now() + forMs;
  while (performance.now() < end) {
    const until = performance.now() + ms;
    while (performance.now() < until) { /* busy */ }
    await new Promise((r) => setImmediate(r));
  }
}

const chat = () => srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'hello there', stream: false } });

describe('admission control', () => {
  it('answers normally while the event loop keeps up', async () => {
    const res = await chat();
    expect(res.status, await res.clone().text()).toBe(200);
  });

  it('refuses a new turn with 503 overloaded and Retry-After while the loop is behind, storing nothing', async () => {
    const before = ((await (await srv.api('/v1/conversations?limit=100')).json()) as { data: unknown[] }).data.length;
    await overload(150, 1500); // every tick ~150 ms late for 1.5 s
    const res = await chat();
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: { type: 'api_error', code: 'overloaded' } });
    const after = ((await (await srv.api('/v1/conversations?limit=100')).json()) as { data: unknown[] }).data.length;
    expect(after).toBe(before);
  });

  it('admits again once the loop has caught up', async () => {
    await new Promise((r) => setTimeout(r, 300)); // the 100 ms lag window has passed
    const res = await chat();
    expect(res.status, await res.clone().text()).toBe(200);
  });
});
