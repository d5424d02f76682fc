/**
 * Access ends at once (issue 35, finding 1 and 11; API.md "Auth endpoints"): removing a member, changing a
 * role, deleting a person, resetting a password, logging out, revoking an API key or letting a rotated
 * key's grace period run out closes every socket opened with what changed (4401, or 4403 for a person who
 * is no longer a member) within 1 s, and refuses the access tokens issued before it. The command line
 * changes the data dir from another process: the server hears of it through the store feed.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, wsUrl } from '../helpers/live.js';
import { startTestServer, type TestPerson, type SessionBody, type TestServer } from '../helpers/server.js';
import { openSocket, rawUpgrade, type Closed, type TestSocket } from '../helpers/ws-client.js';

const CLI = resolve(import.meta.dirname, '../../dist/src/cli/main.js');

let srv: TestServer;
let agent: string;
let conversation: string;
let owner: TestPerson & { session: SessionBody; headers: Record<string, string> };
const opened: TestSocket[] = [];

function cli(args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PARLEY_DATA_DIR: srv.dataDir, PARLEY_LOG_LEVEL: 'silent' } }, (err, stdout, stderr) => {
      done({ code: err ? (err as { code?: number }).code ?? 1 : 0, stdout, stderr });
    });
    child.stdin!.end(stdin);
  });
}

async function socket(path: string): Promise<TestSocket> {
  const s = await openSocket(wsUrl(srv, path));
  opened.push(s);
  // Open for real: a ping answered means the server registered the socket and what it watches.
  s.send({ type: 'ping' });
  await s.next((f) => f.type === 'pong');
  return s;
}

/** How `s` closed and how long after `since` (ms) it was seen closed. */
async function closedAfter(s: TestSocket, since: number): Promise<Closed & { ms: number }> {
  const c = await s.closed;
  return { ...c, ms: Date.now() - since };
}

const token = (t: string) => `?token=${encodeURIComponent(t)}`;
const inboxPath = (person: { session: SessionBody; orgId: string | null }) => `/v1/inbox/ws${token(person.session.access_token)}&org_id=${person.orgId}`;

beforeAll(async () => {
  srv = await startTestServer();
  agent = await createAgent(srv, { name: 'Revocations' });
  const chat = await srv.api(`/v1/agents/${agent}/chat`, { method: 'POST', body: { message: 'hello', stream: false } });
  conversation = ((await chat.json()) as { conversation_id: string }).conversation_id;
  owner = await srv.signIn({ role: 'owner' });
});
afterAll(async () => {
  for (const s of opened) s.close();
  await srv?.close();
});

