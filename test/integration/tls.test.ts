/**
 * TLS (docs/operations.md "TLS"): with PARLEY_TLS_CERT_FILE and PARLEY_TLS_KEY_FILE the public port speaks
 * HTTPS and WSS only, every response carries Strict-Transport-Security, a reload serves new connections the
 * new certificate while open ones keep theirs, and the internal port stays plain HTTP for neighbours only.
 * Real clients: undici (HTTPS, SSE), ws (WSS), node:tls; a certificate this test makes with openssl.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch, WebSocket } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeCertificate, openTls, type TestCertificate } from '../helpers/tls.js';

const HSTS = 'max-age=31536000';
const dir = mkdtempSync(join(tmpdir(), 'parley-tls-'));
let first: TestCertificate;
let second: TestCertificate;
let certFile: string;
let keyFile: string;
let srv: TestServer;
let https: Agent;
let agent: string;

/** `fetch` over HTTPS trusting the test certificates, with the seeded API key. */
function api(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  return undiciFetch(`${srv.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'), dispatcher: https,
    headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

beforeAll(async () => {
  first = makeCertificate(dir, 'first');
  second = makeCertificate(dir, 'second');
  certFile = join(dir, 'server.crt');
  keyFile = join(dir, 'server.key');
  copyFileSync(first.certFile, certFile);
  copyFileSync(first.keyFile, keyFile);
  // A fixed port (of this test's range): a reload binds a second listening socket to it (SO_REUSEPORT),
  // which uSockets allows only for a port it was given, not for one it picked (port 0).
  srv = await startTestServer({ PARLEY_TLS_CERT_FILE: certFile, PARLEY_TLS_KEY_FILE: keyFile, PARLEY_PORT: '26443' }, { captureLogs: true });
  https = new Agent({ connect: { ca: [first.pem, second.pem] } });
  agent = await (async () => {
    const r = await api('/v1/agents', { body: { name: 'TLS bot' } });
    expect(r.status).toBe(201);
    return ((await r.json()) as { id: string }).id;
  })();
});

afterAll(async () => {
  await srv?.close();
  await https?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('HTTPS', () => {
  it('serves the API over HTTPS at an https:// URL, says so at start, and refuses plain HTTP on that port', async () => {
    expect(srv.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const r = await undiciFetch(`${srv.url}/healthz`, { dispatcher: https });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok' });
    await expect(fetch(srv.url.replace('https:', 'http:') + '/healthz')).rejects.toThrow();
    const line = srv.logs().find((l) => l.msg.startsWith('listening on'));
    expect(line?.msg).toBe(`listening on https://127.0.0.1:${srv.parley.port}, TLS on (HTTPS and WSS)`);
    expect(line?.tls).toBe(true);
  });

  it('every response carries Strict-Transport-Security: success, error, stream, CORS and its preflight, static', async () => {
    const ok = await api('/v1/agents');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('strict-transport-security')).toBe(HSTS);
    const missing = await api('/v1/agents/agt_none');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('strict-transport-security')).toBe(HSTS);
    const unauthenticated = await api('/v1/agents', { headers: { authorization: 'Bearer sk_wrong' } });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('strict-transport-security')).toBe(HSTS);
    const stream = await api(`/v1/agents/${agent}/chat`, { body: { message: 'hello over TLS', stream: true } });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('strict-transport-security')).toBe(HSTS);
    const text = await stream.text();
    expect(text).toContain('"type":"done"');
    const published = await api(`/v1/agents/${agent}/publish`, { method: 'POST' });
    const { public_key } = (await published.json()) as { public_key: string };
    const cors = await undiciFetch(`${srv.url}/v1/public/agents/${public_key}/chat`, {
      method: 'POST', dispatcher: https, headers: { origin: 'https://shop.example', 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hi' }),
    });
    expect(cors.status).toBe(200);
    expect(cors.headers.get('access-control-allow-origin')).toBe('*');
    expect(cors.headers.get('strict-transport-security')).toBe(HSTS);
    const preflight = await undiciFetch(`${srv.url}/v1/public/agents/${public_key}/chat`, {
      method: 'OPTIONS', dispatcher: https, headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('strict-transport-security')).toBe(HSTS);
    const widget = await undiciFetch(`${srv.url}/widget.js`, { dispatcher: https });
    expect(widget.headers.get('strict-transport-security')).toBe(HSTS);
  });
});

