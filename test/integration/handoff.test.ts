/**
 * Handoff to people end to end (API.md "Conversations and handoff", "Chat"): the visitor asks, an
 * operator takes over and replies (the listen-only socket gets the push), resolve gives the agent back,
 * the agent's own handoff tool, a handoff while a turn runs and turns wait, close then 409; every status
 * change stored before it is answered and put on the domain event bus.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/events/event-bus.js';
import { HANDOFF_ANSWER } from '../../src/models/builtin/builtin-model.js';
import { createAgent, expectOperatorPush, publish, storedMessage, tokenText, typesOf, wsUrl } from '../helpers/live.js';
import { expectApiError } from '../helpers/raw-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse, waitFor, type SseEvent } from '../helpers/sse-client.js';
import { openSocket, type Frame, type TestSocket } from '../helpers/ws-client.js';

const isDone = (f: Frame) => f.type === 'done' || f.type === 'error';
const types = (events: SseEvent[]) => events.map((e) => e.data.type);

let srv: TestServer;
let agent: string;
let pk: string;
const events: DomainEvent[] = [];
const opened: TestSocket[] = [];

async function socket(path: string): Promise<TestSocket> {
  const s = await openSocket(wsUrl(srv, path));
  opened.push(s);
  return s;
}

function publicChat(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${srv.url}/v1/public/agents/${pk}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

function publicStream(body: Record<string, unknown>) {
  return readSse(`${srv.url}/v1/public/agents/${pk}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
}

/** Turn ids of visitor messages with a turn and no agent reply of that turn (what recovery would fail). */
function unanswered(stored: Array<{ role: string; turn_id: string | null }>): string[] {
  return stored.filter((v) => v.role === 'visitor' && v.turn_id !== null && !stored.some((a) => a.role === 'agent' && a.turn_id === v.turn_id)).map((v) => v.turn_id!);
}

async function messages(conversationId: string): Promise<Array<{ id: string; role: string; content: string; turn_id: string | null; finish_reason: string | null }>> {
  return ((await (await srv.api(`/v1/conversations/${conversationId}/messages?limit=100`)).json()) as { data: never[] }).data;
}

async function status(conversationId: string): Promise<string> {
  return ((await (await srv.api(`/v1/conversations/${conversationId}`)).json()) as { status: string }).status;
}

const post = (path: string, body?: unknown) => srv.api(path, body === undefined ? { method: 'POST' } : { body });
const ofConversation = (id: string) => events.filter((e) => e.data.conversation_id === id).map((e) => e.type);

beforeAll(async () => {
  srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '60', PARLEY_MAX_QUEUED_TURNS: '2' });
  srv.parley.events.subscribe((e) => events.push(e));
  agent = await createAgent(srv, { name: 'Helpful', tools: ['search_knowledge', 'handoff_to_human'] });
  pk = await publish(srv, agent);
});

afterAll(async () => {
  for (const s of opened) s.drop();
  await srv?.close();
});

