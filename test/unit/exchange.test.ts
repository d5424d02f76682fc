import { describe, expect, it } from 'vitest';
import type { HttpRequest } from '../../src/transport/http/types.js';
import { releaseRequest } from '../../src/transport/uws/exchange.js';

function request(): HttpRequest {
  return {
    method: 'POST', path: '/v1/agents/agt_1/chat', query: new URLSearchParams('a=1'),
    headers: { authorization: 'Bearer sk_secret', 'content-type': 'application/json', origin: 'https://shop.example' },
    body: Buffer.from('{"message":"hi"}'), requestId: 'req_1', remoteAddress: '127.0.0.1', arrivedAt: 0,
    responseHeaders: { 'Access-Control-Allow-Origin': 'https://shop.example' },
  };
}

describe('releaseRequest (a live stream lets go of its request head and body)', () => {
  it('drops the headers, the body and the response headers', () => {
    const req = request();
    releaseRequest(req);
    expect(req.headers).toEqual({});
    expect(Object.values(req.headers)).not.toContain('Bearer sk_secret');
    expect(req.body).toBeNull();
    expect('responseHeaders' in req).toBe(false);
  });

  it('keeps what the log line at the end reads: method, path, query, request id, remote address', () => {
    const req = request();
    releaseRequest(req);
    expect(req).toMatchObject({ method: 'POST', path: '/v1/agents/agt_1/chat', requestId: 'req_1', remoteAddress: '127.0.0.1' });
    expect(req.query.toString()).toBe('a=1');
  });

  it('gives every released request the same empty headers, which cannot be written to', () => {
    const a = request();
    const b = request();
    releaseRequest(a);
    releaseRequest(b);
    expect(a.headers).toBe(b.headers);
    expect(Object.isFrozen(a.headers)).toBe(true);
  });
});
