/**
 * People sign in, over real HTTP against the real server (port 0, SQLite in a temp dir): login, refresh,
 * logout, /v1/me, socket tickets (and consumeTicket, called directly as a socket will), roles on the
 * existing endpoints, API-key management, members, throttling, and the negative matrix of credentials,
 * printed as a table.
 */
import { createPublicKey } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError, fetchFrom } from '../helpers/raw-http.js';
import { startTestServer, type SessionBody, type TestServer } from '../helpers/server.js';
import { readSse, waitFor } from '../helpers/sse-client.js';

let srv: TestServer;
beforeAll(async () => { srv = await startTestServer(); });
afterAll(async () => { await srv?.close(); });

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('POST /v1/auth/login', () => {
  it('answers 200 with the API.md shape, a 900 s EdDSA access token and an rt_ refresh token, not cacheable', async () => {
    const p = await srv.addPerson({ email: 'Login.Shape@Example.com', password: 'correct horse battery', role: 'admin' });
    const res = await post('/v1/auth/login', { email: 'login.shape@example.com', password: 'correct horse battery' });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = await res.json() as SessionBody;
    expect(Object.keys(body)).toEqual(['access_token', 'token_type', 'expires_in', 'refresh_token', 'user', 'organizations']);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 900, user: { id: p.userId, email: 'login.shape@example.com' } });
    expect(body.organizations).toEqual([{ id: srv.orgId, name: 'Test org', role: 'admin' }]);
    expect(body.refresh_token).toMatch(/^rt_[A-Za-z0-9_-]{43}$/);
    const active = await srv.parley.store.signingKeys.active();
    expect(decodeProtectedHeader(body.access_token)).toEqual({ alg: 'EdDSA', kid: active!.kid, typ: 'at+jwt' });
    const claims = decodeJwt(body.access_token);
    expect(claims).toMatchObject({ iss: 'parley', aud: 'parley-api', sub: p.userId, client_id: 'parley' });
    expect(claims.exp! - claims.iat!).toBe(900);
  });

  it('one invalid_credentials for an unknown e-mail, a wrong password and a person without a password', async () => {
    const p = await srv.addPerson();
    await srv.parley.directory.createUser('no-password@example.com');
    const strip = (b: { error: Record<string, unknown> }) => ({ ...b.error, request_id: undefined });
    const unknown = await expectApiError(await post('/v1/auth/login', { email: 'nobody@example.com', password: p.password }), 401, 'authentication_error', 'invalid_credentials');
    const wrong = await expectApiError(await post('/v1/auth/login', { email: p.email, password: `${p.password}x` }), 401, 'authentication_error', 'invalid_credentials');
    const none = await expectApiError(await post('/v1/auth/login', { email: 'no-password@example.com', password: 'whatever123' }), 401, 'authentication_error', 'invalid_credentials');
    expect(strip(unknown)).toEqual(strip(wrong));
    expect(strip(none)).toEqual(strip(wrong));
  });

  it('validates the body: unknown fields, a missing password, a 257-character password', async () => {
    await expectApiError(await post('/v1/auth/login', { email: 'a@example.com', password: 'x', remember: true }), 400, 'invalid_request_error', 'validation_failed');
    await expectApiError(await post('/v1/auth/login', { email: 'a@example.com' }), 400, 'invalid_request_error', 'validation_failed');
    await expectApiError(await post('/v1/auth/login', { email: 'a@example.com', password: 'x'.repeat(257) }), 400, 'invalid_request_error', 'validation_failed');
  });
});

describe('refresh and logout', () => {
  it('refresh gives a new pair; the old refresh token is spent, and using it again ends the session', async () => {
    const p = await srv.signIn();
    const res = await post('/v1/auth/refresh', { refresh_token: p.session.refresh_token });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const next = await res.json() as SessionBody;
    expect(next.refresh_token).not.toBe(p.session.refresh_token);
    expect(next.access_token).not.toBe(p.session.access_token);
    expect(next).toMatchObject({ token_type: 'Bearer', expires_in: 900, user: { id: p.userId } });
    expect((await srv.api('/v1/me', { headers: { authorization: `Bearer ${next.access_token}` } })).status).toBe(200);
    // Replay of the spent token: refused, and the whole family is revoked (RFC 9700 4.14.2).
    await expectApiError(await post('/v1/auth/refresh', { refresh_token: p.session.refresh_token }), 401, 'authentication_error', 'invalid_refresh_token');
    await expectApiError(await post('/v1/auth/refresh', { refresh_token: next.refresh_token }), 401, 'authentication_error', 'invalid_refresh_token');
    // Another login is another family, untouched.
    const again = await srv.login(p.email, p.password);
    expect((await post('/v1/auth/refresh', { refresh_token: again.refresh_token })).status).toBe(200);
  });

  it('logout revokes the family: 204, then the refresh token is refused; unknown tokens are 204 too', async () => {
    const p = await srv.signIn();
    const res = await post('/v1/auth/logout', { refresh_token: p.session.refresh_token });
    expect(res.status).toBe(204);
    await expectApiError(await post('/v1/auth/refresh', { refresh_token: p.session.refresh_token }), 401, 'authentication_error', 'invalid_refresh_token');
    expect((await post('/v1/auth/logout', { refresh_token: p.session.refresh_token })).status).toBe(204);
    expect((await post('/v1/auth/logout', { refresh_token: 'rt_unknown' })).status).toBe(204);
  });

  it('malformed and unknown refresh tokens are invalid_refresh_token', async () => {
    await expectApiError(await post('/v1/auth/refresh', { refresh_token: 'nonsense' }), 401, 'authentication_error', 'invalid_refresh_token');
    await expectApiError(await post('/v1/auth/refresh', { refresh_token: `rt_${'A'.repeat(43)}` }), 401, 'authentication_error', 'invalid_refresh_token');
  });

  it('a password change ends every session of the person', async () => {
    const p = await srv.signIn();
    const second = await srv.login(p.email, p.password);
    expect(await srv.parley.directory.setPassword(p.email, 'a brand new password')).toMatchObject({ sessionsEnded: 2 });
    await expectApiError(await post('/v1/auth/refresh', { refresh_token: p.session.refresh_token }), 401, 'authentication_error', 'invalid_refresh_token');
    await expectApiError(await post('/v1/auth/refresh', { refresh_token: second.refresh_token }), 401, 'authentication_error', 'invalid_refresh_token');
    await expectApiError(await post('/v1/auth/login', { email: p.email, password: p.password }), 401, 'authentication_error', 'invalid_credentials');
    expect((await srv.login(p.email, 'a brand new password')).user.id).toBe(p.userId);
  });
});

