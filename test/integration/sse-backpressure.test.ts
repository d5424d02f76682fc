/**
 * The SSE slow-consumer bound over real sockets (API.md "Chat"; DESIGN.md "A client that disconnects
 * only unsubscribes"): a client that never reads its stream is disconnected once more than
 * PARLEY_SSE_MAX_BUFFERED_BYTES pile up for it, with a log line; its turn still finishes and is
 * stored; a client reading a steady 16 MiB/s stream on its own thread is never cut. The reply of the
 * client that never reads is sized from this machine's socket buffer limits, which the kernel may grow to
 * hold a whole 16 MiB reply (tcp_rmem's maximum is 32 MiB on some hosts).
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSseInThread, waitFor } from '../helpers/sse-client.js';

/** The reading client's reply: 512 deltas of 32 KiB (16 MiB), one every 2 ms (16 MiB/s), a flow a client that reads keeps up with. */
const DELTAS = 512;
const DELTA_CHARS = 32 * 1024;
const EVERY_MS = 2;
const BOUND = 64 * 1024;

/** The most a TCP socket's kernel buffers can grow to here, bytes: receive (tcp_rmem) plus send (tcp_wmem) maximum. */
function kernelSocketBuffers(): number {
  const max = (file: string) => Number(readFileSync(file, 'utf8').trim().split(/\s+/)[2]);
  try {
    return max('/proc/sys/net/ipv4/tcp_rmem') + max('/proc/sys/net/ipv4/tcp_wmem');
  } catch {
    return 16 * 1024 * 1024; // not Linux: a generous guess
  }
}
/**
 * The silent client's reply, written as fast as the server relays it: 1.5x what the kernel can buffer
 * for a socket (at least the reading client's 16 MiB), so that the server has to hold more than the bound
 * for a client that never reads, whatever this machine's socket buffer limits (6 to 32 MiB seen).
 */
const SILENT_DELTAS = Math.max(DELTAS, Math.ceil((1.5 * kernelSocketBuffers()) / DELTA_CHARS));

let mock: MockUpstream;
let srv: TestServer;
let agentId: string;
let silentAgentId: string;

beforeAll(async () => {
  mock = await startMockUpstream();
  srv = await startTestServer({ PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_SSE_MAX_BUFFERED_BYTES: String(BOUND) }, { captureLogs: true });
  const res = await srv.api('/v1/agents', { body: { name: 'big talker', model: { provider: 'openai', name: `mock-big-${DELTAS}x${DELTA_CHARS}-every-${EVERY_MS}` } } });
  expect(res.status).toBe(201);
  agentId = ((await res.json()) as { id: string }).id;
  const silentRes = await srv.api('/v1/agents', { body: { name: 'bigger talker', model: { provider: 'openai', name: `mock-big-${SILENT_DELTAS}x${DELTA_CHARS}` } } });
  expect(silentRes.status).toBe(201);
  silentAgentId = ((await silentRes.json()) as { id: string }).id;
});
afterAll(async () => {
  await srv?.close();
  await mock?.close();
});

/** Opens a raw connection, sends a streamed chat request and reads nothing (the socket stays paused). */
function silentClient(body: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: srv.parley.port });
    socket.pause();
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write(
        `POST /v1/agents/${silentAgentId}/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${srv.apiKey}\r\n`
        + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      resolve(socket);
    });
  });
}

/** Resumes a paused socket and collects everything until the peer closes it (or `timeoutMs` passes). */
function drain(socket: Socket, timeoutMs: number): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closedByServer });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.resume();
  });
}

describe('SSE slow-consumer bound (PARLEY_SSE_MAX_BUFFERED_BYTES=64 KiB)', () => {
  it('disconnects a client that never reads, logs it, stores its turn, and leaves a reading client alone', async () => {
    const expectedText = Array.from({ length: DELTAS }, (_, i) => `${i}:`.padEnd(DELTA_CHARS, 'x')).join('');
    const silentText = Array.from({ length: SILENT_DELTAS }, (_, i) => `${i}:`.padEnd(DELTA_CHARS, 'x')).join('');
    const silent = await silentClient(JSON.stringify({ message: 'flood me', stream: true }));

    // Meanwhile another client streams the same 16 MiB reply and reads it all. It reads on its own thread:
    // in this thread it could only read while the server (which runs here) is not writing, and would fall
    // behind by more than the 64 KiB bound on a machine that writes fast enough.
    const reader = await readSseInThread(`${srv.url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'read me', stream: true }),
    });
    expect(reader.status).toBe(200);
    expect(reader.dropped).toBe(false);
    expect(reader.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    const readerText = reader.events.filter((e) => e.data.type === 'token').map((e) => e.data.delta as string).join('');
    expect(readerText.length).toBe(DELTAS * DELTA_CHARS);
    expect(readerText === expectedText).toBe(true);

    // The server gave up on the silent client, once, and said so.
    const warning = await waitFor(() => srv.logs().find((l) => l.msg.startsWith('SSE client too slow')), 20_000, 'slow-consumer log line');
    expect(warning.level).toBe(40);
    expect(warning.max_buffered_bytes).toBe(BOUND);
    expect(warning.buffered_bytes as number).toBeGreaterThan(BOUND);
    expect(srv.logs().filter((l) => l.msg.startsWith('SSE client too slow'))).toHaveLength(1);
    const requestLine = srv.logs().find((l) => l.msg === 'request' && l.closed === 'slow_consumer');
    expect(requestLine).toMatchObject({ status: 200, turn_id: warning.turn_id });

    // Reading now yields what the kernel had buffered, then the end of a cut stream: no `done`, no last chunk.
    const got = await drain(silent, 20_000);
    expect(got.closedByServer).toBe(true);
    expect(got.text.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(got.text).not.toContain('"type":"done"');
    expect(got.text.endsWith('\r\n0\r\n\r\n')).toBe(false);
    const conversationId = /"type":"conversation","conversation_id":"(conv_[0-9A-Za-z]+)"/.exec(got.text)?.[1];
    expect(conversationId).toMatch(/^conv_/);

    // The silent client's turn finished anyway and its reply is stored whole.
    const agentMessage = await waitFor(async () => {
      const page = await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json() as { data: Array<{ role: string; status: string; content: string }> };
      return page.data.find((m) => m.role === 'agent');
    }, 20_000, 'stored agent message');
    expect(agentMessage.status).toBe('completed');
    expect(agentMessage.content.length).toBe(SILENT_DELTAS * DELTA_CHARS);
    expect(agentMessage.content === silentText).toBe(true);
  });
});
