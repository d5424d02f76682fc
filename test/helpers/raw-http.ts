import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'vitest';

/** What a raw socket exchange produced: every byte the server sent, and how the socket ended. */
export interface RawExchange {
  /** Everything received, latin1-decoded. */
  text: string;
  /** `closed` (server ended or reset the socket) or `timeout` (still open after `timeoutMs`). */
  ended: 'closed' | 'timeout';
  /** Status code of the first response line, if any. */
  status: number | undefined;
}

/**
 * Opens a TCP connection to `port`, writes `bytes`, and collects what comes back until the server
 * closes the socket or `timeoutMs` passes (then the client closes it). An array is written piece by
 * piece, `gapMs` apart (Nagle off), so the server reads them separately, as it would across a network.
 */
export function sendRaw(port: number, bytes: string | Buffer | Array<string | Buffer>, timeoutMs = 1500, gapMs = 40): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (ended: RawExchange['ended']) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ text, ended, status: m ? Number(m[1]) : undefined });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('connect', () => {
      if (!Array.isArray(bytes)) { socket.write(bytes); return; }
      socket.setNoDelay(true);
      bytes.forEach((piece, i) => setTimeout(() => { if (!settled) socket.write(piece); }, i * gapMs));
    });
    socket.on('data', (d) => chunks.push(d));
    socket.on('end', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('error', () => finish('closed'));
  });
}

/** A response read with node:http. */
export interface NodeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * A request through node:http, where the body is sent the way `mode` says:
 * - `content-length`: headers with `Content-Length: <declaredLength ?? body length>` are flushed
 *   first; the body is written only if no response arrived within `waitMs` (a server that refuses
 *   on the declared length answers before any body byte).
 * - `chunked`: no Content-Length, so node uses `Transfer-Encoding: chunked`; the body is written
 *   as one chunk and the terminating chunk only follows if no response arrived within `waitMs`.
 * Resolves with the first response; later socket errors (the server closing) are ignored.
 */
export function nodeRequest(opts: {
  port: number; method: string; path: string; headers: Record<string, string>; body: Buffer;
  mode: 'content-length' | 'chunked'; declaredLength?: number; waitMs?: number;
}): Promise<NodeResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.mode === 'content-length') headers['content-length'] = String(opts.declaredLength ?? opts.body.length);
    const req = httpRequest({ host: '127.0.0.1', port: opts.port, method: opts.method, path: opts.path, headers, agent: false });
    let responded = false;
    req.on('response', (res) => {
      responded = true;
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        req.destroy();
      });
      res.on('error', () => { /* the server may close right after the response */ });
    });
    req.on('error', (err) => { if (!responded) reject(err); });
    if (opts.mode === 'content-length') {
      req.flushHeaders();
      setTimeout(() => { if (!responded) req.end(opts.body); }, opts.waitMs ?? 200);
    } else {
      req.write(opts.body);
      setTimeout(() => { if (!responded) req.end(); }, opts.waitMs ?? 200);
    }
  });
}

/**
 * `fetch`-like request from client address `from` (a loopback address such as 127.0.0.2: the client
 * socket is bound to it, so the server sees it as the request's address, as rate limits count it). Uses
 * node:http, whose `localAddress` binds the socket (undici's fetch has no such option). The body is read
 * whole; the answer is a WHATWG Response.
 */
export function fetchFrom(from: string, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: init.headers ?? {}, localAddress: from, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
        const status = res.statusCode ?? 0;
        resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers }));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** The API.md error body of `res`, after checking status, shape, type, code and the request id. */
export async function expectApiError(
  res: Response, status: number, type: string, code: string,
): Promise<{ error: { type: string; code: string; message: string; request_id: string; errors?: { path: string; message: string }[] } }> {
  const text = await res.text();
  expect(res.status, `${status} expected, got ${res.status}: ${text}`).toBe(status);
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  const requestId = res.headers.get('x-request-id');
  expect(requestId).toMatch(/^req_[0-9A-Za-z]+$/);
  const body = JSON.parse(text) as Awaited<ReturnType<typeof expectApiError>>;
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toMatchObject({ type, code, request_id: requestId });
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  const allowed = new Set(['type', 'code', 'message', 'request_id', 'errors']);
  for (const k of Object.keys(body.error)) expect(allowed.has(k), `unexpected error field ${k}`).toBe(true);
  return body;
}
