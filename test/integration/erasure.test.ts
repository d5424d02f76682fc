/**
 * Erasure and retention (API.md "Conversations and handoff": DELETE /v1/conversations/{id}, PATCH
 * /v1/organization): a conversation, its messages, tool runs and replay go, the text in its webhook
 * history is replaced by "[erased]", usage totals stay, conversation.deleted goes out, the sockets that
 * follow it close with 4404, nothing of its text is left in the SQLite file, and the retention sweep erases
 * only what is old enough. Real uWS, real SQLite, a real webhook receiver and real sockets.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, publish, wsUrl } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { openSocket } from '../helpers/ws-client.js';

const SECRET = 'zebra-4711-quartz';
const DAY = 86_400_000;
let srv: TestServer;
let receiver: Receiver;
let agent: string;
let pk: string;

/** A one-shot chat; the conversation id. */
async function chat(message: string, conversationId?: string): Promise<string> {
  const r = await srv.api(`/v1/agents/${agent}/chat`, { body: { message, ...(conversationId === undefined ? {} : { conversation_id: conversationId }) } });
  expect(r.status, await r.clone().text()).toBe(200);
  return ((await r.json()) as { conversation_id: string }).conversation_id;
}

beforeAll(async () => {
  // The receiver echoes what it got, as some do: its answers are stored in the delivery history.
  receiver = await startReceiver((req) => ({ status: 200, body: `received ${req.raw}` }));
  await fresh();
  const r = await srv.api('/v1/webhooks', { body: { url: receiver.url, events: ['*'] } });
  expect(r.status).toBe(201);
});

afterAll(async () => {
  await srv?.close();
  await receiver?.close();
});

