/**
 * kill -9 at a random moment of a mixed workload, then a restart: nothing a client was told about is lost
 * and nothing is left hanging (README "Durability"; DESIGN.md "Every write that a client was told about
 * is durable before it is told"). Streamed and one-shot chats, queued turns, handoffs, operator messages,
 * agents and document uploads run at once on the real server (`dist/src/main.js`, SQLite on disk); the
 * kill lands at a seeded random time. After the restart:
 * - every acknowledged write is there: an agent (201), a document (202), an operator message (201), a
 *   one-shot exchange (200, with the content the client got), a streamed turn's visitor message (its
 *   `conversation` event) and agent message (its `message` event, with that content);
 * - every such change reaches a webhook receiver at least once (message.created, also for the replies
 *   recovery failed; conversation.created; document.ready), although it turns away one delivery in eight;
 * - a visitor listening on its conversation's socket: every message it was shown is stored, and its page,
 *   reconnecting with the last one's id, gets exactly the stored messages after it;
 * - every turn the client was told about has ended: its agent message is `completed` or `failed` (the
 *   turns the kill cut: `interrupted`), or, in a conversation waiting for or with a person, there is none;
 *   no document stays `processing`; every conversation takes a new message (no `turn_in_progress` left).
 * Measured when written: 22 rounds of 6 clients, 3 to 21 turns told about per round, 2 to 5 of them cut.
 * `CHAOS_ROUNDS=<n> CHAOS_SEED=<n>` run more rounds than CI's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prng } from '../../bench/lib/prng.js';
import { credentialsOf, exitOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { readSse, waitFor } from '../helpers/sse-client.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { openSocket, type Frame } from '../helpers/ws-client.js';

type Json = Record<string, any>;

const dirs: string[] = [];
const children: MainProcess[] = [];
const receivers: Receiver[] = [];
afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await Promise.all(receivers.map((r) => r.close()));
});

/** What the clients were told, to check after the restart. */
interface Told {
  agents: string[];
  documents: Array<{ kb: string; id: string }>;
  /**
   * Turns whose `conversation` event arrived (or one-shot 200s); `message` once their `message` event did:
   * the stored message's id and the text streamed before it (one-shot: the reply's content).
   */
  turns: Array<{ conversation: string; turn?: string; visitor: string; message?: { id?: string; content: string } }>;
  operatorMessages: Array<{ conversation: string; id: string; content: string }>;
  conversations: Set<string>;
}

const ENV = {
  PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_WEBHOOK_RETRY_SCHEDULE_MS: '0,100,200,400,800,1600', PARLEY_WEBHOOK_SWEEP_MS: '500',
  PARLEY_BUILTIN_WORD_DELAY_MS: '15', PARLEY_INGEST_WORKERS: '1', PARLEY_MAX_LOOP_LAG_MS: '60000',
  PARLEY_TARGET_LOOP_BUSY_PERCENT: '0', PARLEY_TARGET_LOOP_LAG_MS: '0', PARLEY_INGEST_WARM_UP: '0',
};

/**
 * One round. With `partner`, a second process serves the same data dir from the start (DESIGN.md "Several
 * processes"): the clients send each request to either process at random, the kill takes the first one
 * only, and the checks after the restart also hold the partner to them (nothing lost, nothing hanging).
 */
