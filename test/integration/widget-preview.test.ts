/**
 * The widget preview page (`GET /preview/{public_key}`, src/transport/static/widget-preview.ts): a sample
 * page embedding the widget with the embed tag, served with its own policy (scripts from this origin
 * only, framed only by this origin); malformed keys and other methods refused.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, publish } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let srv: TestServer;
let key: string;
beforeAll(async () => {
  srv = await startTestServer();
  key = await publish(srv, await createAgent(srv, { name: 'Previewed' }));
});
afterAll(async () => { await srv?.close(); });

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: string }

function call(method: string, path: string): Promise<Answer> {
  return new Promise((res, rej) => {
    const req = httpRequest({ host: '127.0.0.1', port: srv.parley.port, method, path, agent: false }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (d: Buffer) => chunks.push(d));
      r.on('end', () => res({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', rej);
    req.end();
  });
}

describe('GET /preview/{public_key}', () => {
  it('serves a page whose only script is the embed tag, under a policy that allows it and same-origin framing', async () => {
    const a = await call('GET', `/preview/${key}`);
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toBe('text/html; charset=utf-8');
    const scripts = [...a.body.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    expect(scripts).toEqual([`<script src="/widget.js" data-public-key="${key}" async>`]);
    const csp = String(a.headers['content-security-policy']);
    expect(csp.split('; ')).toEqual(expect.arrayContaining(["script-src 'self'", "connect-src 'self'", "frame-ancestors 'self'", "object-src 'none'"]));
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(a.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(a.headers['x-content-type-options']).toBe('nosniff');
    expect(a.headers['cache-control']).toBe('no-store');
    const head = await call('HEAD', `/preview/${key}`);
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('answers 404 for anything that is not a public key, echoing nothing of it, and 405 for other methods', async () => {
    for (const path of ['/preview', '/preview/', '/preview/sk_abc', `/preview/${key}/x`, '/preview/pk_%3Cscript%3Ealert(1)%3C%2Fscript%3E', '/preview/pk_<b>hello</b>']) {
      const a = await call('GET', path);
      expect(a.status, path).toBe(404);
      expect(JSON.parse(a.body).error.code, path).toBe('not_found');
      expect(a.body, path).not.toContain('<');
    }
    const post = await call('POST', `/preview/${key}`);
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    // A path that only starts like the mount is not the preview's.
    expect((await call('GET', '/previewx')).headers['content-security-policy']).toBeUndefined();
  });
});
