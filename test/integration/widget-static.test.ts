/**
 * The chat widget's script as Parley serves it (/widget.js, docs/widget.md "Size and caching"): the
 * build of `npm run build` from memory, loadable from any origin, JavaScript, briefly cached with an
 * ETag (304), gzip, HEAD; only the one path; 404 saying how to build it when it is missing.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

const built = resolve(import.meta.dirname, '../../dist/web/widget/widget.js');

let srv: TestServer;
beforeAll(async () => {
  expect(existsSync(built), 'run `npm run build` first (it builds the widget)').toBe(true);
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

describe('GET /widget.js', () => {
  it('serves the built script to any origin as JavaScript, cached 5 minutes then revalidated', async () => {
    const a = await call('GET', '/widget.js', { origin: 'https://shop.example' });
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(a.headers['access-control-allow-origin']).toBe('*');
    expect(a.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(a.headers['x-content-type-options']).toBe('nosniff');
    expect(a.headers['cache-control']).toBe('public, max-age=300, stale-while-revalidate=86400');
    expect(a.headers['content-encoding']).toBeUndefined();
    expect(a.body.equals(readFileSync(built))).toBe(true);
    // No page policy of the dashboard: the script runs inside other sites' pages.
    expect(a.headers['content-security-policy']).toBeUndefined();
    expect(a.headers['x-frame-options']).toBeUndefined();
  });

  it('answers 304 to its ETag, gzips when asked, and answers HEAD without a body', async () => {
    const plain = await call('GET', '/widget.js');
    const etag = String(plain.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    const again = await call('GET', '/widget.js', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);

    const zipped = await call('GET', '/widget.js', { 'accept-encoding': 'gzip, br' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('Accept-Encoding');
    expect(zipped.headers.etag).not.toBe(etag);
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
    // The budget of docs/widget.md: under 25 KiB gzipped.
    expect(zipped.body.length).toBeLessThan(25 * 1024);

    const head = await call('HEAD', '/widget.js');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-type']).toBe('text/javascript; charset=utf-8');
  });

  it('is the one path: nothing under it, no other method', async () => {
    const under = await call('GET', '/widget.js/index.html');
    expect(under.status).toBe(404);
    expect(JSON.parse(under.body.toString()).error.code).toBe('not_found');
    const post = await call('POST', '/widget.js', { 'content-length': '0' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });
});

describe('a server without a built widget', () => {
  it('starts, and answers /widget.js with 404 saying how to build it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'parley-no-widget-'));
    const bare = await startTestServer({ PARLEY_WIDGET_DIR: join(empty, 'missing') });
    try {
      const a = await call('GET', '/widget.js', {}, bare.parley.port);
      expect(a.status).toBe(404);
      expect(JSON.parse(a.body.toString()).error.message).toContain('npm run build');
      expect((await call('GET', '/healthz', {}, bare.parley.port)).status).toBe(200);
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