async function round(seed: number, partner = false): Promise<void> {
  // Seeded, so a failing round can be run again (CHAOS_SEED).
  const rnd = prng(seed);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-chaos-'));
  const docsDir = mkdtempSync(join(tmpdir(), 'parley-chaos-docs-'));
  dirs.push(dataDir, docsDir);
  const env = { ...ENV, PARLEY_DOCS_DIR: docsDir };
  const first = await startMain(dataDir, env);
  children.push(first);
  const creds = await credentialsOf(dataDir);
  const other = partner ? await startMain(dataDir, env) : undefined;
  if (other !== undefined) children.push(other);
  /** Where a client's next request goes: either process, at random, with a partner. */
  const target = () => (other !== undefined && rnd() < 0.5 ? other : first);
  const headers = { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' };
  const call = async (srv: MainProcess, path: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await fetch(`${srv.url}${path}`, { method: init.method ?? (init.body === undefined ? 'GET' : 'POST'), headers, ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }) });
    return { status: res.status, body: await res.json().catch(() => ({})) as Json };
  };

  const kb = (await call(first, '/v1/knowledge-bases', { body: { name: 'Manuals' } })).body.id as string;
  const seedDoc = (await call(first, `/v1/knowledge-bases/${kb}/documents`, { body: { title: 'Valves', content: '# Valves\n\nThe quartz valve regulates pressure. Operators check it every four hours and log each reading. A drifting gauge means the valve must be recalibrated.' } })).body.id as string;
  await waitFor(async () => ((await call(first, `/v1/knowledge-bases/${kb}/documents/${seedDoc}`)).body.status === 'ready' ? true : undefined), 10_000, 'seed document ready');
  const agent = (await call(first, '/v1/agents', { body: { name: 'Plant guide', knowledge_base_ids: [kb] } })).body.id as string;
  // A receiver that turns away one delivery in eight (503): those go out again.
  const rx = await startReceiver(() => (rnd() < 0.125 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }));
  receivers.push(rx);
  expect((await call(first, '/v1/webhooks', { body: { url: `${rx.url}/hook`, events: ['*'] } })).status).toBe(201);

  const told: Told = { agents: [], documents: [], turns: [], operatorMessages: [], conversations: new Set() };

  // A visitor of the published agent, listening on its conversation's socket while people and the agent
  // write to it; the `message` frames it gets before the kill are what its page shows.
  const publicKey = (await call(first, `/v1/agents/${agent}/publish`, { method: 'POST' })).body.public_key as string;
  const opening = await fetch(`${first.url}/v1/public/agents/${publicKey}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Hello, is anyone there?' }) });
  const visit = await opening.json() as Json;
  expect(opening.status, JSON.stringify(visit)).toBe(200);
  const visitorConversation = visit.conversation_id as string;
  const visitorToken = visit.visitor_token as string;
  told.turns.push({ conversation: visitorConversation, visitor: 'Hello, is anyone there?', message: { id: visit.message_id, content: visit.content } });
  told.conversations.add(visitorConversation);
  const listenUrl = (srv: MainProcess) => `${srv.url.replace('http', 'ws')}/v1/public/agents/${publicKey}/conversations/${visitorConversation}/ws`;
  const listener = await openSocket(listenUrl(first));
  listener.send({ type: 'auth', visitor_token: visitorToken });
  await listener.next((f) => f.type === 'message', 10_000, 'the catch-up');

  let running = true;
  let n = 0;
  const question = () => `How often is the quartz valve checked, question ${++n}?`;

  /** One streamed turn, new or in a conversation already told about; records what its events said. */
  async function streamTurn(): Promise<void> {
    const known = [...told.conversations];
    const conversation = known.length > 0 && rnd() < 0.5 ? known[Math.floor(rnd() * known.length)] : undefined;
    const visitor = question();
    let turn: Told['turns'][number] | undefined;
    let tokens = '';
    await readSse(`${target().url}/v1/agents/${agent}/chat`, {
      method: 'POST', headers, body: JSON.stringify({ message: visitor, stream: true, ...(conversation ? { conversation_id: conversation } : {}) }),
    }, (ev) => {
      const d = ev.data as Json;
      if (d.type === 'conversation') {
        turn = { conversation: d.conversation_id, turn: d.turn_id, visitor };
        told.turns.push(turn);
        told.conversations.add(d.conversation_id);
      }
      if (d.type === 'token') tokens += d.delta;
      if (d.type === 'replace') tokens = d.delta;
      if (d.type === 'message' && turn) turn.message = { id: d.message_id, content: tokens };
    }).catch(() => { /* refused (409 turn_in_progress, handed off) or cut by the kill */ });
  }

  async function oneShot(): Promise<void> {
    const visitor = question();
    const res = await fetch(`${target().url}/v1/agents/${agent}/chat`, { method: 'POST', headers, body: JSON.stringify({ message: visitor }) }).catch(() => undefined);
    if (res?.status !== 200) return;
    const body = await res.json().catch(() => undefined) as Json | undefined;
    if (!body) return;
    told.turns.push({ conversation: body.conversation_id, visitor, message: { id: body.message_id, content: body.content } });
    told.conversations.add(body.conversation_id);
  }

  async function operator(): Promise<void> {
    const known = [...told.conversations];
    const conversation = rnd() < 0.4 ? visitorConversation : known[Math.floor(rnd() * known.length)]!;
    if (rnd() < 0.5) await fetch(`${target().url}/v1/conversations/${conversation}/handoff`, { method: 'POST', headers, body: '{}' }).catch(() => undefined);
    const content = `An operator here, note ${++n}.`;
    const res = await fetch(`${target().url}/v1/conversations/${conversation}/messages`, { method: 'POST', headers, body: JSON.stringify({ content }) }).catch(() => undefined);
    if (res?.status === 201) told.operatorMessages.push({ conversation, id: ((await res.json()) as Json).id, content });
  }

  async function write(): Promise<void> {
    if (rnd() < 0.5) {
      const res = await fetch(`${target().url}/v1/agents`, { method: 'POST', headers, body: JSON.stringify({ name: `Agent ${++n}` }) }).catch(() => undefined);
      if (res?.status === 201) told.agents.push(((await res.json()) as Json).id);
    } else {
      const body = Array.from({ length: 40 }, (_, i) => `## Part ${i}\n\nValve ${n} section ${i} describes the gauge, the pressure loop and the shift book in detail.`).join('\n\n');
      const res = await fetch(`${target().url}/v1/knowledge-bases/${kb}/documents?title=Manual%20${++n}`, { method: 'POST', headers: { authorization: headers.authorization, 'content-type': 'text/markdown' }, body }).catch(() => undefined);
      if (res?.status === 202) told.documents.push({ kb, id: ((await res.json()) as Json).id });
    }
  }

  /** The visitor writes again in its conversation (the agent answers, or a person when handed off). */
  async function visitorTurn(): Promise<void> {
    const visitor = question();
    const res = await fetch(`${target().url}/v1/public/agents/${publicKey}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: visitor, conversation_id: visitorConversation, visitor_token: visitorToken }) }).catch(() => undefined);
    if (res?.status !== 200) return;
    const body = await res.json().catch(() => undefined) as Json | undefined;
    if (body) told.turns.push({ conversation: visitorConversation, visitor, message: { id: body.message_id, content: body.content } });
  }

  const client = async () => {
    while (running) {
      const r = rnd();
      await (r < 0.4 ? streamTurn() : r < 0.55 ? oneShot() : r < 0.7 ? visitorTurn() : r < 0.85 ? operator() : write());
    }
  };
  const clients = Array.from({ length: 6 }, client);
  // The kill comes at a random moment once a few turns were told about (so no round is vacuous on a slow host).
  await waitFor(() => (told.turns.length >= 3 ? true : undefined), 30_000, 'three turns told about');
  await new Promise((r) => setTimeout(r, Math.floor(rnd() * 1500)));
  first.child.kill('SIGKILL');
  running = false;
  expect(await exitOf(first.child)).toBeNull();
  await Promise.all(clients);

  const second = await startMain(dataDir, env);
  children.push(second);
  try {
    for (const id of told.agents) expect((await call(second, `/v1/agents/${id}`)).status, `seed ${seed}: agent ${id}`).toBe(200);
    for (const d of told.documents) {
      const doc = await waitFor(async () => {
        const r = await call(second, `/v1/knowledge-bases/${d.kb}/documents/${d.id}`);
        expect(r.status, `seed ${seed}: document ${d.id}`).toBe(200);
        return r.body.status === 'processing' ? undefined : r.body;
      }, 30_000, `document ${d.id} ingested after the restart`);
      expect(doc.status, `seed ${seed}: document ${d.id}: ${doc.error}`).toBe('ready');
    }
    const messagesOf = new Map<string, Json[]>();
    for (const conversation of told.conversations) {
      const r = await call(second, `/v1/conversations/${conversation}/messages?limit=100`);
      expect(r.status, `seed ${seed}: conversation ${conversation}`).toBe(200);
      messagesOf.set(conversation, r.body.data as Json[]);
    }
    const statusOf = new Map<string, string>();
    for (const conversation of told.conversations) statusOf.set(conversation, (await call(second, `/v1/conversations/${conversation}`)).body.status);
    for (const t of told.turns) {
      const msgs = messagesOf.get(t.conversation)!;
      const visitor = msgs.find((m) => m.role === 'visitor' && m.content === t.visitor);
      expect(visitor, `seed ${seed}: visitor message of ${t.turn ?? 'a one-shot turn'}`).toMatchObject({ status: 'completed' });
      // A message a person answers is stored outside any agent turn (turn_id null).
      if (visitor!.turn_id === null) expect(statusOf.get(t.conversation), `seed ${seed}: visitor message without a turn`).toMatch(/^(pending_handoff|handed_off)$/);
      else if (t.turn !== undefined) expect(visitor!.turn_id).toBe(t.turn);
      if (t.message?.id !== undefined) {
        // The message the client was told about is stored, with the text it was sent.
        const told = msgs.find((m) => m.id === t.message!.id);
        expect(told, `seed ${seed}: message ${t.message.id}`).toBeDefined();
        if (told!.role === 'agent') expect(told).toMatchObject({ status: 'completed', content: t.message.content, turn_id: visitor!.turn_id });
      }
      const reply = msgs.find((m) => m.role === 'agent' && m.turn_id === visitor!.turn_id);
      if (reply === undefined) {
        // Only a message a person answers has no agent reply.
        expect(statusOf.get(t.conversation), `seed ${seed}: turn ${visitor!.turn_id} has no agent message`).toMatch(/^(pending_handoff|handed_off)$/);
        continue;
      }
      expect(reply.status, `seed ${seed}: turn ${visitor!.turn_id} left ${reply.status}`).toMatch(/^(completed|failed)$/);
      if (reply.status === 'failed') expect(typeof reply.error?.code, `seed ${seed}: turn ${visitor!.turn_id}`).toBe('string');
    }
    // At least once, some after a 503 and a retry: every message stored in those conversations (the
    // interrupted replies recovery wrote too) as message.created, each conversation as
    // conversation.created, each document as document.ready.
    const wanted = [
      ...[...messagesOf.values()].flat().map((m) => `message.created ${m.id} ${m.role} ${m.status}`),
      ...[...told.conversations].map((c) => `conversation.created ${c}`),
      ...told.documents.map((d) => `document.ready ${d.id}`),
    ];
    const deliveredKeys = () => new Set(rx.got.map((g) => {
      const d = g.json?.data ?? {};
      if (g.json?.type === 'message.created') return `message.created ${d.message_id} ${d.role} ${d.status}`;
      if (g.json?.type === 'document.ready') return `document.ready ${d.document_id}`;
      return `${g.json?.type} ${d.conversation_id}`;
    }));
    await waitFor(() => (wanted.every((k) => deliveredKeys().has(k)) ? true : undefined), 30_000, `webhooks (seed ${seed})`).catch((err: Error) => {
      const got = deliveredKeys();
      throw new Error(`${err.message}; not delivered: ${JSON.stringify(wanted.filter((k) => !got.has(k)))}`);
    });
    // The visitor's page: every message it was shown is stored, and reconnecting with the last one's id
    // brings exactly the stored messages after it, in order, none it already had.
    const shown = listener.frames.filter((f: Frame) => f.type === 'message' && typeof f.message_id === 'string').map((f) => f.message_id as string);
    const storedIds = messagesOf.get(visitorConversation)!.map((m) => m.id as string);
    for (const id of shown) expect(storedIds, `seed ${seed}: message ${id} shown to the visitor`).toContain(id);
    const again = await openSocket(listenUrl(second));
    try {
      const last = shown.at(-1)!;
      again.send({ type: 'auth', visitor_token: visitorToken, after_message_id: last });
      // Live, it was shown every message up to the last one but its own (a visitor message is not echoed).
      const before = messagesOf.get(visitorConversation)!.slice(0, storedIds.indexOf(last));
      expect(before.filter((m) => m.role !== 'visitor' && !shown.includes(m.id)).map((m) => m.id), `seed ${seed}: not shown live`).toEqual([]);
      const expected = storedIds.slice(storedIds.indexOf(last) + 1);
      const caughtUp: string[] = [];
      while (caughtUp.length < expected.length) caughtUp.push((await again.next((f) => f.type === 'message', 10_000, `catch-up after ${last} (seed ${seed})`)).message_id as string);
      expect(caughtUp, `seed ${seed}: catch-up after the restart`).toEqual(expected);
      expect(caughtUp.filter((id) => shown.includes(id))).toEqual([]);
    } finally {
      again.close();
    }
    for (const o of told.operatorMessages) {
      expect(messagesOf.get(o.conversation)!.find((m) => m.id === o.id), `seed ${seed}: operator message ${o.id}`).toMatchObject({ role: 'operator', content: o.content });
    }
    // Nothing hangs: every conversation told about takes a new turn (or an operator, when handed off).
    await Promise.all([...told.conversations].map(async (conversation) => {
      const r = await call(second, `/v1/agents/${agent}/chat`, { body: { message: 'Still there?', conversation_id: conversation } });
      expect(r.status, `seed ${seed}: conversation ${conversation}: ${JSON.stringify(r.body)}`).toBe(200);
    }));
  } finally {
    second.child.kill('SIGTERM');
    await exitOf(second.child);
    if (other !== undefined) {
      other.child.kill('SIGTERM');
      await exitOf(other.child);
    }
  }
}

describe('kill -9 under a mixed workload', () => {
  const rounds = Number(process.env.CHAOS_ROUNDS ?? 2);
  const seed0 = Number(process.env.CHAOS_SEED ?? 20261128);
  for (let i = 0; i < rounds; i++) {
    it(`round ${i + 1} (seed ${seed0 + i}): every acknowledged write is there after the restart, and nothing is left hanging`, async () => {
      await round(seed0 + i);
    }, 120_000);
  }
});

describe('kill -9 of one of two processes under a mixed workload', () => {
  const rounds = Number(process.env.CHAOS_PAIR_ROUNDS ?? 1);
  const seed0 = Number(process.env.CHAOS_SEED ?? 20261128) + 1000;
  for (let i = 0; i < rounds; i++) {
    it(`round ${i + 1} (seed ${seed0 + i}): requests to both processes; after one is killed and restarted, every acknowledged write is there and nothing hangs`, async () => {
      await round(seed0 + i, true);
    }, 150_000);
  }
});
