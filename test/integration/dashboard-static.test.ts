/**
 * The dashboard's files as Parley serves them (/dashboard, outside /v1 and the OpenAPI document): the
 * build of `npm run build` from memory, the single-page fallback, content types, caching (hashed asset
 * names, ETags and 304), gzip, HEAD, and the security headers (strict CSP, nosniff) on every answer.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

const built = resolve(import.meta.dirname, '../../dist/web/dashboard/index.html');

let srv: TestServer;
beforeAll(async () => {
  expect(existsSync(built), 'run `npm run build` first (it builds the dashboard)').toBe(true);
  srv = await startTestServer();
});
afterAll(async () => { await srv?.close(); });

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }

/** One request through node:http (no automatic decompression, every header as sent). */
function call(method: string, path: string, headers: Record<string, string> = {}, port = srv.parley.port): Promise<Answer> {
  return new Promise((res, rej) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (d: Buffer) => chunks.push(d));
      r.on('end', () => res({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', rej);
    req.end();
  });
}

/** The asset URLs index.html names. */
function assetsOf(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!);
}

function expectSecurityHeaders(a: Answer): void {
  const csp = String(a.headers['content-security-policy']);
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(a.headers['x-content-type-options']).toBe('nosniff');
  expect(a.headers['x-request-id']).toMatch(/^req_/);
}

describe('GET /dashboard', () => {
  it('serves index.html with the security headers, revalidated on every load, naming only its own hashed assets', async () => {
    const a = await call('GET', '/dashboard');
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(a.headers['cache-control']).toBe('no-cache');
    expect(a.headers.etag).toMatch(/^"[\w-]+"$/);
    expectSecurityHeaders(a);
    const html = a.body.toString();
    // No inline script or style (the CSP would refuse them), nothing from another origin.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=/);
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    const assets = assetsOf(html);
    expect(assets).toEqual(expect.arrayContaining([
      expect.stringMatching(/^\/dashboard\/assets\/app-\w+\.js$/),
      expect.stringMatching(/^\/dashboard\/assets\/app-\w+\.css$/),
      expect.stringMatching(/^\/dashboard\/assets\/icon-\w+\.svg$/),
    ]));
  });

  it('serves each asset with its media type, cached for a year as immutable', async () => {
    const html = (await call('GET', '/dashboard')).body.toString();
    const types: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' };
    for (const path of assetsOf(html)) {
      const a = await call('GET', path);
      expect(a.status, path).toBe(200);
      expect(a.headers['content-type'], path).toBe(types[path.split('.').at(-1)!]);
      expect(a.headers['cache-control'], path).toBe('public, max-age=31536000, immutable');
      expect(a.body.length, path).toBeGreaterThan(0);
      expectSecurityHeaders(a);
    }
  });

  it('answers every page path of the app with index.html (reloads and bookmarks work), but not unknown assets', async () => {
    const index = (await call('GET', '/dashboard')).body.toString();
    for (const path of ['/dashboard/', '/dashboard/keys', '/dashboard/members', '/dashboard/no/such/page', '/dashboard/index.html']) {
      const a = await call('GET', path);
      expect(a.status, path).toBe(200);
      expect(a.body.toString(), path).toBe(index);
    }
    const missing = await call('GET', '/dashboard/assets/app-NOPE.js');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/json');
    expect(JSON.parse(missing.body.toString()).error.code).toBe('not_found');
    expectSecurityHeaders(missing);
    // A path that only starts like the mount is not the dashboard's.
    const other = await call('GET', '/dashboardx');
    expect(other.status).toBe(404);
    expect(other.headers['content-security-policy']).toBeUndefined();
  });

  it('HEAD answers like GET without a body', async () => {
    const html = (await call('GET', '/dashboard')).body.toString();
    for (const path of ['/dashboard', '/dashboard/keys', ...assetsOf(html)]) {
      const get = await call('GET', path);
      const head = await call('HEAD', path);
      expect(head.status, path).toBe(200);
      expect(head.body.length, path).toBe(0);
      expect(head.headers['content-length'], path).toBe(String(get.body.length));
      for (const h of ['content-type', 'cache-control', 'etag', 'content-security-policy', 'x-content-type-options']) {
        expect(head.headers[h], `${path} ${h}`).toBe(get.headers[h]);
      }
    }
  });

  it('answers 304 to a matching If-None-Match, and 200 to a stale one', async () => {
    const first = await call('GET', '/dashboard');
    const etag = String(first.headers.etag);
    const again = await call('GET', '/dashboard', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect(again.headers.etag).toBe(etag);
    expect(again.headers['cache-control']).toBe('no-cache');
    expect((await call('GET', '/dashboard', { 'if-none-match': `"stale", W/${etag}` })).status).toBe(304);
    expect((await call('GET', '/dashboard', { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('sends gzip to a client that accepts it, with its own ETag and Vary, and the same content', async () => {
    const html = (await call('GET', '/dashboard')).body.toString();
    const js = assetsOf(html).find((p) => p.endsWith('.js'))!;
    const plain = await call('GET', js);
    const packed = await call('GET', js, { 'accept-encoding': 'br, gzip;q=0.8' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(packed.headers['content-encoding']).toBe('gzip');
    expect(packed.headers.vary).toBe('Accept-Encoding');
    expect(plain.headers.vary).toBe('Accept-Encoding');
    expect(packed.headers.etag).not.toBe(plain.headers.etag);
    expect(packed.body.length).toBeLessThan(plain.body.length);
    expect(gunzipSync(packed.body).equals(plain.body)).toBe(true);
    const refused = await call('GET', js, { 'accept-encoding': 'gzip;q=0, identity' });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });

  it('refuses other methods with 405 and Allow: GET, HEAD', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const a = await call(method, '/dashboard/keys');
      expect(a.status, method).toBe(405);
      expect(a.headers.allow).toBe('GET, HEAD');
      expect(JSON.parse(a.body.toString()).error.code).toBe('method_not_allowed');
    }
    // The server keeps serving.
    expect((await call('GET', '/dashboard')).status).toBe(200);
  });

  it('is not part of the API document (it is not an API)', async () => {
    const openapi = await (await fetch(`${srv.url}/v1/openapi.json`)).json() as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths).filter((p) => p.startsWith('/dashboard'))).toEqual([]);
  });
});

describe('a server without a built dashboard', () => {
  it('starts, and answers /dashboard with 404 saying how to build it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'parley-no-dashboard-'));
    const bare = await startTestServer({ PARLEY_DASHBOARD_DIR: join(empty, 'missing') });
    try {
      const a = await call('GET', '/dashboard', {}, bare.parley.port);
      expect(a.status).toBe(404);
      expect(JSON.parse(a.body.toString()).error.message).toContain('npm run build');
      expect((await call('GET', '/healthz', {}, bare.parley.port)).status).toBe(200);
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
