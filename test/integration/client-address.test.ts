/**
 * Client addresses behind proxies (docs/operations.md "Behind a reverse proxy"): with the socket peer in
 * PARLEY_TRUSTED_PROXIES, the rate limits of the public endpoints count per forwarded client address;
 * without it, a forged header changes nothing. The server is real (uWS on a free port); the "proxy" is
 * this test on loopback, sending the headers a proxy would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, publish } from '../helpers/live.js';
import { sendRaw } from '../helpers/raw-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { rawUpgrade } from '../helpers/ws-client.js';

const LIMIT = 3;
const servers: TestServer[] = [];

/** A server allowing LIMIT public requests per client address per minute, with `env`, and a published agent's key. */
async function serverWith(env: Record<string, string>): Promise<{ srv: TestServer; pk: string }> {
  const srv = await startTestServer({ PARLEY_PUBLIC_REQUESTS_PER_MINUTE: String(LIMIT), PARLEY_PUBLIC_VISITOR_REQUESTS_PER_MINUTE: '1000', ...env }, { captureLogs: true });
  servers.push(srv);
  return { srv, pk: await publish(srv, await createAgent(srv, { name: 'Proxy bot' })) };
}

/**
 * One public request (a conversation's messages: it counts against the address's bucket, then answers
 * 404 for the unknown conversation), with `headers`; its status.
 */
async function publicRequest(srv: TestServer, pk: string, headers: Record<string, string>): Promise<number> {
  const r = await fetch(`${srv.url}/v1/public/agents/${pk}/conversations/conv_none/messages`, { headers });
  await r.arrayBuffer();
  return r.status;
}

/** Statuses of `n` public requests with `headers`, one after the other. */
async function statuses(srv: TestServer, pk: string, n: number, headers: Record<string, string>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await publicRequest(srv, pk, headers));
  return out;
}

afterAll(async () => { for (const s of servers) await s.close(); });

describe('behind a trusted proxy (PARLEY_TRUSTED_PROXIES=loopback)', () => {
  let srv: TestServer;
  let pk: string;
  beforeAll(async () => { ({ srv, pk } = await serverWith({ PARLEY_TRUSTED_PROXIES: 'loopback' })); });

  it('two X-Forwarded-For addresses get two buckets', async () => {
    expect(await statuses(srv, pk, LIMIT, { 'x-forwarded-for': '203.0.113.7' })).toEqual(Array(LIMIT).fill(401));
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '203.0.113.7' })).toBe(429);
    // Another visitor behind the same proxy still has its whole allowance.
    expect(await statuses(srv, pk, LIMIT, { 'x-forwarded-for': '203.0.113.8' })).toEqual(Array(LIMIT).fill(401));
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '203.0.113.8' })).toBe(429);
  });

  it('what a client writes left of the proxy\'s entry does not move it to another bucket', async () => {
    await statuses(srv, pk, LIMIT, { 'x-forwarded-for': '203.0.113.20' });
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '198.51.100.99, 203.0.113.20' })).toBe(429);
    // Each proxy may add its entry as a line of its own: the lines are one list, read in order (the
    // second, trusted proxy's line alone would make 127.0.0.9 the client).
    const raw = await sendRaw(srv.parley.port, [
      `GET /v1/public/agents/${pk}/conversations/conv_none/messages HTTP/1.1\r\nHost: x\r\n`
      + 'X-Forwarded-For: 198.51.100.98, 203.0.113.20\r\nX-Forwarded-For: 127.0.0.9\r\nConnection: close\r\n\r\n',
    ]);
    expect(raw.status).toBe(429);
  });

  it('the request log line names the forwarded client', async () => {
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '2001:db8::77' })).toBe(401);
    const line = srv.logs().find((l) => l.msg === 'request' && typeof l.url === 'string' && l.client_address === '2001:db8::77');
    expect(line, 'a request line with client_address 2001:db8::77').toBeDefined();
  });

  it('a public socket upgrade counts in the bucket of the forwarded address', async () => {
    await statuses(srv, pk, LIMIT, { 'x-forwarded-for': '203.0.113.30' });
    const refused = await rawUpgrade(srv.parley.port, `/v1/public/agents/${pk}/ws`, { 'X-Forwarded-For': '203.0.113.30' });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'rate_limited' } });
    const opened = await rawUpgrade(srv.parley.port, `/v1/public/agents/${pk}/ws`, { 'X-Forwarded-For': '203.0.113.31' });
    expect(opened.status).toBe(101);
    // The upgrade and its message frames count for 203.0.113.31: one upgrade, one message, then LIMIT - 2 requests.
    const sock = opened.socket!;
    sock.send({ type: 'message', message: 'hello' });
    await sock.next((f) => f.type === 'conversation');
    sock.drop();
    expect(await statuses(srv, pk, LIMIT - 2, { 'x-forwarded-for': '203.0.113.31' })).toEqual(Array(LIMIT - 2).fill(401));
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '203.0.113.31' })).toBe(429);
  });
});

