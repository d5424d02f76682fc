/**
 * PARLEY_METRICS_TOKEN (security review, finding 12: /metrics needed no credential; API.md "Operations"):
 * when set, GET /metrics needs `Authorization: Bearer <token>`; /healthz and /readyz stay open. A real
 * server with the token set, and one without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { expectApiError } from '../helpers/raw-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const TOKEN = 'metrics-9f2c1e0b7a5d4c3b';
let srv: TestServer;
let open: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ PARLEY_METRICS_TOKEN: TOKEN });
  open = await startTestServer();
});
afterAll(async () => {
  await srv?.close();
  await open?.close();
});

const get = (s: TestServer, path: string, headers: Record<string, string> = {}) => fetch(`${s.url}${path}`, { headers });

describe('PARLEY_METRICS_TOKEN', () => {
  it('without the token /metrics is 401 missing_credentials with WWW-Authenticate: Bearer', async () => {
    const res = await get(srv, '/metrics');
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    await expectApiError(res, 401, 'authentication_error', 'missing_credentials');
  });

  it.each([
    ['another token', `Bearer ${TOKEN}x`],
    ['a prefix of it', `Bearer ${TOKEN.slice(0, -1)}`],
    ['the API key', 'Bearer sk_whatever'],
    ['another scheme', `Basic ${TOKEN}`],
    ['no token after the scheme', 'Bearer '],
  ])('with %s it is 401 invalid_token', async (_name, authorization) => {
    const res = await get(srv, '/metrics', { authorization });
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    await expectApiError(res, 401, 'authentication_error', 'invalid_token');
  });

  it('with the token it serves the Prometheus text (the scheme in any case)', async () => {
    for (const authorization of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`]) {
      const res = await get(srv, '/metrics', { authorization });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(await res.text()).toContain('parley_http_requests_total');
    }
  });

  it('/healthz and /readyz stay open', async () => {
    expect((await get(srv, '/healthz')).status).toBe(200);
    expect((await get(srv, '/readyz')).status).toBe(200);
  });

  it('unset, /metrics needs no credential', async () => {
    expect((await get(open, '/metrics')).status).toBe(200);
  });

  it('OpenAPI describes the optional metricsToken scheme and the 401', async () => {
    const doc = await (await get(srv, '/v1/openapi.json')).json() as {
      paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, { description: string }> }>>;
      components: { securitySchemes: Record<string, Record<string, unknown>> };
    };
    expect(doc.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/metrics']!.get!.security).toEqual([{}, { metricsToken: [] }]);
    expect(doc.paths['/metrics']!.get!.responses['401']!.description).toContain('missing_credentials');
    expect(doc.paths['/healthz']!.get!.security).toEqual([]);
  });

  it('a token shorter than 16 characters, or with spaces, does not start the server', () => {
    expect(() => loadConfig({ PARLEY_METRICS_TOKEN: 'short' })).toThrow(/PARLEY_METRICS_TOKEN/);
    expect(() => loadConfig({ PARLEY_METRICS_TOKEN: 'a token with spaces in it' })).toThrow(/PARLEY_METRICS_TOKEN/);
  });
});