describe('GET /v1/me', () => {
  it('returns the person and every organization with the role there, without X-Org-Id', async () => {
    const other = await srv.addOrganization('Second org');
    const p = await srv.signIn({ role: 'operator' });
    await srv.parley.store.memberships.add({ org_id: other.orgId, user_id: p.userId, role: 'admin', created_at: new Date().toISOString() });
    const res = await srv.api('/v1/me', { headers: { authorization: `Bearer ${p.session.access_token}` } });
    expect(res.status).toBe(200);
    const me = await res.json() as { user: unknown; organizations: Array<{ id: string; role: string; name: string }> };
    expect(me.user).toEqual({ id: p.userId, email: p.email });
    expect([...me.organizations].sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { id: other.orgId, name: 'Second org', role: 'admin' }, { id: srv.orgId, name: 'Test org', role: 'operator' },
    ]);
  });

  it('an API key gets 403 forbidden', async () => {
    await expectApiError(await srv.api('/v1/me'), 403, 'permission_error', 'forbidden');
  });
});

describe('socket tickets', () => {
  it('POST /v1/auth/ws-ticket -> 201 wst_ for 60 s; consumeTicket gives the person once, then invalid_token', async () => {
    const p = await srv.signIn({ role: 'operator' });
    const res = await srv.api('/v1/auth/ws-ticket', { method: 'POST', headers: p.headers });
    expect(res.status).toBe(201);
    const body = await res.json() as { ticket: string; expires_in: number };
    expect(body.ticket).toMatch(/^wst_[A-Za-z0-9_-]{43}$/);
    expect(body.expires_in).toBe(60);
    const principal = await srv.parley.services.access.consumeTicket(body.ticket);
    // The ticket keeps the sign-in it was asked for under (the access token's sid: logout closes its sockets).
    const sid = (JSON.parse(Buffer.from(p.session.access_token.split('.')[1]!, 'base64url').toString('utf8')) as { sid: string }).sid;
    expect(sid).toMatch(/^rtf_/);
    expect(principal).toEqual({ kind: 'person', orgId: srv.orgId, userId: p.userId, role: 'operator', credentialId: 'ticket', sessionId: sid });
    await expect(srv.parley.services.access.consumeTicket(body.ticket)).rejects.toMatchObject({ code: 'invalid_token' });
    await expect(srv.parley.services.access.consumeTicket('wst_nope')).rejects.toMatchObject({ code: 'invalid_token' });
    // Only the hash is stored.
    const raw = srv.parley.store as unknown as { db: { prepare(sql: string): { all(): unknown[] } } };
    expect(JSON.stringify(raw.db.prepare('SELECT * FROM socket_tickets').all())).not.toContain(body.ticket);
  });

  it('an expired ticket and a ticket of a person who left the organization are refused', async () => {
    const p = await srv.signIn({ role: 'operator' });
    const issue = async () => (await (await srv.api('/v1/auth/ws-ticket', { method: 'POST', headers: p.headers })).json() as { ticket: string }).ticket;
    const stale = await issue();
    const { hashOpaqueToken } = await import('../../src/auth/opaque-tokens.js');
    const raw = srv.parley.store as unknown as { db: { prepare(sql: string): { run(...a: unknown[]): unknown } } };
    raw.db.prepare('UPDATE socket_tickets SET expires_at = ? WHERE ticket_hash = ?').run(new Date(Date.now() - 1000).toISOString(), hashOpaqueToken(stale));
    await expect(srv.parley.services.access.consumeTicket(stale)).rejects.toMatchObject({ code: 'invalid_token' });
    const kept = await issue();
    await srv.parley.store.memberships.remove(srv.orgId, p.userId);
    await expect(srv.parley.services.access.consumeTicket(kept)).rejects.toMatchObject({ code: 'not_a_member', status: 403 });
  });

  it('needs a person: an API key gets 403, a token without X-Org-Id 400 missing_org_id', async () => {
    await expectApiError(await srv.api('/v1/auth/ws-ticket', { method: 'POST' }), 403, 'permission_error', 'forbidden');
    const p = await srv.signIn();
    await expectApiError(await srv.api('/v1/auth/ws-ticket', { method: 'POST', headers: { authorization: p.headers.authorization! } }), 400, 'invalid_request_error', 'missing_org_id');
  });
});

