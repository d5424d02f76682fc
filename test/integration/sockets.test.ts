/**
 * WebSocket integration tests (API.md "WebSockets", "Chat" Stop, "Credentials"): the real server on
 * port 0, real sockets (undici's WebSocket, and a raw TCP client for upgrade headers, raw frames and a
 * client that stops reading). Every credential path, every client frame, every close code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';
import { createAgent, errorCode, expectOperatorPush, expectStreamFrames, sidOf, storedMessage, tokenText, typesOf, wsUrl } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse, waitFor } from '../helpers/sse-client.js';
import { openSocket, rawUpgrade, type Frame, type RawSocket, type TestSocket } from '../helpers/ws-client.js';
import { readInChild } from '../helpers/ws-reader.js';

const DOC = `# Zephyr tea garden

The Zephyr tea garden grows oolong on terraced slopes at 1200 metres above the valley.

## Harvest

The harvest at the Zephyr garden happens twice a year, in April and in October, when pickers start at dawn.

## Tours

Visitors can book a tasting tour every Saturday morning; each tour lasts ninety minutes at the Zephyr garden.
`;
const QUESTION = 'When is the harvest and the tour at the Zephyr garden?';

const isDone = (f: Frame) => f.type === 'done' || f.type === 'error';

let mock: MockUpstream;
let srv: TestServer;
let agent: string;
let mockAgent: string;
let personToken: string;
const opened: TestSocket[] = [];

async function socket(path: string): Promise<TestSocket> {
  const s = await openSocket(wsUrl(srv, path));
  opened.push(s);
  return s;
}

async function raw(path: string, headers: Record<string, string> = {}): Promise<RawSocket> {
  const up = await rawUpgrade(srv.parley.port, path, headers);
  expect(up.status, up.body).toBe(101);
  opened.push(up.socket!);
  return up.socket!;
}

/** A socket that was upgraded and closed at once: its close code and reason. */
async function refused(path: string): Promise<{ code: number; reason: string }> {
  const up = await rawUpgrade(srv.parley.port, path);
  expect(up.status, up.body).toBe(101);
  return up.socket!.closed;
}

const chatPath = (agentId: string, token: string) => `/v1/agents/${agentId}/chat/ws?token=${encodeURIComponent(token)}`;

