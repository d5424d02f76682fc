/**
 * A streaming client that goes away mid-turn (SPEC.md 6.1 rule 3, DESIGN.md "a client that goes away only
 * unsubscribes"), through the real uWS server: its response leaves the turn's channel at once, the request
 * is logged as closed by the client, and the turn runs on to its stored reply.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';

describe('an SSE client that goes away mid-turn', () => {
  let srv: TestServer;

  beforeAll(async () => {
    srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '40' }, { captureLogs: true });
  });

  afterAll(async () => {
    await srv?.close();
  });

  it('unsubscribes its response, logs the request as closed by the client, and the turn still stores its reply', async () => {
    const created = await srv.api('/v1/agents', { body: { name: 'Slow bot', model: { provider: 'builtin', name: 'builtin' } } });
    expect(created.status).toBe(201);
    const agentId = ((await created.json()) as { id: string }).id;

    const leave = new AbortController();
    const res = await fetch(`${srv.url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ message: 'How are tea leaves dried, rolled and stored after picking?', stream: true }),
      signal: leave.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"type":"token"')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before its first token: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
    const first = /"conversation_id":"([^"]+)","turn_id":"([^"]+)"/.exec(text);
    expect(first).not.toBeNull();
    const [, conversationId, turnId] = first!;
    const channel = srv.parley.services.chat.turns.channel(turnId!);
    expect(channel?.subscriberCount).toBe(1);

    leave.abort();

    const line = await waitFor(
      () => srv.logs().find((l) => l.msg === 'request' && l.turn_id === turnId && l.closed === 'client'),
      5_000, 'the request log line of the client that left',
    );
    expect(line.status).toBe(200);
    // The response left the channel while the turn was still answering.
    expect(channel!.subscriberCount).toBe(0);
    expect(channel!.ended).toBe(false);

    const reply = await waitFor(async () => {
      const list = (await (await srv.api(`/v1/conversations/${conversationId}/messages`)).json()) as { data: Array<{ role: string; status: string; content: string }> };
      return list.data.find((m) => m.role === 'agent');
    }, 15_000, 'the stored reply');
    expect(reply.status).toBe('completed');
    expect(reply.content.length).toBeGreaterThan(0);
  });
});
