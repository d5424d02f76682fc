import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Agent } from 'undici';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { credentialsOf, exitOf, MAIN, startMain } from '../helpers/main-process.js';
import { readSse, waitFor } from '../helpers/sse-client.js';

/** `startMain` with the names this file has always used. */
async function start(dataDir: string, env: Record<string, string> = {}) {
  const started = await startMain(dataDir, env);
  return { child: started.child, stdout: started.output, url: started.url };
}

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe('npm start on an empty data dir', () => {
  it('bootstraps the demo, answers a streamed question with citations from docs/, and reuses the data on restart', async () => {
    expect(existsSync(MAIN), 'run `npm run build` first').toBe(true);
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-'));
    dirs.push(dataDir);
    const first = await start(dataDir);
    const credsFile = join(dataDir, 'initial-credentials.json');
    const creds = await credentialsOf(dataDir);
    await waitFor(() => (first.stdout().includes('Parley is ready.') ? true : undefined), 20_000, 'ready line');
    expect(statSync(credsFile).mode & 0o777).toBe(0o600);
    // stdout is a pipe here, not a terminal: it names the credentials file instead of printing the key.
    expect(first.stdout()).toContain(`Its API key and the sign-in of the owner (owner@example.com) are in ${credsFile} (mode 0600)`);
    expect(first.stdout()).toContain(creds.agent_id);
    expect(first.stdout()).not.toContain(creds.api_key);
    expect(first.stdout()).not.toContain(creds.owner_password);
    // The demo owner signs in with what the file holds, and owns the demo organization.
    expect(creds.owner_email).toBe('owner@example.com');
    expect(creds.owner_password).toMatch(/^[A-Za-z0-9_-]{20}$/);
    const login = await fetch(`${first.url}/v1/auth/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: creds.owner_email, password: creds.owner_password }),
    });
    expect(login.status).toBe(200);
    const session = await login.json() as { organizations: unknown[] };
    expect(session.organizations).toEqual([{ id: creds.organization_id, name: 'Demo organization', role: 'owner' }]);

    const { events } = await readSse(`${first.url}/v1/agents/${creds.agent_id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'How do I stream a reply?', stream: true }),
    });
    const types = events.map((e) => e.data.type);
    expect(types[0]).toBe('conversation');
    expect(types.at(-1)).toBe('done');
    const text = events.filter((e) => e.data.type === 'token').map((e) => e.data.delta).join('');
    expect(text).toMatch(/stream/i);
    expect(text).toMatch(/\[\d\]/);
    const citations = events.find((e) => e.data.type === 'citations')!.data.citations as Array<{ title: string }>;
    expect(citations.length).toBeGreaterThan(0);
    expect(citations.map((c) => c.title)).toContain('Chat');

    // The official openai SDK chats with the demo agent by its name (README "Use it from the openai SDK").
    const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: creds.api_key, maxRetries: 0 });
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    expect(models.map((m) => [m.id, (m as unknown as { name: string }).name])).toEqual([[creds.agent_id, 'Parley Guide']]);
    const completion = await client.chat.completions.create({ model: 'Parley Guide', messages: [{ role: 'user', content: 'How do I stream a reply?' }] });
    expect(completion.model).toBe(creds.agent_id);
    expect(completion.choices[0]!.message.content).toMatch(/stream/i);
    expect((completion as unknown as { parley: { citations: Array<{ title: string }> } }).parley.citations.map((c) => c.title)).toContain('Chat');

    first.child.kill('SIGTERM');
    expect(await exitOf(first.child)).toBe(0);

    const second = await start(dataDir);
    try {
      await new Promise((r) => setTimeout(r, 300));
      expect(second.stdout()).not.toContain('sk_');
      const agents = await (await fetch(`${second.url}/v1/agents`, { headers: { authorization: `Bearer ${creds.api_key}` } })).json() as { data: unknown[] };
      expect(agents.data).toHaveLength(1);
    } finally {
      second.child.kill('SIGTERM');
      await exitOf(second.child);
    }
  });

  it('SIGTERM drains: a running turn finishes and is stored, new connections are refused, exit code 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-'));
    dirs.push(dataDir);
    const srv = await start(dataDir, { PARLEY_BUILTIN_WORD_DELAY_MS: '40', PARLEY_SHUTDOWN_GRACE_MS: '15000' });
    const creds = await credentialsOf(dataDir);
    const headers = { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' };
    let signalled = false;
    let tokensAfterSignal = 0;
    /** A new connection attempted while the server drains (the turn still streaming): it must be refused. */
    let probe: Promise<string> | undefined;
    const streamed = readSse(`${srv.url}/v1/agents/${creds.agent_id}/chat`, { method: 'POST', headers, body: JSON.stringify({ message: 'What is the format of an API key?', stream: true }) }, (ev) => {
      if (ev.data.type !== 'token') return;
      if (!signalled) { signalled = true; srv.child.kill('SIGTERM'); return; }
      tokensAfterSignal++;
      if (tokensAfterSignal === 2) {
        // A new connection (its own dispatcher: not an idle keep-alive connection of the readiness polls).
        const fresh = new Agent();
        probe = fetch(`${srv.url}/healthz`, { dispatcher: fresh } as unknown as RequestInit).then((r) => `answered ${r.status}`, (err: Error) => `refused: ${String((err.cause as { code?: string } | undefined)?.code ?? err.message)}`)
          .finally(() => fresh.close());
      }
    });
    const { events } = await streamed;
    expect(signalled).toBe(true);
    // The turn went on streaming after the signal, and the probe ran while it did.
    expect(tokensAfterSignal).toBeGreaterThan(2);
    expect(await probe).toBe('refused: ECONNREFUSED');
    expect(events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    expect(await exitOf(srv.child)).toBe(0);
    const messageId = events.find((e) => e.data.type === 'message')!.data.message_id;
    const db = new Database(join(dataDir, 'parley.db'), { readonly: true });
    try {
      const row = db.prepare('SELECT role, status, content FROM messages WHERE id = ?').get(messageId) as { role: string; status: string; content: string };
      expect(row).toMatchObject({ role: 'agent', status: 'completed' });
      expect(row.content).toBe(events.filter((e) => e.data.type === 'token').map((e) => e.data.delta).join(''));
    } finally {
      db.close();
    }
  });
});
