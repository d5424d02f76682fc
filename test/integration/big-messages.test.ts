/**
 * The cost of a request is bounded by its size: 32,000-character chat messages of CJK, emoji or
 * mixed CJK with spaces (the largest the API accepts) get an ordinary answer with exact usage, and
 * while one is processed another conversation's stream keeps flowing. Before the token counter was
 * made linear, '漢'.repeat(32000) cost ~7 s of CPU in the token-count worker and every other turn's
 * usage count queued behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_MATCH_ANSWER } from '../../src/models/builtin/builtin-model.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';

let srv: TestServer;
let agentId: string;

/** Sentences the builtin model quotes for the streaming question: three long ones, about 100 words. */
const DOC = [
  'To stream a reply, send the chat request with stream set to true and read the response as server-sent events, one token event after another, until the done event arrives at the end of the stream.',
  'Each streamed token event carries a delta that the client appends to the text it shows, so that the reply appears word by word while the model is still producing the rest of the reply.',
  'A client that loses the stream of a reply can fetch the stored messages of the conversation afterwards, because every reply is stored when its turn ends, whether or not a client is still reading.',
].join(' ');

beforeAll(async () => {
  srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '30' });
  const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'streaming' } })).json() as { id: string };
  expect((await srv.api(`/v1/knowledge-bases/${kb.id}/documents`, { body: { title: 'Streaming', content: DOC, content_type: 'text/plain' } })).status).toBe(202);
  await srv.parley.knowledge.settled();
  const agent = await (await srv.api('/v1/agents', { body: { name: 'big messages', knowledge_base_ids: [kb.id] } })).json() as { id: string };
  agentId = agent.id;
});
afterAll(async () => { await srv?.close(); });

interface OneShot { content: string; finish_reason: string; usage: { input_tokens: number; output_tokens: number; total_tokens: number } }

const oneShot = async (message: string): Promise<{ status: number; body: OneShot }> => {
  const res = await srv.api(`/v1/agents/${agentId}/chat`, { body: { message } });
  return { status: res.status, body: await res.json() as OneShot };
};

describe('32,000-character messages of CJK and emoji', () => {
  it.each([
    // input_tokens: the o200k_base tokens of the message (tiktoken's count) + 4 for the message wrapper.
    ['32,000 CJK characters without a space', '漢'.repeat(32_000), 32_004],
    ['16,000 emoji (32,000 UTF-16 units)', '😀'.repeat(16_000), 16_004],
    ['32,000 characters of Japanese with spaces', '東京の天気は晴れです、明日は雨かもしれません。 '.repeat(1400).slice(0, 32_000), 22_672],
  ])('%s get an ordinary answer with exact usage', async (_label, message, inputTokens) => {
    expect(message.length).toBe(32_000);
    const { status, body } = await oneShot(message);
    expect(status).toBe(200);
    expect(body.content).toBe(NO_MATCH_ANSWER);
    expect(body.finish_reason).toBe('stop');
    expect(body.usage.input_tokens).toBe(inputTokens);
    expect(body.usage.output_tokens).toBe(12);
  });

  it("another conversation's stream keeps flowing while a 32,000-character CJK message is processed", async () => {
    let bigAnsweredAfterTokens: number | undefined;
    let big: Promise<{ status: number; body: OneShot }> | undefined;
    let tokens = 0;
    const streamed = await readSse(`${srv.url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'How do I stream a reply token by token?', stream: true }),
    }, (ev) => {
      if (ev.data.type !== 'token') return;
      tokens++;
      // At the first token of the streamed reply, the big message goes in on another conversation.
      big ??= oneShot('漢'.repeat(32_000)).then((r) => { bigAnsweredAfterTokens = tokens; return r; });
    });
    const total = streamed.events.filter((e) => e.data.type === 'token').length;
    expect(streamed.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    expect(total).toBeGreaterThan(60);
    const answer = await big!;
    expect(answer.status).toBe(200);
    expect(answer.body.content).toBe(NO_MATCH_ANSWER);
    // The big message was answered while the stream was still running: tokens kept coming after it.
    expect(bigAnsweredAfterTokens).toBeDefined();
    expect(bigAnsweredAfterTokens!).toBeLessThan(total);
  });
});
