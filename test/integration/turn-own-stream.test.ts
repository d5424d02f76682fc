/**
 * A turn's own client never depends on replay retention (docs/chat.md "Resume a dropped stream"): the request or
 * socket whose message started a turn gets every event of it, `conversation` to `done`, however small the
 * replay budget. The budget (PARLEY_TURN_REPLAY_BYTES) only bounds what later readers can resume.
 *
 * The race this guards: with a zero-latency model, a turn can end in the same SQLite commit as its visitor
 * message, before its own response has subscribed to its channel; the next turn to end then evicts its
 * replay. Real server, real SQLite, the mock upstream answering at once, many turns at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePromText } from '../../bench/lib/prom-text.js';
import { metricsText } from '../helpers/metrics.js';
import { startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';
import { createAgent, wsUrl } from '../helpers/live.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';
import { openSocket, type Frame, type TestSocket } from '../helpers/ws-client.js';

let mock: MockUpstream;
let srv: TestServer;
let agent: string;

beforeAll(async () => {
  mock = await startMockUpstream({ ttftMs: 0, record: false });
  srv = await startTestServer({ PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_TURN_REPLAY_BYTES: '0', PARLEY_MAX_QUEUED_TURNS: '8' });
  agent = await createAgent(srv, { name: 'Echo', model: { provider: 'openai', name: 'mock-echo' } });
});

afterAll(async () => {
  await srv?.close();
  await mock?.close();
});

/** The one sample of gauge `name` in Prometheus text `text` (a single process: no labels). */
function gaugeOf(text: string, name: string): number | undefined {
  return parsePromText(text).get(name);
}

/** Runs `job(0..count-1)`, `concurrency` at a time; the results in index order. */
async function pool<T>(count: number, concurrency: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(count);
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++;
      out[i] = await job(i);
    }
  }));
  return out;
}

/** What the mock answers to `message` (test/helpers/mock-upstream.ts: `You said: <last user message>`). */
const answerTo = (message: string) => `You said: ${message}`;

/** The event types of a finished turn with `n` tokens, in API.md order (no knowledge base: empty citations). */
const turnTypes = (n: number) => ['conversation', ...Array<string>(n).fill('token'), 'citations', 'message', 'usage', 'done'];

/** A stream outcome reduced to what the assertions compare: event types and the token text. */
function outcome(types: string[], text: string): { types: string[]; text: string } {
  return { types, text };
}

describe('a turn\'s own client gets all its events with PARLEY_TURN_REPLAY_BYTES=0', () => {
  it('SSE: 240 streamed turns, 32 at a time, each gets conversation ... done and its whole reply', async () => {
    const results = await pool(240, 32, async (i) => {
      const message = `stream question ${i}`;
      const { events } = await readSse(`${srv.url}/v1/agents/${agent}/chat`, {
        method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message, stream: true }),
      });
      const tokens = events.filter((e) => e.data.type === 'token');
      return { got: outcome(events.map((e) => e.data.type), tokens.map((e) => String(e.data.delta)).join('')), message, n: tokens.length };
    });
    const failed = results.filter((r) => r.got.types.at(-1) !== 'done');
    expect(failed.map((r) => r.got.types.join(',')), `${failed.length} of 240 streams ended without done`).toEqual([]);
    for (const r of results) {
      expect(r.got).toEqual(outcome(turnTypes(r.n), answerTo(r.message)));
    }
    // The budget still bounds what readers can resume: one finished turn kept, its bytes alone counted
    // (1 KiB of overhead plus 2 bytes per character of its events, a few hundred here).
    const metrics = await metricsText(srv.url);
    expect(gaugeOf(metrics, 'parley_turn_replay_turns')).toBe(1);
    const bytes = gaugeOf(metrics, 'parley_turn_replay_bytes');
    expect(bytes).toBeGreaterThan(1024);
    expect(bytes).toBeLessThan(1024 + 2 * 2000);
  });

  it('one-shot JSON: 160 turns, 32 at a time, each answers 200 with its whole reply', async () => {
    const results = await pool(160, 32, async (i) => {
      const message = `one-shot question ${i}`;
      // A one-shot whose events were lost would wait forever: each request gets 10 s.
      const r = await fetch(`${srv.url}/v1/agents/${agent}/chat`, {
        method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message, stream: false }), signal: AbortSignal.timeout(10_000),
      });
      const body = (await r.json()) as { content?: string; finish_reason?: string; message_id?: string };
      return { status: r.status, content: body.content, finish: body.finish_reason, id: body.message_id, message };
    });
    for (const r of results) {
      expect({ status: r.status, content: r.content, finish: r.finish }).toEqual({ status: 200, content: answerTo(r.message), finish: 'stop' });
      expect(r.id).toMatch(/^msg_/);
    }
  }, 30_000);

  it('WebSocket: 8 sockets, each with 4 conversations of 3 turns sent at once, get every frame of every turn', async () => {
    const token = (await srv.signIn({ role: 'operator' })).session.access_token;
    const path = `/v1/agents/${agent}/chat/ws?token=${encodeURIComponent(token)}`;
    const sockets: TestSocket[] = await Promise.all(Array.from({ length: 8 }, () => openSocket(wsUrl(srv, path))));
    try {
      await Promise.all(sockets.map(async (s, si) => {
        // First turn of each conversation: four new conversations at once.
        const firsts = Array.from({ length: 4 }, (_, c) => `socket ${si} conversation ${c} turn 0`);
        for (const message of firsts) s.send({ type: 'message', message });
        const doneCount = (n: number) => (f: Frame) => f.type === 'done' && s.frames.filter((x) => x.type === 'done').length >= n;
        await s.next(doneCount(4), 20_000, 'four done frames');
        const conversations = [...new Set(s.frames.filter((f) => f.type === 'conversation').map((f) => f.conversation_id as string))];
        expect(conversations).toHaveLength(4);
        // Two more turns of each, sent together: the second of each waits in its conversation's queue.
        for (const [c, id] of conversations.entries()) {
          for (const t of [1, 2]) s.send({ type: 'message', message: `socket ${si} conversation ${c} turn ${t}`, conversation_id: id });
        }
        await s.next(doneCount(12), 20_000, 'twelve done frames');
        // Every turn's frames, by turn id: conversation first, its whole reply, done last.
        const byTurn = new Map<string, Frame[]>();
        const turnOfConversation = new Map<string, string>();
        for (const f of s.frames) {
          if (f.type === 'conversation') turnOfConversation.set(f.conversation_id as string, f.turn_id as string);
          const turn = turnOfConversation.get(f.conversation_id as string)!;
          byTurn.set(turn, [...(byTurn.get(turn) ?? []), f]);
        }
        expect(byTurn.size).toBe(12);
        const replies: string[] = [];
        for (const frames of byTurn.values()) {
          const tokens = frames.filter((f) => f.type === 'token');
          expect(frames.map((f) => f.type)).toEqual(turnTypes(tokens.length));
          replies.push(tokens.map((f) => f.delta).join(''));
        }
        const asked = [0, 1, 2, 3].flatMap((c) => [0, 1, 2].map((t) => answerTo(`socket ${si} conversation ${c} turn ${t}`)));
        expect(replies.sort()).toEqual(asked.sort());
      }));
    } finally {
      for (const s of sockets) s.close();
    }
  }, 60_000);
});
