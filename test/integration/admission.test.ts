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

describe('admission control: the adaptive limit on live turns', () => {
  let busySrv: TestServer;
  let slowAgent: string;
  beforeAll(async () => {
    // Builtin answers of a few seconds (50 ms per word), so turns stay live; the limit steers to an event
    // loop lagging at most 20 ms (median of its last 10 ticks), and cannot go under 16 live turns.
    busySrv = await startTestServer({ PARLEY_TARGET_LOOP_LAG_MS: '20', PARLEY_BUILTIN_WORD_DELAY_MS: '50' }, { captureLogs: true });
    const res = await busySrv.api('/v1/agents', { body: { name: 'Slow bot' } });
    slowAgent = ((await res.json()) as { id: string }).id;
  });
  afterAll(async () => { await busySrv.close(); });

  const stream = () => busySrv.api(`/v1/agents/${slowAgent}/chat`, { body: { message: 'tell me about knowledge bases', stream: true } });

  it('refuses a new turn while many turns are live and the loop lags, then admits again', async () => {
    const open = await Promise.all(Array.from({ length: 24 }, stream));
    expect(open.map((r) => r.status)).toEqual(Array(24).fill(200));
    // The loop is kept about 60 ms late for the next second: the next arrival sees that lag, and 24 live turns
    // against a limit cut to max(16, 0.9 x 24) = 21.
    await overload(60, 1000);
    const refused = await stream();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('overloaded');
    expect(body.error.message).toContain('24 turns are live');
    // Logged once as a summary at warn, not as an error with a stack per refusal.
    const logged = busySrv.logs();
    expect(logged.filter((l) => l.msg === 'refusing new turns: the server is overloaded')).toMatchObject([{ level: 40, refused: 1 }]);
    expect(logged.filter((l) => l.level >= 50)).toEqual([]);
    // The live streams were not touched: each one still ends with its done event.
    const texts = await Promise.all(open.map((r) => r.text()));
    for (const t of texts) expect(t).toContain('"type":"done"');
    // Nothing is live now: a new turn is admitted whatever the limit became.
    const again = await stream();
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('"type":"done"');
  });
});