describe('handoff end to end', () => {
  it('the visitor asks, an operator takes over and replies, the listen-only socket gets the push, resolve gives the agent back', async () => {
    const first = await publicStream({ message: 'hello' });
    const conversationId = first.events[0]!.data.conversation_id as string;
    const token = first.events[0]!.data.visitor_token as string;
    const listen = await socket(`/v1/public/agents/${pk}/conversations/${conversationId}/ws`);
    listen.send({ type: 'auth', visitor_token: token });
    await listen.next();
    await listen.next();

    // The visitor asks for a person.
    const asked = await fetch(`${srv.url}/v1/public/agents/${pk}/conversations/${conversationId}/handoff`, {
      method: 'POST', headers: { 'x-visitor-token': token, 'content-type': 'application/json' }, body: JSON.stringify({ reason: 'billing question' }),
    });
    expect(asked.status).toBe(200);
    expect(await asked.json()).toMatchObject({ id: conversationId, status: 'pending_handoff' });
    expect(await status(conversationId)).toBe('pending_handoff');
    expect(events.find((e) => e.type === 'handoff.requested' && e.data.conversation_id === conversationId)).toEqual({
      type: 'handoff.requested', org_id: srv.orgId, data: { conversation_id: conversationId, agent_id: agent, reason: 'billing question', requested_by: 'visitor' },
    });

    // While pending, the agent never answers: the message is stored without a turn and forwarded.
    const waiting = await publicStream({ message: 'Is anyone there?', conversation_id: conversationId, visitor_token: token });
    expect(types(waiting.events)).toEqual(['conversation', 'message', 'done']);
    expect(waiting.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'handoff' });
    const forwardedId = waiting.events[1]!.data.message_id as string;
    let stored = await messages(conversationId);
    expect(stored.at(-1)).toMatchObject({ id: forwardedId, role: 'visitor', content: 'Is anyone there?', turn_id: null });
    const oneShot = (await (await publicChat({ message: 'Hello?', conversation_id: conversationId, visitor_token: token })).json()) as Record<string, unknown>;
    expect(oneShot).toMatchObject({ conversation_id: conversationId, content: '', finish_reason: 'handoff' });

    // An operator takes over and replies.
    const taken = await post(`/v1/conversations/${conversationId}/takeover`);
    expect(await taken.json()).toMatchObject({ status: 'handed_off' });
    const reply = await post(`/v1/conversations/${conversationId}/messages`, { content: 'Hi, this is Ada from billing.' });
    expect(reply.status).toBe(201);
    const replyBody = (await reply.json()) as { id: string; role: string; turn_id: string | null; content: string };
    expect(replyBody).toMatchObject({ role: 'operator', turn_id: null, content: 'Hi, this is Ada from billing.' });
    // The listener heard who answers (status frames: the request, the takeover), the visitor's own two
    // messages (as another tab of the visitor would), then the push.
    const heard = await listen.until(isDone);
    expect(heard.filter((f) => f.type === 'status')).toEqual([
      { type: 'status', conversation_id: conversationId, status: 'pending_handoff' },
      { type: 'status', conversation_id: conversationId, status: 'handed_off' },
    ]);
    const visitorFrames = heard.filter((f) => f.role === 'visitor');
    expect(visitorFrames.map(storedMessage)).toEqual([['visitor', 'Is anyone there?'], ['visitor', 'Hello?']]);
    expect(visitorFrames[0]!.message_id).toBe(forwardedId);
    expectOperatorPush(heard.filter((f) => f.type !== 'status' && f.role !== 'visitor'), conversationId, 'Hi, this is Ada from billing.', replyBody.id);
    expect(events.filter((e) => e.type === 'message.created' && e.data.message_id === replyBody.id)).toEqual([
      { type: 'message.created', org_id: srv.orgId, data: { conversation_id: conversationId, message_id: replyBody.id, role: 'operator' } },
    ]);

    // Handed back: the agent answers again, and the listener sees that turn live.
    const resolved = await post(`/v1/conversations/${conversationId}/resolve`);
    expect(await resolved.json()).toMatchObject({ status: 'active' });
    const again = await publicStream({ message: 'hello again', conversation_id: conversationId, visitor_token: token });
    expect(again.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    const liveTurn = await listen.until(isDone);
    expect(liveTurn[0]).toEqual({ type: 'status', conversation_id: conversationId, status: 'active' });
    expect(storedMessage(liveTurn[1]!)).toEqual(['visitor', 'hello again']);
    expect(liveTurn[2]).toMatchObject({ type: 'conversation', conversation_id: conversationId });
    expect(tokenText(liveTurn)).toBe(again.events.filter((e) => e.data.type === 'token').map((e) => e.data.delta).join(''));

    stored = await messages(conversationId);
    expect(stored.map((m) => m.role)).toEqual(['visitor', 'agent', 'visitor', 'visitor', 'operator', 'visitor', 'agent']);
    expect(ofConversation(conversationId)).toEqual([
      'conversation.created', 'message.created', 'message.created', 'handoff.requested', 'message.created', 'message.created',
      'handoff.accepted', 'message.created', 'handoff.resolved', 'message.created', 'message.created',
    ]);
    // Recovery leaves the forwarded messages alone: they were never turns (every turn has its reply).
    expect(unanswered(stored)).toEqual([]);
  });

  it("the agent's own handoff_to_human tool: the turn ends with done/handoff and the conversation waits for a person", async () => {
    const r = await publicStream({ message: 'Can I talk to a human, please?' });
    const e = r.events.map((x) => x.data);
    const conversationId = e[0]!.conversation_id as string;
    const n = e.filter((x) => x.type === 'token').length;
    expect(types(r.events)).toEqual(['conversation', ...Array<string>(n).fill('token'), 'tool_call', 'tool_result', 'citations', 'message', 'usage', 'done']);
    expect(e.filter((x) => x.type === 'token').map((x) => x.delta).join('')).toBe(HANDOFF_ANSWER);
    expect(e.find((x) => x.type === 'tool_call')!.tool_call).toMatchObject({ name: 'handoff_to_human', arguments: { reason: 'The visitor asked for a person.' } });
    expect(e.find((x) => x.type === 'tool_result')!.tool_result).toMatchObject({ name: 'handoff_to_human', output: { status: 'pending_handoff' }, is_error: false });
    expect(e.at(-1)).toEqual({ type: 'done', finish_reason: 'handoff' });
    expect(await status(conversationId)).toBe('pending_handoff');
    const stored = await messages(conversationId);
    expect(stored[1]).toMatchObject({ role: 'agent', content: HANDOFF_ANSWER, finish_reason: 'handoff' });
    expect(events.find((x) => x.type === 'handoff.requested' && x.data.conversation_id === conversationId)!.data).toMatchObject({ requested_by: 'agent', reason: 'The visitor asked for a person.' });

    // An agent without the tool just answers.
    const plain = await createAgent(srv, { name: 'No tool' });
    const once = (await (await srv.api(`/v1/agents/${plain}/chat`, { body: { message: 'Can I talk to a human, please?' } })).json()) as { finish_reason: string };
    expect(once.finish_reason).toBe('stop');
  });

  it('a handoff while the agent answers stops its turn (done/handoff, partial reply stored) and forwards the queued messages', async () => {
    const visitor = await socket(`/v1/agents/${agent}/chat/ws?token=${encodeURIComponent((await srv.signIn()).session.access_token)}`);
    visitor.send({ type: 'message', message: 'hello' });
    const first = await visitor.until(isDone);
    const conversationId = first[0]!.conversation_id as string;
    visitor.send({ type: 'message', message: 'Tell me everything about streaming replies and sockets.', conversation_id: conversationId });
    const head = await visitor.until((f) => f.type === 'token', 10_000, 'a token of the running turn');
    visitor.send({ type: 'message', message: 'queued one', conversation_id: conversationId });
    visitor.send({ type: 'message', message: 'queued two', conversation_id: conversationId });
    await waitFor(() => (srv.parley.services.chat.localPendingTurns(conversationId)?.length === 3 ? true : undefined), 5_000, 'two queued turns');

    const h = await post(`/v1/conversations/${conversationId}/handoff`, { reason: 'watching' });
    expect(await h.json()).toMatchObject({ status: 'pending_handoff' });
    const running = [...head, ...await visitor.until(isDone)];
    expect(running.at(-1)).toMatchObject({ type: 'done', finish_reason: 'handoff' });
    const q1 = await visitor.until(isDone);
    const q2 = await visitor.until(isDone);
    expect(typesOf(q1)).toEqual(['conversation', 'message', 'done']);
    expect(typesOf(q2)).toEqual(['conversation', 'message', 'done']);
    expect(q2.at(-1)).toMatchObject({ finish_reason: 'handoff' });

    const stored = await messages(conversationId);
    const partial = stored.find((m) => m.role === 'agent' && m.finish_reason === 'handoff')!;
    expect(partial.content).toBe(tokenText(running));
    const queued = stored.filter((m) => m.content.startsWith('queued'));
    expect(queued.map((m) => [m.content, m.turn_id])).toEqual([['queued one', null], ['queued two', null]]);
    expect(unanswered(stored)).toEqual([]);
  });

  it('close: any status, then 409 conversation_closed for chat, handoff moves and operator messages; closing again changes nothing', async () => {
    const { conversation_id: conversationId, visitor_token: token } = (await (await publicChat({ message: 'hello' })).json()) as { conversation_id: string; visitor_token: string };
    await post(`/v1/conversations/${conversationId}/takeover`);
    const closed = await post(`/v1/conversations/${conversationId}/close`);
    expect(closed.status).toBe(200);
    expect(await closed.json()).toMatchObject({ id: conversationId, status: 'closed' });
    expect(ofConversation(conversationId).slice(-1)).toEqual(['conversation.closed']);
    await expectApiError(await srv.api(`/v1/agents/${agent}/chat`, { body: { message: 'x', conversation_id: conversationId } }), 409, 'conflict_error', 'conversation_closed');
    await expectApiError(await publicChat({ message: 'x', conversation_id: conversationId, visitor_token: token }), 409, 'conflict_error', 'conversation_closed');
    for (const move of ['handoff', 'takeover', 'resolve']) {
      await expectApiError(await post(`/v1/conversations/${conversationId}/${move}`), 409, 'conflict_error', 'conversation_closed');
    }
    await expectApiError(await post(`/v1/conversations/${conversationId}/messages`, { content: 'late' }), 409, 'conflict_error', 'conversation_closed');
    const again = await post(`/v1/conversations/${conversationId}/close`);
    expect(await again.json()).toMatchObject({ status: 'closed' });
    expect(ofConversation(conversationId).filter((t) => t === 'conversation.closed')).toHaveLength(1);
    // Still closed after the actor is gone: the status was stored.
    expect(await status(conversationId)).toBe('closed');
  });

  it('asking for what already is changes nothing; unknown or foreign conversations are 404', async () => {
    const { conversation_id: conversationId } = (await (await srv.api(`/v1/agents/${agent}/chat`, { body: { message: 'hi' } })).json()) as { conversation_id: string };
    expect(await (await post(`/v1/conversations/${conversationId}/resolve`)).json()).toMatchObject({ status: 'active' });
    expect(await (await post(`/v1/conversations/${conversationId}/takeover`)).json()).toMatchObject({ status: 'handed_off' });
    expect(await (await post(`/v1/conversations/${conversationId}/takeover`)).json()).toMatchObject({ status: 'handed_off' });
    expect(await (await post(`/v1/conversations/${conversationId}/handoff`)).json()).toMatchObject({ status: 'handed_off' });
    expect(ofConversation(conversationId).filter((t) => t.startsWith('handoff.'))).toEqual(['handoff.accepted']);
    await expectApiError(await post('/v1/conversations/conv_missing/takeover'), 404, 'not_found_error', 'not_found');
    const other = await srv.addOrganization('Elsewhere');
    await expectApiError(await srv.api(`/v1/conversations/${conversationId}/close`, { method: 'POST', key: other.apiKey }), 404, 'not_found_error', 'not_found');
    await expectApiError(await post(`/v1/conversations/${conversationId}/handoff`, { reason: '' }), 400, 'invalid_request_error', 'validation_failed');
  });

  it('an operator on the conversation socket sees the visitor message of a handed-off conversation with its content', async () => {
    const person = await srv.signIn({ role: 'operator' });
    const { conversation_id: conversationId, visitor_token: token } = (await (await publicChat({ message: 'hello' })).json()) as { conversation_id: string; visitor_token: string };
    await post(`/v1/conversations/${conversationId}/takeover`);
    const view = await socket(`/v1/conversations/${conversationId}/ws?token=${encodeURIComponent(person.session.access_token)}`);
    await publicChat({ message: 'My order is late.', conversation_id: conversationId, visitor_token: token });
    expect(storedMessage(await view.next())).toEqual(['visitor', 'My order is late.']);
  });
});
