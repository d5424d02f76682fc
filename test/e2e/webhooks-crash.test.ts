/**
 * kill -9 in the middle of a webhook attempt (API.md "Webhooks": a sweep re-enqueues deliveries lost to
 * a crash): the server runs as a child process (`node dist/src/main.js`); the receiver SIGKILLs it when
 * the first request arrives, before the server could record the attempt. After a restart on the same
 * data, the start-up sweep records that attempt as interrupted and the delivery goes out again with the
 * same event id; the history shows both attempts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { credentialsOf, exitOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { waitFor } from '../helpers/sse-client.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const dirs: string[] = [];
const children: MainProcess[] = [];
let rx: Receiver | undefined;
afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await rx?.close();
});

type Json = Record<string, any>;

describe('kill -9 while a webhook attempt is in flight, then restart', () => {
  it('redelivers with the same event id and records the cut attempt as interrupted', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-whcrash-'));
    const docsDir = mkdtempSync(join(tmpdir(), 'parley-whcrash-docs-'));
    dirs.push(dataDir, docsDir);
    const env = { PARLEY_DOCS_DIR: docsDir, PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_WEBHOOK_MAX_IN_FLIGHT: '1', PARLEY_MAX_LOOP_LAG_MS: '60000' };
    let victim: MainProcess | undefined;
    rx = await startReceiver((_req, n) => {
      if (n === 1) { victim?.child.kill('SIGKILL'); return 'hang'; }
      return { status: 200, body: 'thanks' };
    });
    const first = await startMain(dataDir, env);
    children.push(first);
    victim = first;
    const creds = await credentialsOf(dataDir);
    const headers = { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' };
    const api = async (srv: MainProcess, path: string, body?: unknown): Promise<Json> => {
      const res = await fetch(`${srv.url}${path}`, { method: body === undefined ? 'GET' : 'POST', headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { ...(await res.json() as Json), http_status: res.status };
    };
    const ep = await api(first, '/v1/webhooks', { url: `${rx.url}/hook`, events: ['conversation.created'] });
    expect(ep.http_status).toBe(201);
    // A real change: a new conversation (its event is stored in the commit of the conversation). The
    // delivery arrives while the turn still runs, so the kill cuts the chat request too.
    void api(first, `/v1/agents/${creds.agent_id}/chat`, { message: 'hello' }).catch(() => undefined);

    expect(await exitOf(first.child)).toBeNull();
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(rx.got).toHaveLength(1);
    const eventId = rx.got[0]!.json.id;
    expect(rx.got[0]!.json).toMatchObject({ type: 'conversation.created', data: { agent_id: creds.agent_id } });
    const conversationId = rx.got[0]!.json.data.conversation_id as string;

    const second = await startMain(dataDir, env);
    children.push(second);
    try {
      // The conversation the event tells of was stored with it.
      expect((await api(second, `/v1/conversations/${conversationId}`)).http_status).toBe(200);
      await rx.waitFor((g) => g.length >= 2, 20_000);
      expect(rx.got.map((g) => g.json.id)).toEqual([eventId, eventId]);
      expect(new Webhook(ep.secret).verify(rx.got[1]!.raw, rx.got[1]!.headers as Record<string, string>)).toBeTruthy();
      const deliveries = await api(second, `/v1/webhooks/${ep.id}/deliveries`);
      expect(deliveries.data).toHaveLength(1);
      const d = await waitFor(async () => {
        const x = await api(second, `/v1/webhooks/${ep.id}/deliveries/${deliveries.data[0].id}`);
        return x.http_status === 200 && x.attempt_count === 2 && x.attempts.length === 2 ? x : undefined;
      }, 10_000, 'both attempts recorded');
      expect(d).toMatchObject({ event_id: eventId, status: 'succeeded', attempt_count: 2 });
      expect(d.attempts.map((a: Json) => [a.number, a.status])).toEqual([[1, 0], [2, 200]]);
      expect(d.attempts[0].error).toMatch(/^interrupted/);
      expect(d.attempts[1]).toMatchObject({ body: 'thanks', error: null });
    } finally {
      second.child.kill('SIGTERM');
      await exitOf(second.child);
    }
  }, 120_000);
});
