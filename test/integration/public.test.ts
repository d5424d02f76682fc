/**
 * Published agents and their public endpoints (API.md "Agents", "Chat", "Credentials", "WebSockets"):
 * public keys, visitor tokens, the public twins, CORS and the socket Origin check, unpublish, rate limits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, errorCode, expectOperatorPush, expectStreamFrames, publish, storedMessage, tokenText, typesOf, wsUrl } from '../helpers/live.js';
import { expectApiError } from '../helpers/raw-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';
import { openSocket, rawUpgrade, type Frame, type TestSocket } from '../helpers/ws-client.js';

const isDone = (f: Frame) => f.type === 'done' || f.type === 'error';

let srv: TestServer;
let agent: string;
let pk: string;
const opened: TestSocket[] = [];

async function socket(path: string): Promise<TestSocket> {
  const s = await openSocket(wsUrl(srv, path));
  opened.push(s);
  return s;
}

/** POST the public chat; `headers` add to the JSON content type. */
function publicChat(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${srv.url}/v1/public/agents/${key}/chat`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** A new public conversation (one-shot): its id and visitor token. */
async function startConversation(key = pk): Promise<{ conversationId: string; token: string }> {
  const r = await publicChat(key, { message: 'hello' });
  expect(r.status, await r.clone().text()).toBe(200);
  const body = (await r.json()) as { conversation_id: string; visitor_token: string };
  return { conversationId: body.conversation_id, token: body.visitor_token };
}

beforeAll(async () => {
  srv = await startTestServer();
  agent = await createAgent(srv, { name: 'Widget bot' });
  pk = await publish(srv, agent);
});

afterAll(async () => {
  for (const s of opened) s.drop();
  await srv?.close();
});

describe('publish', () => {
  it('gives a pk_ key once: publishing again keeps it; the agent shows it with allowed_origins ["*"]', async () => {
    expect(await publish(srv, agent)).toBe(pk);
    const a = (await (await srv.api(`/v1/agents/${agent}`)).json()) as Record<string, unknown>;
    expect(a).toMatchObject({ published: true, public_key: pk, allowed_origins: ['*'] });
    expect((await srv.api('/v1/agents/agt_missing/publish', { method: 'POST' })).status).toBe(404);
    const operator = await srv.signIn({ role: 'operator' });
    await expectApiError(await srv.api(`/v1/agents/${agent}/publish`, { method: 'POST', headers: operator.headers }), 403, 'permission_error', 'forbidden');
  });

  it('validates allowed_origins: * or scheme://host[:port]', async () => {
    for (const bad of [[], ['shop.example'], ['https://shop.example/path'], ['ftp://x.example'], ['https://shop.example/']]) {
      await expectApiError(await srv.api(`/v1/agents/${agent}`, { method: 'PATCH', body: { allowed_origins: bad } }), 400, 'invalid_request_error', 'validation_failed');
    }
  });
});

describe('public chat', () => {
  it('streams the same contract as the authenticated chat; the first event carries the visitor token, which continues the conversation', async () => {
    const first = await readSse(`${srv.url}/v1/public/agents/${pk}/chat`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hello', stream: true }),
    });
    const conv = first.events[0]!.data;
    expect(Object.keys(conv).sort()).toEqual(['conversation_id', 'turn_id', 'type', 'visitor_token']);
    expect(conv.visitor_token).toMatch(/^vt_[A-Za-z0-9_-]{43}$/);
    expect(first.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    const conversationId = conv.conversation_id as string;
    const token = conv.visitor_token as string;

    const second = await readSse(`${srv.url}/v1/public/agents/${pk}/chat`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'thanks', stream: true, conversation_id: conversationId, visitor_token: token }),
    });
    expect(second.events[0]!.data).toEqual({ type: 'conversation', conversation_id: conversationId, turn_id: second.events[0]!.data.turn_id });
    expect(second.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    // The token is stored as a hash only.
    const raw = srv.parley.store as unknown as { db: { prepare(sql: string): { all(): unknown[] } } };
    expect(JSON.stringify(raw.db.prepare('SELECT * FROM conversations').all())).not.toContain(token);
  });

  it('one-shot: the reply of a new conversation carries visitor_token, a continued one does not', async () => {
    const { conversationId, token } = await startConversation();
    expect(token).toMatch(/^vt_/);
    const r = await publicChat(pk, { message: 'again', conversation_id: conversationId, visitor_token: token });
    const body = (await r.json()) as Record<string, unknown>;
    expect(body.conversation_id).toBe(conversationId);
    expect(body).not.toHaveProperty('visitor_token');
  });

  it('a conversation cannot be continued, read, handed off, resumed or cancelled without its visitor token', async () => {
    const { conversationId, token } = await startConversation();
    const other = await startConversation();
    const base = `${srv.url}/v1/public/agents/${pk}/conversations/${conversationId}`;
    await expectApiError(await publicChat(pk, { message: 'x', conversation_id: conversationId }), 401, 'authentication_error', 'missing_credentials');
    await expectApiError(await publicChat(pk, { message: 'x', conversation_id: conversationId, visitor_token: other.token }), 404, 'not_found_error', 'not_found');
    await expectApiError(await publicChat(pk, { message: 'x', conversation_id: conversationId, visitor_token: 'vt_nope' }), 404, 'not_found_error', 'not_found');

    await expectApiError(await fetch(`${base}/messages`), 401, 'authentication_error', 'missing_credentials');
    await expectApiError(await fetch(`${base}/messages`, { headers: { 'x-visitor-token': other.token } }), 404, 'not_found_error', 'not_found');
    const ok = await fetch(`${base}/messages`, { headers: { 'x-visitor-token': token } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: Array<{ role: string }> }).data.map((m) => m.role)).toEqual(['visitor', 'agent']);

    await expectApiError(await fetch(`${base}/handoff`, { method: 'POST', headers: { 'x-visitor-token': other.token } }), 404, 'not_found_error', 'not_found');
    await expectApiError(await fetch(`${base}/turns/turn_x/events`, { headers: { 'x-visitor-token': other.token } }), 404, 'not_found_error', 'not_found');
    await expectApiError(await fetch(`${base}/turns/turn_x/cancel`, { method: 'POST' }), 401, 'authentication_error', 'missing_credentials');
    await expectApiError(await fetch(`${base}/turns/turn_x/cancel`, { method: 'POST', headers: { 'x-visitor-token': other.token } }), 404, 'not_found_error', 'not_found');

    // Listening needs it too.
    const listen = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    listen.send({ type: 'auth', visitor_token: other.token });
    expect(await listen.closed).toEqual({ code: 4404, reason: 'not_found' });
  });

  it('listen-only: an unknown visitor token closes 4401; a valid token of another conversation 4404 (API.md "WebSockets")', async () => {
    const { conversationId } = await startConversation();
    const other = await startConversation();
    const path = `/v1/public/agents/${pk}/conversations/${conversationId}/ws`;
    for (const token of [`vt_${'A'.repeat(43)}`, 'vt_nope', 'not a token']) {
      const unknown = await socket(path);
      unknown.send({ type: 'auth', visitor_token: token });
      expect(await unknown.closed, token).toEqual({ code: 4401, reason: 'invalid_token' });
    }
    const foreign = await socket(path);
    foreign.send({ type: 'auth', visitor_token: other.token });
    expect(await foreign.closed).toEqual({ code: 4404, reason: 'not_found' });
    // A valid token with an unknown conversation is 4404 too; an unknown token there 4401.
    const missing = await socket(`/v1/public/agents/${pk}/conversations/conv_missing/ws`);
    missing.send({ type: 'auth', visitor_token: other.token });
    expect(await missing.closed).toEqual({ code: 4404, reason: 'not_found' });
    const missingUnknown = await socket(`/v1/public/agents/${pk}/conversations/conv_missing/ws`);
    missingUnknown.send({ type: 'auth', visitor_token: `vt_${'B'.repeat(43)}` });
    expect(await missingUnknown.closed).toEqual({ code: 4401, reason: 'invalid_token' });
  });

  it('resume and cancel work with the visitor token', async () => {
    const { conversationId, token } = await startConversation();
    const r = await publicChat(pk, { message: 'tell me more', conversation_id: conversationId, visitor_token: token, stream: true });
    const text = await r.text();
    const turnId = /"turn_id":"(turn_[0-9A-Za-z]+)"/.exec(text)![1]!;
    const base = `${srv.url}/v1/public/agents/${pk}/conversations/${conversationId}/turns/${turnId}`;
    const replay = await readSse(`${base}/events`, { headers: { 'x-visitor-token': token, 'last-event-id': `${turnId}:2` } });
    expect(replay.events[0]!.id).toBe(`${turnId}:3`);
    expect(replay.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    const cancel = await fetch(`${base}/cancel`, { method: 'POST', headers: { 'x-visitor-token': token } });
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toEqual({ conversation_id: conversationId, turn_id: turnId, status: 'finished' });
  });

  it('a public key grants that one agent\'s chat and nothing else', async () => {
    const { conversationId, token } = await startConversation();
    // Not a credential of the API.
    await expectApiError(await fetch(`${srv.url}/v1/agents`, { headers: { authorization: `Bearer ${pk}` } }), 401, 'authentication_error', 'invalid_api_key');
    // Another published agent of the same organization cannot reach this conversation.
    const second = await createAgent(srv, { name: 'Second widget' });
    const pk2 = await publish(srv, second);
    await expectApiError(await publicChat(pk2, { message: 'x', conversation_id: conversationId, visitor_token: token }), 404, 'not_found_error', 'not_found');
    await expectApiError(await fetch(`${srv.url}/v1/public/agents/${pk2}/conversations/${conversationId}/messages`, { headers: { 'x-visitor-token': token } }), 404, 'not_found_error', 'not_found');
    // A conversation started with an API key is not a public one.
    const api = await srv.api(`/v1/agents/${agent}/chat`, { body: { message: 'hi' } });
    const apiConversation = ((await api.json()) as { conversation_id: string }).conversation_id;
    await expectApiError(await publicChat(pk, { message: 'x', conversation_id: apiConversation, visitor_token: token }), 404, 'not_found_error', 'not_found');
    // An unknown key.
    await expectApiError(await publicChat('pk_unknown', { message: 'x' }), 404, 'not_found_error', 'not_found');
    // The public chat refuses fields of neither request.
    await expectApiError(await publicChat(pk, { message: 'x', extra: 1 }), 400, 'invalid_request_error', 'validation_failed');
  });
});

describe('public sockets', () => {
  it('chats on the public socket; a message frame that continues a conversation needs its visitor token', async () => {
    const s = await socket(`/v1/public/agents/${pk}/ws`);
    s.send({ type: 'message', message: 'hello' });
    const frames = await s.until(isDone);
    const conversationId = frames[0]!.conversation_id as string;
    expectStreamFrames(frames, conversationId);
    const token = frames[0]!.visitor_token as string;
    expect(token).toMatch(/^vt_/);
    s.send({ type: 'message', message: 'again', conversation_id: conversationId });
    expect(errorCode(await s.next())).toBe('missing_credentials');
    s.send({ type: 'message', message: 'again', conversation_id: conversationId, visitor_token: 'vt_wrong' });
    expect(errorCode(await s.next())).toBe('not_found');
    s.send({ type: 'message', message: 'again', conversation_id: conversationId, visitor_token: token });
    expect((await s.until(isDone)).at(-1)).toMatchObject({ type: 'done', finish_reason: 'stop', conversation_id: conversationId });
    // resume on a public socket: a turn of the visitor's conversation, with its token (this socket already followed it).
    s.send({ type: 'resume', turn_id: frames[0]!.turn_id, after_seq: frames.length - 1, visitor_token: token });
    expect(errorCode(await s.next())).toBe('validation_failed');
    const fresh = await socket(`/v1/public/agents/${pk}/ws`);
    fresh.send({ type: 'resume', turn_id: frames[0]!.turn_id, after_seq: frames.length - 1 });
    expect(errorCode(await fresh.next())).toBe('missing_credentials');
    fresh.send({ type: 'resume', turn_id: frames[0]!.turn_id, after_seq: frames.length - 1, visitor_token: token });
    expect(await fresh.next()).toEqual(frames.at(-1));
  });

  it('listen-only: auth within 5 s, else 4408; another first frame is 4401; an unknown key 4404', async () => {
    const { conversationId } = await startConversation();
    const silent = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    const started = Date.now();
    expect(await silent.closed).toEqual({ code: 4408, reason: 'auth_timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_900);
    const pinger = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    pinger.send({ type: 'ping' });
    expect(await pinger.closed).toEqual({ code: 4401, reason: 'auth_required' });
    const unknown = await rawUpgrade(srv.parley.port, `/v1/public/agents/pk_unknown/conversations/${conversationId}/ws`);
    expect(await unknown.socket!.closed).toEqual({ code: 4404, reason: 'not_found' });
    const noToken = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    noToken.send({ type: 'auth', visitor_token: '' });
    expect(await noToken.closed).toEqual({ code: 4401, reason: 'auth_required' });
  });

  it('listen-only: catch-up after after_message_id as message frames with role and content, then operator pushes, agent turns and status changes live', async () => {
    const { conversationId, token } = await startConversation();
    await publicChat(pk, { message: 'second question', conversation_id: conversationId, visitor_token: token });
    const stored = ((await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ id: string; role: string; content: string }> }).data;
    expect(stored.map((m) => m.role)).toEqual(['visitor', 'agent', 'visitor', 'agent']);

    const all = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    all.send({ type: 'auth', visitor_token: token });
    const everything = [await all.next(), await all.next(), await all.next(), await all.next()];
    expect(everything.map(storedMessage)).toEqual(stored.map((m) => [m.role, m.content]));
    expect(everything.map((f) => f.message_id)).toEqual(stored.map((m) => m.id));

    const listen = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    listen.send({ type: 'auth', visitor_token: token, after_message_id: stored[1]!.id });
    expect([storedMessage(await listen.next()), storedMessage(await listen.next())]).toEqual([['visitor', 'second question'], ['agent', stored[3]!.content]]);
    listen.send({ type: 'ping' });
    expect(await listen.next()).toEqual({ type: 'pong' });

    // An operator message is pushed live.
    const m = await srv.api(`/v1/conversations/${conversationId}/messages`, { body: { content: 'A person here.' } });
    const pushed = (await m.json()) as { id: string };
    expectOperatorPush(await listen.until(isDone), conversationId, 'A person here.', pushed.id);
    // A message the visitor sends elsewhere (another tab: the HTTP chat) comes live as a stored message,
    // before the agent turn it starts, which streams live.
    const reply = await publicChat(pk, { message: 'third', conversation_id: conversationId, visitor_token: token });
    const replyBody = (await reply.json()) as { content: string; message_id: string };
    const [asked, ...turn] = await listen.until(isDone);
    expect(storedMessage(asked!)).toEqual(['visitor', 'third']);
    const third = ((await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ id: string; role: string; content: string }> }).data.at(-2)!;
    expect(third).toMatchObject({ role: 'visitor', content: 'third' });
    expect(asked!.message_id).toBe(third.id);
    expectStreamFrames(turn, conversationId);
    expect(typesOf(turn)[0]).toBe('conversation');
    expect(tokenText(turn)).toBe(replyBody.content);
    expect(turn.find((f) => f.type === 'message')!.message_id).toBe(replyBody.message_id);
    // The agent's reply comes as that stream only, not again as a stored message frame.
    listen.send({ type: 'ping' });
    expect(await listen.next()).toEqual({ type: 'pong' });
    // Nothing doubled: the first listener got the same pushes, once each.
    await all.until(isDone);
    const allTurn = await all.until(isDone);
    expect(allTurn.filter((f) => f.role === 'visitor').map(storedMessage)).toEqual([['visitor', 'third']]);
    expect(tokenText(allTurn)).toBe(replyBody.content);

    // Status changes reach the visitor as status frames: who answers now.
    for (const [path, status] of [['takeover', 'handed_off'], ['resolve', 'active'], ['close', 'closed']] as const) {
      expect((await srv.api(`/v1/conversations/${conversationId}/${path}`, { method: 'POST' })).status).toBe(200);
      const frames = await listen.until((f) => f.type === 'status');
      expect(frames.at(-1)).toEqual({ type: 'status', conversation_id: conversationId, status });
    }
  });
});

describe('listen-only while a person answers', () => {
  it('a visitor message sent from another tab comes live to the listening page, once, and starts no agent turn', async () => {
    const { conversationId, token } = await startConversation();
    expect((await srv.api(`/v1/conversations/${conversationId}/takeover`, { method: 'POST' })).status).toBe(200);
    const before = ((await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ id: string }> }).data;
    const listen = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    listen.send({ type: 'auth', visitor_token: token, after_message_id: before.at(-1)!.id });
    const r = await publicChat(pk, { message: 'Are you there?', conversation_id: conversationId, visitor_token: token });
    const sent = (await r.json()) as { message_id: string; finish_reason: string };
    expect(sent.finish_reason).toBe('handoff');
    const echo = await listen.next();
    expect(storedMessage(echo)).toEqual(['visitor', 'Are you there?']);
    const after = ((await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ id: string; role: string }> }).data;
    expect(echo.message_id).toBe(after.at(-1)!.id);
    // Nothing else: no agent turn, no second copy.
    listen.send({ type: 'ping' });
    expect(await listen.next()).toEqual({ type: 'pong' });
  });
});

describe('unpublish', () => {
  it('stops the old key at once and closes its live sockets with 4404; publishing again gives a new key', async () => {
    const a = await createAgent(srv, { name: 'Short-lived widget' });
    const key = await publish(srv, a);
    const chat = await socket(`/v1/public/agents/${key}/ws`);
    chat.send({ type: 'message', message: 'hello' });
    const frames = await chat.until(isDone);
    const listen = await socket(`/v1/public/agents/${key}/conversations/${frames[0]!.conversation_id as string}/ws`);
    listen.send({ type: 'auth', visitor_token: frames[0]!.visitor_token });
    await listen.next();
    const r = await srv.api(`/v1/agents/${a}/unpublish`, { method: 'POST' });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ id: a, published: false, public_key: null });
    expect(await chat.closed).toEqual({ code: 4404, reason: 'unpublished' });
    expect(await listen.closed).toEqual({ code: 4404, reason: 'unpublished' });
    await expectApiError(await publicChat(key, { message: 'x' }), 404, 'not_found_error', 'not_found');
    const again = await rawUpgrade(srv.parley.port, `/v1/public/agents/${key}/ws`);
    expect(await again.socket!.closed).toEqual({ code: 4404, reason: 'not_found' });
    const next = await publish(srv, a);
    expect(next).not.toBe(key);
  });

  it('ends the visitor tokens of the agent for good: after unpublish and a new publish the old token works nowhere (HTTP, public socket, listen-only)', async () => {
    const a = await createAgent(srv, { name: 'Republished widget' });
    const key = await publish(srv, a);
    const r = await publicChat(key, { message: 'hello' });
    const { conversation_id: conversationId, visitor_token: token } = (await r.json()) as { conversation_id: string; visitor_token: string };
    const read = (k: string) => fetch(`${srv.url}/v1/public/agents/${k}/conversations/${conversationId}/messages`, { headers: { 'x-visitor-token': token } });
    expect((await read(key)).status).toBe(200);

    expect((await srv.api(`/v1/agents/${a}/unpublish`, { method: 'POST' })).status).toBe(200);
    await expectApiError(await read(key), 404, 'not_found_error', 'not_found');
    const next = await publish(srv, a);

    // Through the new key, the old conversation's token opens nothing.
    await expectApiError(await read(next), 404, 'not_found_error', 'not_found');
    await expectApiError(await publicChat(next, { message: 'still there?', conversation_id: conversationId, visitor_token: token }), 404, 'not_found_error', 'not_found');
    await expectApiError(await fetch(`${srv.url}/v1/public/agents/${next}/conversations/${conversationId}/handoff`, { method: 'POST', headers: { 'x-visitor-token': token } }), 404, 'not_found_error', 'not_found');
    const chat = await socket(`/v1/public/agents/${next}/ws`);
    chat.send({ type: 'message', message: 'still there?', conversation_id: conversationId, visitor_token: token });
    expect(errorCode(await chat.next())).toBe('not_found');
    const listen = await socket(`/v1/public/agents/${next}/conversations/${conversationId}/ws`);
    listen.send({ type: 'auth', visitor_token: token });
    expect(await listen.closed).toEqual({ code: 4401, reason: 'invalid_token' });
    // The conversation itself is kept, and a new visitor conversation through the new key works.
    expect((await srv.api(`/v1/conversations/${conversationId}/messages`)).status).toBe(200);
    const fresh = await startConversation(next);
    expect((await read(next)).status).toBe(404);
    expect((await fetch(`${srv.url}/v1/public/agents/${next}/conversations/${fresh.conversationId}/messages`, { headers: { 'x-visitor-token': fresh.token } })).status).toBe(200);
  });
});

describe('CORS and Origin', () => {
  it('answers a preflight from another origin to the public chat, and the response carries the CORS headers', async () => {
    const pre = await fetch(`${srv.url}/v1/public/agents/${pk}/chat`, {
      method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS');
    expect(pre.headers.get('access-control-allow-headers')).toBe('Content-Type, X-Visitor-Token, Last-Event-ID');
    expect(pre.headers.get('access-control-max-age')).toBe('600');
    const r = await publicChat(pk, { message: 'hello' }, { origin: 'https://elsewhere.example' });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('access-control-expose-headers')).toBe('X-Request-Id, Retry-After');
    const messages = await fetch(`${srv.url}/v1/public/agents/${pk}/conversations/conv_x/messages`, {
      method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET' },
    });
    expect(messages.headers.get('access-control-allow-methods')).toBe('GET, OPTIONS');
  });

  it('with allowed_origins set, other origins are refused: the preflight, the request and the socket upgrade', async () => {
    const a = await createAgent(srv, { name: 'Shop widget', allowed_origins: ['https://shop.example'] });
    const key = await publish(srv, a);
    const pre = (origin: string) => fetch(`${srv.url}/v1/public/agents/${key}/chat`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
    const allowed = await pre('https://shop.example');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(allowed.headers.get('vary')).toBe('Origin');
    const refusedPre = await pre('https://evil.example');
    expect(refusedPre.headers.get('access-control-allow-origin')).toBeNull();
    await expectApiError(refusedPre, 403, 'permission_error', 'origin_not_allowed');
    await expectApiError(await publicChat(key, { message: 'x' }, { origin: 'https://evil.example' }), 403, 'permission_error', 'origin_not_allowed');
    const ok = await publicChat(key, { message: 'x' }, { origin: 'https://shop.example' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    // A server without an Origin is not a page: allowed.
    expect((await publicChat(key, { message: 'x' })).status).toBe(200);

    const evil = await rawUpgrade(srv.parley.port, `/v1/public/agents/${key}/ws`, { Origin: 'https://evil.example' });
    expect(evil.status).toBe(403);
    expect(evil.socket).toBeUndefined();
    expect(JSON.parse(evil.body)).toMatchObject({ error: { type: 'permission_error', code: 'origin_not_allowed' } });
    const good = await rawUpgrade(srv.parley.port, `/v1/public/agents/${key}/ws`, { Origin: 'https://shop.example' });
    expect(good.status).toBe(101);
    good.socket!.send({ type: 'ping' });
    expect(await good.socket!.next()).toEqual({ type: 'pong' });
    good.socket!.drop();
    const listenEvil = await rawUpgrade(srv.parley.port, `/v1/public/agents/${key}/conversations/conv_x/ws`, { Origin: 'https://evil.example' });
    expect(listenEvil.status).toBe(403);
  });
});

describe('rate limits (own server: 3 requests per address, 2 per visitor token, per minute)', () => {
  it('429 rate_limited with Retry-After on HTTP, an error frame with retry_after on a socket', async () => {
    const own = await startTestServer({ PARLEY_PUBLIC_REQUESTS_PER_MINUTE: '4', PARLEY_PUBLIC_VISITOR_REQUESTS_PER_MINUTE: '2' });
    try {
      const a = (await (await own.api('/v1/agents', { body: { name: 'Limited' } })).json() as { id: string }).id;
      const key = ((await (await own.api(`/v1/agents/${a}/publish`, { method: 'POST' })).json()) as { public_key: string }).public_key;
      const chat = (body: Record<string, unknown>) => fetch(`${own.url}/v1/public/agents/${key}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const first = (await (await chat({ message: 'one' })).json()) as { conversation_id: string; visitor_token: string };
      const cont = { conversation_id: first.conversation_id, visitor_token: first.visitor_token };
      expect((await chat({ message: 'two', ...cont })).status).toBe(200);
      expect((await chat({ message: 'three', ...cont })).status).toBe(200);
      // The visitor token's bucket (2) is empty; the address still has one.
      const byVisitor = await chat({ message: 'four', ...cont });
      const visitorError = await expectApiError(byVisitor, 429, 'rate_limit_error', 'rate_limited');
      expect(visitorError.error.message).toContain('visitor token');
      expect(Number(byVisitor.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // One for the socket upgrade, then the address is empty.
      const s = await openSocket(wsUrl(own, `/v1/public/agents/${key}/ws`));
      s.send({ type: 'message', message: 'five' });
      const frame = await s.next();
      expect(errorCode(frame)).toBe('rate_limited');
      expect(frame.retry_after).toBeGreaterThanOrEqual(1);
      const byAddress = await chat({ message: 'six' });
      await expectApiError(byAddress, 429, 'rate_limit_error', 'rate_limited');
      expect(Number(byAddress.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const upgrade = await rawUpgrade(own.parley.port, `/v1/public/agents/${key}/ws`);
      expect(upgrade.status).toBe(429);
      expect(Number(upgrade.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      s.drop();
    } finally {
      await own.close();
    }
  });
});
