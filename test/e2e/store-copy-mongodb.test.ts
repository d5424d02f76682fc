/**
 * `store copy` between SQLite and MongoDB (MONGODB_URI, a replica set; each run in databases of its own,
 * dropped after it): a running server's data dir moved up into MongoDB, a server on that database
 * answering with the same API key, conversations, messages, knowledge and webhooks, then moved down into
 * a new data dir that a server serves the same way. Says it was skipped when MONGODB_URI is not set.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { exitOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/sse-client.js';
import { withDatabase } from '../helpers/mongodb.js';

const uri = process.env.MONGODB_URI;
const CLI = resolve(import.meta.dirname, '../../dist/src/cli/main.js');

const cli = (args: string[]) => new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
  execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PARLEY_LOG_LEVEL: 'silent' } }, (err, stdout, stderr) => {
    done({ code: err ? (err as { code?: number }).code ?? 1 : 0, stdout, stderr });
  });
});

if (uri === undefined || uri === '') {
  describe('store copy between SQLite and MongoDB', () => {
    it.skip('skipped: MONGODB_URI not set', () => {});
  });
} else {
  const database = `parley_copy_${randomBytes(6).toString('hex')}`;
  const target = withDatabase(uri, database);
  let srv: TestServer;
  const procs: MainProcess[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) { p.child.kill('SIGTERM'); await exitOf(p.child); }
    await srv?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    const client = new MongoClient(uri);
    try { await client.db(database).dropDatabase(); } finally { await client.close(); }
  });

  describe('store copy between SQLite and MongoDB', () => {
    let agentId: string;
    let kbId: string;
    let conversationId: string;
    const get = async <T>(url: string, path: string): Promise<T> => {
      const r = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${srv.apiKey}` } });
      expect(r.status, path).toBe(200);
      return r.json() as Promise<T>;
    };
    const sameData = async (url: string) => {
      expect((await get<{ data: Array<{ id: string }> }>(url, '/v1/agents')).data.map((a) => a.id)).toEqual([agentId]);
      const copied = await get<{ data: Array<{ id: string; content: string }> }>(url, `/v1/conversations/${conversationId}/messages`);
      const original = await get<{ data: Array<{ id: string; content: string }> }>(srv.url, `/v1/conversations/${conversationId}/messages`);
      expect(copied.data).toEqual(original.data);
      expect((await get<{ data: unknown[] }>(url, `/v1/knowledge-bases/${kbId}/search?q=okapi&k=3`)).data.length).toBeGreaterThan(0);
      expect((await get<{ data: Array<{ url: string }> }>(url, '/v1/webhooks')).data.map((w) => w.url)).toEqual(['http://127.0.0.1:9/hook']);
    };

    it('moves a live data dir up into MongoDB; a server on it serves the same data', async () => {
      srv = await startTestServer({ PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true' });
      kbId = ((await (await srv.api('/v1/knowledge-bases', { body: { name: 'Handbook' } })).json()) as { id: string }).id;
      const doc = (await (await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title: 'Returns', content: 'The okapi desk handles refunds.', content_type: 'text/plain' } })).json()) as { id: string };
      await waitFor(async () => (((await (await srv.api(`/v1/knowledge-bases/${kbId}/documents/${doc.id}`)).json()) as { status: string }).status === 'ready' ? true : undefined), 30_000);
      agentId = ((await (await srv.api('/v1/agents', { body: { name: 'Mover', knowledge_base_ids: [kbId] } })).json()) as { id: string }).id;
      await srv.api('/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });
      conversationId = ((await (await srv.api(`/v1/agents/${agentId}/chat`, { body: { message: 'Who handles refunds?' } })).json()) as { conversation_id: string }).conversation_id;
      const up = await cli(['store', 'copy', '--from', srv.dataDir, '--to', target]);
      expect(up.stderr).toBe('');
      expect(up.code).toBe(0);
      expect(up.stdout).not.toContain('MISMATCH');
      const dataDir = mkdtempSync(join(tmpdir(), 'parley-on-mongo-'));
      dirs.push(dataDir);
      procs.push(await startMain(dataDir, { PARLEY_MONGODB_URI: target, PARLEY_BOOTSTRAP: 'false' }));
      await sameData(procs[0]!.url);
    });

    it('moves it down again into a new data dir, which a server serves the same way', async () => {
      procs[0]!.child.kill('SIGTERM');
      await exitOf(procs[0]!.child);
      const down = join(mkdtempSync(join(tmpdir(), 'parley-down-')), 'data');
      dirs.push(resolve(down, '..'));
      const r = await cli(['store', 'copy', '--from', target, '--to', down]);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain('MISMATCH');
      procs.push(await startMain(down, { PARLEY_BOOTSTRAP: 'false' }));
      await sameData(procs[1]!.url);
      const again = await cli(['store', 'copy', '--from', srv.dataDir, '--to', target]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('already holds data');
    });
  });
}
