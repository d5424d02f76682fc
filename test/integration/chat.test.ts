/**
 * Chat integration tests: the real uWS server, real SQLite, the builtin model and a real mock
 * OpenAI-compatible upstream. Contract: ../shared/API.md "Chat", "Conversations", "Errors" and
 * SPEC.md 6.1.
 */
import diagnostics from 'node:diagnostics_channel';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startMockUpstream, type MockUpstream, type RecordedMessage } from '../helpers/mock-upstream.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { metricsText } from '../helpers/metrics.js';
import { readSse, waitFor, type SseEvent } from '../helpers/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const NO_MATCH = 'I could not find anything about that in the knowledge base.';
const BLOCKED_DEFAULT = "I'm sorry, I can't help with that.";
const DOC_TITLE = 'Zephyr tea garden';
const DOC = `# Zephyr tea garden

The Zephyr tea garden grows oolong on terraced slopes at 1200 metres above the valley.

## Harvest

The harvest at the Zephyr garden happens twice a year, in April and in October, when pickers start at dawn.

## Tours

Visitors can book a tasting tour every Saturday morning; each tour lasts ninety minutes.
`;
const QUESTION = 'When is the harvest at the Zephyr garden?';

/** The event object of an SSE event, loosely typed for assertions. */
const d = (e: SseEvent | undefined): Json => {
  if (e === undefined) throw new Error('missing event');
  return e.data;
};
const types = (events: SseEvent[]): string[] => events.map((e) => e.data.type);
const tokenText = (events: SseEvent[]): string => events.filter((e) => e.data.type === 'token').map((e) => d(e).delta as string).join('');
const ofType = (events: SseEvent[], type: string): Json => d(events.find((e) => e.data.type === type));

function headersFor(key: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...extra };
}

/** POST chat with stream=true and read the SSE response. */
function chatStream(
  s: TestServer, agentId: string, body: Record<string, unknown>,
  onEvent?: (event: SseEvent, all: SseEvent[]) => void | 'stop',
) {
  return readSse(`${s.url}/v1/agents/${agentId}/chat`, {
    method: 'POST', headers: headersFor(s.apiKey), body: JSON.stringify({ ...body, stream: true }),
  }, onEvent);
}

/** POST chat (one-shot unless the body says otherwise). */
function chatOnce(s: TestServer, agentId: string, body: Record<string, unknown>, key?: string): Promise<Response> {
  return s.api(`/v1/agents/${agentId}/chat`, { body, ...(key ? { key } : {}) });
}

async function createAgent(s: TestServer, body: Record<string, unknown>): Promise<string> {
  const r = await s.api('/v1/agents', { body });
  expect(r.status, await r.clone().text()).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

async function listMessages(s: TestServer, conversationId: string): Promise<Json[]> {
  const r = await s.api(`/v1/conversations/${conversationId}/messages?limit=100`);
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: Json[] }).data;
}

/** Every event id is `<turn_id>:<seq>` with seq first, first+1, ... */
function expectConsecutiveIds(events: SseEvent[], turnId: string, first = 1): void {
  expect(events.map((e) => e.id)).toEqual(events.map((_, i) => `${turnId}:${first + i}`));
}

/** Checks an API.md error body and returns it. */
async function expectError(r: Response, status: number, type: string, code: string): Promise<Json> {
  expect(r.status).toBe(status);
  expect(r.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  const body = (await r.json()) as Json;
  expect(body.error.type).toBe(type);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.request_id).toMatch(/^req_/);
  expect(body.error.request_id).toBe(r.headers.get('x-request-id'));
  return body;
}

