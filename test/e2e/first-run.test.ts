import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { readSse, waitFor } from '../helpers/sse-client.js';

const root = resolve(import.meta.dirname, '../..');
const main = join(root, 'dist/src/main.js');

/** A free loopback port (bind to 0, read, release). */
async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
}

interface Started { child: ChildProcess; stdout: () => string; url: string }

/** Starts `node dist/src/main.js` as `npm start` would, and waits for /readyz. */
async function start(dataDir: string, env: Record<string, string> = {}): Promise<Started> {
  const port = await freePort();
  let out = '';
  const child = spawn(process.execPath, [main], {
    cwd: root,
    env: { ...process.env, PARLEY_PORT: String(port), PARLEY_HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`server exited: ${out}`);
    try { return (await fetch(`${url}/readyz`)).status === 200 ? true : undefined; } catch { return undefined; }
  }, 20_000, 'readyz');
  return { child, stdout: () => out, url };
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code))));
}

/**
 * The credentials file of `dataDir` once it is complete: the server creates the file and then writes
 * it, so a reader polling for it can see it empty or partly written in between (undefined then).
 */
function credentialsIn(dataDir: string): { api_key: string; agent_id: string } | undefined {
  try {
    return JSON.parse(readFileSync(join(dataDir, 'initial-credentials.json'), 'utf8')) as { api_key: string; agent_id: string };
  } catch {
    return undefined;
  }
}

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe('npm start on an empty data dir', () => {
  it('bootstraps the demo, answers a streamed question with citations from docs/, and reuses the data on restart', async () => {
    expect(existsSync(main), 'run `npm run build` first').toBe(true);
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-'));
    dirs.push(dataDir);
    const first = await start(dataDir);
    const credsFile = join(dataDir, 'initial-credentials.json');
    const creds = await waitFor(() => (existsSync(credsFile) && first.stdout().includes('curl -N') ? JSON.parse(readFileSync(credsFile, 'utf8')) as { api_key: string; agent_id: string } : undefined), 20_000, 'credentials');
    expect(statSync(credsFile).mode & 0o777).toBe(0o600);
    expect(first.stdout()).toContain(creds.api_key);
    expect(first.stdout()).toContain(`/v1/agents/${creds.agent_id}/chat`);

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
    const creds = await waitFor(() => credentialsIn(dataDir), 20_000, 'credentials');
    const headers = { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' };
    let signalled = false;
    const streamed = readSse(`${srv.url}/v1/agents/${creds.agent_id}/chat`, { method: 'POST', headers, body: JSON.stringify({ message: 'What is the format of an API key?', stream: true }) }, (ev) => {
      if (ev.data.type === 'token' && !signalled) { signalled = true; srv.child.kill('SIGTERM'); }
    });
    const { events } = await streamed;
    expect(signalled).toBe(true);
    expect(events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
    expect(await exitOf(srv.child)).toBe(0);
    await expect(fetch(`${srv.url}/healthz`)).rejects.toThrow();
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
