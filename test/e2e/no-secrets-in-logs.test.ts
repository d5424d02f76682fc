/**
 * No secret in the output of `npm start` (API.md "Credentials": no secret or token is ever written to a
 * log). The real process runs with PARLEY_LOG_LEVEL=debug and stdout/stderr piped (as under a process
 * manager or in a container); it gets a real API key in query strings and paths, failed
 * authentications with keys, duplicate Authorization headers and a streamed chat; a person signs in
 * (also with a wrong password), refreshes, replays a spent refresh token, makes, rotates and revokes API
 * keys, asks for a socket ticket and signs out; then everything it wrote is searched for the API-key
 * shape, refresh tokens, socket tickets, JWTs and the password.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.js';
import { credentialsOf, exitOf, startMain } from '../helpers/main-process.js';
import { sendRaw } from '../helpers/raw-http.js';
import { readSse, waitFor } from '../helpers/sse-client.js';

const KEY_SHAPE = /sk_[0-9A-Za-z]{36}/g;
const REFRESH_SHAPE = /rt_[A-Za-z0-9_-]{43}/g;
const TICKET_SHAPE = /wst_[A-Za-z0-9_-]{43}/g;
/** A JWT's header: base64url of `{"` (every JSON object), as in every access token. */
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{10,}/g;

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe('npm start with debug logging', () => {
  it('writes no API key to stdout or stderr, whatever the requests carry', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-logs-'));
    dirs.push(dataDir);
    const srv = await startMain(dataDir, { PARLEY_LOG_LEVEL: 'debug' });
    /** Every secret the process saw: none may appear in its output. */
    const secrets: string[] = [];
    try {
      const { api_key: key, agent_id: agentId } = await credentialsOf(dataDir);
      await waitFor(() => (srv.output().includes('Parley is ready.') ? true : undefined), 20_000, 'ready line');
      const unknownKey = generateApiKey();
      const auth = { authorization: `Bearer ${key}` };
      const status = async (path: string, init: RequestInit = {}) => {
        const res = await fetch(`${srv.url}${path}`, init);
        await res.arrayBuffer();
        return res.status;
      };

      // The key in a query value, under several names, and as a bare parameter name.
      expect(await status(`/v1/agents?api_key=${key}`)).toBe(401);
      expect(await status(`/v1/agents?token=${key}&limit=5`, { headers: auth })).toBe(401);
      expect(await status(`/v1/agents?${key}`, { headers: auth })).toBe(401);
      // The key in the path: as an id, inside a longer segment, percent-encoded.
      expect(await status(`/v1/agents/${key}`, { headers: auth })).toBe(404);
      expect(await status(`/v1/agents/${key}/chat`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"message":"hi"}' })).toBe(404);
      expect(await status(`/v1/knowledge-bases/kb_${key}x/documents`, { headers: auth })).toBe(404);
      expect(await status(`/v1/agents/sk%5F${key.slice(3)}`, { headers: auth })).toBe(404);
      expect(await status(`/nowhere/${key}`)).toBe(404);
      expect(await status(`/v1/agents/${key}`, { method: 'HEAD', headers: auth })).toBe(404);
      // Failed authentication with keys: unknown, mangled, not Bearer, and two headers at once.
      expect(await status('/v1/agents', { headers: { authorization: `Bearer ${unknownKey}` } })).toBe(401);
      expect(await status('/v1/agents', { headers: { authorization: `Bearer ${key}x` } })).toBe(401);
      expect(await status('/v1/agents', { headers: { authorization: key } })).toBe(401);
      const twice = await sendRaw(new URL(srv.url).port as unknown as number,
        `GET /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAuthorization: Bearer ${unknownKey}\r\nConnection: close\r\n\r\n`);
      expect(twice.status).toBe(400);
      // A streamed chat, one that mentions the key in its message, and a one-shot.
      const streamed = await readSse(`${srv.url}/v1/agents/${agentId}/chat`, {
        method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'How do I stream a reply?', stream: true }),
      });
      expect(streamed.events.at(-1)!.data).toMatchObject({ type: 'done' });
      const mention = await readSse(`${srv.url}/v1/agents/${agentId}/chat`, {
        method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ message: `Is ${key} the right format for an API key?`, stream: true }),
      });
      expect(mention.events.at(-1)!.data).toMatchObject({ type: 'done' });
      expect(await status(`/v1/agents/${agentId}/chat`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"message":"What is a turn?"}' })).toBe(200);

      // A person: a wrong password, then sign-in, refresh, a replayed refresh token, keys, a ticket, sign-out.
      const { owner_email: email, owner_password: password, organization_id: orgId } = await credentialsOf(dataDir);
      secrets.push(password);
      const json = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
        const text = await res.text();
        return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, string> };
      };
      expect((await json('/v1/auth/login', { email, password: `${password}!` })).status).toBe(401);
      expect((await json('/v1/auth/login', { email: 'nobody@example.com', password })).status).toBe(401);
      const session = await json('/v1/auth/login', { email, password });
      expect(session.status).toBe(200);
      const refreshed = await json('/v1/auth/refresh', { refresh_token: session.body.refresh_token });
      expect(refreshed.status).toBe(200);
      expect((await json('/v1/auth/refresh', { refresh_token: session.body.refresh_token })).status).toBe(401);
      const again = await json('/v1/auth/login', { email, password });
      const person = { authorization: `Bearer ${again.body.access_token}`, 'x-org-id': orgId };
      const made = await json('/v1/api-keys', { name: 'logged?' }, person);
      expect(made.status).toBe(201);
      const rotated = await json(`/v1/api-keys/${made.body.id}/rotate`, { grace_period_seconds: 60 }, person);
      expect(rotated.status).toBe(201);
      expect(await status(`/v1/api-keys/${rotated.body.id}`, { method: 'DELETE', headers: person })).toBe(204);
      expect(await status('/v1/agents', { headers: { authorization: `Bearer ${rotated.body.secret}` } })).toBe(401);
      const ticket = await json('/v1/auth/ws-ticket', {}, person);
      expect(ticket.status).toBe(201);
      expect(await status('/v1/me', { headers: { authorization: `Bearer ${again.body.access_token}` } })).toBe(200);
      // Tokens where they do not belong: in a URL, and a tampered one.
      expect(await status(`/v1/agents?token=${again.body.access_token}&ticket=${ticket.body.ticket}`, { headers: person })).toBe(400);
      expect(await status('/v1/agents', { headers: { ...person, authorization: `Bearer ${again.body.access_token}x` } })).toBe(401);
      expect(await status('/v1/auth/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: again.body.refresh_token }) })).toBe(204);
      secrets.push(session.body.access_token!, session.body.refresh_token!, refreshed.body.access_token!, refreshed.body.refresh_token!,
        again.body.access_token!, again.body.refresh_token!, made.body.secret!, rotated.body.secret!, ticket.body.ticket!);
    } finally {
      srv.child.kill('SIGTERM');
      expect(await exitOf(srv.child)).toBe(0);
    }

    const output = srv.output();
    // The requests above were logged (debug level logs every request line)...
    const requestLines = output.split('\n').filter((l) => l.includes('"msg":"request"'));
    expect(requestLines.length).toBeGreaterThanOrEqual(32);
    expect(output).toContain('"url":"/v1/auth/login"');
    expect(output).toContain('"url":"/v1/agents?token=[redacted]&ticket=[redacted]"');
    expect(output).toContain('"url":"/v1/agents/sk_[redacted]"');
    expect(output).toContain('"url":"/v1/agents?api_key=[redacted]"');
    expect(output).toContain('"url":"/v1/agents/[redacted]"');
    // ...and no API key, refresh token, socket ticket, JWT or password appears anywhere in what the process wrote.
    expect(output.match(KEY_SHAPE) ?? []).toEqual([]);
    expect(output.match(REFRESH_SHAPE) ?? []).toEqual([]);
    expect(output.match(TICKET_SHAPE) ?? []).toEqual([]);
    expect(output.match(JWT_SHAPE) ?? []).toEqual([]);
    expect(output).not.toContain('rt_');
    expect(output).not.toContain('wst_');
    expect(secrets).toHaveLength(10);
    for (const secret of secrets) expect(output.includes(secret), `a secret of ${secret.length} characters is in the output`).toBe(false);
  });
});