describe('revocation closes sockets within 1 s and refuses older tokens', () => {
  it('an operator socket, a person\'s chat socket and an API key\'s chat socket all close within 1 s of their revocation', async () => {
    const operator = await srv.signIn({ role: 'operator' });
    const chatter = await srv.signIn({ role: 'admin' });
    const key = await srv.api('/v1/api-keys', { method: 'POST', headers: owner.headers, body: { name: 'socket key' } });
    const { id: keyId, secret } = (await key.json()) as { id: string; secret: string };

    const operatorView = await socket(`/v1/conversations/${conversation}/ws${token(operator.session.access_token)}`);
    const operatorInbox = await socket(inboxPath(operator));
    const personChat = await socket(`/v1/agents/${agent}/chat/ws${token(chatter.session.access_token)}`);
    const up = await rawUpgrade(srv.parley.port, `/v1/agents/${agent}/chat/ws`, { Authorization: `Bearer ${secret}` });
    expect(up.status).toBe(101);
    const keyChat = up.socket!;
    opened.push(keyChat);
    keyChat.send({ type: 'ping' });
    await keyChat.next((f) => f.type === 'pong');

    const t0 = Date.now();
    expect((await srv.api(`/v1/members/${operator.userId}`, { method: 'DELETE', headers: owner.headers })).status).toBe(204);
    const t1 = Date.now();
    expect((await srv.api(`/v1/api-keys/${keyId}`, { method: 'DELETE', headers: owner.headers })).status).toBe(204);
    const t2 = Date.now();
    expect((await srv.api(`/v1/members/${chatter.userId}`, { method: 'PATCH', headers: owner.headers, body: { role: 'operator' } })).status).toBe(200);

    const [view, inbox, byKey, byPerson] = await Promise.all([
      closedAfter(operatorView, t0), closedAfter(operatorInbox, t0), closedAfter(keyChat, t1), closedAfter(personChat, t2),
    ]);
    expect([view.code, view.reason, inbox.code, inbox.reason]).toEqual([4403, 'not_a_member', 4403, 'not_a_member']);
    expect([byKey.code, byKey.reason]).toEqual([4401, 'revoked_api_key']);
    expect([byPerson.code, byPerson.reason]).toEqual([4401, 'role_changed']);
    for (const c of [view, inbox, byKey, byPerson]) expect(c.ms).toBeLessThan(1000);

    // The removed person's token is refused at once over HTTP, and the demoted one has the new role.
    const asOperator = await srv.api('/v1/conversations', { headers: operator.headers });
    expect(asOperator.status).toBe(403);
    expect(await asOperator.json()).toMatchObject({ error: { code: 'not_a_member' } });
    expect((await srv.api('/v1/api-keys', { headers: chatter.headers })).status).toBe(403);
    // A new socket of the demoted person opens, and stays open.
    const again = await socket(`/v1/agents/${agent}/chat/ws${token(chatter.session.access_token)}`);
    again.send({ type: 'ping' });
    expect(await again.next()).toEqual({ type: 'pong' });
  });

  it('a role change to the same role closes nothing', async () => {
    const admin = await srv.signIn({ role: 'admin' });
    const inbox = await socket(inboxPath(admin));
    expect((await srv.api(`/v1/members/${admin.userId}`, { method: 'PATCH', headers: owner.headers, body: { role: 'admin' } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    inbox.send({ type: 'ping' });
    expect(await inbox.next((f) => f.type === 'pong')).toEqual({ type: 'pong' });
  });

  it('logout: the sign-in\'s access token is refused at once (not 15 minutes later); another sign-in of the person is not', async () => {
    const person = await srv.signIn({ role: 'admin' });
    const other = await srv.login(person.email, person.password);
    expect((await srv.api('/v1/conversations', { headers: person.headers })).status).toBe(200);
    const out = await fetch(`${srv.url}/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: person.session.refresh_token }) });
    expect(out.status).toBe(204);
    const refused = await srv.api('/v1/conversations', { headers: person.headers });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: { code: 'invalid_token' } });
    const otherHeaders = { authorization: `Bearer ${other.access_token}`, 'x-org-id': person.orgId! };
    expect((await srv.api('/v1/conversations', { headers: otherHeaders })).status).toBe(200);
  });

  it('command line: a password reset refuses the old tokens and closes their sockets; members remove and users delete close theirs', async () => {
    const reset = await srv.signIn({ role: 'admin' });
    const removed = await srv.signIn({ role: 'operator' });
    const deleted = await srv.signIn({ role: 'operator' });
    expect((await srv.api('/v1/conversations', { headers: reset.headers })).status).toBe(200);
    const resetChat = await socket(`/v1/agents/${agent}/chat/ws${token(reset.session.access_token)}`);
    const removedInbox = await socket(inboxPath(removed));
    const deletedView = await socket(`/v1/conversations/${conversation}/ws${token(deleted.session.access_token)}`);

    let t = Date.now();
    expect((await cli(['users', 'set-password', '--email', reset.email], 'a brand new password\n')).code).toBe(0);
    const r = await closedAfter(resetChat, t);
    expect([r.code, r.reason]).toEqual([4401, 'invalid_token']);
    expect(r.ms).toBeLessThan(1000);
    const stale = await srv.api('/v1/conversations', { headers: reset.headers });
    expect(stale.status).toBe(401);
    expect(await stale.json()).toMatchObject({ error: { code: 'invalid_token' } });
    // Signing in again with the new password works at once.
    const fresh = await srv.login(reset.email, 'a brand new password');
    expect((await srv.api('/v1/conversations', { headers: { authorization: `Bearer ${fresh.access_token}`, 'x-org-id': reset.orgId! } })).status).toBe(200);

    t = Date.now();
    expect((await cli(['members', 'remove', '--email', removed.email, '--org', removed.orgId!])).code).toBe(0);
    const m = await closedAfter(removedInbox, t);
    expect([m.code, m.reason]).toEqual([4403, 'not_a_member']);
    expect(m.ms).toBeLessThan(1000);

    t = Date.now();
    expect((await cli(['users', 'delete', '--email', deleted.email])).code).toBe(0);
    const d = await closedAfter(deletedView, t);
    expect([d.code, d.reason]).toEqual([4401, 'invalid_token']);
    expect(d.ms).toBeLessThan(1000);
  });

  it('a key rotated with a grace period: its sockets close when the grace period ends, not before', async () => {
    const key = await srv.api('/v1/api-keys', { method: 'POST', headers: owner.headers, body: { name: 'rotating' } });
    const { id: keyId, secret } = (await key.json()) as { id: string; secret: string };
    const before = await rawUpgrade(srv.parley.port, `/v1/agents/${agent}/chat/ws`, { Authorization: `Bearer ${secret}` });
    opened.push(before.socket!);
    const rotated = await srv.api(`/v1/api-keys/${keyId}/rotate`, { method: 'POST', headers: owner.headers, body: { grace_period_seconds: 2 } });
    expect(rotated.status).toBe(201);
    const rotatedAt = Date.now();
    // Opened during the grace period with the old secret: allowed, and ends with it too.
    const during = await rawUpgrade(srv.parley.port, `/v1/agents/${agent}/chat/ws`, { Authorization: `Bearer ${secret}` });
    expect(during.status).toBe(101);
    opened.push(during.socket!);
    during.socket!.send({ type: 'ping' });
    expect(await during.socket!.next()).toEqual({ type: 'pong' });
    const [a, b] = await Promise.all([closedAfter(before.socket!, rotatedAt), closedAfter(during.socket!, rotatedAt)]);
    expect([a.code, a.reason, b.code, b.reason]).toEqual([4401, 'revoked_api_key', 4401, 'revoked_api_key']);
    expect(a.ms).toBeGreaterThanOrEqual(1500);
    expect(a.ms).toBeLessThan(3000);
    expect(b.ms).toBeGreaterThanOrEqual(1500);
    expect(b.ms).toBeLessThan(3000);
  });
});
