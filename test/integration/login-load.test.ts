/**
 * What sign-in costs (against the real server, PARLEY_BUILTIN_WORD_DELAY_MS=20): the p50 of a correct
 * password login, and what a burst of 50 concurrent logins does to the inter-token gaps of a stream that
 * runs meanwhile, compared with the same stream alone. The numbers are printed; the assertions are only
 * the robust ones (the streams finished, every login succeeded, no gap reached 1 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse-client.js';

let srv: TestServer;
let agentId: string;
let person: { email: string; password: string };
/** 50 people who sign in at once (distinct accounts: in-flight attempts of one account count against its limit). */
let crowd: Array<{ email: string; password: string }> = [];

const SENTENCES = [
  'The lighthouse keeper climbs the spiral stairs every evening before sunset, trims the wick of the great lamp, polishes the brass fittings and the thick lenses, and writes the weather in the logbook for the harbour master.',
  'During a storm the lighthouse keeper stays awake through the night, watching the beam sweep across the water, winding the clockwork that turns the lens, and sounding the horn whenever fog rolls in from the open sea.',
  'Ships passing the lighthouse count the flashes of its light to know which coast they are near, because every lighthouse keeper along the shore keeps a different pattern of long and short flashes through the dark hours.',
];

beforeAll(async () => {
  srv = await startTestServer({ PARLEY_BUILTIN_WORD_DELAY_MS: '20' });
  const kb = await (await srv.api('/v1/knowledge-bases', { body: { name: 'lighthouses' } })).json() as { id: string };
  await srv.api(`/v1/knowledge-bases/${kb.id}/documents`, { body: { title: 'Lighthouse keeping', content: SENTENCES.join(' ') } });
  await srv.parley.knowledge.settled();
  agentId = (await (await srv.api('/v1/agents', { body: { name: 'keeper', knowledge_base_ids: [kb.id] } })).json() as { id: string }).id;
  person = await srv.addPerson({ role: 'operator' });
  crowd = await Promise.all(Array.from({ length: 50 }, () => srv.addPerson({ role: 'operator' })));
});
afterAll(async () => { await srv?.close(); });

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
const ms = (n: number) => `${n.toFixed(1)} ms`;

async function login(who = person): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${srv.url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: who.email, password: who.password }) });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t0 };
}

/** Streams one answer; `onFirstToken` runs at the first token. The gaps between token arrivals, ms. */
async function stream(onFirstToken?: () => void): Promise<{ gaps: number[]; last: string }> {
  const arrivals: number[] = [];
  const { events } = await readSse(`${srv.url}/v1/agents/${agentId}/chat`, {
    method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'What does the lighthouse keeper do?', stream: true }),
  }, (ev) => {
    if (ev.data.type !== 'token') return;
    arrivals.push(performance.now());
    if (arrivals.length === 1) onFirstToken?.();
  });
  return { gaps: arrivals.slice(1).map((t, i) => t - arrivals[i]!), last: events.at(-1)!.data.type };
}

describe('sign-in load', () => {
  it('measures the p50 of a correct-password login', async () => {
    await login();
    const times: number[] = [];
    for (let i = 0; i < 21; i++) {
      const r = await login();
      expect(r.status).toBe(200);
      times.push(r.ms);
    }
    console.log(`login p50: ${ms(percentile(times, 50))}, p90 ${ms(percentile(times, 90))} (21 sequential correct-password logins, argon2id m=19456 t=2 p=1, ${srv.parley.services.config.auth.passwordHashConcurrency} hash(es) at once)`);
  });

  it('50 concurrent logins during a stream: the stream finishes and no inter-token gap reaches 1 s', async () => {
    const alone = await stream();
    let burst: Promise<Array<{ status: number; ms: number }>> | undefined;
    const t0 = { at: 0 };
    const loaded = await stream(() => {
      t0.at = performance.now();
      burst = Promise.all(crowd.map((who) => login(who)));
    });
    const logins = await burst!;
    const burstMs = Math.max(...logins.map((l) => l.ms));
    console.log([
      `inter-token gap, stream alone: p50 ${ms(percentile(alone.gaps, 50))}, p99 ${ms(percentile(alone.gaps, 99))}, max ${ms(Math.max(...alone.gaps))} (${alone.gaps.length + 1} tokens)`,
      `inter-token gap, with 50 concurrent logins: p50 ${ms(percentile(loaded.gaps, 50))}, p99 ${ms(percentile(loaded.gaps, 99))}, max ${ms(Math.max(...loaded.gaps))} (${loaded.gaps.length + 1} tokens)`,
      `the 50 logins: all done in ${ms(burstMs)}, login p50 under load ${ms(percentile(logins.map((l) => l.ms), 50))}`,
    ].join('\n'));
    expect([alone.last, loaded.last]).toEqual(['done', 'done']);
    expect(logins.map((l) => l.status)).toEqual(Array(50).fill(200));
    expect(loaded.gaps.length).toBeGreaterThan(20);
    expect(Math.max(...alone.gaps, ...loaded.gaps)).toBeLessThan(1000);
  });
});
