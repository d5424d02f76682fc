/**
 * The replay of finished turns as /metrics shows it (docs/operations.md): `parley_turn_replay_turns`, the
 * finished turns whose events are kept for a client to resume, and `parley_turn_replay_bytes`, the memory
 * the replay budget (PARLEY_TURN_REPLAY_BYTES) counts for them. The replay-memory bench reads both. Real
 * server, real SQLite, the builtin model.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parsePromText } from '../../bench/lib/prom-text.js';
import { readSse } from '../helpers/sse-client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let srv: TestServer | undefined;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
});

/** The one value of a gauge of this (single) process, or undefined when /metrics has none. */
async function gauge(s: TestServer, name: string): Promise<number | undefined> {
  const samples = [...parsePromText(await (await fetch(`${s.url}/metrics`)).text())].filter(([key]) => key === name || key.startsWith(`${name}{`));
  expect(samples.length).toBeLessThanOrEqual(1);
  return samples[0]?.[1];
}

/** Three streamed turns, each starting a conversation; returns the characters of token text received. */
async function threeTurns(s: TestServer): Promise<number> {
  const created = await s.api('/v1/agents', { body: { name: 'Replay', model: { provider: 'builtin', name: 'parley-builtin' } } });
  expect(created.status).toBe(201);
  const agent = ((await created.json()) as { id: string }).id;
  let chars = 0;
  for (let i = 0; i < 3; i++) {
    const { events } = await readSse(`${s.url}/v1/agents/${agent}/chat`, {
      method: 'POST', headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: `question ${i}`, stream: true }),
    });
    expect(events.at(-1)?.data.type).toBe('done');
    for (const e of events) if (e.data.type === 'token') chars += String(e.data.delta).length;
  }
  return chars;
}

describe('metrics: turns kept for replay', () => {
  it('counts the finished turns kept, at least two bytes per character of their text, and what the byte budget leaves', async () => {
    srv = await startTestServer();
    expect(await gauge(srv, 'parley_turn_replay_turns')).toBe(0);
    expect(await gauge(srv, 'parley_turn_replay_bytes')).toBe(0);
    const chars = await threeTurns(srv);
    expect(chars).toBeGreaterThan(0);
    expect(await gauge(srv, 'parley_turn_replay_turns')).toBe(3);
    const three = (await gauge(srv, 'parley_turn_replay_bytes'))!;
    // Each turn keeps its token text (and its other events): the budget counts 2 bytes a character at least.
    expect(three).toBeGreaterThanOrEqual(2 * chars);
    await srv.close();

    // PARLEY_TURN_REPLAY_BYTES=0: only the newest finished turn stays, and the bytes counted are its alone.
    srv = await startTestServer({ PARLEY_TURN_REPLAY_BYTES: '0' });
    await threeTurns(srv);
    expect(await gauge(srv, 'parley_turn_replay_turns')).toBe(1);
    const one = (await gauge(srv, 'parley_turn_replay_bytes'))!;
    expect(one).toBeGreaterThan(0);
    expect(one).toBeLessThan(three);
  });
});