beforeAll(async () => {
  mock = await startMockUpstream();
  srv = await startTestServer({
    PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_BUILTIN_WORD_DELAY_MS: '15',
  });
  const kb = await srv.api('/v1/knowledge-bases', { body: { name: 'Tea' } });
  const kbId = ((await kb.json()) as { id: string }).id;
  const up = await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title: 'Zephyr tea garden', content: DOC, content_type: 'text/markdown' } });
  const docId = ((await up.json()) as { id: string }).id;
  await waitFor(async () => {
    const d = (await (await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`)).json()) as { status: string };
    return d.status === 'ready' ? true : undefined;
  }, 15_000, 'document ready');
  agent = await createAgent(srv, { name: 'Tea bot', knowledge_base_ids: [kbId] });
  mockAgent = await createAgent(srv, { name: 'Paced bot', model: { provider: 'openai', name: 'mock-deltas-150' } });
  personToken = (await srv.signIn({ role: 'operator' })).session.access_token;
});

afterAll(async () => {
  for (const s of opened) s.drop();
  await srv?.close();
  await mock?.close();
});

describe('chat socket: frames', () => {
  it('a message frame streams the turn as the SSE events with conversation_id added, and ping gets pong', async () => {
    const s = await socket(chatPath(agent, personToken));
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
    s.send({ type: 'message', message: QUESTION });
    const frames = await s.until(isDone);
    const conversationId = frames[0]!.conversation_id as string;
    expect(conversationId).toMatch(/^conv_/);
    expectStreamFrames(frames, conversationId);
    const n = frames.length - 5;
    expect(n).toBeGreaterThan(5);
    expect(typesOf(frames)).toEqual(['conversation', ...Array<string>(n).fill('token'), 'citations', 'message', 'usage', 'done']);
    expect(frames.at(-1)).toEqual({ type: 'done', finish_reason: 'stop', conversation_id: conversationId });

    // The same turn replayed over SSE: the very same events, in the same order.
    const turnId = frames[0]!.turn_id as string;
    const replay = await readSse(`${srv.url}/v1/conversations/${conversationId}/turns/${turnId}/events`, { headers: { authorization: `Bearer ${srv.apiKey}` } });
    expect(frames).toEqual(replay.events.map((e) => ({ ...e.data, conversation_id: conversationId })));

    // Continuing the conversation on the same socket.
    s.send({ type: 'message', message: 'And what grows there?', conversation_id: conversationId });
    const second = await s.until(isDone);
    expect(second[0]).toMatchObject({ type: 'conversation', conversation_id: conversationId });
    expect(second[0]!.turn_id).not.toBe(turnId);
    const stored = (await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ role: string; content: string }> };
    expect(stored.data.map((m) => m.role)).toEqual(['visitor', 'agent', 'visitor', 'agent']);
    expect(stored.data[1]!.content).toBe(tokenText(frames));
    // The usage frame carries the turn's timing (API.md "Chat", Timing), the one stored with the reply.
    const timing = frames.find((f) => f.type === 'usage')!.timing as Record<string, number | null>;
    expect(timing.first_token_ms).toBeGreaterThanOrEqual(timing.setup_ms!);
    expect(timing.total_ms).toBeGreaterThanOrEqual(timing.first_token_ms!);
    expect((stored.data[1] as unknown as { timing: unknown }).timing).toEqual(timing);
  });

  it('queued turns of one conversation come one after the other, each contiguous', async () => {
    const s = await socket(chatPath(agent, personToken));
    s.send({ type: 'message', message: QUESTION });
    const first = await s.next((f) => f.type === 'conversation');
    const conversationId = first.conversation_id as string;
    s.send({ type: 'message', message: 'Tell me about the tours at the Zephyr garden.', conversation_id: conversationId });
    const turn1 = [first, ...await s.until(isDone)];
    const turn2 = await s.until(isDone);
    expect(new Set(turn1.map((f) => f.turn_id).filter(Boolean))).toEqual(new Set([first.turn_id]));
    expect(typesOf(turn2)[0]).toBe('conversation');
    expect(turn2.filter((f) => f.type === 'conversation')).toHaveLength(1);
    expect(turn2.at(-1)).toMatchObject({ type: 'done', finish_reason: 'stop' });
  });

  it('refuses bad frames with an error frame and stays open', async () => {
    const s = await socket(chatPath(agent, personToken));
    s.send('not json');
    expect(errorCode(await s.next())).toBe('invalid_json');
    s.send({ type: 'shout' });
    expect(errorCode(await s.next())).toBe('validation_failed');
    s.send({ type: 'message', message: 'hi', extra: true });
    expect(errorCode(await s.next())).toBe('validation_failed');
    s.send({ type: 'message', message: '' });
    expect(errorCode(await s.next())).toBe('validation_failed');
    s.send({ type: 'message', message: 'hi', visitor_token: 'vt_x' });
    expect(errorCode(await s.next())).toBe('validation_failed');
    s.send({ type: 'message', message: 'hi', conversation_id: 'conv_doesnotexist' });
    const notFound = await s.next();
    expect(errorCode(notFound)).toBe('not_found');
    expect(notFound.conversation_id).toBe('conv_doesnotexist');
    s.send({ type: 'cancel' });
    expect(errorCode(await s.next())).toBe('not_found');
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
  });

  it('closes a binary frame with 1003 and a frame over 64 KiB with 1009', async () => {
    const a = await raw(chatPath(agent, personToken));
    a.rawWrite(0x2, Buffer.from([1, 2, 3]));
    expect(await a.closed).toEqual({ code: 1003, reason: 'text_frames_only' });
    const b = await raw(chatPath(agent, personToken));
    b.send({ type: 'message', message: 'x'.repeat(64 * 1024) });
    expect((await b.closed).code).toBe(1009);
    // 64 KiB exactly is still a frame (and then too long a message: an error frame).
    const c = await raw(chatPath(agent, personToken));
    const frame = JSON.stringify({ type: 'message', message: '' });
    c.send(JSON.stringify({ type: 'message', message: 'y'.repeat(64 * 1024 - frame.length) }));
    expect(errorCode(await c.next())).toBe('validation_failed');
  });
});

describe('chat socket: credentials', () => {
  it('takes a single-use wst_ ticket; the same ticket again closes with 4401', async () => {
    const person = await srv.signIn({ role: 'operator' });
    const t = await srv.api('/v1/auth/ws-ticket', { method: 'POST', headers: person.headers });
    const { ticket } = (await t.json()) as { ticket: string };
    const s = await socket(chatPath(agent, ticket));
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
    expect(await refused(chatPath(agent, ticket))).toEqual({ code: 4401, reason: 'invalid_token' });
  });

  it('takes an API key only in the Authorization header of the upgrade, never in the URL', async () => {
    const s = await raw(`/v1/agents/${agent}/chat/ws`, { Authorization: `Bearer ${srv.apiKey}` });
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
    expect(await refused(chatPath(agent, srv.apiKey))).toEqual({ code: 4401, reason: 'invalid_api_key' });
    // undici's client sees the same close code.
    const viaUndici = await openSocket(wsUrl(srv, chatPath(agent, srv.apiKey)));
    expect(await viaUndici.closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
  });

  it('closes with 4401 without a credential or with a bad one, 4403 for a non-member, 4404 for an unknown or foreign agent', async () => {
    expect(await refused(`/v1/agents/${agent}/chat/ws`)).toEqual({ code: 4401, reason: 'missing_credentials' });
    expect(await refused(chatPath(agent, 'garbage'))).toEqual({ code: 4401, reason: 'invalid_token' });
    expect(await refused(chatPath(agent, 'wst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'))).toEqual({ code: 4401, reason: 'invalid_token' });
    const up = await rawUpgrade(srv.parley.port, `/v1/agents/${agent}/chat/ws`, { Authorization: 'Bearer sk_nope' });
    expect(await up.socket!.closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
    const outsider = await srv.signIn({ orgId: null });
    expect(await refused(chatPath(agent, outsider.session.access_token))).toEqual({ code: 4403, reason: 'not_a_member' });
    expect(await refused(chatPath('agt_missing', personToken))).toEqual({ code: 4404, reason: 'not_found' });
    const other = await srv.addOrganization('Other');
    const foreign = await raw(`/v1/agents/${agent}/chat/ws`, { Authorization: `Bearer ${other.apiKey}` });
    expect(await foreign.closed).toEqual({ code: 4404, reason: 'not_found' });
  });

  it('logout closes the sockets of that sign-in (access token and ticket), and only those', async () => {
    const person = await srv.signIn({ role: 'operator' });
    const other = await srv.login(person.email, person.password);
    const t = await srv.api('/v1/auth/ws-ticket', { method: 'POST', headers: person.headers });
    const { ticket } = (await t.json()) as { ticket: string };
    const byToken = await socket(chatPath(agent, person.session.access_token));
    const byTicket = await socket(chatPath(agent, ticket));
    const otherSignIn = await socket(chatPath(agent, other.access_token));
    expect(sidOf(other.access_token)).not.toBe(sidOf(person.session.access_token));
    const r = await fetch(`${srv.url}/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: person.session.refresh_token }) });
    expect(r.status).toBe(204);
    expect(await byToken.closed).toEqual({ code: 4401, reason: 'session_ended' });
    expect(await byTicket.closed).toEqual({ code: 4401, reason: 'session_ended' });
    otherSignIn.send({ type: 'ping' });
    expect(await otherSignIn.next()).toEqual({ type: 'pong' });
  });

  it('a refresh token used twice ends its sign-in: the sockets of that sign-in close (the rotated token\'s too), another sign-in\'s stay', async () => {
    const person = await srv.signIn({ role: 'operator' });
    const other = await srv.login(person.email, person.password);
    const refresh = (token: string) => fetch(`${srv.url}/v1/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: token }) });
    const first = await refresh(person.session.refresh_token);
    expect(first.status).toBe(200);
    const rotated = (await first.json()) as { access_token: string };
    const byOld = await socket(chatPath(agent, person.session.access_token));
    const byRotated = await socket(chatPath(agent, rotated.access_token));
    const otherSignIn = await socket(chatPath(agent, other.access_token));
    // The spent token again: taken for a theft (RFC 9700 section 4.14.2), its whole family ends.
    const reuse = await refresh(person.session.refresh_token);
    expect(reuse.status).toBe(401);
    expect(await byOld.closed).toEqual({ code: 4401, reason: 'session_ended' });
    expect(await byRotated.closed).toEqual({ code: 4401, reason: 'session_ended' });
    otherSignIn.send({ type: 'ping' });
    expect(await otherSignIn.next()).toEqual({ type: 'pong' });
  });
});

describe('stop: the cancel frame and POST .../cancel', () => {
  it('the cancel frame aborts the upstream request, stores the partial text and ends with done/cancelled', async () => {
    const s = await socket(chatPath(mockAgent, personToken));
    s.send({ type: 'message', message: 'count for me' });
    const head = await s.until((f) => f.type === 'token' && (f.delta as string) === 'tok ', 10_000, 'a first token');
    head.push(...await s.until((f) => f.type === 'token', 10_000, 'a second token'));
    expect(mock.activeStreams()).toBe(1);
    s.send({ type: 'cancel' });
    const rest = await s.until(isDone);
    const frames = [...head, ...rest];
    expect(frames.at(-1)).toMatchObject({ type: 'done', finish_reason: 'cancelled' });
    expect(typesOf(frames).slice(-4)).toEqual(['citations', 'message', 'usage', 'done']);
    await waitFor(() => (mock.activeStreams() === 0 ? true : undefined), 5_000, 'the upstream stream to close');
    const text = tokenText(frames);
    expect(text.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan(150 * 'tok '.length);
    const stored = (await (await srv.api(`/v1/conversations/${frames[0]!.conversation_id as string}/messages`)).json()) as { data: Array<{ role: string; content: string; finish_reason: string | null; status: string }> };
    expect(stored.data[1]).toMatchObject({ role: 'agent', content: text, finish_reason: 'cancelled', status: 'completed' });
  });

  it('a cancel sent with its message in one write (a quick Stop) cancels that turn: done/cancelled, no error frame, nothing asked upstream after', async () => {
    const s = await raw(`/v1/agents/${mockAgent}/chat/ws`, { authorization: `Bearer ${srv.apiKey}` });
    s.sendTogether([{ type: 'message', message: 'count for me' }, { type: 'cancel' }]);
    const frames = await s.until(isDone);
    expect(frames.filter((f) => f.type === 'error')).toEqual([]);
    expect(frames.at(-1)).toMatchObject({ type: 'done', finish_reason: 'cancelled' });
    expect(typesOf(frames).slice(-4)).toEqual(['citations', 'message', 'usage', 'done']);
    const conversationId = frames[0]!.conversation_id as string;
    const stored = (await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ role: string; finish_reason: string | null }> };
    expect(stored.data.map((m) => [m.role, m.finish_reason])).toEqual([['visitor', null], ['agent', 'cancelled']]);

    // The same on a conversation that goes on (its turn is set up through the conversation's actor).
    s.sendTogether([{ type: 'message', message: 'and again', conversation_id: conversationId }, { type: 'cancel' }]);
    const again = await s.until(isDone);
    expect(again.filter((f) => f.type === 'error')).toEqual([]);
    expect(again.at(-1)).toMatchObject({ type: 'done', finish_reason: 'cancelled' });
    await waitFor(() => (mock.activeStreams() === 0 ? true : undefined), 5_000, 'no upstream stream left');
  });

  it('a cancel with a turn_id it does not know is still an error frame, and the turn runs on', async () => {
    const s = await raw(`/v1/agents/${agent}/chat/ws`, { authorization: `Bearer ${srv.apiKey}` });
    s.sendTogether([{ type: 'message', message: QUESTION }, { type: 'cancel', turn_id: 'turn_01NOTMINE' }]);
    const frames = await s.until((f) => f.type === 'done');
    expect(errorCode(frames.find((f) => f.type === 'error')!)).toBe('not_found');
    expect(frames.at(-1)).toMatchObject({ type: 'done', finish_reason: 'stop' });
  });

  it('POST /v1/conversations/{id}/turns/{turn_id}/cancel: 202 while it stops, then 200 finished; an unknown turn is 404', async () => {
    let ids: { conversation: string; turn: string } | undefined;
    const stream = readSse(`${srv.url}/v1/agents/${mockAgent}/chat`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'count', stream: true }),
    }, (e) => {
      if (e.data.type === 'conversation') ids = { conversation: e.data.conversation_id as string, turn: e.data.turn_id as string };
    });
    await waitFor(() => (ids !== undefined && mock.activeStreams() > 0 ? true : undefined), 10_000, 'the turn to stream');
    const path = `/v1/conversations/${ids!.conversation}/turns/${ids!.turn}/cancel`;
    const r = await srv.api(path, { method: 'POST' });
    expect(r.status).toBe(202);
    expect(await r.json()).toEqual({ conversation_id: ids!.conversation, turn_id: ids!.turn, status: 'cancelling' });
    const { events } = await stream;
    expect(events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'cancelled' });
    const again = await srv.api(path, { method: 'POST' });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ conversation_id: ids!.conversation, turn_id: ids!.turn, status: 'finished' });
    expect((await srv.api(`/v1/conversations/${ids!.conversation}/turns/turn_missing/cancel`, { method: 'POST' })).status).toBe(404);
    const other = await srv.addOrganization('Cancel other');
    expect((await srv.api(path, { method: 'POST', key: other.apiKey })).status).toBe(404);
  });
});

describe('resume on a socket', () => {
  it('after a dropped connection, resume with after_seq gets exactly the missing events, then the live rest', async () => {
    const s = await socket(chatPath(mockAgent, personToken));
    s.send({ type: 'message', message: 'count slowly' });
    const seen = await s.until((f) => f.type === 'token' && s.frames.filter((x) => x.type === 'token').length >= 3, 10_000, 'three tokens');
    const k = seen.length;
    const conversationId = seen[0]!.conversation_id as string;
    const turnId = seen[0]!.turn_id as string;
    s.drop();
    await s.closed;

    const again = await socket(chatPath(mockAgent, personToken));
    again.send({ type: 'resume', turn_id: turnId, after_seq: k });
    const rest = await again.until(isDone, 15_000, 'the end of the turn');
    expect(rest[0]!.type).toBe('token');
    expectStreamFrames(rest, conversationId);

    const all = await readSse(`${srv.url}/v1/conversations/${conversationId}/turns/${turnId}/events`, { headers: { authorization: `Bearer ${srv.apiKey}` } });
    const expected = all.events.map((e) => ({ ...e.data, conversation_id: conversationId }));
    expect([...seen, ...rest]).toEqual(expected);
    expect(rest).toEqual(expected.slice(k));

    again.send({ type: 'resume', turn_id: 'turn_missing', after_seq: 0 });
    expect(errorCode(await again.next())).toBe('not_found');
    // The same turn twice on one socket is refused (its frames were written once).
    again.send({ type: 'resume', turn_id: turnId, after_seq: 0 });
    const twice = await again.next();
    expect(errorCode(twice)).toBe('validation_failed');
    expect((twice.error as { message: string }).message).toBe('This socket already follows that turn.');
  });
});

describe('operator view and inbox', () => {
  it('the inbox gets every conversation event of the organization; the operator view gets messages, turns and status; operator frames reach the visitor', async () => {
    const inbox = await socket(`/v1/inbox/ws?token=${encodeURIComponent(personToken)}&org_id=${srv.orgId}`);
    const visitor = await socket(chatPath(agent, personToken));
    visitor.send({ type: 'message', message: 'hello' });
    const turn = await visitor.until(isDone);
    const conversationId = turn[0]!.conversation_id as string;
    const turnId = turn[0]!.turn_id as string;
    const agentMessage = turn.find((f) => f.type === 'message')!.message_id as string;

    const created = await inbox.until((f) => f.type === 'turn.ended');
    expect(created.map((f) => f.type)).toEqual(['conversation.created', 'message.created', 'turn.started', 'message.created', 'turn.ended']);
    expect(created[0]).toEqual({ type: 'conversation.created', conversation_id: conversationId, agent_id: agent });
    expect(created[1]).toMatchObject({ type: 'message.created', conversation_id: conversationId, role: 'visitor', content: 'hello', turn_id: turnId });
    expect(created[2]).toEqual({ type: 'turn.started', conversation_id: conversationId, turn_id: turnId });
    expect(created[3]).toMatchObject({ type: 'message.created', message_id: agentMessage, role: 'agent', content: tokenText(turn) });
    expect(created[4]).toEqual({ type: 'turn.ended', conversation_id: conversationId, turn_id: turnId, finish_reason: 'stop', error_code: null });

    const view = await socket(`/v1/conversations/${conversationId}/ws?token=${encodeURIComponent(personToken)}`);
    const take = await srv.api(`/v1/conversations/${conversationId}/takeover`, { method: 'POST' });
    expect(take.status).toBe(200);
    expect(await view.next()).toEqual({ type: 'status', conversation_id: conversationId, status: 'handed_off' });
    expect(await inbox.next()).toEqual({ type: 'conversation.status', conversation_id: conversationId, status: 'handed_off' });

    view.send({ type: 'message', content: 'Hello, Ada here.' });
    const own = await view.next();
    expect(storedMessage(own)).toEqual(['operator', 'Hello, Ada here.']);
    expectOperatorPush(await visitor.until(isDone), conversationId, 'Hello, Ada here.', own.message_id as string);
    expect(await inbox.next()).toMatchObject({ type: 'message.created', role: 'operator', content: 'Hello, Ada here.', turn_id: null });

    // The visitor writes while a person answers: forwarded, and the operator sees it with its content.
    visitor.send({ type: 'message', message: 'Thanks!', conversation_id: conversationId });
    const forwarded = await visitor.until(isDone);
    expect(typesOf(forwarded)).toEqual(['conversation', 'message', 'done']);
    expect(forwarded.at(-1)).toMatchObject({ finish_reason: 'handoff' });
    expect(storedMessage(await view.next())).toEqual(['visitor', 'Thanks!']);

    view.send({ type: 'message', content: '' });
    expect(errorCode(await view.next())).toBe('validation_failed');
    view.send({ type: 'ping' });
    expect(await view.next()).toEqual({ type: 'pong' });
  });

  it('an operator view with after_message_id catches up first; an unknown conversation closes 4404; the inbox needs org_id with an access token', async () => {
    const r = await srv.api(`/v1/agents/${agent}/chat`, { body: { message: 'hello' } });
    const { conversation_id: conversationId } = (await r.json()) as { conversation_id: string };
    const messages = (await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ id: string; role: string; content: string }> };
    const view = await raw(`/v1/conversations/${conversationId}/ws?after_message_id=${messages.data[0]!.id}`, { Authorization: `Bearer ${srv.apiKey}` });
    expect(storedMessage(await view.next())).toEqual(['agent', messages.data[1]!.content]);
    expect(await refused(`/v1/conversations/conv_missing/ws?token=${encodeURIComponent(personToken)}`)).toEqual({ code: 4404, reason: 'not_found' });
    expect(await refused(`/v1/inbox/ws?token=${encodeURIComponent(personToken)}`)).toEqual({ code: 1008, reason: 'missing_org_id' });
    const other = await srv.addOrganization('Inbox other');
    expect(await refused(`/v1/inbox/ws?token=${encodeURIComponent(personToken)}&org_id=${other.orgId}`)).toEqual({ code: 4403, reason: 'not_a_member' });
  });
});

describe('backpressure', () => {
  it('a socket that stops reading is closed with 1013 and a warning, while the operator view of the same turn gets every event', async () => {
    // 512 deltas of 32 KiB, one every 2 ms: 16 MiB at 16 MiB/s, several times what the kernel buffers of a
    // paused loopback socket hold plus the default bound (PARLEY_WS_MAX_BUFFERED_BYTES, 1 MiB), at a pace a
    // reading client keeps up with.
    const BOUND = 1024 * 1024;
    const own = await startTestServer({ PARLEY_OPENAI_BASE_URL: mock.url }, { captureLogs: true });
    try {
      const token = (await own.signIn({ role: 'operator' })).session.access_token;
      const talker = (await (await own.api('/v1/agents', { body: { name: 'Soon big', model: { provider: 'openai', name: 'mock' } } })).json() as { id: string }).id;
      const first = await own.api(`/v1/agents/${talker}/chat`, { body: { message: 'hello' } });
      const { conversation_id: conversationId } = (await first.json()) as { conversation_id: string };
      const patched = await own.api(`/v1/agents/${talker}`, { method: 'PATCH', body: { model: { provider: 'openai', name: 'mock-big-512x32768-every-2' } } });
      expect(patched.status).toBe(200);

      // The reading client runs in another process: in this one it would compete with the server for the CPU.
      const { read } = await readInChild(own.parley.port, `/v1/conversations/${conversationId}/ws?token=${encodeURIComponent(token)}`);
      const up = await rawUpgrade(own.parley.port, `/v1/agents/${talker}/chat/ws?token=${encodeURIComponent(token)}`);
      const slow = up.socket!;
      opened.push(slow);
      slow.pause();
      slow.send({ type: 'message', message: 'flood me', conversation_id: conversationId });
      const got = await read;
      expect(got.before.map((f) => storedMessage(f as Frame))).toEqual([['visitor', 'flood me']]);
      expect(got.tokens).toBe(512);
      expect(got.textLength).toBe(512 * 32768);
      expect(got.last).toMatchObject({ type: 'done', finish_reason: 'stop', conversation_id: conversationId });

      const warning = await waitFor(() => own.logs().find((l) => l.msg.startsWith('socket client too slow')), 20_000, 'the slow-socket log line');
      expect(warning.level).toBe(40);
      expect(warning.max_buffered_bytes).toBe(BOUND);
      expect(warning.buffered_bytes as number).toBeGreaterThan(BOUND);
      slow.resume();
      expect(await slow.closed).toEqual({ code: 1013, reason: 'consumer_too_slow' });
      expect(slow.frames.filter((f) => f.type === 'token').length).toBeLessThan(512);
      const stored = (await (await own.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ role: string; content: string }> };
      expect(stored.data.at(-1)!.content.length).toBe(512 * 32768);
    } finally {
      await own.close();
    }
  }, 90_000);
});

describe('idle sockets and shutdown', () => {
  it('pings keep a reading socket open past the idle timeout, a silent one is closed; shutdown closes with 1001', async () => {
    const s = await startTestServer({ PARLEY_WS_IDLE_TIMEOUT_S: '8' });
    try {
      const a = await rawUpgrade(s.parley.port, `/v1/agents/agt_x/chat/ws`, { Authorization: `Bearer ${s.apiKey}` });
      expect(await a.socket!.closed).toEqual({ code: 4404, reason: 'not_found' });
      const id = (await (await s.api('/v1/agents', { body: { name: 'Idle' } })).json() as { id: string }).id;
      const live = (await rawUpgrade(s.parley.port, `/v1/agents/${id}/chat/ws`, { Authorization: `Bearer ${s.apiKey}` })).socket!;
      const silent = (await rawUpgrade(s.parley.port, `/v1/agents/${id}/chat/ws`, { Authorization: `Bearer ${s.apiKey}` })).socket!;
      silent.pause();
      await new Promise((r) => setTimeout(r, 14_000));
      expect(live.pingsReceived).toBeGreaterThan(0);
      live.send({ type: 'ping' });
      expect(await live.next()).toEqual({ type: 'pong' });
      silent.resume();
      expect((await silent.closed).code).not.toBe(1001);
      await s.close();
      expect(await live.closed).toEqual({ code: 1001, reason: 'shutting_down' });
    } finally {
      await s.close();
    }
  }, 40_000);
});
