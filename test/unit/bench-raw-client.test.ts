/**
 * The load generator's connections (bench/lib/raw-client.ts) against a real HTTP server on loopback: a
 * target with several bodies sends them in turn, and a pool that picks a random idle connection spreads
 * requests over all of them (so that, with several processes on one port, turns reach every process).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTarget, Conn, ConnPool } from '../../bench/lib/raw-client.js';

let server: http.Server;
let port = 0;
/** Every request's body, and the server-side socket it came on, in arrival order. */
const seen: { body: string; socket: Socket }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => {
      seen.push({ body, socket: req.socket });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const spec = (bodies?: string[]) => ({
  name: 't', port, flavor: 'events' as const, method: 'POST', path: '/x', headers: { 'Content-Type': 'application/json' }, body: 'single',
  ...(bodies ? { bodies } : {}),
});

describe('bench raw client', () => {
  it('sends the bodies of a target in turn, round robin, and the one body without them (or with none)', async () => {
    seen.length = 0;
    const c = new Conn(buildTarget(spec(['a', 'b', 'c'])));
    for (let i = 0; i < 5; i++) expect((await c.send({ sse: false }).done).ok).toBe(true);
    c.destroy();
    const plain = new Conn(buildTarget(spec()));
    expect((await plain.send({ sse: false }).done).ok).toBe(true);
    plain.destroy();
    const none = new Conn(buildTarget(spec([])));
    expect((await none.send({ sse: false }).done).ok).toBe(true);
    none.destroy();
    expect(seen.map((s) => s.body)).toEqual(['a', 'b', 'c', 'a', 'b', 'single', 'single']);
  });

  it('spreads requests over every pre-opened connection with pick "random" (the default reuses the last one)', async () => {
    const run = async (pick: 'stack' | 'random'): Promise<number> => {
      seen.length = 0;
      const pool = new ConnPool(buildTarget(spec()), pick);
      expect(await pool.prewarm(20)).toBe(20);
      for (let i = 0; i < 200; i++) {
        const c = pool.acquire();
        const ex = c.send({ sse: false });
        expect((await ex.done).ok).toBe(true);
        pool.release(c, ex);
      }
      // Every request went over one of the pre-opened connections: none was opened on the way.
      expect(pool.all.size).toBe(20);
      pool.closeAll();
      return new Set(seen.map((s) => s.socket)).size;
    };
    expect(await run('stack')).toBe(1);
    // 200 random picks among 20 idle connections miss one with odds of 20 x (19/20)^200, about 7e-4.
    expect(await run('random')).toBeGreaterThanOrEqual(19);
  });

  it('with pick "random", skips idle connections that died and opens one when none is left', async () => {
    seen.length = 0;
    const pool = new ConnPool(buildTarget(spec()), 'random');
    const empty = pool.acquire();
    const ex0 = empty.send({ sse: false });
    expect((await ex0.done).ok).toBe(true);
    pool.release(empty, ex0);
    expect(await pool.prewarm(3)).toBe(3);
    // The server closes every connection it holds: the idle ones are dead once their close arrives.
    for (const s of new Set(seen.map((x) => x.socket))) s.destroy();
    server.closeAllConnections();
    await new Promise((r) => setTimeout(r, 100));
    const c = pool.acquire();
    expect(c.dead).toBe(false);
    const ex = c.send({ sse: false });
    expect((await ex.done).ok).toBe(true);
    pool.closeAll();
  });
});