describe('chat (main server: builtin word delay 30 ms, model timeout 500 ms, 1 queued turn)', () => {
  let mock: MockUpstream;
  let srv: TestServer;
  let kbId: string;
  let docId: string;
  let builtinAgent: string;

  beforeAll(async () => {
    mock = await startMockUpstream();
    srv = await startTestServer({
      PARLEY_OPENAI_BASE_URL: mock.url,
      PARLEY_MODEL_TIMEOUT_MS: '500',
      PARLEY_BUILTIN_WORD_DELAY_MS: '30',
      PARLEY_MAX_QUEUED_TURNS: '1',
    });
    const kb = await srv.api('/v1/knowledge-bases', { body: { name: 'Tea' } });
    expect(kb.status).toBe(201);
    kbId = ((await kb.json()) as { id: string }).id;
    const up = await srv.api(`/v1/knowledge-bases/${kbId}/documents`, {
      body: { title: DOC_TITLE, content: DOC, content_type: 'text/markdown' },
    });
    expect(up.status).toBe(202);
    const accepted = (await up.json()) as { id: string; status: string };
    expect(accepted.status).toBe('processing');
    docId = accepted.id;
    await waitFor(async () => {
      const doc = (await (await srv.api(`/v1/knowledge-bases/${kbId}/documents/${docId}`)).json()) as { status: string; error: string | null };
      if (doc.status === 'failed') throw new Error(`ingestion failed: ${doc.error}`);
      return doc.status === 'ready' ? true : undefined;
    }, 15_000, 'document ready');
    builtinAgent = await createAgent(srv, { name: 'Tea bot', knowledge_base_ids: [kbId] });
  });

  afterAll(async () => {
    await srv?.close();
    await mock?.close();
  });

  // 1
  it('streams a builtin turn in API.md order with <turn_id>:<seq> ids, and the stored reply matches the tokens', async () => {
    const { events, response } = await chatStream(srv, builtinAgent, { message: QUESTION });
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);

    const conv = d(events[0]);
    expect(conv.type).toBe('conversation');
    expect(conv.conversation_id).toMatch(/^conv_/);
    expect(conv.turn_id).toMatch(/^turn_/);
    const nTokens = types(events).filter((t) => t === 'token').length;
    expect(nTokens).toBeGreaterThan(1);
    expect(types(events)).toEqual(['conversation', ...Array<string>(nTokens).fill('token'), 'citations', 'message', 'usage', 'done']);
    expectConsecutiveIds(events, conv.turn_id);
    expect(d(events.at(-1))).toEqual({ type: 'done', finish_reason: 'stop' });

    const text = tokenText(events);
    expect(text).toContain('April');
    expect(text).toContain('[1]');
    const citations = ofType(events, 'citations').citations as Json[];
    expect(citations.length).toBeGreaterThan(0);
    for (const c of citations) expect(c.document_id).toBe(docId);
    const messageId = ofType(events, 'message').message_id as string;
    expect(messageId).toMatch(/^msg_/);
    const usage = ofType(events, 'usage').usage;
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);

    const msgs = await listMessages(srv, conv.conversation_id);
    expect(msgs.map((m) => m.role)).toEqual(['visitor', 'agent']);
    expect(msgs[0].content).toBe(QUESTION);
    expect(msgs[0].turn_id).toBe(conv.turn_id);
    const agent = msgs[1];
    expect(agent.id).toBe(messageId);
    expect(agent.status).toBe('completed');
    expect(agent.turn_id).toBe(conv.turn_id);
    expect(agent.content).toBe(text);
    expect(agent.finish_reason).toBe('stop');
    expect(agent.citations.length).toBeGreaterThan(0);
    for (const c of agent.citations) expect(c.document_id).toBe(docId);
    expect(agent.citations).toEqual(citations);
    expect(agent.usage).toEqual(usage);
  });

  // 2
  it('answers one-shot with the API.md body, equal to the stored message; no KB match gives the fixed sentence', async () => {
    const r = await chatOnce(srv, builtinAgent, { message: QUESTION });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    const body = (await r.json()) as Json;
    expect(Object.keys(body).sort()).toEqual(['citations', 'content', 'conversation_id', 'finish_reason', 'message_id', 'tool_runs', 'usage']);
    expect(body.conversation_id).toMatch(/^conv_/);
    expect(body.message_id).toMatch(/^msg_/);
    expect(body.content).toContain('April');
    expect(body.finish_reason).toBe('stop');
    expect(body.tool_runs).toEqual([]);
    expect(body.citations.length).toBeGreaterThan(0);
    for (const c of body.citations) {
      // Every passage of the tea document sits under one of its headings, so each citation names it.
      expect(Object.keys(c).sort()).toEqual(['chunk_id', 'document_id', 'heading', 'score', 'snippet', 'title']);
      expect(c.heading).toMatch(/^Zephyr tea garden/);
      expect(c.document_id).toBe(docId);
      expect(c.chunk_id).toMatch(/^chk_/);
      expect(c.title).toBe(DOC_TITLE);
      expect(typeof c.snippet).toBe('string');
      expect(c.snippet.length).toBeGreaterThan(0);
      expect(typeof c.score).toBe('number');
    }
    expect(body.citations.some((c: Json) => (c.snippet as string).includes('April'))).toBe(true);
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expect(body.usage.output_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens);

    const msgs = await listMessages(srv, body.conversation_id);
    expect(msgs.map((m) => m.role)).toEqual(['visitor', 'agent']);
    expect(msgs[1].id).toBe(body.message_id);
    expect(msgs[1].content).toBe(body.content);
    expect(msgs[1].citations).toEqual(body.citations);
    expect(msgs[1].usage).toEqual(body.usage);
    expect(msgs[1].status).toBe('completed');

    // stream:false explicitly is the same one-shot mode (and the builtin model is deterministic).
    const explicit = (await (await chatOnce(srv, builtinAgent, { message: QUESTION, stream: false })).json()) as Json;
    expect(explicit.content).toBe(body.content);
    expect(explicit.conversation_id).not.toBe(body.conversation_id);

    const none = await chatOnce(srv, builtinAgent, { message: 'What about quantum chromodynamics lattice simulations?' });
    expect(none.status).toBe(200);
    const noneBody = (await none.json()) as Json;
    expect(noneBody.content).toBe(NO_MATCH);
    expect(noneBody.citations).toEqual([]);
    expect(noneBody.finish_reason).toBe('stop');
  });

  // 3
  it('runs the search_knowledge tool for an upstream tool call (events, one-shot tool_runs, upstream messages)', async () => {
    const agent = await createAgent(srv, {
      name: 'Tool bot', model: { provider: 'openai', name: 'mock-tool' }, knowledge_base_ids: [kbId], tools: ['search_knowledge'],
    });
    const query = 'zephyr harvest months';
    const before = mock.requests.length;
    const { events } = await chatStream(srv, agent, { message: query });
    const t = types(events);
    const nTokens = t.filter((x) => x === 'token').length;
    expect(nTokens).toBeGreaterThan(1);
    expect(t).toEqual(['conversation', 'tool_call', 'tool_result', ...Array<string>(nTokens).fill('token'), 'citations', 'message', 'usage', 'done']);
    expectConsecutiveIds(events, d(events[0]).turn_id);

    const call = ofType(events, 'tool_call').tool_call;
    expect(call).toEqual({ id: 'call_1', name: 'search_knowledge', arguments: { query } });
    const result = ofType(events, 'tool_result').tool_result;
    expect(result.tool_call_id).toBe('call_1');
    expect(result.name).toBe('search_knowledge');
    expect(result.is_error).toBe(false);
    expect(Array.isArray(result.output.results)).toBe(true);
    expect(result.output.results.length).toBeGreaterThan(0);
    expect(result.output.results[0].document_id).toBe(docId);

    // The upstream saw two requests: the tool call step, then the step with the tool result.
    const reqs = mock.requests.slice(before);
    expect(reqs.length).toBe(2);
    expect(reqs[0]!.body.model).toBe('mock-tool');
    expect(reqs[0]!.body.tools?.map((x) => x.function.name)).toEqual(['search_knowledge']);
    const second = reqs[1]!.body.messages ?? [];
    const ai = second.findIndex((m) => m.role === 'assistant' && Array.isArray(m.tool_calls));
    expect(ai).toBeGreaterThanOrEqual(0);
    const assistant = second[ai]!;
    expect(assistant.tool_calls).toHaveLength(1);
    expect(assistant.tool_calls![0]!.id).toBe('call_1');
    expect(assistant.tool_calls![0]!.type).toBe('function');
    expect(assistant.tool_calls![0]!.function.name).toBe('search_knowledge');
    expect(JSON.parse(assistant.tool_calls![0]!.function.arguments)).toEqual({ query });
    const toolMsg = second[ai + 1] as RecordedMessage;
    expect(toolMsg.role).toBe('tool');
    expect(toolMsg.tool_call_id).toBe('call_1');
    expect(typeof toolMsg.content).toBe('string');
    expect(JSON.parse(toolMsg.content as string)).toEqual(result.output);
    expect(second.at(-1)).toBe(toolMsg);
    const userIdx = second.findIndex((m) => m.role === 'user' && m.content === query);
    expect(userIdx).toBeGreaterThanOrEqual(0);
    expect(userIdx).toBeLessThan(ai);

    const text = tokenText(events);
    expect(text).toBe(`Tool said: ${(toolMsg.content as string).slice(0, 60)}`);
    const msgs = await listMessages(srv, d(events[0]).conversation_id);
    expect(msgs[1].content).toBe(text);
    expect(msgs[1].tool_runs).toEqual([{ id: 'call_1', name: 'search_knowledge', arguments: { query }, output: result.output, is_error: false }]);

    const r = await chatOnce(srv, agent, { message: query });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Json;
    expect(body.tool_runs).toHaveLength(1);
    expect(body.tool_runs[0]).toMatchObject({ id: 'call_1', name: 'search_knowledge', arguments: { query }, is_error: false });
    expect(Array.isArray(body.tool_runs[0].output.results)).toBe(true);
    expect(body.tool_runs[0].output.results.length).toBeGreaterThan(0);
    expect(body.content).toMatch(/^Tool said: /);
    expect(body.finish_reason).toBe('stop');
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expect(body.usage.output_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens);
  });

  // 4
  it('redacts PII with a replace event after citations and before message; the stored text is the replacement', async () => {
    const agent = await createAgent(srv, { name: 'Secret bot', model: { provider: 'openai', name: 'mock-secret' } });
    const { events } = await chatStream(srv, agent, { message: 'contact details please' });
    const t = types(events);
    const ci = t.indexOf('citations');
    const ri = t.indexOf('replace');
    const mi = t.indexOf('message');
    expect(ci).toBeGreaterThan(0);
    expect(ri).toBe(ci + 1);
    expect(mi).toBe(ri + 1);
    expect(t.slice(mi)).toEqual(['message', 'usage', 'done']);
    expect(t.filter((x) => x === 'replace')).toHaveLength(1);
    const delta = ofType(events, 'replace').delta as string;
    expect(delta).toBe('Write to [redacted email] or pay with [redacted card number] today.');
    expect(delta).not.toContain('jane.doe@example.com');
    expect(delta).not.toContain('4111');
    // The raw text did stream before the check (that is why replace exists).
    expect(tokenText(events)).toContain('jane.doe@example.com');
    expect(ofType(events, 'done').finish_reason).toBe('stop');

    const msgs = await listMessages(srv, d(events[0]).conversation_id);
    expect(msgs[1].content).toBe(delta);
    expect(msgs[1].status).toBe('completed');

    const once = (await (await chatOnce(srv, agent, { message: 'again' })).json()) as Json;
    expect(once.content).toBe(delta);
  });

  it('blocks a reply with a blocked phrase: replace with the blocked message and finish_reason content_filter', async () => {
    const agent = await createAgent(srv, {
      name: 'Strict bot', model: { provider: 'openai', name: 'mock' }, safety: { blocked_phrases: ['You said'] },
    });
    const { events } = await chatStream(srv, agent, { message: 'anything at all' });
    expect(tokenText(events)).toBe('You said: anything at all');
    const t = types(events);
    expect(t.slice(t.indexOf('citations'))).toEqual(['citations', 'replace', 'message', 'usage', 'done']);
    expect(ofType(events, 'citations').citations).toEqual([]);
    expect(ofType(events, 'replace').delta).toBe(BLOCKED_DEFAULT);
    expect(d(events.at(-1))).toEqual({ type: 'done', finish_reason: 'content_filter' });
    const msgs = await listMessages(srv, d(events[0]).conversation_id);
    expect(msgs[1].content).toBe(BLOCKED_DEFAULT);
    expect(msgs[1].finish_reason).toBe('content_filter');

    const once = (await (await chatOnce(srv, agent, { message: 'hi' })).json()) as Json;
    expect(once.content).toBe(BLOCKED_DEFAULT);
    expect(once.finish_reason).toBe('content_filter');
  });

  // 5
  it('ends a failed upstream turn with an error event (no done), 502 for one-shot, and stores a failed reply', async () => {
    const agent = await createAgent(srv, { name: 'Broken bot', model: { provider: 'openai', name: 'mock-error' } });
    const { events } = await chatStream(srv, agent, { message: 'will this work?' });
    expect(types(events)).toEqual(['conversation', 'error']);
    expectConsecutiveIds(events, d(events[0]).turn_id);
    const err = d(events.at(-1)).error;
    expect(err.type).toBe('upstream_error');
    expect(err.code).toBe('model_unavailable');
    expect(typeof err.message).toBe('string');
    const convId = d(events[0]).conversation_id as string;

    let msgs = await listMessages(srv, convId);
    expect(msgs.map((m) => [m.role, m.status])).toEqual([['visitor', 'completed'], ['agent', 'failed']]);
    expect(msgs[1].turn_id).toBe(d(events[0]).turn_id);
    expect(msgs[1].error).toMatchObject({ type: 'upstream_error', code: 'model_unavailable' });

    // One-shot, in the same conversation: it is not stuck (no 409), and fails the same way.
    const r = await chatOnce(srv, agent, { message: 'and now?', conversation_id: convId });
    await expectError(r, 502, 'upstream_error', 'model_unavailable');
    msgs = await listMessages(srv, convId);
    expect(msgs.map((m) => [m.role, m.status])).toEqual([
      ['visitor', 'completed'], ['agent', 'failed'], ['visitor', 'completed'], ['agent', 'failed'],
    ]);

    // Once the agent points at a working model, the same conversation goes on.
    const patch = await srv.api(`/v1/agents/${agent}`, { method: 'PATCH', body: { model: { provider: 'openai', name: 'mock' } } });
    expect(patch.status).toBe(200);
    const before = mock.requests.length;
    const ok = await chatOnce(srv, agent, { message: 'third try', conversation_id: convId });
    expect(ok.status).toBe(200);
    const okBody = (await ok.json()) as Json;
    expect(okBody.content).toBe('You said: third try');
    expect(okBody.conversation_id).toBe(convId);
    const sent = mock.requests[before]!.body.messages ?? [];
    expect(sent.at(-1)).toMatchObject({ role: 'user', content: 'third try' });
    // Failed replies are not part of the model's history.
    expect(sent.filter((m) => m.role === 'assistant')).toEqual([]);
  });

  it('times out a hanging upstream: model_timeout event (SSE) and 504 (one-shot); the server keeps answering', async () => {
    const agent = await createAgent(srv, { name: 'Hang bot', model: { provider: 'openai', name: 'mock-hang' } });
    const t0 = performance.now();
    const { events } = await chatStream(srv, agent, { message: 'hello?' });
    const elapsed = performance.now() - t0;
    expect(types(events)).toEqual(['conversation', 'error']);
    expect(d(events.at(-1)).error).toMatchObject({ type: 'upstream_error', code: 'model_timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(5000);
    const msgs = await listMessages(srv, d(events[0]).conversation_id);
    expect(msgs[1].status).toBe('failed');
    expect(msgs[1].error).toMatchObject({ code: 'model_timeout' });

    const r = await chatOnce(srv, agent, { message: 'hello again?' });
    await expectError(r, 504, 'upstream_error', 'model_timeout');

    const echo = await createAgent(srv, { name: 'Echo bot', model: { provider: 'openai', name: 'mock' } });
    const fine = await chatStream(srv, echo, { message: 'still alive' });
    expect(d(fine.events.at(-1))).toEqual({ type: 'done', finish_reason: 'stop' });
    expect(tokenText(fine.events)).toBe('You said: still alive');
  });

  it('reports an upstream cut mid-stream as an error after the partial tokens, and a length finish as done length', async () => {
    const cut = await createAgent(srv, { name: 'Cut bot', model: { provider: 'openai', name: 'mock-cut' } });
    const { events } = await chatStream(srv, cut, { message: 'go' });
    const t = types(events);
    expect(t.at(-1)).toBe('error');
    expect(t).not.toContain('done');
    expect(t).not.toContain('message');
    expect(d(events.at(-1)).error).toMatchObject({ type: 'upstream_error', code: 'model_unavailable' });
    expect(tokenText(events)).not.toContain('lost');
    const msgs = await listMessages(srv, d(events[0]).conversation_id);
    expect(msgs[1].status).toBe('failed');
    expect(msgs[1].content).toBe(tokenText(events));

    const length = await createAgent(srv, { name: 'Length bot', model: { provider: 'openai', name: 'mock-length' } });
    const l = await chatStream(srv, length, { message: 'go' });
    expect(tokenText(l.events)).toBe('Truncated answer');
    expect(d(l.events.at(-1))).toEqual({ type: 'done', finish_reason: 'length' });
    const once = (await (await chatOnce(srv, length, { message: 'go' })).json()) as Json;
    expect(once.finish_reason).toBe('length');
    expect(once.content).toBe('Truncated answer');
  });

  // 6
  it('finishes and persists a turn whose client dropped after the first token (SPEC.md 6.1 rule 3)', async () => {
    const { events, dropped } = await chatStream(srv, builtinAgent, { message: QUESTION }, (e) => (e.data.type === 'token' ? 'stop' : undefined));
    expect(dropped).toBe(true);
    expect(types(events)).toEqual(['conversation', 'token']);
    const { conversation_id: convId, turn_id: turnId } = d(events[0]);

    // Right after the drop the reply is not stored yet (the turn is still streaming words).
    const early = await listMessages(srv, convId);
    expect(early.map((m) => m.role)).toEqual(['visitor']);

    const stored = await waitFor(async () => {
      const msgs = await listMessages(srv, convId);
      return msgs.find((m) => m.role === 'agent');
    }, 10_000, 'the agent reply of the dropped stream');
    expect(stored.status).toBe('completed');
    expect(stored.turn_id).toBe(turnId);
    expect(stored.finish_reason).toBe('stop');
    expect(stored.content.startsWith(d(events[1]).delta)).toBe(true);

    const reference = (await (await chatOnce(srv, builtinAgent, { message: QUESTION })).json()) as Json;
    expect(stored.content).toBe(reference.content);
    expect(stored.citations).toEqual(reference.citations);
  });

  // 7
  it('continues a conversation: the upstream gets user, assistant, user in order', async () => {
    const agent = await createAgent(srv, { name: 'History bot', model: { provider: 'openai', name: 'mock-history' } });
    const before = mock.requests.length;
    const r1 = await chatOnce(srv, agent, { message: 'first question' });
    expect(r1.status).toBe(200);
    const b1 = (await r1.json()) as Json;
    expect(JSON.parse(b1.content)).toEqual([{ role: 'user', content: 'first question' }]);

    const r2 = await chatOnce(srv, agent, { message: 'second question', conversation_id: b1.conversation_id });
    expect(r2.status).toBe(200);
    const b2 = (await r2.json()) as Json;
    expect(b2.conversation_id).toBe(b1.conversation_id);
    const expected = [
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: b1.content },
      { role: 'user', content: 'second question' },
    ];
    const reqs = mock.requests.slice(before);
    expect(reqs).toHaveLength(2);
    expect((reqs[1]!.body.messages ?? []).map((m) => ({ role: m.role, content: m.content }))).toEqual(expected);
    expect(JSON.parse(b2.content)).toEqual(expected);

    const msgs = await listMessages(srv, b1.conversation_id);
    expect(msgs.map((m) => [m.role, m.content])).toEqual([
      ['visitor', 'first question'], ['agent', b1.content], ['visitor', 'second question'], ['agent', b2.content],
    ]);
  });

  it('sends the first turn of a new conversation to the model before creating its actor (which starts on that turn); later turns and retrieval wait for the actor', async () => {
    // The order of calls on the live service: the provider's stream() and the supervisor's acquire()
    // (an existing conversation) or startNew() (a new one, its actor starting on its first turn).
    const chat = srv.parley.services.chat;
    const provider = (chat as unknown as { opts: { models: { get(n: string): { stream: (...a: unknown[]) => unknown } } } }).opts.models.get('openai');
    const order: string[] = [];
    const stream = provider.stream;
    const acquire = chat.supervisor.acquire;
    const startNew = chat.supervisor.startNew;
    provider.stream = function (this: unknown, ...args: unknown[]) { order.push('model'); return stream.apply(this, args); };
    chat.supervisor.acquire = function (this: unknown, ...args: Parameters<typeof acquire>) { order.push('actor'); return acquire.apply(this, args); };
    chat.supervisor.startNew = function (this: unknown, ...args: Parameters<typeof startNew>) { order.push('new actor'); return startNew.apply(this, args); };
    // undici publishes when it writes a request's head to the socket; only Parley's requests to the mock count.
    const upstream = new URL(mock.url).origin;
    const onSent = (message: unknown) => {
      if ((message as { request?: { origin?: unknown } }).request?.origin === upstream) order.push('request written');
    };
    diagnostics.subscribe('undici:client:sendHeaders', onSent);
    try {
      const plain = await createAgent(srv, { name: 'Early bot', model: { provider: 'openai', name: 'mock-early' } });
      // A turn first, so the next request finds an idle keep-alive connection to the mock (as in steady use).
      expect((await chatOnce(srv, plain, { message: 'warm-up' })).status).toBe(200);
      order.length = 0;
      const r1 = await chatOnce(srv, plain, { message: 'first' });
      expect(r1.status).toBe(200);
      // The new conversation's actor is created only once the model request is on the socket.
      expect(order).toEqual(['model', 'request written', 'new actor']);

      // The same with a request body over RETAINED_BODY_MAX_CHARS (a long system prompt), which undici
      // starts writing from a microtask rather than at once.
      const prompted = await createAgent(srv, { name: 'Early prompted bot', instructions: 'Answer briefly. '.repeat(60), model: { provider: 'openai', name: 'mock-early' } });
      expect((await chatOnce(srv, prompted, { message: 'warm-up' })).status).toBe(200);
      order.length = 0;
      expect((await chatOnce(srv, prompted, { message: 'first' })).status).toBe(200);
      expect(order).toEqual(['model', 'request written', 'new actor']);

      order.length = 0;
      const r2 = await chatOnce(srv, plain, { message: 'second', conversation_id: ((await r1.json()) as Json).conversation_id });
      expect(r2.status).toBe(200);
      expect(order).toEqual(['actor', 'model', 'request written']); // history is loaded first

      order.length = 0;
      const withKnowledge = await createAgent(srv, { name: 'Early KB bot', model: { provider: 'openai', name: 'mock-early' }, knowledge_base_ids: [kbId] });
      const r3 = await chatOnce(srv, withKnowledge, { message: QUESTION });
      expect(r3.status).toBe(200);
      expect(order).toEqual(['new actor', 'model', 'request written']); // retrieval runs first
      // A new conversation has no history: the model gets no earlier turn.
      expect((mock.requests.at(-1)!.body.messages ?? []).filter((m) => m.role === 'assistant')).toEqual([]);
    } finally {
      provider.stream = stream;
      chat.supervisor.acquire = acquire;
      chat.supervisor.startNew = startNew;
      diagnostics.unsubscribe('undici:client:sendHeaders', onSent);
    }
  });

  it('stops the early turn and stores no reply when the new conversation actor cannot be created (500 internal_error)', async () => {
    const chat = srv.parley.services.chat;
    const startNew = chat.supervisor.startNew;
    const agent = await createAgent(srv, { name: 'No actor bot', model: { provider: 'openai', name: 'mock-no-actor' } });
    chat.supervisor.startNew = () => { throw new Error('actor creation failed (test)'); };
    // The commit of the new conversation starts 100 ms late, so the 500 must wait for it: answered before it,
    // the conversation listed below would not exist yet.
    const conversations = srv.parley.store.conversations;
    const start = conversations.start;
    conversations.start = (...args) => new Promise<void>((resolve) => setTimeout(resolve, 100)).then(() => start.apply(conversations, args));
    let r: Response;
    try {
      r = await chatOnce(srv, agent, { message: 'will this be answered?' });
    } finally {
      chat.supervisor.startNew = startNew;
      conversations.start = start;
    }
    expect(r.status).toBe(500);
    expect(((await r.json()) as Json).error).toMatchObject({ code: 'internal_error', message: 'The conversation could not take its first message; send it again.' });
    // The model call had left before the actor was asked for; it is stopped and writes nothing. A second
    // turn of the same model, sent after it, answers fully: had the first gone on, it would have ended first.
    const list = (await (await srv.api(`/v1/conversations?agent_id=${agent}`)).json()) as Json;
    expect(list.data).toHaveLength(1);
    const later = await chatOnce(srv, agent, { message: 'and this one?' });
    expect(later.status).toBe(200);
    const msgs = await listMessages(srv, list.data[0].id);
    expect(msgs.map((m) => [m.role, m.content])).toEqual([['visitor', 'will this be answered?']]);
  });

  it('gives a queued turn the reply of the turn it waited for as history', async () => {
    // A runs on a slow echo model; B, queued behind it, is sent after the agent switched to mock-history.
    const agent = await createAgent(srv, { name: 'Queue history bot', model: { provider: 'openai', name: 'mock-slow-300' } });
    const before = mock.requests.length;
    let resolveConv!: (ev: Json) => void;
    const aConv = new Promise<Json>((res) => { resolveConv = res; });
    const aPromise = chatStream(srv, agent, { message: 'question A' }, (e) => {
      if (e.data.type === 'conversation') resolveConv(e.data);
    });
    const { conversation_id: convId } = await aConv;
    const patch = await srv.api(`/v1/agents/${agent}`, { method: 'PATCH', body: { model: { provider: 'openai', name: 'mock-history' } } });
    expect(patch.status).toBe(200);
    const b = await chatStream(srv, agent, { message: 'question B', conversation_id: convId });
    const a = await aPromise;
    expect(tokenText(a.events)).toBe('You said: question A');
    const reqs = mock.requests.slice(before);
    expect(reqs.map((r) => r.body.model)).toEqual(['mock-slow-300', 'mock-history']);
    expect((reqs[0]!.body.messages ?? []).map((m) => ({ role: m.role, content: m.content }))).toEqual([{ role: 'user', content: 'question A' }]);
    expect(JSON.parse(tokenText(b.events))).toEqual([
      { role: 'user', content: 'question A' },
      { role: 'assistant', content: 'You said: question A' },
      { role: 'user', content: 'question B' },
    ]);
  });

  it('refuses unknown conversations, conversations of another agent and agents of another org with 404', async () => {
    const agent = await createAgent(srv, { name: 'Other bot', model: { provider: 'openai', name: 'mock' } });
    await expectError(await chatOnce(srv, agent, { message: 'x', conversation_id: 'conv_00000000000000000000000000' }), 404, 'not_found_error', 'not_found');
    await expectError(await chatOnce(srv, agent, { message: 'x', conversation_id: 'conv_00000000000000000000000000', stream: true }), 404, 'not_found_error', 'not_found');

    const mine = (await (await chatOnce(srv, builtinAgent, { message: 'hello' })).json()) as Json;
    expect(mine.conversation_id).toMatch(/^conv_/);
    const requestsBefore = mock.requests.length;
    await expectError(await chatOnce(srv, agent, { message: 'x', conversation_id: mine.conversation_id }), 404, 'not_found_error', 'not_found');
    await expectError(await chatOnce(srv, agent, { message: 'x', conversation_id: mine.conversation_id, stream: true }), 404, 'not_found_error', 'not_found');
    expect(mock.requests.length).toBe(requestsBefore);
    // Nothing was appended to the other agent's conversation.
    expect((await listMessages(srv, mine.conversation_id)).map((m) => m.role)).toEqual(['visitor', 'agent']);

    const other = await srv.addOrganization('Other org');
    await expectError(await chatOnce(srv, builtinAgent, { message: 'x' }, other.apiKey), 404, 'not_found_error', 'not_found');
    await expectError(await srv.api(`/v1/conversations/${mine.conversation_id}/messages`, { key: other.apiKey }), 404, 'not_found_error', 'not_found');
  });

  // 8
  it('queues one turn behind the running one, answers it after, and refuses a third with 409 turn_in_progress', async () => {
    const QB = 'How long does a tasting tour last?';
    let aDoneAt: number | undefined;
    let bConvAt: number | undefined;
    let bFirstTokenAt: number | undefined;
    let resolveConv!: (ev: Json) => void;
    const aConv = new Promise<Json>((res) => { resolveConv = res; });
    const aPromise = chatStream(srv, builtinAgent, { message: QUESTION }, (e) => {
      if (e.data.type === 'conversation') resolveConv(e.data);
      if (e.data.type === 'done') aDoneAt = performance.now();
    });
    const { conversation_id: convId, turn_id: aTurn } = await aConv;

    let resolveB!: (ev: Json) => void;
    const bConv = new Promise<Json>((res) => { resolveB = res; });
    const bPromise = chatStream(srv, builtinAgent, { message: QB, conversation_id: convId }, (e) => {
      if (e.data.type === 'conversation') { bConvAt = performance.now(); resolveB(e.data); }
      if (e.data.type === 'token' && bFirstTokenAt === undefined) bFirstTokenAt = performance.now();
    });
    const { turn_id: bTurn } = await bConv;
    expect(bTurn).not.toBe(aTurn);
    expect(aDoneAt).toBeUndefined(); // A still running: B really was queued

    const c = await chatOnce(srv, builtinAgent, { message: 'third question', conversation_id: convId, stream: true });
    expect(aDoneAt).toBeUndefined();
    await expectError(c, 409, 'conflict_error', 'turn_in_progress');

    const [a, b] = await Promise.all([aPromise, bPromise]);
    expect(d(a.events.at(-1))).toEqual({ type: 'done', finish_reason: 'stop' });
    expect(d(b.events.at(-1))).toEqual({ type: 'done', finish_reason: 'stop' });
    expectConsecutiveIds(a.events, aTurn);
    expectConsecutiveIds(b.events, bTurn);
    expect(d(b.events[0]).conversation_id).toBe(convId);
    expect(bConvAt!).toBeLessThan(aDoneAt!);
    expect(bFirstTokenAt!).toBeGreaterThanOrEqual(aDoneAt!);

    const msgs = await listMessages(srv, convId);
    // C was refused before anything was stored.
    expect(msgs.map((m) => [m.role, m.turn_id])).toEqual([
      ['visitor', aTurn], ['visitor', bTurn], ['agent', aTurn], ['agent', bTurn],
    ]);
    expect(msgs[0].content).toBe(QUESTION);
    expect(msgs[1].content).toBe(QB);
    expect(msgs[2].id).toBe(ofType(a.events, 'message').message_id);
    expect(msgs[2].content).toBe(tokenText(a.events));
    expect(msgs[3].id).toBe(ofType(b.events, 'message').message_id);
    expect(msgs[3].content).toBe(tokenText(b.events));
    expect(msgs[3].content).toContain('ninety minutes');
    expect(msgs.every((m) => m.status === 'completed')).toBe(true);

    // The queue is free again.
    const d2 = await chatOnce(srv, builtinAgent, { message: 'thanks', conversation_id: convId });
    expect(d2.status).toBe(200);
  });

  // 9
  it('resumes a dropped stream with Last-Event-ID from seq 4 to done, replays finished turns, hides other orgs', async () => {
    const first = await chatStream(srv, builtinAgent, { message: QUESTION }, (_e, all) => (all.length >= 3 ? 'stop' : undefined));
    expect(first.dropped).toBe(true);
    expect(first.events).toHaveLength(3);
    const { conversation_id: convId, turn_id: turnId } = d(first.events[0]);
    expectConsecutiveIds(first.events, turnId);
    const url = `${srv.url}/v1/conversations/${convId}/turns/${turnId}/events`;

    const resumed = await readSse(url, { headers: headersFor(srv.apiKey, { 'last-event-id': `${turnId}:3` }) });
    expect(resumed.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(resumed.events.length).toBeGreaterThan(4);
    expectConsecutiveIds(resumed.events, turnId, 4);
    expect(types(resumed.events)).not.toContain('conversation');
    expect(d(resumed.events.at(-1))).toEqual({ type: 'done', finish_reason: 'stop' });
    const all = [...first.events, ...resumed.events];
    const nTokens = types(all).filter((t) => t === 'token').length;
    expect(types(all)).toEqual(['conversation', ...Array<string>(nTokens).fill('token'), 'citations', 'message', 'usage', 'done']);

    const msgs = await listMessages(srv, convId);
    expect(msgs[1].content).toBe(tokenText(all));
    expect(msgs[1].id).toBe(ofType(all, 'message').message_id);

    // The finished turn replays in full, then from any point.
    const replay = await readSse(url, { headers: headersFor(srv.apiKey) });
    expect(replay.events.map((e) => [e.id, e.data])).toEqual(all.map((e) => [e.id, e.data]));
    const tail = await readSse(url, { headers: headersFor(srv.apiKey, { 'last-event-id': `${turnId}:${all.length - 1}` }) });
    expect(tail.events.map((e) => [e.id, e.data])).toEqual([[`${turnId}:${all.length}`, { type: 'done', finish_reason: 'stop' }]]);

    const other = await srv.addOrganization('Resume other org');
    await expectError(await srv.api(`/v1/conversations/${convId}/turns/${turnId}/events`, { key: other.apiKey }), 404, 'not_found_error', 'not_found');
    const otherConv = (await (await chatOnce(srv, builtinAgent, { message: 'hello' })).json()) as Json;
    await expectError(await srv.api(`/v1/conversations/${otherConv.conversation_id}/turns/${turnId}/events`), 404, 'not_found_error', 'not_found');
    await expectError(await srv.api(`/v1/conversations/${convId}/turns/turn_00000000000000000000000000/events`), 404, 'not_found_error', 'not_found');
  });

  // 11
  it('runs 10 conversations in parallel, each with its own conversation and a complete stream', async () => {
    const runs = await Promise.all(Array.from({ length: 10 }, () => chatStream(srv, builtinAgent, { message: QUESTION })));
    const convIds = new Set<string>();
    const turnIds = new Set<string>();
    const texts = new Set<string>();
    for (const { events } of runs) {
      const first = d(events[0]);
      expect(first.type).toBe('conversation');
      convIds.add(first.conversation_id);
      turnIds.add(first.turn_id);
      expectConsecutiveIds(events, first.turn_id);
      expect(d(events.at(-1))).toEqual({ type: 'done', finish_reason: 'stop' });
      texts.add(tokenText(events));
    }
    expect(convIds.size).toBe(10);
    expect(turnIds.size).toBe(10);
    expect(texts.size).toBe(1); // deterministic model, no interleaving of other streams' tokens
    for (const id of convIds) {
      const msgs = await listMessages(srv, id);
      expect(msgs.map((m) => [m.role, m.status])).toEqual([['visitor', 'completed'], ['agent', 'completed']]);
      expect(msgs[1].content).toBe([...texts][0]);
    }
  });

  it('reports where a turn\'s time went: timing on the usage event and the stored reply, Server-Timing on a one-shot reply', async () => {
    const slow = await createAgent(srv, { name: 'Timed', model: { provider: 'openai', name: 'mock-deltas-2-ttft-150' } });
    const sentAt = performance.now();
    const { events } = await chatStream(srv, slow, { message: 'time me' });
    const clientMs = performance.now() - sentAt;
    const timing = ofType(events, 'usage').timing;
    expect(Object.keys(timing).sort()).toEqual(['first_token_ms', 'queued_ms', 'setup_ms', 'total_ms', 'upstream_first_byte_ms']);
    expect(timing.queued_ms).toBeGreaterThanOrEqual(0);
    expect(timing.setup_ms).toBeGreaterThanOrEqual(timing.queued_ms);
    // The mock waits 150 ms before its first delta: that is the model's share, between the call and its bytes.
    expect(timing.upstream_first_byte_ms - timing.setup_ms).toBeGreaterThanOrEqual(150);
    expect(timing.first_token_ms).toBeGreaterThanOrEqual(timing.upstream_first_byte_ms);
    expect(timing.total_ms).toBeGreaterThanOrEqual(timing.first_token_ms);
    // The server's clock starts when the request arrives, after the client's.
    expect(timing.total_ms).toBeLessThanOrEqual(clientMs);
    const stored = await listMessages(srv, d(events[0]).conversation_id);
    expect(stored.map((m) => m.timing)).toEqual([null, timing]);

    // One-shot, builtin model: no upstream, so no upstream_first_byte; the header and the stored reply agree.
    const r = await chatOnce(srv, builtinAgent, { message: QUESTION });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Json;
    expect(body).not.toHaveProperty('timing');
    const header = r.headers.get('server-timing') ?? '';
    const metrics = Object.fromEntries(header.split(', ').map((m) => {
      const [name, dur] = m.split(';dur=');
      return [name, Number(dur)];
    }));
    const reply = (await listMessages(srv, body.conversation_id)).at(-1);
    expect(reply.timing.upstream_first_byte_ms).toBeNull();
    expect(metrics).toEqual({
      queued: reply.timing.queued_ms, setup: reply.timing.setup_ms, first_token: reply.timing.first_token_ms, total: reply.timing.total_ms,
    });

    // A failed turn stores its timing too: the model was called, no token came.
    const broken = await createAgent(srv, { name: 'Timed broken', model: { provider: 'openai', name: 'mock-error' } });
    const failed = await chatStream(srv, broken, { message: 'fail' });
    const failedReply = (await listMessages(srv, d(failed.events[0]).conversation_id)).at(-1);
    expect(failedReply.status).toBe('failed');
    expect(failedReply.timing.setup_ms).toBeGreaterThanOrEqual(0);
    expect(failedReply.timing.first_token_ms).toBeNull();
    expect(failedReply.timing.upstream_first_byte_ms).toBeNull();
    expect(failedReply.timing.total_ms).toBeGreaterThanOrEqual(failedReply.timing.setup_ms);
  });

  it('exposes its own overhead on /metrics: setup and first token per agent and model, upstream-byte-to-write, turn outcomes', async () => {
    const metric = (text: string, name: string): number => {
      const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : 0;
    };
    const before = await metricsText(srv.url);
    const agent = await createAgent(srv, { name: 'Metrics echo', model: { provider: 'openai', name: 'echo' } });
    const { events } = await chatStream(srv, agent, { message: 'count me' });
    expect(d(events.at(-1)).type).toBe('done');
    const after = await metricsText(srv.url);
    const perAgent = `{provider="openai",model="echo",agent_id="${agent}"}`;
    for (const name of [`parley_turn_setup_seconds_count${perAgent}`, `parley_turn_first_token_seconds_count${perAgent}`,
      'parley_first_token_relay_seconds_count{provider="openai"}', 'parley_turns_total{outcome="succeeded"}']) {
      expect(metric(after, name.replace(/[{}"]/g, (c) => `\\${c}`)), name).toBe(metric(before, name.replace(/[{}"]/g, (c) => `\\${c}`)) + 1);
    }
  });

  it('exposes the model\'s own time to first token next to Parley\'s: a 150 ms upstream shows in both; a builtin turn only in Parley\'s', async () => {
    const value = (text: string, name: string): number => {
      const m = new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : 0;
    };
    const model = 'parley_model_first_token_seconds';
    const first = 'parley_turn_first_token_seconds';
    const before = await metricsText(srv.url);
    const slow = await createAgent(srv, { name: 'Slow first token', model: { provider: 'openai', name: 'mock-deltas-2-ttft-150' } });
    const { events } = await chatStream(srv, slow, { message: 'take your time' });
    expect(d(events.at(-1)).type).toBe('done');
    const after = await metricsText(srv.url);
    expect(value(after, `${model}_count{provider="openai"}`)).toBe(value(before, `${model}_count{provider="openai"}`) + 1);
    const modelS = value(after, `${model}_sum{provider="openai"}`) - value(before, `${model}_sum{provider="openai"}`);
    const firstS = value(after, `${first}_sum{provider="openai",model="mock-deltas-2-ttft-150",agent_id="${slow}"}`);
    expect(modelS).toBeGreaterThanOrEqual(0.15); // the mock waits 150 ms before its first delta
    expect(firstS).toBeGreaterThanOrEqual(modelS); // Parley's first token includes the model's
    // 150 ms or more: never in the 0.1 s bucket.
    expect(value(after, `${model}_bucket{le="0.1",provider="openai"}`)).toBe(value(before, `${model}_bucket{le="0.1",provider="openai"}`));
    // The builtin model has no upstream: nothing observed for it.
    const builtin = await createAgent(srv, { name: 'Builtin', model: { provider: 'builtin', name: 'parley-builtin' } });
    await chatStream(srv, builtin, { message: 'hello' });
    const last = await metricsText(srv.url);
    expect(last).not.toMatch(/parley_model_first_token_seconds_count\{provider="builtin"\}/);
    expect(value(last, `${first}_count{provider="builtin",model="parley-builtin",agent_id="${builtin}"}`)).toBe(1);
  });

  it('publishes the event-loop delay since the previous scrape on /metrics', async () => {
    const maxOf = (text: string) => Number(/^parley_event_loop_delay_seconds\{quantile="1"\} (\S+)$/m.exec(text)![1]);
    await metricsText(srv.url); // resets the window
    const until = performance.now() + 120;
    while (performance.now() < until) { /* the server shares this event loop: it is 120 ms late */ }
    await new Promise((r) => setTimeout(r, 20));
    const stalled = await metricsText(srv.url);
    expect(maxOf(stalled)).toBeGreaterThanOrEqual(0.1);
    expect(stalled).toMatch(/^parley_eventloop_resolution_seconds 0\.01$/m);
    await new Promise((r) => setTimeout(r, 20));
    // The window was reset by that scrape: the stall is no longer in it.
    expect(maxOf(await metricsText(srv.url))).toBeLessThan(0.1);
  });
});

// 10
describe('chat heartbeat (heartbeat 50 ms, builtin word delay 200 ms)', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer({ PARLEY_HEARTBEAT_MS: '50', PARLEY_BUILTIN_WORD_DELAY_MS: '200' });
  });
  afterAll(async () => {
    await srv?.close();
  });

  it('sends `: ping` comments while a slow turn streams, without disturbing the event ids', async () => {
    const agent = await createAgent(srv, { name: 'Slow bot' });
    const { events, comments } = await chatStream(srv, agent, { message: 'Anything about volcanoes?' });
    expect(tokenText(events)).toBe(NO_MATCH);
    expect(d(events.at(-1))).toEqual({ type: 'done', finish_reason: 'stop' });
    expectConsecutiveIds(events, d(events[0]).turn_id);
    const pings = comments.filter((c) => c === 'ping');
    expect(pings.length).toBeGreaterThanOrEqual(5);
    expect(comments.length).toBe(pings.length);
  });
});