describe('WSS', () => {
  it('a chat socket over wss:// streams a turn', async () => {
    const ws = new WebSocket(`${srv.url.replace('https:', 'wss:')}/v1/agents/${agent}/chat/ws`, { dispatcher: https, headers: { authorization: `Bearer ${srv.apiKey}` } });
    const frames: Array<{ type: string }> = [];
    const done = new Promise<void>((resolve, reject) => {
      ws.addEventListener('message', (e) => {
        const f = JSON.parse(String(e.data)) as { type: string };
        frames.push(f);
        if (f.type === 'done' || f.type === 'error') resolve();
      });
      ws.addEventListener('error', () => reject(new Error('socket error')));
    });
    await new Promise((resolve, reject) => { ws.addEventListener('open', resolve); ws.addEventListener('error', reject); });
    ws.send(JSON.stringify({ type: 'message', message: 'hello over WSS' }));
    await done;
    ws.close();
    expect(frames[0]!.type).toBe('conversation');
    expect(frames.at(-1)!.type).toBe('done');
    expect(frames.some((f) => f.type === 'token')).toBe(true);
  });

  it('a refused wss:// upgrade answers its typed error with Strict-Transport-Security', async () => {
    const other = await api('/v1/agents', { body: { name: 'Shop only' } });
    const id = ((await other.json()) as { id: string }).id;
    expect((await api(`/v1/agents/${id}`, { method: 'PATCH', body: { allowed_origins: ['https://shop.example'] } })).status).toBe(200);
    const { public_key } = (await (await api(`/v1/agents/${id}/publish`, { method: 'POST' })).json()) as { public_key: string };
    const conn = await openTls(srv.parley.port, first.pem);
    const refused = await conn.get(`/v1/public/agents/${public_key}/ws`, {
      Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13', Origin: 'https://evil.example',
    });
    conn.close();
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'origin_not_allowed' } });
    expect(refused.headers['strict-transport-security']).toBe(HSTS);
  });
});

describe('reloading the certificate', () => {
  it('new connections get the new certificate, an open one keeps its own and goes on; a bad file changes nothing', async () => {
    const kept = await openTls(srv.parley.port, [first.pem, second.pem]);
    expect(kept.peerName).toBe('first');
    expect((await kept.get('/healthz')).status).toBe(200);

    copyFileSync(second.certFile, certFile);
    copyFileSync(second.keyFile, keyFile);
    expect(await srv.parley.reloadTls()).toBe(true);
    const fresh = await openTls(srv.parley.port, [first.pem, second.pem]);
    expect(fresh.peerName).toBe('second');
    const again = await kept.get('/healthz');
    expect(again.status).toBe(200);
    expect(again.headers['strict-transport-security']).toBe(HSTS);
    expect(kept.peerName).toBe('first');
    fresh.close();

    // A key that is not the certificate's: the reload fails with the reason, and nothing changes.
    copyFileSync(first.keyFile, keyFile);
    await expect(srv.parley.reloadTls()).rejects.toThrow(/not a PEM certificate and its private key/);
    writeFileSync(certFile, 'not a certificate');
    await expect(srv.parley.reloadTls()).rejects.toThrow(/TLS: .*server\.crt/);
    const still = await openTls(srv.parley.port, [first.pem, second.pem]);
    expect(still.peerName).toBe('second');
    expect((await still.get('/healthz')).status).toBe(200);
    still.close();
    expect((await kept.get('/readyz')).status).toBe(200);
    kept.close();
  });
});

describe('configuration', () => {
  it('needs both files, and refuses files that do not load at start with the reason', async () => {
    await expect(startTestServer({ PARLEY_TLS_CERT_FILE: first.certFile })).rejects.toThrow(/set both \(HTTPS\) or neither/);
    const anyPort = await startTestServer({ PARLEY_TLS_CERT_FILE: first.certFile, PARLEY_TLS_KEY_FILE: first.keyFile });
    try {
      await expect(anyPort.parley.reloadTls()).rejects.toThrow(/a reload needs a fixed PARLEY_PORT/);
      expect((await undiciFetch(`${anyPort.url}/healthz`, { dispatcher: https })).status).toBe(200);
    } finally {
      await anyPort.close();
    }
    await expect(startTestServer({ PARLEY_TLS_CERT_FILE: first.certFile, PARLEY_TLS_KEY_FILE: join(dir, 'missing.key') }))
      .rejects.toThrow(/cannot read the key file .*missing\.key \(PARLEY_TLS_KEY_FILE\)/);
  });

  it('the internal port stays plain HTTP and serves neighbours only; the public port is HTTPS', async () => {
    const two = await startTestServer({ PARLEY_TLS_CERT_FILE: first.certFile, PARLEY_TLS_KEY_FILE: first.keyFile, PARLEY_INTERNAL_PORT: '0' });
    try {
      expect(two.parley.self.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(two.parley.self.url).not.toBe(`http://127.0.0.1:${two.parley.port}`);
      const health = await fetch(`${two.parley.self.url}/healthz`);
      expect(health.status).toBe(200);
      expect(health.headers.get('strict-transport-security')).toBeNull();
      const api = await fetch(`${two.parley.self.url}/v1/agents`, { headers: { authorization: `Bearer ${two.apiKey}` } });
      expect(api.status).toBe(404);
      expect(((await api.json()) as { error: { message: string } }).error.message).toMatch(/neighbours only; use the HTTPS port/);
      // A neighbour's whoami without a signature is refused there like any unknown route (the signed one is tested in the cluster tests).
      expect((await fetch(`${two.parley.self.url}/internal/v1/whoami`)).status).toBe(404);
      const pub = await undiciFetch(`${two.url}/v1/agents`, { dispatcher: https, headers: { authorization: `Bearer ${two.apiKey}` } });
      expect(pub.status).toBe(200);
    } finally {
      await two.close();
    }
  });
});
