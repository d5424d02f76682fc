import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer(); });
afterAll(async () => { await srv?.close(); });

describe('smoke', () => {
  it('streams a turn', async () => {
    const a = await (await srv.api('/v1/agents', { body: { name: 'x' } })).json() as { id: string };
    const { events } = await readSse(`${srv.url}/v1/agents/${a.id}/chat`, { method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hello there', stream: true }) });
    expect(events.map((e) => e.data.type)).toContain('done');
  });
});
