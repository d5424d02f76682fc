import { it, afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { sendRaw, nodeRequest } from '../helpers/raw-http.js';

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer({ PARLEY_BODY_LIMIT_BYTES: '4096' }); });
afterAll(async () => { await srv?.close(); });

it('probe', async () => {
  const p = srv.parley.port;
  const auth = `Authorization: Bearer ${srv.apiKey}\r\n`;
  const cases: Record<string, string> = {
    http10host: 'GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n',
    ok11: 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    lfOnly: 'GET /healthz HTTP/1.1\nHost: x\n\n',
    garbageHost: 'GARBAGE\r\nHost: x\r\n\r\n',
    badVersion: 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n',
    dupCL: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 12\r\nContent-Length: 13\r\n\r\n{"name":"x"}`,
    bigCLnum: `POST /v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 99999999999999999999999\r\n\r\n{"name":"x"}`,
  };
  await Promise.all(Object.entries(cases).map(async ([name, bytes]) => {
    const r = await sendRaw(p, bytes, 800);
    console.log(name, r.ended, r.status, JSON.stringify(r.text.slice(0, 120)));
  }));
  const cl = await nodeRequest({ port: p, method: 'POST', path: '/v1/agents', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' }, body: Buffer.alloc(5000, 'a'), mode: 'content-length' });
  console.log('cl', cl.status, cl.text, cl.headers);
  const ch = await nodeRequest({ port: p, method: 'POST', path: '/v1/agents', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' }, body: Buffer.alloc(5000, 'a'), mode: 'chunked' });
  console.log('chunked', ch.status, ch.text, ch.headers);
  const ok = await nodeRequest({ port: p, method: 'POST', path: '/v1/agents', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' }, body: Buffer.from('{"name":"chunky"}'), mode: 'chunked', waitMs: 10 });
  console.log('chunked ok', ok.status, ok.text);
  console.log('health', (await fetch(`${srv.url}/healthz`)).status);
});