describe('DELETE /v1/conversations/{id}', () => {
  it('erases messages and the text of the webhook history, keeps usage totals, fires conversation.deleted, and leaves no text in the file', async () => {
    const id = await chat(`My locker code is ${SECRET}, remember it`);
    const kept = await chat('Another conversation that stays');
    expect((await srv.api(`/v1/conversations/${id}/handoff`, { body: { reason: `call me about ${SECRET}` } })).status).toBe(200);
    expect((await srv.api(`/v1/conversations/${id}/messages`, { body: { content: `Operator saw ${SECRET}` } })).status).toBe(201);
    await receiver.waitFor((got) => got.filter((g) => g.json.data.conversation_id === id && g.json.type === 'message.created').length >= 3);
    const endpointId = ((await (await srv.api('/v1/webhooks')).json()) as { data: Array<{ id: string }> }).data[0]!.id;
    // Every delivery of this conversation has been answered (its echo, with the text, is stored).
    const deliveriesOf = async () => {
      const list = ((await (await srv.api(`/v1/webhooks/${endpointId}/deliveries?limit=100`)).json()) as { data: Array<{ id: string; event_id: string; status: string }> }).data;
      const mine: Array<{ id: string; event_id: string; status: string }> = [];
      for (const d of list) if ((await srv.parley.store.webhooks.getEvent(srv.orgId, d.event_id))?.data.conversation_id === id) mine.push(d);
      return mine;
    };
    await expect.poll(async () => (await deliveriesOf()).every((d) => d.status === 'succeeded'), { timeout: 10_000 }).toBe(true);
    const before = await deliveriesOf();
    expect(before.length).toBeGreaterThanOrEqual(5);
    const usage = await (await srv.api('/v1/usage')).json();

    const erased = await srv.api(`/v1/conversations/${id}`, { method: 'DELETE' });
    expect(erased.status).toBe(204);

    expect((await srv.api(`/v1/conversations/${id}`)).status).toBe(404);
    expect((await srv.api(`/v1/conversations/${id}/messages`)).status).toBe(404);
    expect((await srv.api(`/v1/conversations/${id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await srv.api(`/v1/agents/${agent}/chat`, { body: { message: 'again', conversation_id: id } })).status).toBe(404);
    expect((await srv.api(`/v1/conversations/${kept}/messages`)).status).toBe(200);
    expect(await (await srv.api('/v1/usage')).json()).toEqual(usage);
    const listed = ((await (await srv.api('/v1/conversations')).json()) as { data: Array<{ id: string }> }).data.map((c) => c.id);
    expect(listed).not.toContain(id);
    expect(listed).toContain(kept);

    // The webhook history: the same deliveries, their events' text and the receiver's answers replaced.
    for (const d of before) {
      const event = (await srv.parley.store.webhooks.getEvent(srv.orgId, d.event_id))!;
      expect(JSON.stringify(event.data)).not.toContain(SECRET);
      const detail = (await (await srv.api(`/v1/webhooks/${endpointId}/deliveries/${d.id}`)).json()) as { last_response: { body: string }; attempts: Array<{ body: string }> };
      expect(detail.last_response.body).toBe('[erased]');
      expect(detail.attempts.map((a) => a.body)).toEqual(detail.attempts.map(() => '[erased]'));
    }
    const stored = await Promise.all(before.map((d) => srv.parley.store.webhooks.getEvent(srv.orgId, d.event_id)));
    const visitor = stored.find((e) => e!.type === 'message.created' && e!.data.role === 'visitor')!;
    expect(visitor.data).toMatchObject({ conversation_id: id, role: 'visitor', content: '[erased]' });
    expect(stored.find((e) => e!.type === 'handoff.requested')!.data).toMatchObject({ conversation_id: id, reason: '[erased]' });

    const deleted = await receiver.waitFor((got) => got.some((g) => g.json.type === 'conversation.deleted'));
    expect(deleted.find((g) => g.json.type === 'conversation.deleted')!.json.data).toEqual({ conversation_id: id, agent_id: agent });
    const events = ((await (await srv.api('/v1/webhooks/events')).json()) as { data: Array<{ name: string }> }).data.map((e) => e.name);
    expect(events).toContain('conversation.deleted');

    // The SQLite file: once Parley stopped (SQLite folds the write-ahead log into the file), no byte of the
    // text is left: secure_delete overwrote what the erasure freed.
    await srv.parley.close();
    const bytes = readFileSync(join(srv.dataDir, 'parley.db'));
    expect(bytes.includes(Buffer.from(SECRET))).toBe(false);
    expect(bytes.includes(Buffer.from('Another conversation that stays'))).toBe(true);
    await srv.close();
    srv = await fresh();
  });

  it('who may erase: an API key, an owner or an admin; not an operator; never another organization\'s conversation', async () => {
    const id = await chat('who may erase me');
    const operator = await srv.signIn({ role: 'operator' });
    expect((await srv.api(`/v1/conversations/${id}`, { method: 'DELETE', headers: operator.headers })).status).toBe(403);
    const other = await srv.addOrganization();
    expect((await srv.api(`/v1/conversations/${id}`, { method: 'DELETE', key: other.apiKey })).status).toBe(404);
    const admin = await srv.signIn({ role: 'admin' });
    expect((await srv.api(`/v1/conversations/${id}`, { method: 'DELETE', headers: admin.headers })).status).toBe(204);
  });

  it('the sockets following the conversation close with 4404 erased: an operator\'s view, a visitor\'s listen-only socket', async () => {
    const id = await chat('first message');
    const person = await srv.signIn({ role: 'owner' });
    const ticket = async () => ((await (await srv.api('/v1/auth/ws-ticket', { method: 'POST', headers: person.headers })).json()) as { ticket: string }).ticket;
    const operatorView = await openSocket(wsUrl(srv, `/v1/conversations/${id}/ws?token=${await ticket()}`));
    // A public conversation with a visitor's listen-only socket.
    const pub = await fetch(`${srv.url}/v1/public/agents/${pk}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hi' }) });
    const { conversation_id: publicId, visitor_token } = (await pub.json()) as { conversation_id: string; visitor_token: string };
    const listen = await openSocket(wsUrl(srv, `/v1/public/agents/${pk}/conversations/${publicId}/ws`));
    listen.send({ type: 'auth', visitor_token });
    await listen.next((f) => f.type === 'message');

    expect((await srv.api(`/v1/conversations/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await srv.api(`/v1/conversations/${publicId}`, { method: 'DELETE' })).status).toBe(204);
    expect(await operatorView.closed).toEqual({ code: 4404, reason: 'erased' });
    expect(await listen.closed).toEqual({ code: 4404, reason: 'erased' });
  });

  it('a running turn stops with an error, its replay goes, and nothing of it is stored', async () => {
    await srv.close();
    srv = await fresh({ PARLEY_BUILTIN_WORD_DELAY_MS: '60' });
    const slow = await chat('start');
    const stream = readSse(`${srv.url}/v1/agents/${agent}/chat`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Tell me everything about streaming replies, in detail', conversation_id: slow, stream: true }),
    });
    await new Promise((r) => setTimeout(r, 300));
    expect((await srv.api(`/v1/conversations/${slow}`, { method: 'DELETE' })).status).toBe(204);
    const { events } = await stream;
    const last = events.at(-1)!.data as { type: string; error?: { code: string } };
    expect(last).toMatchObject({ type: 'error', error: { code: 'not_found' } });
    const turnId = events[0]!.data.turn_id as string;
    await new Promise((r) => setTimeout(r, 300));
    expect((await srv.api(`/v1/conversations/${slow}/turns/${turnId}/events`)).status).toBe(404);
    expect(await srv.parley.store.conversations.get(srv.orgId, slow)).toBeUndefined();
    expect(await srv.parley.store.toolRuns.listForConversation(srv.orgId, slow)).toEqual([]);
    expect(await srv.parley.store.conversations.history(slow, 100)).toEqual([]);
  });
});

/** A new server with an agent of its own (`agent`, `pk` updated). */
async function fresh(env: Record<string, string> = {}): Promise<TestServer> {
  const next = await startTestServer({ PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', ...env });
  srv = next;
  agent = await createAgent(next, { name: 'Erasable bot' });
  pk = await publish(next, agent);
  return next;
}

describe('retention', () => {
  /** A conversation of `orgId` whose last activity (a visitor message) was `daysAgo` days ago. */
  async function conversationAged(s: TestServer, orgId: string, id: string, daysAgo: number): Promise<void> {
    const at = new Date(Date.now() - daysAgo * DAY).toISOString();
    await s.parley.store.conversations.create({ id, org_id: orgId, agent_id: agent, status: 'active', metadata: {}, visitor_token_hash: null, created_at: at, updated_at: at });
    await s.parley.store.conversations.appendMessage({
      id: `msg_${id}`, conversation_id: id, org_id: orgId, turn_id: null, role: 'visitor', content: 'old words', citations: [], tool_runs: [],
      usage: null, status: 'completed', finish_reason: null, error: null, timing: null, created_at: at,
    });
  }
  const exists = async (s: TestServer, orgId: string, id: string) => (await s.parley.store.conversations.get(orgId, id)) !== undefined;

  it('PATCH /v1/organization sets retention_days; the sweep erases only conversations idle for longer, each with conversation.deleted', async () => {
    const s = await startTestServer({ PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    try {
      const owner = await s.signIn({ role: 'owner' });
      expect(await (await s.api('/v1/organization', { headers: owner.headers })).json())
        .toMatchObject({ id: s.orgId, retention_days: null, default_retention_days: null });
      await conversationAged(s, s.orgId, 'conv_old', 40);
      await conversationAged(s, s.orgId, 'conv_recent', 10);
      const other = await s.addOrganization();
      await conversationAged(s, other.orgId, 'conv_other_old', 400);
      // No setting and no default: everything is kept.
      expect(await s.parley.services.retention.sweep()).toBe(0);
      expect(await exists(s, s.orgId, 'conv_old')).toBe(true);

      const operator = await s.signIn({ role: 'operator' });
      expect((await s.api('/v1/organization', { method: 'PATCH', body: { retention_days: 30 }, headers: operator.headers })).status).toBe(403);
      for (const bad of [0, -1, 1.5, 36_501, '30']) {
        expect((await s.api('/v1/organization', { method: 'PATCH', body: { retention_days: bad }, headers: owner.headers })).status, String(bad)).toBe(400);
      }
      const patched = await s.api('/v1/organization', { method: 'PATCH', body: { retention_days: 30 }, headers: owner.headers });
      expect(patched.status).toBe(200);
      expect(await patched.json()).toMatchObject({ id: s.orgId, retention_days: 30, default_retention_days: null });
      const receiver2 = await startReceiver();
      try {
        expect((await s.api('/v1/webhooks', { body: { url: receiver2.url, events: ['conversation.deleted'] } })).status).toBe(201);
        expect(await s.parley.services.retention.sweep()).toBe(1);
        expect(await exists(s, s.orgId, 'conv_old')).toBe(false);
        expect(await exists(s, s.orgId, 'conv_recent')).toBe(true);
        expect(await exists(s, other.orgId, 'conv_other_old')).toBe(true);
        const got = await receiver2.waitFor((g) => g.length >= 1);
        expect(got.map((g) => [g.json.type, g.json.data.conversation_id])).toEqual([['conversation.deleted', 'conv_old']]);
      } finally {
        await receiver2.close();
      }
      // Cleared: back to the default (none), nothing more goes.
      expect(await (await s.api('/v1/organization', { method: 'PATCH', body: { retention_days: null } })).json()).toMatchObject({ retention_days: null });
      expect(await s.parley.services.retention.sweep()).toBe(0);
      expect(await exists(s, s.orgId, 'conv_recent')).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('PARLEY_RETENTION_DAYS is the default of organizations that set none; an organization\'s own setting wins', async () => {
    const s = await startTestServer({ PARLEY_RETENTION_DAYS: '7' });
    try {
      expect(await (await s.api('/v1/organization')).json()).toMatchObject({ retention_days: null, default_retention_days: 7 });
      const longer = await s.addOrganization();
      expect((await s.api('/v1/organization', { method: 'PATCH', body: { retention_days: 30 }, key: longer.apiKey })).status).toBe(200);
      await conversationAged(s, s.orgId, 'conv_a8', 8);
      await conversationAged(s, s.orgId, 'conv_a6', 6);
      await conversationAged(s, longer.orgId, 'conv_b8', 8);
      await conversationAged(s, longer.orgId, 'conv_b31', 31);
      // Several batches' worth, all past the default.
      for (let i = 0; i < 120; i++) await conversationAged(s, s.orgId, `conv_bulk${String(i).padStart(3, '0')}`, 9);
      expect(await s.parley.services.retention.sweep()).toBe(122);
      expect(await exists(s, s.orgId, 'conv_a8')).toBe(false);
      expect(await exists(s, s.orgId, 'conv_a6')).toBe(true);
      expect(await exists(s, longer.orgId, 'conv_b8')).toBe(true);
      expect(await exists(s, longer.orgId, 'conv_b31')).toBe(false);
      expect(await s.parley.store.conversations.idleSince(s.orgId, new Date().toISOString(), 10)).toEqual(['conv_a6']);
    } finally {
      await s.close();
    }
  });
});
