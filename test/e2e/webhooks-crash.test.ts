/**
 * kill -9 in the middle of a webhook attempt (API.md "Webhooks": a sweep re-enqueues deliveries lost to
 * a crash): the server runs as a child process (`node dist/src/main.js`); the receiver SIGKILLs it when
 * the first request arrives, before the server could record the attempt. After a restart on the same
 * data, the start-up sweep records that attempt as interrupted and the delivery goes out again with the
 * same event id; the history shows both attempts. And a kill after an HTTP tool ran but before the turn's
 * reply was stored: the run's `tool.run` still arrives after the restart (it is stored with the run).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { credentialsOf, exitOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { waitFor } from '../helpers/sse-client.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const dirs: string[] = [];
const children: MainProcess[] = [];
let rx: Receiver | undefined;
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers) await close();
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await rx?.close();
});

type Json = Record<string, any>;

describe('kill -9 while a webhook attempt is in flight, then restart', () => {
  it('redelivers with the same event id and records the cut attempt as interrupted', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-whcrash-'));
    const docsDir = mkdtempSync(join(tmpdir(), 'parley-whcrash-docs-'));
    dirs.push(dataDir, docsDir);
    const env = { PARLEY_DOCS_DIR: docsDir, PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_WEBHOOK_MAX_IN_FLIGHT: '1', PARLEY_MAX_LOOP_LAG_MS: '60000' };
    let victim: MainProcess | undefined;
    rx = await startReceiver((_req, n) => {
      if (n === 1) { victim?.child.kill('SIGKILL'); return 'hang'; }
      return { status: 200, body: 'thanks' };
    });
    const first = await startMain(dataDir, env);
    children.push(first);
    victim = first;
    const creds = await credentialsOf(dataDir);
    const headers = { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' };
    const api = async (srv: MainProcess, path: string, body?: unknown): Promise<Json> => {
      const res = await fetch(`${srv.url}${path}`, { method: body === undefined ? 'GET' : 'POST', headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { ...(await res.json() as Json), http_status: res.status };
    };
    const ep = await api(first, '/v1/webhooks', { url: `${rx.url}/hook`, events: ['conversation.created'] });
    expect(ep.http_status).toBe(201);
    // A real change: a new conversation (its event is stored in the commit of the conversation). The
    // delivery arrives while the turn still runs, so the kill cuts the chat request too.
    void api(first, `/v1/agents/${creds.agent_id}/chat`, { message: 'hello' }).catch(() => undefined);

    expect(await exitOf(first.child)).toBeNull();
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(rx.got).toHaveLength(1);
    const eventId = rx.got[0]!.json.id;
    expect(rx.got[0]!.json).toMatchObject({ type: 'conversation.created', data: { agent_id: creds.agent_id } });
    const conversationId = rx.got[0]!.json.data.conversation_id as string;

    const second = await startMain(dataDir, env);
    children.push(second);
    try {
      // The conversation the event tells of was stored with it.
      expect((await api(second, `/v1/conversations/${conversationId}`)).http_status).toBe(200);
      await rx.waitFor((g) => g.length >= 2, 20_000);
      expect(rx.got.map((g) => g.json.id)).toEqual([eventId, eventId]);
      expect(new Webhook(ep.secret).verify(rx.got[1]!.raw, rx.got[1]!.headers as Record<string, string>)).toBeTruthy();
      const deliveries = await api(second, `/v1/webhooks/${ep.id}/deliveries`);
      expect(deliveries.data).toHaveLength(1);
      const d = await waitFor(async () => {
        const x = await api(second, `/v1/webhooks/${ep.id}/deliveries/${deliveries.data[0].id}`);
        return x.http_status === 200 && x.attempt_count === 2 && x.attempts.length === 2 ? x : undefined;
      }, 10_000, 'both attempts recorded');
      expect(d).toMatchObject({ event_id: eventId, status: 'succeeded', attempt_count: 2 });
      expect(d.attempts.map((a: Json) => [a.number, a.status])).toEqual([[1, 0], [2, 200]]);
      expect(d.attempts[0].error).toMatch(/^interrupted/);
      expect(d.attempts[1]).toMatchObject({ body: 'thanks', error: null });
    } finally {
      second.child.kill('SIGTERM');
      await exitOf(second.child);
    }
  }, 120_000);
  it('a turn cut short after its tool ran still delivers that tool.run (stored with the run, not with the reply)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-whcrash-'));
    const docsDir = mkdtempSync(join(tmpdir(), 'parley-whcrash-docs-'));
    dirs.push(dataDir, docsDir);
    // The customer's endpoint the agent's HTTP tool calls.
    const endpoint = http.createServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"forecast":"rain"}'); });
    await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => { endpoint.closeAllConnections(); endpoint.close(r); }));
    const mock: MockUpstream = await startMockUpstream();
    closers.push(() => mock.close());
    const hooks = await startReceiver();
    closers.push(() => hooks.close());
    const env = {
      PARLEY_DOCS_DIR: docsDir, PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_TOOLS_ALLOW_PRIVATE: 'true',
      PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_MAX_LOOP_LAG_MS: '60000',
    };
    const first = await startMain(dataDir, env);
    children.push(first);
    const creds = await credentialsOf(dataDir);
    const headers = { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' };
    const api = async (srv: MainProcess, path: string, body?: unknown): Promise<Json> => {
      const res = await fetch(`${srv.url}${path}`, { method: body === undefined ? 'GET' : 'POST', headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { ...(await res.json() as Json), http_status: res.status };
    };
    expect((await api(first, '/v1/webhooks', { url: `${hooks.url}/hook`, events: ['tool.run', 'message.created'] })).http_status).toBe(201);
    const tool = {
      type: 'http', name: 'get_weather', description: 'The forecast of a city', url: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/weather`,
      method: 'POST', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, timeout_ms: 2000,
    };
    const agent = await api(first, '/v1/agents', { name: 'Forecaster', model: { provider: 'openai', name: 'mock-call-get_weather' }, tools: [tool] });
    expect(agent.http_status).toBe(201);
    // The model's second request carries the tool's result, so the run is recorded by then: the kill comes
    // as that request arrives, before the model answers and the reply can be stored.
    const push = mock.requests.push.bind(mock.requests);
    mock.requests.push = (...items) => {
      if (mock.requests.length === 1) first.child.kill('SIGKILL');
      return push(...items);
    };
    const chat = api(first, `/v1/agents/${agent.id}/chat`, { message: '{"city":"Lyon"}' }).catch(() => undefined);
    expect(await exitOf(first.child)).toBeNull();
    await chat;
    expect(mock.requests).toHaveLength(2);

    const second = await startMain(dataDir, env);
    children.push(second);
    try {
      const got = await hooks.waitFor((g) => g.some((x) => x.json.type === 'tool.run') && g.some((x) => x.json.type === 'message.created' && x.json.data.status === 'failed'), 20_000);
      const run = got.find((x) => x.json.type === 'tool.run')!.json.data;
      expect(run).toMatchObject({ name: 'get_weather', arguments: { city: 'Lyon' }, output: expect.objectContaining({ status: 200 }), is_error: false, kind: 'http', status: 'succeeded' });
      // The reply the crash cut short is the failed one recovery stored, in the same turn.
      const failed = got.find((x) => x.json.type === 'message.created' && x.json.data.role === 'agent')!.json.data;
      expect(failed).toMatchObject({ status: 'failed', turn_id: run.turn_id });
    } finally {
      second.child.kill('SIGTERM');
      await exitOf(second.child);
    }
  }, 120_000);
});