describe('roles on the existing endpoints', () => {
  let kbId: string;
  let agentId: string;
  beforeAll(async () => {
    kbId = (await (await srv.api('/v1/knowledge-bases', { body: { name: 'roles kb' } })).json() as { id: string }).id;
    await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { body: { title: 'Roles', content: 'Operators answer visitors. Admins manage agents.' } });
    await srv.parley.knowledge.settled();
    agentId = (await (await srv.api('/v1/agents', { body: { name: 'roles agent', knowledge_base_ids: [kbId] } })).json() as { id: string }).id;
  });

  it('an operator reads agents, knowledge bases and conversations, and chats (one-shot and stream)', async () => {
    const op = await srv.signIn({ role: 'operator' });
    const h = { headers: op.headers };
    expect((await srv.api('/v1/agents', h)).status).toBe(200);
    expect((await srv.api(`/v1/agents/${agentId}`, h)).status).toBe(200);
    expect((await srv.api('/v1/knowledge-bases', h)).status).toBe(200);
    expect((await srv.api(`/v1/knowledge-bases/${kbId}/search?q=operators`, h)).status).toBe(200);
    const chat = await srv.api(`/v1/agents/${agentId}/chat`, { ...h, body: { message: 'Who answers visitors?' } });
    expect(chat.status).toBe(200);
    const { conversation_id } = await chat.json() as { conversation_id: string };
    expect((await srv.api(`/v1/conversations/${conversation_id}/messages`, h)).status).toBe(200);
    const { events } = await readSse(`${srv.url}/v1/agents/${agentId}/chat`, {
      method: 'POST', headers: { ...op.headers, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Who manages agents?', stream: true }),
    });
    expect(events.at(-1)!.data).toMatchObject({ type: 'done' });
  });

  it('an operator may not change agents or knowledge bases: 403 forbidden', async () => {
    const op = await srv.signIn({ role: 'operator' });
    const h = { headers: op.headers };
    await expectApiError(await srv.api('/v1/agents', { ...h, body: { name: 'nope' } }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api(`/v1/agents/${agentId}`, { ...h, method: 'PATCH', body: { name: 'nope' } }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api(`/v1/agents/${agentId}`, { ...h, method: 'DELETE' }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api('/v1/knowledge-bases', { ...h, body: { name: 'nope' } }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api(`/v1/knowledge-bases/${kbId}/documents`, { ...h, body: { title: 't', content: 'c' } }), 403, 'permission_error', 'forbidden');
  });

  it('an admin and an owner manage agents; what a person creates belongs to the organization the key sees', async () => {
    for (const role of ['admin', 'owner'] as const) {
      const p = await srv.signIn({ role });
      const res = await srv.api('/v1/agents', { headers: p.headers, body: { name: `made by ${role}` } });
      expect(res.status).toBe(201);
      const { id } = await res.json() as { id: string };
      expect((await srv.api(`/v1/agents/${id}`)).status).toBe(200);
    }
  });

  it('an API key ignores X-Org-Id: it always acts in its own organization', async () => {
    const other = await srv.addOrganization('elsewhere');
    const res = await srv.api(`/v1/agents/${agentId}`, { headers: { 'x-org-id': other.orgId } });
    expect(res.status).toBe(200);
    await expectApiError(await srv.api(`/v1/agents/${agentId}`, { key: other.apiKey, headers: { 'x-org-id': srv.orgId } }), 404, 'not_found_error', 'not_found');
  });

  it('a person sees another organization\'s resources only as a member of it, and then as 404 across orgs like a key', async () => {
    const other = await srv.addOrganization('org of a member');
    const p = await srv.signIn({ role: 'owner', orgId: other.orgId });
    await expectApiError(await srv.api(`/v1/agents/${agentId}`, { headers: p.headers }), 404, 'not_found_error', 'not_found');
    await expectApiError(await srv.api(`/v1/agents/${agentId}`, { headers: { ...p.headers, 'x-org-id': srv.orgId } }), 403, 'permission_error', 'not_a_member');
  });
});

describe('/v1/api-keys', () => {
  it('lists without secrets, creates with the secret once, and the new key works', async () => {
    const admin = await srv.signIn({ role: 'admin' });
    const created = await srv.api('/v1/api-keys', { headers: admin.headers, body: { name: 'ci' } });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const key = await created.json() as { id: string; secret: string; last4: string; name: string; revoked_at: null; expires_at: null; created_at: string };
    expect(Object.keys(key)).toEqual(['id', 'name', 'last4', 'created_at', 'revoked_at', 'expires_at', 'secret']);
    expect(key).toMatchObject({ name: 'ci', revoked_at: null, expires_at: null, last4: key.secret.slice(-4) });
    expect(key.secret).toMatch(/^sk_[0-9A-Za-z]{36}$/);
    expect((await srv.api('/v1/agents', { key: key.secret })).status).toBe(200);
    const list = await srv.api('/v1/api-keys', { headers: admin.headers });
    const text = await list.text();
    expect(text).not.toContain(key.secret);
    expect(text).not.toContain('hash');
    const page = JSON.parse(text) as { data: Array<Record<string, unknown>>; has_more: boolean };
    expect(page.data[0]).toEqual({ id: key.id, name: 'ci', last4: key.last4, created_at: key.created_at, revoked_at: null, expires_at: null });
    expect(page.data.map((k) => k.id)).toContain(key.id);
  });

  it('rotate without a grace period: the old secret stops at once (401 revoked_api_key), the new one works', async () => {
    const admin = await srv.signIn({ role: 'owner' });
    const key = await (await srv.api('/v1/api-keys', { headers: admin.headers, body: { name: 'rotating' } })).json() as { id: string; secret: string };
    const res = await srv.api(`/v1/api-keys/${key.id}/rotate`, { method: 'POST', headers: admin.headers });
    expect(res.status).toBe(201);
    const next = await res.json() as { id: string; secret: string; name: string };
    expect(next.name).toBe('rotating');
    expect(next.id).not.toBe(key.id);
    await expectApiError(await srv.api('/v1/agents', { key: key.secret }), 401, 'authentication_error', 'revoked_api_key');
    expect((await srv.api('/v1/agents', { key: next.secret })).status).toBe(200);
    await expectApiError(await srv.api(`/v1/api-keys/${key.id}/rotate`, { method: 'POST', headers: admin.headers }), 404, 'not_found_error', 'not_found');
  });

  it('rotate with a grace period: the old secret works until it ends, then 401 revoked_api_key', async () => {
    const admin = await srv.signIn({ role: 'admin' });
    const key = await (await srv.api('/v1/api-keys', { headers: admin.headers, body: { name: 'graceful' } })).json() as { id: string; secret: string };
    const res = await srv.api(`/v1/api-keys/${key.id}/rotate`, { headers: admin.headers, body: { grace_period_seconds: 1 } });
    expect(res.status).toBe(201);
    const next = await res.json() as { secret: string };
    expect((await srv.api('/v1/agents', { key: key.secret })).status).toBe(200);
    expect((await srv.api('/v1/agents', { key: next.secret })).status).toBe(200);
    const listed = (await (await srv.api('/v1/api-keys?limit=100', { headers: admin.headers })).json() as { data: Array<{ id: string; expires_at: string | null }> }).data;
    expect(listed.find((k) => k.id === key.id)!.expires_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const status = await waitFor(async () => {
      const r = await srv.api('/v1/agents', { key: key.secret });
      await r.arrayBuffer();
      return r.status === 200 ? undefined : r.status;
    }, 5000, 'the grace period to end');
    expect(status).toBe(401);
    await expectApiError(await srv.api('/v1/agents', { key: key.secret }), 401, 'authentication_error', 'revoked_api_key');
    expect((await srv.api('/v1/agents', { key: next.secret })).status).toBe(200);
    await expectApiError(await srv.api(`/v1/api-keys/${key.id}/rotate`, { headers: admin.headers, body: { grace_period_seconds: 99_999_999 } }), 400, 'invalid_request_error', 'validation_failed');
  });

  it('DELETE revokes: 204, then 401 revoked_api_key from the next request on; again is 404', async () => {
    const admin = await srv.signIn({ role: 'admin' });
    const key = await (await srv.api('/v1/api-keys', { headers: admin.headers, body: { name: 'doomed' } })).json() as { id: string; secret: string };
    expect((await srv.api(`/v1/api-keys/${key.id}`, { method: 'DELETE', headers: admin.headers })).status).toBe(204);
    await expectApiError(await srv.api('/v1/agents', { key: key.secret }), 401, 'authentication_error', 'revoked_api_key');
    await expectApiError(await srv.api(`/v1/api-keys/${key.id}`, { method: 'DELETE', headers: admin.headers }), 404, 'not_found_error', 'not_found');
  });

  it('another organization\'s key is 404; an operator gets 403; an API key gets 403', async () => {
    const other = await srv.addOrganization('keys elsewhere');
    const otherOwner = await srv.signIn({ role: 'owner', orgId: other.orgId });
    await expectApiError(await srv.api(`/v1/api-keys/${other.keyId}`, { method: 'DELETE', headers: (await srv.signIn({ role: 'owner' })).headers }), 404, 'not_found_error', 'not_found');
    expect((await srv.api('/v1/agents', { key: other.apiKey })).status).toBe(200);
    expect((await srv.api('/v1/api-keys', { headers: otherOwner.headers })).status).toBe(200);
    await expectApiError(await srv.api('/v1/api-keys', { headers: (await srv.signIn({ role: 'operator' })).headers }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api('/v1/api-keys'), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api('/v1/api-keys', { body: { name: 'self-made' } }), 403, 'permission_error', 'forbidden');
  });
});

describe('/v1/members', () => {
  it('lists members with e-mail and role; any member may list', async () => {
    const org = await srv.addOrganization('members list');
    const owner = await srv.signIn({ role: 'owner', orgId: org.orgId });
    const op = await srv.signIn({ role: 'operator', orgId: org.orgId });
    const res = await srv.api('/v1/members', { headers: op.headers });
    expect(res.status).toBe(200);
    const page = await res.json() as { data: Array<{ user_id: string; email: string; role: string; created_at: string }>; has_more: boolean };
    expect(page.data.map((m) => [m.user_id, m.email, m.role])).toEqual([[op.userId, op.email, 'operator'], [owner.userId, owner.email, 'owner']]);
    expect(page.has_more).toBe(false);
  });

  it('changes roles and removes; a removed member\'s token is refused in the organization at once', async () => {
    const org = await srv.addOrganization('members crud');
    const admin = await srv.signIn({ role: 'admin', orgId: org.orgId });
    await srv.addPerson({ role: 'owner', orgId: org.orgId });
    const newcomer = await srv.addPerson({ orgId: null });
    await joinByInvitation(admin.headers, newcomer, 'operator');
    await expectApiError(await srv.api('/v1/members', { headers: admin.headers, body: { email: newcomer.email, role: 'admin' } }), 409, 'conflict_error', 'already_member');
    await expectApiError(await srv.api('/v1/members', { headers: admin.headers, body: { email: 'not an e-mail', role: 'admin' } }), 400, 'invalid_request_error', 'validation_failed');
    await expectApiError(await srv.api('/v1/members', { headers: admin.headers, body: { email: newcomer.email, role: 'king' } }), 400, 'invalid_request_error', 'validation_failed');
    const patched = await srv.api(`/v1/members/${newcomer.userId}`, { method: 'PATCH', headers: admin.headers, body: { role: 'admin' } });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ user_id: newcomer.userId, role: 'admin' });
    // The newcomer now signs in and works in the organization as an admin.
    const session = await srv.login(newcomer.email, newcomer.password);
    expect(session.organizations).toEqual([{ id: org.orgId, name: 'members crud', role: 'admin' }]);
    expect((await srv.api('/v1/api-keys', { headers: { authorization: `Bearer ${session.access_token}`, 'x-org-id': org.orgId } })).status).toBe(200);
    expect((await srv.api(`/v1/members/${newcomer.userId}`, { method: 'DELETE', headers: admin.headers })).status).toBe(204);
    // Removed: the same (still unexpired) token is now refused in that organization.
    await expectApiError(await srv.api('/v1/agents', { headers: { authorization: `Bearer ${session.access_token}`, 'x-org-id': org.orgId } }), 403, 'permission_error', 'not_a_member');
    await expectApiError(await srv.api(`/v1/members/${newcomer.userId}`, { method: 'DELETE', headers: admin.headers }), 404, 'not_found_error', 'not_found');
  });

  it('the last owner can be neither demoted nor removed (409 last_owner); with a second owner both work', async () => {
    const org = await srv.addOrganization('last owner');
    const owner = await srv.signIn({ role: 'owner', orgId: org.orgId });
    const demote = await expectApiError(await srv.api(`/v1/members/${owner.userId}`, { method: 'PATCH', headers: owner.headers, body: { role: 'admin' } }), 409, 'conflict_error', 'last_owner');
    expect(demote.error.message).toMatch(/at least one owner/);
    await expectApiError(await srv.api(`/v1/members/${owner.userId}`, { method: 'DELETE', headers: owner.headers }), 409, 'conflict_error', 'last_owner');
    const second = await srv.addPerson({ orgId: null });
    await joinByInvitation(owner.headers, second, 'owner');
    expect((await srv.api(`/v1/members/${owner.userId}`, { method: 'PATCH', headers: owner.headers, body: { role: 'admin' } })).status).toBe(200);
    // Now the second owner is the last one: they cannot leave.
    const secondSession = await srv.login(second.email, second.password);
    const asSecond = { authorization: `Bearer ${secondSession.access_token}`, 'x-org-id': org.orgId };
    await expectApiError(await srv.api(`/v1/members/${second.userId}`, { method: 'DELETE', headers: asSecond }), 409, 'conflict_error', 'last_owner');
    expect((await srv.api(`/v1/members/${owner.userId}`, { method: 'DELETE', headers: asSecond })).status).toBe(204);
  });

  it('an admin cannot grant, change or remove the owner role (403 forbidden); an operator cannot manage members', async () => {
    const org = await srv.addOrganization('admin limits');
    const owner = await srv.addPerson({ role: 'owner', orgId: org.orgId });
    const admin = await srv.signIn({ role: 'admin', orgId: org.orgId });
    const op = await srv.signIn({ role: 'operator', orgId: org.orgId });
    const outsider = await srv.addPerson({ orgId: null });
    await expectApiError(await srv.api('/v1/members', { headers: admin.headers, body: { email: outsider.email, role: 'owner' } }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api(`/v1/members/${op.userId}`, { method: 'PATCH', headers: admin.headers, body: { role: 'owner' } }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api(`/v1/members/${owner.userId}`, { method: 'PATCH', headers: admin.headers, body: { role: 'operator' } }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api(`/v1/members/${owner.userId}`, { method: 'DELETE', headers: admin.headers }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api('/v1/members', { headers: op.headers, body: { email: outsider.email, role: 'operator' } }), 403, 'permission_error', 'forbidden');
    await expectApiError(await srv.api('/v1/members', { body: { email: outsider.email, role: 'operator' } }), 403, 'permission_error', 'forbidden');
  });
});

/** The answer of POST /v1/members (API.md "Auth endpoints"). */
interface Invitation { id: string; email: string; role: string; status: string; created_at: string; expires_at: string }
/** A pending invitation in GET /v1/me. */
interface MyInvitation extends Invitation { organization: { id: string; name: string } }

/** Invites `person` with `inviter` (headers of an owner or admin) and has them accept; fails the test otherwise. */
async function joinByInvitation(inviter: Record<string, string>, person: { email: string; password: string }, role: string): Promise<void> {
  const invited = await srv.api('/v1/members', { headers: inviter, body: { email: person.email, role } });
  expect(invited.status, await invited.clone().text()).toBe(202);
  const { id } = await invited.json() as Invitation;
  const session = await srv.login(person.email, person.password);
  const accepted = await srv.api(`/v1/me/invitations/${id}/accept`, { method: 'POST', headers: { authorization: `Bearer ${session.access_token}` } });
  expect(accepted.status, await accepted.clone().text()).toBe(200);
}

describe('membership by invitation (security review, finding 4)', () => {
  const as = (token: string, orgId?: string) => ({ authorization: `Bearer ${token}`, ...(orgId === undefined ? {} : { 'x-org-id': orgId }) });
  const me = async (token: string) => (await (await srv.api('/v1/me', { headers: as(token) })).json()) as { organizations: Array<{ id: string; role: string }>; invitations: MyInvitation[] };

  it('an admin\'s POST /v1/members answers the same 202 invitation for a known and an unknown e-mail, and nobody becomes a member without accepting', async () => {
    const org = await srv.addOrganization('Invitations org');
    const admin = await srv.signIn({ role: 'admin', orgId: org.orgId });
    const victim = await srv.addPerson({ orgId: null });
    const before = Date.now();
    const known = await srv.api('/v1/members', { headers: admin.headers, body: { email: victim.email, role: 'operator' } });
    const unknown = await srv.api('/v1/members', { headers: admin.headers, body: { email: 'nobody-yet@example.com', role: 'operator' } });
    // The same answer whatever the e-mail: status, headers (but the request id), body shape and values.
    expect([known.status, unknown.status]).toEqual([202, 202]);
    const headers = (r: Response) => [...r.headers.entries()].filter(([k]) => !['x-request-id', 'date', 'content-length'].includes(k));
    expect(headers(known)).toEqual(headers(unknown));
    const a = await known.json() as Invitation;
    const b = await unknown.json() as Invitation;
    expect(Object.keys(a)).toEqual(['id', 'email', 'role', 'status', 'created_at', 'expires_at']);
    expect(Object.keys(b)).toEqual(Object.keys(a));
    expect(a).toMatchObject({ email: victim.email, role: 'operator', status: 'pending' });
    expect(b).toMatchObject({ email: 'nobody-yet@example.com', role: 'operator', status: 'pending' });
    expect(a.id).toMatch(/^inv_[0-9A-Za-z]+$/);
    // Pending for 7 days.
    const ttl = Date.parse(a.expires_at) - Date.parse(a.created_at);
    expect(ttl).toBe(7 * 24 * 3600 * 1000);
    expect(Date.parse(a.created_at)).toBeGreaterThanOrEqual(before - 1000);

    // The victim is not a member: not listed, not in their sign-in, refused in the organization.
    const members = await (await srv.api('/v1/members', { headers: admin.headers })).json() as { data: Array<{ email: string }> };
    expect(members.data.map((m) => m.email)).not.toContain(victim.email);
    const session = await srv.login(victim.email, victim.password);
    expect(session.organizations).toEqual([]);
    await expectApiError(await srv.api('/v1/agents', { headers: as(session.access_token, org.orgId) }), 403, 'permission_error', 'not_a_member');
    // They see the invitation, and may decline it: still no member, and the invitation is gone.
    const mine = await me(session.access_token);
    expect(mine.invitations).toEqual([{ ...a, organization: { id: org.orgId, name: 'Invitations org' } }]);
    const declined = await srv.api(`/v1/me/invitations/${a.id}/decline`, { method: 'POST', headers: as(session.access_token) });
    expect(declined.status).toBe(200);
    expect(await declined.json()).toEqual({ id: a.id, status: 'declined' });
    expect((await me(session.access_token)).invitations).toEqual([]);
    await expectApiError(await srv.api(`/v1/me/invitations/${a.id}/accept`, { method: 'POST', headers: as(session.access_token) }), 404, 'not_found_error', 'not_found');
    await expectApiError(await srv.api('/v1/agents', { headers: as(session.access_token, org.orgId) }), 403, 'permission_error', 'not_a_member');
  });

  it('the invitee accepts: a member with the invited role; nobody else can accept it', async () => {
    const org = await srv.addOrganization('Accepting org');
    const owner = await srv.signIn({ role: 'owner', orgId: org.orgId });
    const invitee = await srv.signIn({ orgId: null });
    const stranger = await srv.signIn({ orgId: null });
    const inv = await (await srv.api('/v1/members', { headers: owner.headers, body: { email: invitee.email.toUpperCase(), role: 'admin' } })).json() as Invitation;
    expect(inv.email).toBe(invitee.email);
    // Another signed-in person cannot accept or decline it.
    await expectApiError(await srv.api(`/v1/me/invitations/${inv.id}/accept`, { method: 'POST', headers: as(stranger.session.access_token) }), 404, 'not_found_error', 'not_found');
    await expectApiError(await srv.api(`/v1/me/invitations/${inv.id}/decline`, { method: 'POST', headers: as(stranger.session.access_token) }), 404, 'not_found_error', 'not_found');
    await expectApiError(await srv.api('/v1/me/invitations/inv_missing/accept', { method: 'POST', headers: as(invitee.session.access_token) }), 404, 'not_found_error', 'not_found');
    // An API key cannot answer invitations.
    await expectApiError(await srv.api(`/v1/me/invitations/${inv.id}/accept`, { method: 'POST' }), 403, 'permission_error', 'forbidden');

    const res = await srv.api(`/v1/me/invitations/${inv.id}/accept`, { method: 'POST', headers: as(invitee.session.access_token) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: inv.id, status: 'accepted', organization: { id: org.orgId, name: 'Accepting org', role: 'admin' } });
    expect((await srv.api('/v1/api-keys', { headers: as(invitee.session.access_token, org.orgId) })).status).toBe(200);
    expect((await me(invitee.session.access_token))).toMatchObject({ organizations: [{ id: org.orgId, role: 'admin' }], invitations: [] });
    await expectApiError(await srv.api(`/v1/me/invitations/${inv.id}/accept`, { method: 'POST', headers: as(invitee.session.access_token) }), 404, 'not_found_error', 'not_found');
    // A member's e-mail cannot be invited again.
    await expectApiError(await srv.api('/v1/members', { headers: owner.headers, body: { email: invitee.email, role: 'operator' } }), 409, 'conflict_error', 'already_member');
  });

  it('an invitation to an e-mail with no account works once the account exists (made by the command line)', async () => {
    const org = await srv.addOrganization('Later account org');
    const owner = await srv.signIn({ role: 'owner', orgId: org.orgId });
    const email = `later-${Date.now()}@example.com`;
    const inv = await (await srv.api('/v1/members', { headers: owner.headers, body: { email, role: 'operator' } })).json() as Invitation;
    await srv.parley.directory.createUser(email, 'a long enough password');
    const session = await srv.login(email, 'a long enough password');
    expect((await me(session.access_token)).invitations.map((i) => i.id)).toEqual([inv.id]);
    expect((await srv.api(`/v1/me/invitations/${inv.id}/accept`, { method: 'POST', headers: as(session.access_token) })).status).toBe(200);
    expect((await srv.api('/v1/agents', { headers: as(session.access_token, org.orgId) })).status).toBe(200);
  });

  it('inviting the same e-mail again replaces the pending invitation (the old one cannot be accepted)', async () => {
    const org = await srv.addOrganization('Replacing org');
    const owner = await srv.signIn({ role: 'owner', orgId: org.orgId });
    const invitee = await srv.signIn({ orgId: null });
    const first = await (await srv.api('/v1/members', { headers: owner.headers, body: { email: invitee.email, role: 'admin' } })).json() as Invitation;
    const second = await (await srv.api('/v1/members', { headers: owner.headers, body: { email: invitee.email, role: 'operator' } })).json() as Invitation;
    expect((await me(invitee.session.access_token)).invitations.map((i) => [i.id, i.role])).toEqual([[second.id, 'operator']]);
    await expectApiError(await srv.api(`/v1/me/invitations/${first.id}/accept`, { method: 'POST', headers: as(invitee.session.access_token) }), 404, 'not_found_error', 'not_found');
    const res = await srv.api(`/v1/me/invitations/${second.id}/accept`, { method: 'POST', headers: as(invitee.session.access_token) });
    expect(await res.json()).toMatchObject({ organization: { id: org.orgId, role: 'operator' } });
  });

  it('a deleted person\'s token answers no invitation: 401 invalid_token', async () => {
    const org = await srv.addOrganization('Deleted invitee org');
    const owner = await srv.signIn({ role: 'owner', orgId: org.orgId });
    const invitee = await srv.signIn({ orgId: null });
    const inv = await (await srv.api('/v1/members', { headers: owner.headers, body: { email: invitee.email, role: 'operator' } })).json() as Invitation;
    expect(await srv.parley.directory.deleteUser(invitee.email)).toMatchObject({ id: invitee.userId });
    for (const verb of ['accept', 'decline']) {
      await expectApiError(await srv.api(`/v1/me/invitations/${inv.id}/${verb}`, { method: 'POST', headers: as(invitee.session.access_token) }), 401, 'authentication_error', 'invalid_token');
    }
  });

  it('a person leaves an organization (204), but not as its last owner (409 last_owner); not a member is 404', async () => {
    const org = await srv.addOrganization('Leaving org');
    const owner = await srv.signIn({ role: 'owner', orgId: org.orgId });
    const op = await srv.signIn({ role: 'operator', orgId: org.orgId });
    const leave = (token: string, orgId = org.orgId) => srv.api(`/v1/me/organizations/${orgId}`, { method: 'DELETE', headers: as(token) });
    const left = await leave(op.session.access_token);
    expect(left.status).toBe(204);
    await expectApiError(await srv.api('/v1/agents', { headers: as(op.session.access_token, org.orgId) }), 403, 'permission_error', 'not_a_member');
    expect((await me(op.session.access_token)).organizations.map((o) => o.id)).not.toContain(org.orgId);
    await expectApiError(await leave(op.session.access_token), 404, 'not_found_error', 'not_found');
    await expectApiError(await leave(op.session.access_token, 'org_missing'), 404, 'not_found_error', 'not_found');
    const last = await expectApiError(await leave(owner.session.access_token), 409, 'conflict_error', 'last_owner');
    expect(last.error.message).toMatch(/only owner/);
    await expectApiError(await srv.api(`/v1/me/organizations/${org.orgId}`, { method: 'DELETE' }), 403, 'permission_error', 'forbidden');
  });
});

describe('sign-in throttling', () => {
  let limited: TestServer;
  beforeAll(async () => { limited = await startTestServer({ PARLEY_LOGIN_FAILURES_PER_ACCOUNT: '3', PARLEY_LOGIN_FAILURES_PER_ADDRESS: '8', PARLEY_LOGIN_ACCOUNT_CEILING: '5' }); });
  afterAll(async () => { await limited?.close(); });
  /**
   * POST /v1/auth/login from client address `from` (a loopback address: the client socket is bound to it,
   * so the server sees it as the request's address, which the throttle counts).
   */
  const attempt = (email: string, password: string, from = '127.0.0.1') =>
    fetchFrom(from, `${limited.url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });

  it('an address gets 429 rate_limited with Retry-After after its failures on an account, even with the right password; a success does not count', async () => {
    const p = await limited.addPerson();
    expect((await attempt(p.email, p.password, '127.0.0.2')).status).toBe(200);
    for (let i = 0; i < 3; i++) await expectApiError(await attempt(p.email, 'wrong password', '127.0.0.2'), 401, 'authentication_error', 'invalid_credentials');
    const res = await attempt(p.email, p.password, '127.0.0.2');
    const retryAfter = Number(res.headers.get('retry-after'));
    await expectApiError(res, 429, 'rate_limit_error', 'rate_limited');
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(300);
  });

  it('a lockout attempt from one address does not stop the owner from another address, even past the account ceiling (review finding 10)', async () => {
    const owner = await limited.addPerson();
    // The review's attack: eleven wrong passwords from one address...
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await attempt(owner.email, 'wrong password', '127.0.0.3')).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429, 429, 429, 429]);
    // ...and from two more, which uses the account's ceiling of 5 failures.
    for (const from of ['127.0.0.4', '127.0.0.5']) await expectApiError(await attempt(owner.email, 'wrong password', from), 401, 'authentication_error', 'invalid_credentials');
    // An attacking address that already failed is refused past the ceiling...
    await expectApiError(await attempt(owner.email, 'wrong password', '127.0.0.4'), 429, 'rate_limit_error', 'rate_limited');
    // ...while the owner, from an address with no failures, signs in with the right password.
    const res = await attempt(owner.email, owner.password, '127.0.0.6');
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await res.json() as SessionBody).user.id).toBe(owner.userId);
    await expectApiError(await attempt(owner.email, owner.password, '127.0.0.3'), 429, 'rate_limit_error', 'rate_limited');
  });

  it('an address gets 429 after its failures across accounts', async () => {
    for (let i = 0; i < 8; i++) await expectApiError(await attempt(`nobody-${i}@example.com`, 'wrong password', '127.0.0.7'), 401, 'authentication_error', 'invalid_credentials');
    const res = await attempt('someone-else@example.com', 'wrong password', '127.0.0.7');
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    await expectApiError(res, 429, 'rate_limit_error', 'rate_limited');
  });
});

describe('the negative matrix', () => {
  interface Row { case: string; request: string; expected: [number, string]; got?: [number, string] }
  const rows: Row[] = [];
  afterAll(() => {
    const lines = ['| case | request | expected | got |', '|---|---|---|---|'];
    for (const r of rows) lines.push(`| ${r.case} | ${r.request} | ${r.expected.join(' ')} | ${r.got ? r.got.join(' ') : 'not run'} |`);
    console.log(`Negative matrix (${rows.length} cases):\n${lines.join('\n')}`);
  });

  /** Sends `init`, records the status and code in the matrix, and checks them against `expected`. */
  async function probe(name: string, request: string, expected: [number, string], path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
    const row: Row = { case: name, request, expected };
    rows.push(row);
    const res = await fetch(`${srv.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    const text = await res.text();
    const code = (JSON.parse(text || '{}') as { error?: { code?: string } }).error?.code ?? '';
    row.got = [res.status, code];
    expect(row.got, `${name}: ${text}`).toEqual(expected);
  }

  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');

  /** A token with `claims` and `header` changed, signed with the server's real private key. */
  async function forged(sub: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
    const key = (await srv.parley.store.signingKeys.active())!;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: 'parley', aud: 'parley-api', sub, iat: now, exp: now + 900, jti: `forged-${Math.random()}`, client_id: 'parley', ...claims })
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'at+jwt', ...header })
      .sign(await importJWK(key.private_jwk, 'EdDSA'));
  }

  it('every credential failure gets its exact status and code', async () => {
    const p = await srv.signIn({ role: 'owner' });
    const op = await srv.signIn({ role: 'operator' });
    const other = await srv.addOrganization('matrix other org');
    const key = (await srv.parley.store.signingKeys.active())!;
    const bearer = (t: string) => ({ authorization: `Bearer ${t}`, 'x-org-id': srv.orgId });
    const [h, pl, sig] = p.session.access_token.split('.') as [string, string, string];
    const sigBytes = Buffer.from(sig, 'base64url');
    sigBytes[20] = sigBytes[20]! ^ 0x04;
    const tampered = `${h}.${pl}.${sigBytes.toString('base64url')}`;
    const now = Math.floor(Date.now() / 1000);
    const none = `${b64({ alg: 'none', typ: 'at+jwt', kid: key.kid })}.${b64({ iss: 'parley', aud: 'parley-api', sub: p.userId, iat: now, exp: now + 900, jti: 'n', client_id: 'parley' })}.`;
    const pem = createPublicKey({ key: key.public_jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
    const hs256 = await new SignJWT({ iss: 'parley', aud: 'parley-api', sub: p.userId, iat: now, exp: now + 900, jti: 'h', client_id: 'parley' })
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: key.kid }).sign(new TextEncoder().encode(pem));
    const doomed = await srv.signIn({ role: 'admin' });
    await srv.addPerson({ role: 'owner' }); // the org keeps an owner whatever happens to others
    expect(await srv.parley.directory.deleteUser(doomed.email)).toMatchObject({ id: doomed.userId });

    await probe('no token', 'GET /v1/agents, no Authorization', [401, 'missing_credentials'], '/v1/agents');
    await probe('garbage', 'Bearer garbage', [401, 'invalid_api_key'], '/v1/agents', { headers: { authorization: 'Bearer garbage' } });
    await probe('garbage, JWT-shaped', 'Bearer aaa.bbb.ccc', [401, 'invalid_token'], '/v1/agents', { headers: bearer('aaa.bbb.ccc') });
    await probe('tampered signature', 'one bit of the signature flipped', [401, 'invalid_token'], '/v1/agents', { headers: bearer(tampered) });
    await probe('alg: none', 'unsigned token, alg none', [401, 'invalid_token'], '/v1/agents', { headers: bearer(none) });
    await probe('HS256 with the public key', 'HMAC-SHA256 keyed with the public key PEM', [401, 'invalid_token'], '/v1/agents', { headers: bearer(hs256) });
    await probe('wrong aud', 'aud: another-api, real key', [401, 'invalid_token'], '/v1/agents', { headers: bearer(await forged(p.userId, { aud: 'another-api' })) });
    await probe('wrong iss', 'iss: evil, real key', [401, 'invalid_token'], '/v1/agents', { headers: bearer(await forged(p.userId, { iss: 'evil' })) });
    await probe('wrong typ', 'typ: JWT, real key', [401, 'invalid_token'], '/v1/agents', { headers: bearer(await forged(p.userId, {}, { typ: 'JWT' })) });
    await probe('unknown kid', 'kid: nope, real key', [401, 'invalid_token'], '/v1/agents', { headers: bearer(await forged(p.userId, {}, { kid: 'nope' })) });
    await probe('missing jti', 'no jti claim, real key', [401, 'invalid_token'], '/v1/agents', { headers: bearer(await forged(p.userId, { jti: undefined })) });
    await probe('expired', 'iat now-1000 s, exp now-100 s, real key', [401, 'expired_token'], '/v1/agents', { headers: bearer(await forged(p.userId, { iat: now - 1000, exp: now - 100 })) });
    await probe('token of a deleted user', 'valid token, person deleted since', [401, 'invalid_token'], '/v1/agents', { headers: bearer(doomed.session.access_token) });
    await probe('no X-Org-Id', 'valid token, no X-Org-Id', [400, 'missing_org_id'], '/v1/agents', { headers: { authorization: `Bearer ${p.session.access_token}` } });
    await probe('another organization in X-Org-Id', 'valid token, X-Org-Id of an org the person is not in', [403, 'not_a_member'], '/v1/agents', { headers: { authorization: `Bearer ${p.session.access_token}`, 'x-org-id': other.orgId } });
    await probe('unknown organization in X-Org-Id', 'valid token, X-Org-Id org_nope', [403, 'not_a_member'], '/v1/agents', { headers: { authorization: `Bearer ${p.session.access_token}`, 'x-org-id': 'org_nope' } });
    await probe('API key in a URL', 'GET /v1/agents?api_key=sk_...', [401, 'invalid_api_key'], `/v1/agents?api_key=${srv.apiKey}`);
    await probe('API key in a URL beside a token', '?api_key=sk_... with a valid access token', [401, 'invalid_api_key'], `/v1/agents?api_key=${srv.apiKey}`, { headers: bearer(p.session.access_token) });
    await probe('operator on an admin route', 'operator POST /v1/agents', [403, 'forbidden'], '/v1/agents', { headers: op.headers, body: { name: 'x' } });
    await probe('operator on key management', 'operator GET /v1/api-keys', [403, 'forbidden'], '/v1/api-keys', { headers: op.headers });
    await probe('API key on /v1/api-keys', 'Bearer sk_... GET /v1/api-keys', [403, 'forbidden'], '/v1/api-keys', { headers: { authorization: `Bearer ${srv.apiKey}` } });
    await probe('API key on /v1/members', 'Bearer sk_... GET /v1/members', [403, 'forbidden'], '/v1/members', { headers: { authorization: `Bearer ${srv.apiKey}` } });
    await probe('revoked API key', 'Bearer sk_... of a revoked key', [401, 'revoked_api_key'], '/v1/agents', { headers: { authorization: `Bearer ${await revokedKey()}` } });
    await probe('refresh token as access token', 'Bearer rt_...', [401, 'invalid_api_key'], '/v1/agents', { headers: bearer(p.session.refresh_token) });
    await probe('access token as refresh token', 'POST /v1/auth/refresh with the JWT', [401, 'invalid_refresh_token'], '/v1/auth/refresh', { body: { refresh_token: p.session.access_token } });
    await probe('correct token, correct org', 'control: owner GET /v1/agents', [200, ''], '/v1/agents', { headers: bearer(p.session.access_token) });
  });

  async function revokedKey(): Promise<string> {
    const org = await srv.addOrganization('revoked key org');
    await srv.parley.store.apiKeys.revoke(org.orgId, org.keyId, new Date().toISOString());
    return org.apiKey;
  }
});

describe('OpenAPI of people sign in', () => {
  it('declares both security schemes and, per route, the credentials, roles and the 400/401/403/409/429 responses', async () => {
    const doc = await (await fetch(`${srv.url}/v1/openapi.json`)).json() as {
      paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, { description: string }>; 'x-parley-access': unknown }>>;
      components: { securitySchemes: Record<string, Record<string, unknown>> };
    };
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.accessToken).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(doc.components.securitySchemes.orgId).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Org-Id' });
    const ops = doc.paths;
    expect(ops['/v1/agents']!.post!.security).toEqual([{ apiKey: [] }, { accessToken: [], orgId: [] }]);
    expect(ops['/v1/agents']!.post!['x-parley-access']).toEqual({ credentials: ['api_key', 'person'], roles: ['owner', 'admin'] });
    expect(ops['/v1/agents']!.get!['x-parley-access']).toEqual({ credentials: ['api_key', 'person'], roles: ['owner', 'admin', 'operator'] });
    expect(ops['/v1/api-keys']!.get!.security).toEqual([{ accessToken: [], orgId: [] }]);
    expect(ops['/v1/me']!.get!.security).toEqual([{ accessToken: [] }]);
    expect(ops['/v1/auth/login']!.post!.security).toEqual([]);
    expect(Object.keys(ops['/v1/auth/login']!.post!.responses).sort()).toEqual(['200', '400', '401', '413', '415', '429', '503']);
    expect(ops['/v1/agents']!.post!.responses['400']!.description).toContain('missing_org_id');
    expect(ops['/v1/agents']!.post!.responses['403']!.description).toContain('not_a_member');
    expect(ops['/v1/agents']!.post!.responses['401']!.description).toContain('expired_token');
    expect(ops['/v1/api-keys']!.get!.responses['403']!.description).toContain('an API key cannot');
    expect(ops['/v1/members/{user_id}']!.patch!.responses['409']!.description).toContain('last_owner');
    for (const path of ['/v1/auth/refresh', '/v1/auth/logout', '/v1/auth/ws-ticket', '/v1/api-keys/{key_id}/rotate', '/v1/api-keys/{key_id}', '/v1/members']) {
      expect(Object.keys(ops[path] ?? {}).length, path).toBeGreaterThan(0);
    }
  });
});
