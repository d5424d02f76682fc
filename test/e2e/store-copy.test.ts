/**
 * `npm run parley -- store copy` (node dist/src/cli/main.js) from the data dir of a running server into a
 * new data dir, SQLite to SQLite: the copy is a consistent snapshot taken while the server writes; its
 * row counts are checked; a server started on the copy accepts the same API key and serves the same
 * agents, conversations, messages, knowledge (searchable: the full-text index is rebuilt) and webhook
 * endpoints; a target that holds data is refused without --force, and replaced with it.
 * (SQLite to and from MongoDB needs a MongoDB replica set: test/e2e/store-copy-mongodb.test.ts.)
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';

const CLI = resolve(import.meta.dirname, '../../dist/src/cli/main.js');

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PARLEY_LOG_LEVEL: 'silent' } }, (err, stdout, stderr) => {
      done({ code: err ? (err as { code?: number }).code ?? 1 : 0, stdout, stderr });
    });
  });
}

async function json<T>(res: Promise<Response> | Response, status = 200): Promise<T> {
  const r = await res;
  expect(r.status).toBe(status);
  return r.json() as Promise<T>;
}

type List<T> = { data: T[]; has_more: boolean };

let srv: TestServer;
let copy: MainProcess | undefined;
const dirs: string[] = [];
const newDir = () => { const d = mkdtempSync(join(tmpdir(), 'parley-copy-test-')); dirs.push(d); return d; };

beforeAll(async () => {
  srv = await startTestServer({ PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true' });
});
afterAll(async () => {
  if (copy !== undefined && copy.child.exitCode === null) { copy.child.kill('SIGTERM'); await exitOf(copy.child); }
  await srv?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('store copy, SQLite to SQLite, from a running server', () => {
  let target: string;
  let agentId: string;
  let kbId: string;
  const conversations: string[] = [];

  it('copies a live data dir while the server keeps writing, with every table counted', async () => {
    const kb = await json<{ id: string }>(srv.api('/v1/knowledge-bases', { body: { name: 'Handbook' } }), 201);
    kbId = kb.id;
    const doc = await json<{ id: string }>(srv.api(`/v1/knowledge-bases/${kbId}/documents`, {
      body: { title: 'Returns', content: 'Parcels can be returned within thirty days. The okapi desk handles refunds.', content_type: 'text/plain' },
    }), 202);
    await waitFor(async () => ((await json<{ status: string }>(srv.api(`/v1/knowledge-bases/${kbId}/documents/${doc.id}`))).status === 'ready' ? true : undefined), 30_000, 'document ready');
    agentId = (await json<{ id: string }>(srv.api('/v1/agents', { body: { name: 'Copied agent', knowledge_base_ids: [kbId] } }), 201)).id;
    await json(srv.api('/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['conversation.created'] } }), 201);
    for (const message of ['How long do returns take?', 'Who handles refunds?']) {
      const turn = await json<{ conversation_id: string }>(srv.api(`/v1/agents/${agentId}/chat`, { body: { message } }));
      conversations.push(turn.conversation_id);
    }
    await json(srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'And a follow-up', conversation_id: conversations[0] } }));

    target = join(newDir(), 'copy');
    // The server keeps writing while the copy runs: a snapshot is consistent whatever it writes.
    let writing = true;
    const writer = (async () => {
      while (writing) await srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'meanwhile' } });
    })();
    const result = await cli(['store', 'copy', '--from', srv.dataDir, '--to', target]);
    writing = false;
    await writer;
    expect(result.stderr).not.toContain('Failed');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Copying SQLite in ${srv.dataDir} to SQLite in ${target}.`);
    expect(result.stdout).toMatch(/^ {2}agents +1 -> +1$/m);
    expect(result.stdout).toMatch(/^ {2}knowledge_bases +1 -> +1$/m);
    expect(result.stdout).toMatch(/^ {2}webhook_endpoints +1 -> +1$/m);
    expect(result.stdout).not.toContain('MISMATCH');
    expect(result.stdout).toContain('Copied: every table holds as many rows as the snapshot.');
    expect(existsSync(join(target, 'parley.db'))).toBe(true);
  });

  it('a server on the copy accepts the same API key and serves the same agents, conversations, messages, knowledge and webhooks', async () => {
    copy = await startMain(target, { PARLEY_BOOTSTRAP: 'false', PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    const get = <T>(url: string, path: string) => json<T>(fetch(`${url}${path}`, { headers: { authorization: `Bearer ${srv.apiKey}` } }));
    const onCopy = <T>(path: string) => get<T>(copy!.url, path);
    const onSource = <T>(path: string) => get<T>(srv.url, path);

    expect((await onCopy<List<{ id: string; name: string }>>('/v1/agents')).data.map((a) => [a.id, a.name])).toEqual([[agentId, 'Copied agent']]);
    const convs = await onCopy<List<{ id: string }>>('/v1/conversations?limit=100');
    for (const id of conversations) expect(convs.data.map((c) => c.id)).toContain(id);
    for (const id of conversations) {
      const copied = await onCopy<List<{ id: string; role: string; content: string }>>(`/v1/conversations/${id}/messages`);
      const original = await onSource<List<{ id: string; role: string; content: string }>>(`/v1/conversations/${id}/messages`);
      expect(copied.data.map((m) => [m.id, m.role, m.content])).toEqual(original.data.map((m) => [m.id, m.role, m.content]));
    }
    expect((await onCopy<List<{ id: string }>>(`/v1/conversations/${conversations[0]}/messages`)).data).toHaveLength(4);
    const hits = await onCopy<{ data: Array<{ snippet?: string; text?: string; document_id: string }> }>(`/v1/knowledge-bases/${kbId}/search?q=okapi%20refunds&k=3`);
    expect(hits.data.length).toBeGreaterThan(0);
    expect((await onCopy<List<{ url: string; events: string[] }>>('/v1/webhooks')).data.map((w) => [w.url, w.events])).toEqual([['http://127.0.0.1:9/hook', ['conversation.created']]]);
    // The copy is a store of its own: a new turn there is answered and stored.
    const turn = await json<{ conversation_id: string; content: string }>(fetch(`${copy.url}/v1/agents/${agentId}/chat`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Who handles refunds?', conversation_id: conversations[1] }),
    }));
    expect(turn.conversation_id).toBe(conversations[1]);
    expect((await onCopy<List<{ id: string }>>(`/v1/conversations/${conversations[1]}/messages`)).data).toHaveLength(4);
  });

  it('refuses a target that holds data unless --force, and replaces it with --force', async () => {
    copy!.child.kill('SIGTERM');
    expect(await exitOf(copy!.child)).toBe(0);
    const refused = await cli(['store', 'copy', '--from', srv.dataDir, '--to', target]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^SQLite in .+ already holds data \(organizations, .*\); nothing was copied\. Pass --force to replace it\.\n$/);
    const forced = await cli(['store', 'copy', '--from', srv.dataDir, '--to', target, '--force']);
    expect(forced.code).toBe(0);
    // The turn stored on the copy is gone: the copy is the source's snapshot again.
    copy = await startMain(target, { PARLEY_BOOTSTRAP: 'false' });
    const msgs = await json<List<{ id: string }>>(fetch(`${copy.url}/v1/conversations/${conversations[1]}/messages`, { headers: { authorization: `Bearer ${srv.apiKey}` } }));
    expect(msgs.data).toHaveLength(2);
  });

  it('refuses a source that is no data dir, and the same store on both sides', async () => {
    const empty = newDir();
    const none = await cli(['store', 'copy', '--from', empty, '--to', join(empty, 'out')]);
    expect(none).toMatchObject({ code: 1, stderr: `No Parley data in ${empty} (no parley.db).\n` });
    const same = await cli(['store', 'copy', '--from', srv.dataDir, '--to', srv.dataDir]);
    expect(same).toMatchObject({ code: 1, stderr: `--from and --to name the same store (${srv.dataDir}).\n` });
    const usage = await cli(['store', 'copy', '--from', srv.dataDir]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('Missing --to.');
  });
});
