import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { credentialsOf, exitOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { readSse, waitFor, type SseEvent } from '../helpers/sse-client.js';

const dirs: string[] = [];
const children: MainProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Json = Record<string, any>;

/**
 * A streamed chat whose events are collected as they come; `until` resolves once `ready(events)` holds.
 * The stream is expected to break when the server is killed: `ended` then resolves with what arrived.
 */
function openStream(url: string, key: string, agentId: string, body: Json, ready: (events: SseEvent[]) => boolean) {
  const events: SseEvent[] = [];
  let signal!: () => void;
  const until = new Promise<void>((r) => { signal = r; });
  const ended = readSse(`${url}/v1/agents/${agentId}/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  }, (ev, all) => {
    events.push(ev);
    if (ready(all)) signal();
  }).then(() => events, () => events);
  return { events, until, ended };
}

/** A Markdown document of about `mb` MB with many sections, slow enough to ingest that a kill lands mid-way. */
function bigMarkdown(mb: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < mb * 1024 * 1024; i++) {
    const section = `## Section ${i}\n\nThe quartz valve ${i} regulates pressure in loop ${i % 97}. Operators check it every ${i % 13} hours and log the reading. ` +
      `When the gauge drifts, recalibrate valve ${i} before the next shift.\n\n- step one for ${i}\n- step two for ${i}\n\n`;
    parts.push(section);
    size += section.length;
  }
  return `# Plant manual\n\n${parts.join('')}`;
}

describe('kill -9 during ingestion and streamed turns, then restart on the same data', () => {
  it('keeps every acknowledged write, re-ingests the accepted document, and stores interrupted turns as failed', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-crash-'));
    const docsDir = mkdtempSync(join(tmpdir(), 'parley-crash-docs-'));
    dirs.push(dataDir, docsDir);
    // Re-ingestion after the restart keeps the loop busy; load shedding is not what this test is about.
    const env = { PARLEY_DOCS_DIR: docsDir, PARLEY_BUILTIN_WORD_DELAY_MS: '40', PARLEY_INGEST_WORKERS: '1', PARLEY_MAX_LOOP_LAG_MS: '60000' };
    const first = await startMain(dataDir, env);
    children.push(first);
    const creds = await credentialsOf(dataDir);
    const headers = { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' };
    const api = async (srv: MainProcess, path: string, init: { method?: string; body?: unknown } = {}): Promise<Json> => {
      const res = await fetch(`${srv.url}${path}`, { method: init.method ?? (init.body ? 'POST' : 'GET'), headers, ...(init.body ? { body: JSON.stringify(init.body) } : {}) });
      return { status: res.status, ...(await res.json() as Json) };
    };

    // An agent answering (slowly, word by word) from a small ready document.
    const kb = await api(first, '/v1/knowledge-bases', { body: { name: 'Manuals' } });
    const small = await api(first, `/v1/knowledge-bases/${kb.id}/documents`, {
      body: { title: 'Valves', content: '# Valves\n\nThe quartz valve regulates pressure in the main loop. Operators check the quartz valve every four hours and log each reading in the shift book. A drifting gauge means the valve must be recalibrated before the next shift starts.' },
    });
    await waitFor(async () => ((await api(first, `/v1/knowledge-bases/${kb.id}/documents/${small.id}`)).status === 'ready' ? true : undefined), 10_000, 'small document ready');
    const agent = await api(first, '/v1/agents', { body: { name: 'Plant guide', knowledge_base_ids: [kb.id] } });

    // Accepted (202) just before the kill: its content must survive.
    const upload = await fetch(`${first.url}/v1/knowledge-bases/${kb.id}/documents?title=Plant%20manual`, {
      method: 'POST', headers: { authorization: `Bearer ${creds.api_key}`, 'content-type': 'text/markdown' }, body: bigMarkdown(4),
    });
    expect(upload.status).toBe(202);
    const big = await upload.json() as { id: string };

    const question = { message: 'How often do operators check the quartz valve and what if the gauge drifts?' };
    const hasTokens = (n: number) => (events: SseEvent[]) => events.filter((e) => e.data.type === 'token').length >= n;
    const a = openStream(first.url, creds.api_key, agent.id, question, hasTokens(2));
    await a.until;
    const convA = a.events[0]!.data.conversation_id as string;
    // Queued behind A in the same conversation: acknowledged (its conversation event came) but not started.
    const b = openStream(first.url, creds.api_key, agent.id, { message: 'And who logs the readings?', conversation_id: convA }, (ev) => ev.length >= 1);
    await b.until;
    const c = openStream(first.url, creds.api_key, agent.id, question, hasTokens(2));
    await c.until;

    expect((await api(first, `/v1/knowledge-bases/${kb.id}/documents/${big.id}`)).status).toBe('processing');
    first.child.kill('SIGKILL');
    expect(await exitOf(first.child)).toBeNull();
    const [eventsA, eventsB, eventsC] = await Promise.all([a.ended, b.ended, c.ended]);
    // None of the three streams ended: the kill cut them.
    for (const events of [eventsA, eventsB, eventsC]) expect(events.map((e) => e.data.type)).not.toContain('done');

    const second = await startMain(dataDir, env);
    children.push(second);
    try {
      // Every turn the client was told about (its conversation event) is stored as visitor message +
      // a failed agent reply with code `interrupted`.
      for (const events of [eventsA, eventsB, eventsC]) {
        const { conversation_id, turn_id } = events[0]!.data as unknown as { conversation_id: string; turn_id: string };
        const msgs = (await api(second, `/v1/conversations/${conversation_id}/messages?limit=100`)).data as Json[];
        const ofTurn = msgs.filter((m) => m.turn_id === turn_id);
        expect(ofTurn.map((m) => [m.role, m.status])).toEqual([['visitor', 'completed'], ['agent', 'failed']]);
        expect(ofTurn[1]!.error).toMatchObject({ type: 'api_error', code: 'interrupted' });
      }
      // The accepted document is ingested again from its stored content.
      const doc = await waitFor(async () => {
        const d = await api(second, `/v1/knowledge-bases/${kb.id}/documents/${big.id}`);
        return d.status === 'processing' ? undefined : d;
      }, 60_000, 'big document re-ingested');
      expect(doc).toMatchObject({ status: 'ready', error: null });
      expect(doc.chunk_count).toBeGreaterThan(1000);
      const hits = await api(second, `/v1/knowledge-bases/${kb.id}/search?q=recalibrate%20valve%2012345&k=3`);
      expect((hits.data as Json[])[0]).toMatchObject({ document_id: big.id });
      // And the service answers again, in the interrupted conversation too.
      const again = await readSse(`${second.url}/v1/agents/${agent.id}/chat`, {
        method: 'POST', headers, body: JSON.stringify({ message: 'How often is the valve checked?', conversation_id: (eventsA[0]!.data as Json).conversation_id, stream: true }),
      });
      expect(again.events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    } finally {
      second.child.kill('SIGTERM');
      await exitOf(second.child);
    }
  }, 120_000);
});