describe('sign-in throttling behind a trusted proxy', () => {
  it('failed sign-ins count per forwarded address: one client\'s failures do not throttle another', async () => {
    const srv = await startTestServer({ PARLEY_TRUSTED_PROXIES: 'loopback', PARLEY_LOGIN_FAILURES_PER_ADDRESS: '2' });
    servers.push(srv);
    const login = async (address: string, n: number) => {
      const r = await fetch(`${srv.url}/v1/auth/login`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify({ email: `nobody${n}@example.com`, password: 'wrong password' }),
      });
      await r.arrayBuffer();
      return r.status;
    };
    expect([await login('203.0.113.50', 1), await login('203.0.113.50', 2)]).toEqual([401, 401]);
    expect(await login('203.0.113.50', 3)).toBe(429);
    expect(await login('203.0.113.51', 4)).toBe(401);
  });
});

describe('without a trusted proxy', () => {
  it('a forged X-Forwarded-For changes nothing: every request counts for the socket peer', async () => {
    const { srv, pk } = await serverWith({});
    const forged = await Promise.all(Array.from({ length: LIMIT }, (_v, i) => publicRequest(srv, pk, { 'x-forwarded-for': `203.0.113.${100 + i}` })));
    expect(forged).toEqual(Array(LIMIT).fill(401));
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '203.0.113.200', forwarded: 'for=203.0.113.201' })).toBe(429);
    const line = srv.logs().find((l) => l.msg === 'request' && l.status === 429);
    expect(line?.client_address).toBe('127.0.0.1');
  });

  it('a trusted list that does not hold the peer changes nothing either', async () => {
    const { srv, pk } = await serverWith({ PARLEY_TRUSTED_PROXIES: '10.0.0.0/8,private' });
    await statuses(srv, pk, LIMIT, { 'x-forwarded-for': '203.0.113.1' });
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '203.0.113.2' })).toBe(429);
  });
});

describe('PARLEY_FORWARDED_HEADER=forwarded (RFC 7239)', () => {
  it('buckets by the for= of the proxy\'s Forwarded element, and ignores X-Forwarded-For', async () => {
    const { srv, pk } = await serverWith({ PARLEY_TRUSTED_PROXIES: 'loopback', PARLEY_FORWARDED_HEADER: 'forwarded' });
    const a = { forwarded: 'for="[2001:db8:cafe::17]:4711";proto=https' };
    expect(await statuses(srv, pk, LIMIT, a)).toEqual(Array(LIMIT).fill(401));
    expect(await publicRequest(srv, pk, { forwarded: 'for=198.51.100.1, for="[2001:db8:cafe::17]"' })).toBe(429);
    expect(await publicRequest(srv, pk, { forwarded: 'for=192.0.2.60;proto=https;by=203.0.113.43' })).toBe(401);
    // X-Forwarded-For is the client's own in this mode: it lands in the proxy's (the peer's) bucket.
    expect(await statuses(srv, pk, LIMIT, { 'x-forwarded-for': '2001:db8:cafe::17' })).toEqual(Array(LIMIT).fill(401));
    expect(await publicRequest(srv, pk, { 'x-forwarded-for': '203.0.113.9' })).toBe(429);
  });
});
