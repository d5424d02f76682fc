/**
 * Webhooks end to end (API.md "Webhooks", SPEC.md 6.2): real receivers (node:http) on loopback, a real
 * server with private networks allowed and a retry schedule in milliseconds. Retries with the same
 * event id and every attempt recorded, a receiver that hangs (timeout), a 3xx (not followed), 410
 * (disabled, re-enabled by PATCH, recovered), 5 days of failure (here 400 ms), verification with the
 * standardwebhooks library and a hand-written raw-body HMAC, rotation with both secrets signing, and
 * every one of the nine events reaching a receiver from a real flow. A second server without private
 * networks refuses the SSRF vectors.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookSender } from '../../src/webhooks/sender.js';
import { createAgent } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startReceiver, type Receiver, type Received } from '../helpers/webhook-receiver.js';

interface Endpoint { id: string; url: string; events: string[]; status: string; disabled_reason: string | null; secret: string }
interface Attempt { number: number; status: number; body: string; error: string | null; duration_ms: number; at: string }
interface Delivery { id: string; event_id: string; event_type: string; status: string; attempt_count: number; last_response: { status: number } | null; last_error: string | null; attempts: Attempt[] }

let srv: TestServer;
let rx: Receiver;
const flakyFailures = 2;

async function ok<T>(res: Response | Promise<Response>, status: number): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, text).toBe(status);
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

async function endpoint(s: TestServer, url: string, events: string[] = ['*']): Promise<Endpoint> {
  return ok<Endpoint>(s.api('/v1/webhooks', { body: { url, events } }), 201);
}

async function delivery(s: TestServer, endpointId: string, deliveryId: string): Promise<Delivery> {
  return ok<Delivery>(s.api(`/v1/webhooks/${endpointId}/deliveries/${deliveryId}`), 200);
}

/** Polls a delivery until `pred` holds. */
async function deliveryWhen(s: TestServer, endpointId: string, deliveryId: string, pred: (d: Delivery) => boolean, timeoutMs = 20_000): Promise<Delivery> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await delivery(s, endpointId, deliveryId);
    if (pred(d)) return d;
    if (Date.now() > deadline) throw new Error(`delivery ${deliveryId} never matched: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function sendTest(s: TestServer, endpointId: string): Promise<{ delivery_id: string; event_id: string }> {
  return ok(s.api(`/v1/webhooks/${endpointId}/test`, { method: 'POST' }), 202);
}

const byPath = (path: string) => (got: Received[]) => got.filter((g) => g.path === path);

beforeAll(async () => {
  let flaky = 0;
  let gone = 0;
  rx = await startReceiver((req) => {
    switch (req.path) {
      case '/flaky': return ++flaky <= flakyFailures ? { status: 503, body: `down ${flaky}` } : { status: 204 };
      case '/hang': return 'hang';
      case '/redirect': return { status: 302, headers: { location: `${rx.url}/trap` } };
      case '/gone': return ++gone === 1 ? { status: 410, body: 'gone for good' } : { status: 200 };
      case '/big': return { status: 500, body: 'x'.repeat(10_000) };
      default: return { status: 200, body: 'ok' };
    }
  });
  srv = await startTestServer({
    PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_WEBHOOK_RETRY_SCHEDULE_MS: '0,150,150,150',
    PARLEY_WEBHOOK_TIMEOUT_MS: '700', PARLEY_WEBHOOK_SWEEP_MS: '500',
  });
});

afterAll(async () => {
  await srv?.close();
  await rx?.close();
});

describe('webhook endpoints', () => {
  it('lists the nine events of SPEC.md and conversation.deleted; shows the secret only on create; validates; scopes by organization', async () => {
    const events = await ok<{ data: Array<{ name: string; description: string }> }>(srv.api('/v1/webhooks/events'), 200);
    expect(events.data.map((e) => e.name)).toEqual([
      'message.created', 'conversation.created', 'conversation.closed', 'handoff.requested', 'handoff.resolved',
      'document.ready', 'document.failed', 'tool.run', 'usage.threshold', 'conversation.deleted',
    ]);
    expect(events.data.every((e) => e.description.length > 10)).toBe(true);
    const created = await endpoint(srv, `${rx.url}/ok`, ['tool.run', 'message.created', 'tool.run']);
    expect(created).toMatchObject({ url: `${rx.url}/ok`, events: ['message.created', 'tool.run'], status: 'enabled', disabled_reason: null });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const got = await ok<Record<string, unknown>>(srv.api(`/v1/webhooks/${created.id}`), 200);
    expect(got).not.toHaveProperty('secret');
    const list = await ok<{ data: Array<Record<string, unknown>> }>(srv.api('/v1/webhooks'), 200);
    expect(list.data.some((e) => 'secret' in e)).toBe(false);
    const bad = await srv.api('/v1/webhooks', { body: { url: `${rx.url}/x`, events: ['message.deleted'] } });
    expect(bad.status).toBe(400);
    expect(await srv.api('/v1/webhooks', { body: { url: 'ftp://example.com/x', events: ['*'] } }).then((r) => r.status)).toBe(400);
    const other = await srv.addOrganization('Other');
    expect(await srv.api(`/v1/webhooks/${created.id}`, { key: other.apiKey }).then((r) => r.status)).toBe(404);
    expect(await srv.api(`/v1/webhooks/${created.id}/test`, { method: 'POST', key: other.apiKey }).then((r) => r.status)).toBe(404);
    const patched = await ok<Endpoint>(srv.api(`/v1/webhooks/${created.id}`, { method: 'PATCH', body: { events: ['*'], description: 'all' } }), 200);
    expect(patched.events).toEqual(['*']);
    const operator = await srv.signIn({ role: 'operator' });
    expect(await srv.api('/v1/webhooks', { headers: operator.headers }).then((r) => r.status)).toBe(403);
    await ok(srv.api(`/v1/webhooks/${created.id}`, { method: 'DELETE' }), 204);
    expect(await srv.api(`/v1/webhooks/${created.id}`).then((r) => r.status)).toBe(404);
  });
});

describe('the outbox', () => {
  it('writes no event for an organization without an enabled endpoint, and the events of one with an endpoint in the commit of the change', async () => {
    const db = (srv.parley.store as unknown as { db: { prepare(sql: string): { get(...a: unknown[]): unknown } } }).db;
    const eventsOf = (orgId: string) => (db.prepare('SELECT count(*) AS n FROM webhook_events WHERE org_id = ?').get(orgId) as { n: number }).n;
    const quiet = await srv.addOrganization('No hooks');
    const agent = await ok<{ id: string }>(srv.api('/v1/agents', { key: quiet.apiKey, body: { name: 'Quiet' } }), 201);
    await ok(srv.api(`/v1/agents/${agent.id}/chat`, { key: quiet.apiKey, body: { message: 'hello' } }), 200);
    expect(eventsOf(quiet.orgId)).toBe(0);
    const sink = await startReceiver();
    try {
      await ok<Endpoint>(srv.api('/v1/webhooks', { key: quiet.apiKey, body: { url: `${sink.url}/q`, events: ['conversation.created'] } }), 201);
      const chat = await ok<{ conversation_id: string }>(srv.api(`/v1/agents/${agent.id}/chat`, { key: quiet.apiKey, body: { message: 'hello again' } }), 200);
      // conversation.created, message.created (visitor and agent): stored, though only one is subscribed to.
      expect(eventsOf(quiet.orgId)).toBe(3);
      const [arrived] = await sink.waitFor((g) => g.length >= 1);
      expect(arrived!.json).toMatchObject({ type: 'conversation.created', org_id: quiet.orgId, data: { conversation_id: chat.conversation_id } });
    } finally {
      await sink.close();
    }
  });
});

describe('delivery', () => {
  it('a receiver failing twice then answering 204: three attempts, one event id, each attempt recorded', async () => {
    const ep = await endpoint(srv, `${rx.url}/flaky`);
    const { delivery_id, event_id } = await sendTest(srv, ep.id);
    const d = await deliveryWhen(srv, ep.id, delivery_id, (x) => x.status === 'succeeded');
    expect(d.attempt_count).toBe(3);
    expect(d.attempts.map((a) => [a.number, a.status, a.body, a.error])).toEqual([
      [1, 503, 'down 1', 'HTTP 503'], [2, 503, 'down 2', 'HTTP 503'], [3, 204, '', null],
    ]);
    const arrivals = byPath('/flaky')(rx.got);
    expect(arrivals.map((g) => g.json.id)).toEqual([event_id, event_id, event_id]);
    expect(arrivals.map((g) => g.headers['x-service-event-id'])).toEqual([event_id, event_id, event_id]);
    expect(arrivals.map((g) => g.headers['webhook-id'])).toEqual([event_id, event_id, event_id]);
    expect(arrivals.map((g) => g.headers['x-service-delivery-id'])).toEqual([delivery_id, delivery_id, delivery_id]);
    expect(arrivals[0]!.headers['user-agent']).toMatch(/^Parley\/\d+\.\d+\.\d+/);
    expect(arrivals[0]!.json).toMatchObject({ type: 'webhook.test', org_id: srv.orgId, data: { endpoint_id: ep.id } });
    // The endpoint's failing streak ended with the success.
    expect((await ok<{ failing_since: string | null }>(srv.api(`/v1/webhooks/${ep.id}`), 200)).failing_since).toBeNull();
  });

  it('a receiver that never answers: the attempt is recorded with status 0 and a timeout', async () => {
    const ep = await endpoint(srv, `${rx.url}/hang`);
    const { delivery_id } = await sendTest(srv, ep.id);
    const d = await deliveryWhen(srv, ep.id, delivery_id, (x) => x.attempt_count >= 1);
    expect(d.attempts[0]).toMatchObject({ number: 1, status: 0, body: '' });
    expect(d.attempts[0]!.error).toMatch(/timeout/);
    expect(d.attempts[0]!.duration_ms).toBeGreaterThanOrEqual(650);
    await ok(srv.api(`/v1/webhooks/${ep.id}`, { method: 'DELETE' }), 204);
  });

  it('a 3xx is a failure: the redirect is not followed, the delivery is retried, then fails; retry sends it again', async () => {
    const ep = await endpoint(srv, `${rx.url}/redirect`);
    const { delivery_id, event_id } = await sendTest(srv, ep.id);
    const d = await deliveryWhen(srv, ep.id, delivery_id, (x) => x.status === 'failed');
    expect(d.attempts.map((a) => a.status)).toEqual([302, 302, 302, 302]);
    expect(d.attempts[0]!.error).toBe(`redirect not followed: HTTP 302 to ${rx.url}/trap`);
    expect(byPath('/trap')(rx.got)).toEqual([]);
    const again = await ok<Delivery>(srv.api(`/v1/webhooks/${ep.id}/deliveries/${delivery_id}/retry`, { method: 'POST' }), 202);
    expect(again).toMatchObject({ id: delivery_id, status: 'pending' });
    await deliveryWhen(srv, ep.id, delivery_id, (x) => x.attempt_count === 5 && x.status === 'failed');
    expect(byPath('/redirect')(rx.got).map((g) => g.json.id)).toEqual(Array(5).fill(event_id));
    expect(byPath('/trap')(rx.got)).toEqual([]);
  });

  it('keeps the first 4 KiB of a response body', async () => {
    const ep = await endpoint(srv, `${rx.url}/big`);
    const { delivery_id } = await sendTest(srv, ep.id);
    const d = await deliveryWhen(srv, ep.id, delivery_id, (x) => x.attempt_count >= 1);
    expect(d.attempts[0]!.body).toBe('x'.repeat(4096));
    await ok(srv.api(`/v1/webhooks/${ep.id}`, { method: 'DELETE' }), 204);
  });

  it('410 Gone disables the endpoint at once; PATCH re-enables it and recover re-sends the failed delivery with its event id', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const ep = await endpoint(srv, `${rx.url}/gone`);
    const { delivery_id, event_id } = await sendTest(srv, ep.id);
    const d = await deliveryWhen(srv, ep.id, delivery_id, (x) => x.status === 'failed');
    expect(d.attempts.map((a) => [a.status, a.body])).toEqual([[410, 'gone for good']]);
    const deadline = Date.now() + 10_000;
    let state = await ok<Endpoint>(srv.api(`/v1/webhooks/${ep.id}`), 200);
    while (state.status !== 'disabled' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      state = await ok<Endpoint>(srv.api(`/v1/webhooks/${ep.id}`), 200);
    }
    expect(state).toMatchObject({ status: 'disabled', disabled_reason: 'gone' });
    // Disabled: a test delivery waits and is not sent.
    const waiting = await sendTest(srv, ep.id);
    await new Promise((r) => setTimeout(r, 400));
    expect(byPath('/gone')(rx.got).map((g) => g.json.id)).toEqual([event_id]);
    const enabled = await ok<Endpoint>(srv.api(`/v1/webhooks/${ep.id}`, { method: 'PATCH', body: { enabled: true } }), 200);
    expect(enabled).toMatchObject({ status: 'enabled', disabled_reason: null });
    await deliveryWhen(srv, ep.id, waiting.delivery_id, (x) => x.status === 'succeeded');
    const recovered = await ok<{ recovered: number }>(srv.api(`/v1/webhooks/${ep.id}/recover`, { body: { since } }), 202);
    expect(recovered).toEqual({ recovered: 1 });
    const after = await deliveryWhen(srv, ep.id, delivery_id, (x) => x.status === 'succeeded');
    expect(after.attempts.map((a) => a.status)).toEqual([410, 200]);
    expect(byPath('/gone')(rx.got).filter((g) => g.json.id === event_id)).toHaveLength(2);
    expect(await srv.api(`/v1/webhooks/${ep.id}/recover`, { body: { since: 'yesterday' } }).then((r) => r.status)).toBe(400);
  });

  it('deliveries verify with the standardwebhooks library and with a raw-body HMAC; after a rotation both secrets sign', async () => {
    const ep = await endpoint(srv, `${rx.url}/verify`);
    const first = await sendTest(srv, ep.id);
    const [r1] = await rx.waitFor((g) => g.some((x) => x.json.id === first.event_id)).then((g) => g.filter((x) => x.json.id === first.event_id));
    const headers = r1!.headers as Record<string, string>;
    expect(new Webhook(ep.secret).verify(r1!.raw, headers)).toEqual(JSON.parse(r1!.raw));
    // A receiver's own check: hex HMAC-SHA256 of the raw body keyed with the secret string, compared in
    // constant time after the lengths.
    const expected = Buffer.from(createHmac('sha256', ep.secret).update(r1!.raw).digest('hex'));
    const given = Buffer.from(headers['x-service-signature']!);
    expect(given.length === expected.length && timingSafeEqual(given, expected)).toBe(true);
    expect(headers['x-service-event-type']).toBe('webhook.test');
    expect(headers['content-type']).toBe('application/json');
    expect(Math.abs(Number(headers['x-service-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(() => new Webhook(ep.secret).verify(`${r1!.raw} `, headers)).toThrow();

    const rotated = await ok<Endpoint & { previous_secret_expires_at: string }>(srv.api(`/v1/webhooks/${ep.id}/rotate-secret`, { body: {} }), 200);
    expect(rotated.secret).not.toBe(ep.secret);
    expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    const second = await sendTest(srv, ep.id);
    const [r2] = await rx.waitFor((g) => g.some((x) => x.json.id === second.event_id)).then((g) => g.filter((x) => x.json.id === second.event_id));
    const h2 = r2!.headers as Record<string, string>;
    expect(h2['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(rotated.secret).verify(r2!.raw, h2)).toBeTruthy();
    expect(new Webhook(ep.secret).verify(r2!.raw, h2)).toBeTruthy();
    expect(h2['x-service-signature']).toBe(createHmac('sha256', rotated.secret).update(r2!.raw).digest('hex'));

    const noOverlap = await ok<Endpoint>(srv.api(`/v1/webhooks/${ep.id}/rotate-secret`, { body: { overlap_seconds: 0 } }), 200);
    const third = await sendTest(srv, ep.id);
    const [r3] = await rx.waitFor((g) => g.some((x) => x.json.id === third.event_id)).then((g) => g.filter((x) => x.json.id === third.event_id));
    const h3 = r3!.headers as Record<string, string>;
    expect(h3['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(new Webhook(noOverlap.secret).verify(r3!.raw, h3)).toBeTruthy();
    expect(() => new Webhook(rotated.secret).verify(r3!.raw, h3)).toThrow();
  });
});

describe('the nine events from real flows', () => {
  it('chat, tool call, handoff, operator message, resolve, close, documents and a usage threshold each reach the receiver', async () => {
    const all = await startReceiver();
    try {
      const ep = await endpoint(srv, `${all.url}/all`);
      await ok(srv.api('/v1/usage/thresholds', { method: 'PUT', body: { thresholds: [{ metric: 'total_tokens', value: 1, period: 'day' }] } }), 200);
      const agentId = await createAgent(srv, { name: 'Hooked', tools: ['handoff_to_human'] });
      const first = await ok<{ conversation_id: string }>(srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'hello there' } }), 200);
      const conv = first.conversation_id;
      await ok(srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'I want to talk to a human please', conversation_id: conv } }), 200);
      await ok(srv.api(`/v1/conversations/${conv}/takeover`, { method: 'POST' }), 200);
      await ok(srv.api(`/v1/conversations/${conv}/messages`, { body: { content: 'Hi, Sam here.' } }), 201);
      await ok(srv.api(`/v1/conversations/${conv}/resolve`, { method: 'POST' }), 200);
      await ok(srv.api(`/v1/conversations/${conv}/close`, { method: 'POST' }), 200);
      const kb = await ok<{ id: string }>(srv.api('/v1/knowledge-bases', { body: { name: 'Hooks' } }), 201);
      const raw = (title: string, body: string | Buffer) => fetch(`${srv.url}/v1/knowledge-bases/${kb.id}/documents?title=${title}`, {
        method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'text/plain' }, body,
      });
      const good = await ok<{ id: string }>(raw('good', 'Webhooks tell other systems what happened.'), 202);
      const bad = await ok<{ id: string }>(raw('bad', Buffer.from([0xff, 0xfe])), 202);

      const nine = ['message.created', 'conversation.created', 'conversation.closed', 'handoff.requested', 'handoff.resolved',
        'document.ready', 'document.failed', 'tool.run', 'usage.threshold'];
      const got = await all.waitFor((g) => nine.every((t) => g.some((x) => x.json.type === t)) && g.filter((x) => x.json.type === 'message.created').length >= 5, 30_000);
      const of = (type: string) => got.filter((x) => x.json.type === type).map((x) => x.json);
      expect(of('conversation.created')).toEqual([expect.objectContaining({ org_id: srv.orgId, data: expect.objectContaining({ conversation_id: conv, agent_id: agentId }) })]);
      expect(of('message.created').map((e) => e.data.role).sort()).toEqual(['agent', 'agent', 'operator', 'visitor', 'visitor']);
      expect(of('message.created').find((e) => e.data.role === 'operator')?.data.content).toBe('Hi, Sam here.');
      expect(of('tool.run')).toEqual([expect.objectContaining({ data: expect.objectContaining({ conversation_id: conv, name: 'handoff_to_human', is_error: false }) })]);
      // The call and its record in tool_runs, stored with the record (before the reply that used it).
      const [runRecord] = await srv.parley.store.toolRuns.listForConversation(srv.orgId, conv);
      expect(of('tool.run')[0]!.data).toEqual({
        conversation_id: conv, agent_id: agentId, turn_id: runRecord!.turn_id, tool_call_id: runRecord!.tool_call_id, name: 'handoff_to_human',
        arguments: expect.anything(), output: expect.anything(), is_error: false,
        tool_run_id: runRecord!.id, kind: 'builtin', status: 'succeeded', http_status: null, error: null, duration_ms: runRecord!.duration_ms,
      });
      const reply = of('message.created').find((e) => e.data.role === 'agent' && e.data.turn_id === runRecord!.turn_id)!;
      expect(got.findIndex((x) => x.json.type === 'tool.run')).toBeLessThan(got.findIndex((x) => x.json.id === reply.id));
      expect(of('handoff.requested')[0]!.data).toMatchObject({ conversation_id: conv, requested_by: 'agent' });
      expect(of('handoff.resolved')[0]!.data).toMatchObject({ conversation_id: conv });
      expect(of('conversation.closed')[0]!.data).toMatchObject({ conversation_id: conv });
      expect(of('document.ready')[0]!.data).toMatchObject({ document_id: good.id, knowledge_base_id: kb.id });
      expect(of('document.failed')[0]!.data).toMatchObject({ document_id: bad.id });
      expect(of('usage.threshold')).toHaveLength(1);
      expect(of('usage.threshold')[0]!.data).toMatchObject({ metric: 'total_tokens', value: 1, period: 'day' });
      // Every arrival is signed with the endpoint's secret.
      for (const r of got) expect(new Webhook(ep.secret).verify(r.raw, r.headers as Record<string, string>)).toBeTruthy();
      // Each event id arrived once (no failures here).
      expect(new Set(got.map((r) => r.json.id)).size).toBe(got.length);
      const usage = await ok<{ data: Array<{ agent_id: string; total_tokens: number; turns: number }> }>(srv.api(`/v1/usage?agent_id=${agentId}`), 200);
      expect(usage.data).toHaveLength(1);
      expect(usage.data[0]!.turns).toBe(2);
      expect(usage.data[0]!.total_tokens).toBeGreaterThan(0);
      await ok(srv.api(`/v1/webhooks/${ep.id}`, { method: 'DELETE' }), 204);
      await ok(srv.api('/v1/usage/thresholds', { method: 'PUT', body: { thresholds: [] } }), 200);
    } finally {
      await all.close();
    }
  });

  it('usage: validates the range and the thresholds', async () => {
    expect(await srv.api('/v1/usage?from=2025-02-01&to=2025-01-01').then((r) => r.status)).toBe(400);
    expect(await srv.api('/v1/usage?from=2020-01-01&to=2025-01-01').then((r) => r.status)).toBe(400);
    expect(await srv.api('/v1/usage?from=yesterday').then((r) => r.status)).toBe(400);
    expect(await srv.api('/v1/usage/thresholds', { method: 'PUT', body: { thresholds: [{ metric: 'total_tokens', value: 0, period: 'day' }] } }).then((r) => r.status)).toBe(400);
    expect(await srv.api('/v1/usage/thresholds', { method: 'PUT', body: { thresholds: [{ metric: 'cost', value: 5, period: 'day' }] } }).then((r) => r.status)).toBe(400);
    const set = await ok<{ thresholds: unknown[] }>(srv.api('/v1/usage/thresholds', { method: 'PUT', body: { thresholds: [{ metric: 'output_tokens', value: 500, period: 'month' }] } }), 200);
    expect(set).toEqual({ thresholds: [{ metric: 'output_tokens', value: 500, period: 'month' }] });
    expect(await ok(srv.api('/v1/usage/thresholds'), 200)).toEqual(set);
    await ok(srv.api('/v1/usage/thresholds', { method: 'PUT', body: { thresholds: [] } }), 200);
  });
});

describe('an endpoint failing for too long', () => {
  it('is disabled (reason failing) and says so on its record', async () => {
    const failing = await startReceiver(() => ({ status: 500 }));
    const s = await startTestServer({
      PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_WEBHOOK_RETRY_SCHEDULE_MS: '0,150,150,150,150,150,150,150',
      PARLEY_WEBHOOK_DISABLE_AFTER_MS: '400',
    });
    try {
      const ep = await endpoint(s, `${failing.url}/down`);
      await sendTest(s, ep.id);
      const deadline = Date.now() + 15_000;
      let state = await ok<Endpoint & { failing_since: string | null }>(s.api(`/v1/webhooks/${ep.id}`), 200);
      while (state.status !== 'disabled' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        state = await ok(s.api(`/v1/webhooks/${ep.id}`), 200);
      }
      expect(state).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
      expect(state.failing_since).not.toBeNull();
      expect(failing.got.length).toBeGreaterThanOrEqual(3);
    } finally {
      await s.close();
      await failing.close();
    }
  });
});

describe('SSRF: private networks not allowed', () => {
  let strict: TestServer;
  beforeAll(async () => { strict = await startTestServer(); });
  afterAll(async () => { await strict?.close(); });

  it.each([
    ['http://127.1/hook'], ['http://0x7f.1/hook'], ['http://[::ffff:127.0.0.1]/hook'], ['http://[::1]/hook'],
    ['http://169.254.169.254/latest/meta-data'], ['http://localhost:8080/hook'], ['http://10.0.0.7/hook'],
    // IPv4-compatible IPv6 (security review, finding 8): classed by the IPv4 address they carry.
    ['http://[::127.0.0.1]/hook'], ['http://[::a9fe:a9fe]/latest/meta-data'],
  ])('refuses to register %s (and to move an endpoint there)', async (url) => {
    const res = await strict.api('/v1/webhooks', { body: { url, events: ['*'] } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'validation_failed', errors: [{ path: 'url' }] } });
  });

  it('refuses a PATCH to a private URL', async () => {
    const ep = await endpoint(strict, 'https://hooks.example.com/parley');
    const res = await strict.api(`/v1/webhooks/${ep.id}`, { method: 'PATCH', body: { url: 'http://127.0.0.1:9/x' } });
    expect(res.status).toBe(400);
    expect((await ok<Endpoint>(strict.api(`/v1/webhooks/${ep.id}`), 200)).url).toBe('https://hooks.example.com/parley');
  });

  it('the sender refuses at connect time a name that resolves to loopback and a loopback literal; the receiver is never reached', async () => {
    const guarded = new WebhookSender({ allowPrivate: false, timeoutMs: 2000 });
    const before = rx.got.length;
    try {
      for (const url of [`http://localhost:${rx.port}/ssrf`, `http://127.1:${rx.port}/ssrf`, `http://[::ffff:127.0.0.1]:${rx.port}/ssrf`, `http://[::127.0.0.1]:${rx.port}/ssrf`]) {
        const r = await guarded.send(url, { 'content-type': 'application/json' }, '{}');
        expect(r.status).toBe(0);
        // The tenant's text names no address (finding 9); the operator's detail does.
        expect(r.error).toBe('destination refused: private address');
        expect(r.detail).toMatch(/ resolves to (127\.0\.0\.1|::ffff:127\.0\.0\.1|::7f00:1|::ffff:7f00:1)/);
      }
    } finally {
      await guarded.close();
    }
    expect(rx.got.length).toBe(before);
  });

  it('a delivery to a name that resolves to loopback records "destination refused: private address", never the address', async () => {
    // An endpoint saved while private networks were allowed (written to the store directly), whose name
    // resolves to 127.0.0.1: the guard refuses it at connect time, and the tenant's history must not say
    // how the server resolved the name (security review, finding 9: "vm resolves to 127.0.0.1").
    const ep = await endpoint(strict, 'https://hooks.example.com/parley');
    const moved = await strict.parley.store.webhooks.updateEndpoint(strict.orgId, ep.id, { url: `http://localhost:${rx.port}/ssrf-name` }, new Date().toISOString());
    strict.parley.webhooks.endpointChanged(moved!);
    const before = rx.got.length;
    const queued = await sendTest(strict, ep.id);
    const d = await deliveryWhen(strict, ep.id, queued.delivery_id, (x) => x.attempt_count >= 1);
    expect(d.last_error).toBe('destination refused: private address');
    expect(d.attempts[0]!.error).toBe('destination refused: private address');
    const list = await ok<{ data: Delivery[] }>(strict.api(`/v1/webhooks/${ep.id}/deliveries`), 200);
    expect(JSON.stringify(list)).not.toContain('127.0.0.1');
    expect(rx.got.length).toBe(before);
  });

  it('a redirect\'s Location is recorded up to 500 characters (delivery lists show the error)', async () => {
    const { createServer } = await import('node:http');
    const location = `https://elsewhere.example/${'p'.repeat(3000)}`;
    const redirecting = createServer((_req, res) => { res.writeHead(302, { location }); res.end(); });
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', r));
    const sender = new WebhookSender({ allowPrivate: true, timeoutMs: 2000 });
    try {
      const r = await sender.send(`http://127.0.0.1:${(redirecting.address() as { port: number }).port}/x`, { 'content-type': 'application/json' }, '{}');
      expect(r.error).toBe(`redirect not followed: HTTP 302 to ${location.slice(0, 500)}…`);
    } finally {
      await sender.close();
      await new Promise((r) => redirecting.close(r));
    }
  });

  it('a connection that fails records its error code, not the address connected to', async () => {
    const sender = new WebhookSender({ allowPrivate: true, timeoutMs: 2000 });
    try {
      // A port nobody listens on: a listener closed at once frees one.
      const { createServer } = await import('node:net');
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const port = (closed.address() as { port: number }).port;
      await new Promise((r) => closed.close(r));
      const r = await sender.send(`http://127.0.0.1:${port}/x`, { 'content-type': 'application/json' }, '{}');
      expect(r.error).toBe('connection failed (ECONNREFUSED)');
      expect(r.detail).toContain(`127.0.0.1:${port}`);
    } finally {
      await sender.close();
    }
  });
});
