/**
 * The store contract (DESIGN.md "Store": one contract suite for every adapter): the behaviour of every
 * port method of src/store/ports.ts, written once and run on each adapter by a `*.contract.test.ts` file
 * that calls describeStoreContract() with a factory for that adapter (the way one test suite is looped
 * over several drivers). Only the ports are used here, never an adapter's internals; adapter-specific
 * checks (SQL, migrations, slicing) live in the adapter's own tests.
 *
 * Rules of this file: expected values are literals (ids below are fixed and sort in the order the names
 * say), no assertion sits inside an `if`, and nothing depends on wall-clock time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import type { Store } from '../../src/store/ports.js';
import type {
  AgentRecord, ApiKeyRecord, AttemptOutcome, ConversationRecord, DocumentRecord, InvitationRecord, KnowledgeBaseRecord, MessageRecord, NewChunk,
  OutboxEvent, RefreshFamilyRecord, RefreshTokenRecord, SigningKeyRecord, SocketTicketRecord, ToolRunRecord, UserRecord, WebhookEndpointRecord,
} from '../../src/store/records.js';

/** One adapter under test: a store on fresh, empty storage. */
export interface StoreUnderTest {
  store: Store;
  /** Opens a new store (a new connection) on the same storage; called after `store` was closed. */
  reopen(): Promise<Store>;
  /** Closes what is still open and removes the storage. */
  destroy(): Promise<void>;
}

/** Makes a StoreUnderTest; called before every test. */
export type MakeStore = () => Promise<StoreUnderTest>;

const ORG_A = 'org_A';
const ORG_B = 'org_B';
const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:00:01.000Z';
const T2 = '2025-01-01T00:00:02.000Z';
const T3 = '2025-01-01T00:00:03.000Z';

function agent(id: string, org = ORG_A, name = `Agent ${id}`): AgentRecord {
  return {
    id, org_id: org, name, description: 'd', instructions: 'be brief', model: { provider: 'builtin', name: 'extractive' },
    knowledge_base_ids: ['kb_1'], tools: ['search_knowledge'], safety: { blocked_phrases: ['secret plan'], redact_pii: true, blocked_message: 'Sorry.' },
    published: false, public_key: null, allowed_origins: ['*'], created_at: T0, updated_at: T0,
  };
}

function base(id: string, org = ORG_A): KnowledgeBaseRecord {
  return { id, org_id: org, name: `Base ${id}`, created_at: T0 };
}

function doc(id: string, kb: string, org = ORG_A, created_at = T0, title = `Title ${id}`): DocumentRecord {
  return {
    id, org_id: org, knowledge_base_id: kb, title, content_type: 'text/plain', status: 'processing', error: null,
    error_code: null, chunk_count: 0, bytes: 5, created_at, updated_at: created_at,
  };
}

function conversation(id: string, org = ORG_A, agentId = 'agt_1', status: ConversationRecord['status'] = 'active'): ConversationRecord {
  return { id, org_id: org, agent_id: agentId, status, metadata: { source: 'test' }, visitor_token_hash: null, public_key: null, created_at: T0, updated_at: T0 };
}

function message(id: string, conv: string, role: MessageRecord['role'], turn: string | null, content: string, extra: Partial<MessageRecord> = {}): MessageRecord {
  return {
    id, conversation_id: conv, org_id: ORG_A, turn_id: turn, role, content, citations: [], tool_runs: [], usage: null,
    status: 'completed', finish_reason: role === 'agent' ? 'stop' : null, error: null, timing: null, created_at: T1, ...extra,
  };
}

const chunk = (ord: number, text: string, heading = ''): NewChunk => ({ ord, heading, text });

function user(id: string, email = `${id}@example.com`): UserRecord {
  return { id, email, password_hash: `hash-of-${id}`, access_valid_after: null, created_at: T0, updated_at: T0 };
}

function apiKey(id: string, org = ORG_A, extra: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return { id, org_id: org, name: `key ${id}`, key_hash: `hash-${id}`, last4: id.slice(-4), created_at: T0, revoked_at: null, expires_at: null, ...extra };
}

const T4 = '2025-01-01T00:00:04.000Z';
const T9 = '2025-01-01T00:00:09.000Z';

function family(id: string, userId = 'usr_1', absolute = T9): RefreshFamilyRecord {
  return { id, user_id: userId, created_at: T0, absolute_expires_at: absolute, revoked_at: null, revoked_reason: null };
}

function refreshToken(hash: string, familyId: string, expires = T4): RefreshTokenRecord {
  return { token_hash: hash, family_id: familyId, created_at: T0, expires_at: expires, used_at: null };
}

function signingKey(kid: string, created_at = T0): SigningKeyRecord {
  return { kid, algorithm: 'EdDSA', public_jwk: { kty: 'OKP', crv: 'Ed25519', x: `x-${kid}` }, private_jwk: { kty: 'OKP', crv: 'Ed25519', x: `x-${kid}`, d: `d-${kid}` }, created_at, retired_at: null };
}

function ticket(hash: string, expires = T2, userId = 'usr_1'): SocketTicketRecord {
  return { ticket_hash: hash, user_id: userId, org_id: ORG_A, session_id: null, created_at: T0, expires_at: expires, used_at: null };
}

/** What an unknown cursor rejects with (ports.ts "Lists"). */
function unknownCursor(thing: string) {
  return {
    code: 'validation_failed', type: 'invalid_request_error', status: 400,
    message: `The cursor \`after\` names no ${thing} of this list.`,
    errors: [{ path: 'after', message: 'unknown cursor' }],
  };
}

const ids = (page: { data: Array<{ id: string }> }) => page.data.map((r) => r.id);

function endpoint(id: string, org = ORG_A, events: string[] = ['*'], extra: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord {
  return {
    id, org_id: org, url: `https://hooks.example.com/${id}`, description: null, events, enabled: true, disabled_reason: null,
    secret: `whsec_${id}`, previous_secret: null, previous_secret_expires_at: null, failing_since: null, created_at: T0, updated_at: T0, ...extra,
  };
}

function outboxEvent(id: string, type: string, org = ORG_A, created_at = T1): OutboxEvent {
  return { id, type, org_id: org, created_at, data: { n: id } };
}

function failedAttempt(at: string, next: AttemptOutcome['next'], status = 500): AttemptOutcome {
  return { response: { status, body: 'nope', duration_ms: 12 }, error: `HTTP ${status}`, at, next, success: false };
}

/** Registers the contract suite for one adapter: `name` labels it, `makeStore` gives each test a fresh store. */
export function describeStoreContract(name: string, makeStore: MakeStore): void {
  describe(`store contract: ${name}`, () => {
    let sut: StoreUnderTest;
    let store: Store;

    beforeEach(async () => {
      sut = await makeStore();
      store = sut.store;
    });
    afterEach(async () => {
      await sut?.destroy();
    });

    describe('organizations', () => {
      it('stores, reads back and counts organizations; an unknown id is undefined', async () => {
        expect(await store.organizations.count()).toBe(0);
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.organizations.create({ id: ORG_B, name: 'Bravo', created_at: T1 });
        expect(await store.organizations.get(ORG_A)).toEqual({ id: ORG_A, name: 'Acme', created_at: T0 });
        expect(await store.organizations.get('org_missing')).toBeUndefined();
        expect(await store.organizations.count()).toBe(2);
      });
    });

    describe('api keys', () => {
      const key: ApiKeyRecord = { id: 'key_1', org_id: ORG_A, name: 'ci', key_hash: 'h1', last4: 'abcd', created_at: T0, revoked_at: null, expires_at: null };

      beforeEach(async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.organizations.create({ id: ORG_B, name: 'Bravo', created_at: T0 });
        await store.apiKeys.create(key);
      });

      it('finds a key by its hash; an unknown hash is undefined', async () => {
        expect(await store.apiKeys.findByHash('h1')).toEqual(key);
        expect(await store.apiKeys.findByHash('h2')).toBeUndefined();
      });

      it('revokes once: the second revoke is false, and the revoked key is still found with revoked_at', async () => {
        expect(await store.apiKeys.revoke(ORG_A, 'key_1', T1)).toBe(true);
        expect(await store.apiKeys.revoke(ORG_A, 'key_1', T2)).toBe(false);
        expect(await store.apiKeys.findByHash('h1')).toEqual({ ...key, revoked_at: T1 });
      });

      it('another organization cannot revoke the key, and an unknown key is false', async () => {
        expect(await store.apiKeys.revoke(ORG_B, 'key_1', T1)).toBe(false);
        expect(await store.apiKeys.revoke(ORG_A, 'key_missing', T1)).toBe(false);
        expect(await store.apiKeys.findByHash('h1')).toEqual(key);
      });
    });

    describe('api keys: list and rotation', () => {
      beforeEach(async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.organizations.create({ id: ORG_B, name: 'Bravo', created_at: T0 });
      });

      it('lists the organization\'s keys newest first, revoked ones included, with pages; a foreign cursor is a 400', async () => {
        for (const id of ['key_1', 'key_2', 'key_3']) await store.apiKeys.create(apiKey(id));
        await store.apiKeys.create(apiKey('key_9', ORG_B));
        await store.apiKeys.revoke(ORG_A, 'key_2', T1);
        const p1 = await store.apiKeys.list(ORG_A, { limit: 2 });
        expect([ids(p1), p1.has_more]).toEqual([['key_3', 'key_2'], true]);
        expect(p1.data[1]).toEqual(apiKey('key_2', ORG_A, { revoked_at: T1 }));
        const p2 = await store.apiKeys.list(ORG_A, { limit: 2, after: 'key_2' });
        expect([ids(p2), p2.has_more]).toEqual([['key_1'], false]);
        expect(await store.apiKeys.list(ORG_B, { limit: 5 }).then(ids)).toEqual(['key_9']);
        await expect(store.apiKeys.list(ORG_A, { limit: 2, after: 'key_9' })).rejects.toMatchObject(unknownCursor('API key'));
      });

      it('rotates with a grace period: the old key gets expires_at, the new key is stored', async () => {
        await store.apiKeys.create(apiKey('key_1'));
        expect(await store.apiKeys.rotate(ORG_A, 'key_1', apiKey('key_2', ORG_A, { created_at: T1 }), T3, T1)).toBe(true);
        expect(await store.apiKeys.findByHash('hash-key_1')).toEqual(apiKey('key_1', ORG_A, { expires_at: T3 }));
        expect(await store.apiKeys.findByHash('hash-key_2')).toEqual(apiKey('key_2', ORG_A, { created_at: T1 }));
        // Rotating again inside the grace period never lengthens it.
        expect(await store.apiKeys.rotate(ORG_A, 'key_1', apiKey('key_3'), T9, T2)).toBe(true);
        expect((await store.apiKeys.findByHash('hash-key_1'))?.expires_at).toBe(T3);
        // Once the grace period is over the old key can no longer be rotated.
        expect(await store.apiKeys.rotate(ORG_A, 'key_1', apiKey('key_4'), null, T3)).toBe(false);
        expect(await store.apiKeys.findByHash('hash-key_4')).toBeUndefined();
      });

      it('gets a key by id within its organization only', async () => {
        await store.apiKeys.create(apiKey('key_1'));
        expect(await store.apiKeys.get(ORG_A, 'key_1')).toEqual(apiKey('key_1'));
        expect(await store.apiKeys.get(ORG_B, 'key_1')).toBeUndefined();
        expect(await store.apiKeys.get(ORG_A, 'key_missing')).toBeUndefined();
      });

      it('rotates without a grace period by revoking the old key at once', async () => {
        await store.apiKeys.create(apiKey('key_1'));
        expect(await store.apiKeys.rotate(ORG_A, 'key_1', apiKey('key_2'), null, T1)).toBe(true);
        expect(await store.apiKeys.findByHash('hash-key_1')).toEqual(apiKey('key_1', ORG_A, { revoked_at: T1 }));
      });

      it('refuses to rotate a revoked, foreign or unknown key, and stores nothing then', async () => {
        await store.apiKeys.create(apiKey('key_1'));
        await store.apiKeys.create(apiKey('key_r'));
        await store.apiKeys.revoke(ORG_A, 'key_r', T1);
        expect(await store.apiKeys.rotate(ORG_A, 'key_r', apiKey('key_x'), null, T2)).toBe(false);
        expect(await store.apiKeys.rotate(ORG_B, 'key_1', apiKey('key_y', ORG_B), null, T2)).toBe(false);
        expect(await store.apiKeys.rotate(ORG_A, 'key_missing', apiKey('key_z'), null, T2)).toBe(false);
        expect(await store.apiKeys.list(ORG_A, { limit: 10 }).then(ids)).toEqual(['key_r', 'key_1']);
        expect(await store.apiKeys.list(ORG_B, { limit: 10 })).toEqual({ data: [], has_more: false });
      });

      it('two concurrent rotations of one key: exactly one wins', async () => {
        await store.apiKeys.create(apiKey('key_1'));
        const results = await Promise.all([
          store.apiKeys.rotate(ORG_A, 'key_1', apiKey('key_2'), null, T1),
          store.apiKeys.rotate(ORG_A, 'key_1', apiKey('key_3'), null, T1),
        ]);
        expect([...results].sort()).toEqual([false, true]);
        expect(await store.apiKeys.list(ORG_A, { limit: 10 }).then((p) => p.data.length)).toBe(2);
      });
    });

    describe('users', () => {
      it('stores and reads back a person by id and by e-mail; a taken e-mail is refused', async () => {
        expect(await store.users.create(user('usr_1', 'ada@example.com'))).toBe(true);
        expect(await store.users.get('usr_1')).toEqual(user('usr_1', 'ada@example.com'));
        expect(await store.users.findByEmail('ada@example.com')).toEqual(user('usr_1', 'ada@example.com'));
        expect(await store.users.create(user('usr_2', 'ada@example.com'))).toBe(false);
        expect(await store.users.get('usr_2')).toBeUndefined();
        expect(await store.users.findByEmail('nobody@example.com')).toBeUndefined();
        expect(await store.users.get('usr_missing')).toBeUndefined();
      });

      it('keeps a person without a password as null, and sets a password hash', async () => {
        await store.users.create({ ...user('usr_1'), password_hash: null });
        expect((await store.users.get('usr_1'))?.password_hash).toBeNull();
        expect(await store.users.setPasswordHash('usr_1', 'new-hash', T2)).toBe(true);
        expect(await store.users.get('usr_1')).toEqual({ ...user('usr_1'), password_hash: 'new-hash', access_valid_after: T2, updated_at: T2 });
        expect(await store.users.setPasswordHash('usr_missing', 'x', T2)).toBe(false);
      });

      it('deletes a person with their memberships, sessions and tickets, but never an organization\'s only owner', async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.users.create(user('usr_1'));
        await store.users.create(user('usr_2'));
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_1', role: 'owner', created_at: T0 });
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_2', role: 'admin', created_at: T0 });
        await store.refreshTokens.startFamily(family('fam_2', 'usr_2'), refreshToken('rt-2', 'fam_2'));
        await store.socketTickets.create(ticket('wst-2', T2, 'usr_2'));
        expect(await store.users.delete('usr_1')).toBe('last_owner');
        expect(await store.memberships.check(ORG_A, 'usr_1')).toEqual({ status: 'member', role: 'owner', access_valid_after: null });
        expect(await store.users.delete('usr_2')).toBe('deleted');
        expect(await store.users.get('usr_2')).toBeUndefined();
        expect(await store.memberships.check(ORG_A, 'usr_2')).toEqual({ status: 'no_user' });
        expect(await store.refreshTokens.getFamily('fam_2')).toBeUndefined();
        expect(await store.socketTickets.consume('wst-2', T1)).toBeUndefined();
        expect(await store.users.delete('usr_2')).toBe('not_found');
        // With a second owner the first one can go.
        await store.users.create(user('usr_3'));
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_3', role: 'owner', created_at: T0 });
        expect(await store.users.delete('usr_1')).toBe('deleted');
      });
    });

    describe('memberships', () => {
      beforeEach(async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.organizations.create({ id: ORG_B, name: 'Bravo', created_at: T0 });
        for (const id of ['usr_1', 'usr_2', 'usr_3', 'usr_4']) await store.users.create(user(id));
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_1', role: 'owner', created_at: T1 });
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_2', role: 'admin', created_at: T2 });
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_3', role: 'operator', created_at: T3 });
        await store.memberships.add({ org_id: ORG_B, user_id: 'usr_3', role: 'owner', created_at: T3 });
      });

      it('check tells a member\'s role, a non-member, and a person who does not exist', async () => {
        expect(await store.memberships.check(ORG_A, 'usr_2')).toEqual({ status: 'member', role: 'admin', access_valid_after: null });
        expect(await store.memberships.check(ORG_B, 'usr_1')).toEqual({ status: 'not_a_member', access_valid_after: null });
        expect(await store.memberships.check('org_missing', 'usr_1')).toEqual({ status: 'not_a_member', access_valid_after: null });
        expect(await store.memberships.check(ORG_A, 'usr_missing')).toEqual({ status: 'no_user' });
      });

      it('adds once: a second add for the same person and organization is false and changes nothing', async () => {
        expect(await store.memberships.add({ org_id: ORG_A, user_id: 'usr_2', role: 'owner', created_at: T4 })).toBe(false);
        expect(await store.memberships.get(ORG_A, 'usr_2')).toEqual({ org_id: ORG_A, user_id: 'usr_2', role: 'admin', created_at: T2, email: 'usr_2@example.com' });
        expect(await store.memberships.add({ org_id: ORG_B, user_id: 'usr_4', role: 'operator', created_at: T4 })).toBe(true);
      });

      it('lists an organization\'s members newest person first with e-mails and pages; a non-member cursor is a 400', async () => {
        const p1 = await store.memberships.list(ORG_A, { limit: 2 });
        expect([p1.data.map((m) => [m.user_id, m.role, m.email]), p1.has_more]).toEqual([[['usr_3', 'operator', 'usr_3@example.com'], ['usr_2', 'admin', 'usr_2@example.com']], true]);
        const p2 = await store.memberships.list(ORG_A, { limit: 2, after: 'usr_2' });
        expect([p2.data.map((m) => m.user_id), p2.has_more]).toEqual([['usr_1'], false]);
        expect(await store.memberships.list(ORG_B, { limit: 5 }).then((p) => p.data.map((m) => m.user_id))).toEqual(['usr_3']);
        await expect(store.memberships.list(ORG_B, { limit: 2, after: 'usr_1' })).rejects.toMatchObject(unknownCursor('member'));
      });

      it('organizationsOf lists each organization of a person with the role, by organization id', async () => {
        expect(await store.memberships.organizationsOf('usr_3')).toEqual([
          { id: ORG_A, name: 'Acme', role: 'operator' }, { id: ORG_B, name: 'Bravo', role: 'owner' },
        ]);
        expect(await store.memberships.organizationsOf('usr_4')).toEqual([]);
      });

      it('setRole changes a role, but never demotes the only owner', async () => {
        expect(await store.memberships.setRole(ORG_A, 'usr_3', 'admin')).toBe('updated');
        expect(await store.memberships.check(ORG_A, 'usr_3')).toEqual({ status: 'member', role: 'admin', access_valid_after: null });
        expect(await store.memberships.setRole(ORG_A, 'usr_1', 'admin')).toBe('last_owner');
        expect(await store.memberships.setRole(ORG_A, 'usr_1', 'owner')).toBe('updated');
        expect(await store.memberships.setRole(ORG_A, 'usr_4', 'admin')).toBe('not_found');
        expect(await store.memberships.setRole(ORG_B, 'usr_1', 'admin')).toBe('not_found');
        expect(await store.memberships.check(ORG_A, 'usr_1')).toEqual({ status: 'member', role: 'owner', access_valid_after: null });
        // With a second owner, the first may step down.
        expect(await store.memberships.setRole(ORG_A, 'usr_2', 'owner')).toBe('updated');
        expect(await store.memberships.setRole(ORG_A, 'usr_1', 'operator')).toBe('updated');
      });

      it('remove takes a member out, but never the only owner', async () => {
        expect(await store.memberships.remove(ORG_A, 'usr_1')).toBe('last_owner');
        expect(await store.memberships.remove(ORG_A, 'usr_3')).toBe('removed');
        expect(await store.memberships.remove(ORG_A, 'usr_3')).toBe('not_found');
        expect(await store.memberships.check(ORG_A, 'usr_3')).toEqual({ status: 'not_a_member', access_valid_after: null });
        expect(await store.memberships.check(ORG_B, 'usr_3')).toEqual({ status: 'member', role: 'owner', access_valid_after: null });
      });

      it('two concurrent demotions of an organization\'s two owners: exactly one succeeds, an owner remains', async () => {
        await store.memberships.setRole(ORG_A, 'usr_2', 'owner');
        const results = await Promise.all([store.memberships.setRole(ORG_A, 'usr_1', 'admin'), store.memberships.setRole(ORG_A, 'usr_2', 'admin')]);
        expect([...results].sort()).toEqual(['last_owner', 'updated']);
        const owners = (await store.memberships.list(ORG_A, { limit: 5 })).data.filter((m) => m.role === 'owner').map((m) => m.user_id);
        expect(owners).toHaveLength(1);
        const removals = await Promise.all([store.memberships.remove(ORG_A, owners[0]!), store.memberships.remove(ORG_A, 'usr_3')]);
        expect(removals).toEqual(['last_owner', 'removed']);
      });
    });

    describe('invitations', () => {
      const T5 = '2025-01-01T00:00:05.000Z';
      const invitation = (id: string, email: string, extra: Partial<InvitationRecord> = {}): InvitationRecord => ({
        id, org_id: ORG_A, email, role: 'operator', status: 'pending', invited_by: 'usr_1', created_at: T1, expires_at: T4, responded_at: null, ...extra,
      });
      beforeEach(async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.organizations.create({ id: ORG_B, name: 'Bravo', created_at: T0 });
        for (const id of ['usr_1', 'usr_2']) await store.users.create(user(id));
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_1', role: 'owner', created_at: T0 });
      });

      it('creates a pending invitation for any e-mail (an account or not), and refuses one for a member\'s e-mail', async () => {
        expect(await store.invitations.create(invitation('inv_1', 'usr_2@example.com'))).toBe('created');
        expect(await store.invitations.create(invitation('inv_2', 'nobody@example.com'))).toBe('created');
        expect(await store.invitations.create(invitation('inv_3', 'usr_1@example.com'))).toBe('already_member');
        expect(await store.invitations.get('inv_1')).toEqual(invitation('inv_1', 'usr_2@example.com'));
        expect(await store.invitations.get('inv_3')).toBeUndefined();
        expect(await store.invitations.get('inv_missing')).toBeUndefined();
      });

      it('inviting the same e-mail to the same organization again replaces the pending invitation; other organizations keep theirs', async () => {
        await store.invitations.create(invitation('inv_1', 'usr_2@example.com'));
        await store.invitations.create(invitation('inv_b', 'usr_2@example.com', { org_id: ORG_B }));
        expect(await store.invitations.create(invitation('inv_2', 'usr_2@example.com', { role: 'admin', created_at: T2 }))).toBe('created');
        expect(await store.invitations.get('inv_1')).toMatchObject({ status: 'replaced', responded_at: T2 });
        expect((await store.invitations.pendingFor('usr_2@example.com', T2, 10)).map((i) => [i.id, i.org_id, i.org_name, i.role])).toEqual([
          ['inv_2', ORG_A, 'Acme', 'admin'], ['inv_b', ORG_B, 'Bravo', 'operator'],
        ]);
      });

      it('pendingFor lists the e-mail\'s pending invitations that expire after `at`, newest first, at most `limit`', async () => {
        await store.invitations.create(invitation('inv_1', 'usr_2@example.com', { created_at: T1, expires_at: T3 }));
        await store.invitations.create(invitation('inv_2', 'usr_2@example.com', { org_id: ORG_B, created_at: T2, expires_at: T9 }));
        await store.invitations.create(invitation('inv_3', 'other@example.com'));
        expect((await store.invitations.pendingFor('usr_2@example.com', T2, 10)).map((i) => i.id)).toEqual(['inv_2', 'inv_1']);
        expect((await store.invitations.pendingFor('usr_2@example.com', T2, 1)).map((i) => i.id)).toEqual(['inv_2']);
        expect((await store.invitations.pendingFor('usr_2@example.com', T3, 10)).map((i) => i.id)).toEqual(['inv_2']);
        expect(await store.invitations.pendingFor('nobody@example.com', T0, 10)).toEqual([]);
      });

      it('accept makes the invitee a member with the role, once; only for their e-mail, while pending and not expired', async () => {
        await store.invitations.create(invitation('inv_1', 'usr_2@example.com', { role: 'admin' }));
        expect(await store.invitations.accept('inv_1', 'usr_1@example.com', 'usr_1', T2)).toEqual({ status: 'not_found' });
        expect(await store.invitations.accept('inv_1', 'usr_2@example.com', 'usr_2', T4)).toEqual({ status: 'not_found' }); // expired at T4
        expect(await store.invitations.accept('inv_1', 'usr_2@example.com', 'usr_2', T2)).toEqual({ status: 'accepted', organization: { id: ORG_A, name: 'Acme', role: 'admin' } });
        expect(await store.memberships.get(ORG_A, 'usr_2')).toEqual({ org_id: ORG_A, user_id: 'usr_2', role: 'admin', created_at: T2, email: 'usr_2@example.com' });
        expect(await store.invitations.get('inv_1')).toMatchObject({ status: 'accepted', responded_at: T2 });
        expect(await store.invitations.accept('inv_1', 'usr_2@example.com', 'usr_2', T3)).toEqual({ status: 'not_found' });
        expect(await store.invitations.accept('inv_missing', 'usr_2@example.com', 'usr_2', T2)).toEqual({ status: 'not_found' });
        expect(await store.invitations.pendingFor('usr_2@example.com', T2, 10)).toEqual([]);
      });

      it('accepting as a member already (added meanwhile) keeps the role they have', async () => {
        await store.invitations.create(invitation('inv_1', 'usr_2@example.com', { role: 'admin' }));
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_2', role: 'operator', created_at: T2 });
        expect(await store.invitations.accept('inv_1', 'usr_2@example.com', 'usr_2', T3)).toEqual({ status: 'accepted', organization: { id: ORG_A, name: 'Acme', role: 'operator' } });
      });

      it('decline ends a pending invitation of that e-mail; nothing else', async () => {
        await store.invitations.create(invitation('inv_1', 'usr_2@example.com'));
        expect(await store.invitations.decline('inv_1', 'usr_1@example.com', T2)).toBe(false);
        expect(await store.invitations.decline('inv_1', 'usr_2@example.com', T5)).toBe(false); // expired
        expect(await store.invitations.decline('inv_1', 'usr_2@example.com', T2)).toBe(true);
        expect(await store.invitations.get('inv_1')).toMatchObject({ status: 'declined', responded_at: T2 });
        expect(await store.invitations.decline('inv_1', 'usr_2@example.com', T2)).toBe(false);
        expect(await store.invitations.accept('inv_1', 'usr_2@example.com', 'usr_2', T2)).toEqual({ status: 'not_found' });
        expect(await store.memberships.check(ORG_A, 'usr_2')).toEqual({ status: 'not_a_member', access_valid_after: null });
      });

      it('of an accept and a decline at once, exactly one wins', async () => {
        await store.invitations.create(invitation('inv_1', 'usr_2@example.com'));
        const [accepted, declined] = await Promise.all([
          store.invitations.accept('inv_1', 'usr_2@example.com', 'usr_2', T2), store.invitations.decline('inv_1', 'usr_2@example.com', T2),
        ]);
        expect([accepted.status === 'accepted', declined].filter(Boolean)).toHaveLength(1);
      });
    });

    describe('refresh tokens', () => {
      beforeEach(async () => {
        await store.users.create(user('usr_1'));
        await store.refreshTokens.startFamily(family('fam_1'), refreshToken('rt-1', 'fam_1'));
      });
      const next = (hash: string, expires = T4, created = T1) => ({ token_hash: hash, created_at: created, expires_at: expires });

      it('familyIdOf names the family of a live or spent token, undefined for an unknown one', async () => {
        expect(await store.refreshTokens.familyIdOf('rt-1')).toBe('fam_1');
        await store.refreshTokens.rotate('rt-1', next('rt-2'), T1);
        expect(await store.refreshTokens.familyIdOf('rt-1')).toBe('fam_1');
        expect(await store.refreshTokens.familyIdOf('rt-2')).toBe('fam_1');
        expect(await store.refreshTokens.familyIdOf('rt-missing')).toBeUndefined();
      });

      it('rotates a live token: it is spent, the next one is live, the family is returned', async () => {
        expect(await store.refreshTokens.rotate('rt-1', next('rt-2'), T1)).toEqual({
          status: 'rotated', family: family('fam_1'), token: { token_hash: 'rt-2', family_id: 'fam_1', created_at: T1, expires_at: T4, used_at: null },
        });
        expect(await store.refreshTokens.rotate('rt-2', next('rt-3', T4, T2), T2)).toMatchObject({ status: 'rotated', token: { token_hash: 'rt-3' } });
      });

      it('clamps the next token\'s expiry to the family\'s absolute expiry', async () => {
        await store.refreshTokens.startFamily(family('fam_2', 'usr_1', T3), refreshToken('rt-a', 'fam_2', T2));
        expect(await store.refreshTokens.rotate('rt-a', next('rt-b', T9), T1)).toMatchObject({ status: 'rotated', token: { expires_at: T3 } });
        expect(await store.refreshTokens.rotate('rt-b', next('rt-c', T9), T3)).toEqual({ status: 'expired' });
      });

      it('a spent token presented again revokes the whole family (RFC 9700 4.14.2)', async () => {
        await store.refreshTokens.rotate('rt-1', next('rt-2'), T1);
        expect(await store.refreshTokens.rotate('rt-1', next('rt-x'), T2)).toEqual({ status: 'reused', family_id: 'fam_1' });
        expect(await store.refreshTokens.getFamily('fam_1')).toEqual({ ...family('fam_1'), revoked_at: T2, revoked_reason: 'reuse' });
        expect(await store.refreshTokens.rotate('rt-2', next('rt-y'), T2)).toEqual({ status: 'revoked' });
        expect(await store.refreshTokens.rotate('rt-1', next('rt-z'), T3)).toEqual({ status: 'revoked' });
      });

      it('refuses an unknown token and an idle-expired one', async () => {
        expect(await store.refreshTokens.rotate('rt-missing', next('rt-2'), T1)).toEqual({ status: 'unknown' });
        expect(await store.refreshTokens.rotate('rt-1', next('rt-2'), T4)).toEqual({ status: 'expired' });
        expect(await store.refreshTokens.getFamily('fam_1')).toEqual(family('fam_1'));
      });

      it('two concurrent exchanges of one token: exactly one is rotated, the other revokes the family', async () => {
        const results = await Promise.all([
          store.refreshTokens.rotate('rt-1', next('rt-a'), T1),
          store.refreshTokens.rotate('rt-1', next('rt-b'), T1),
        ]);
        expect(results.map((r) => r.status).sort()).toEqual(['reused', 'rotated']);
        // The winner's next token died with the family; the loser's was never stored.
        const after = await Promise.all([store.refreshTokens.rotate('rt-a', next('rt-c'), T2), store.refreshTokens.rotate('rt-b', next('rt-d'), T2)]);
        expect(after.map((r) => r.status).sort()).toEqual(['revoked', 'unknown']);
      });

      it('revokeFamilyOf ends the session from any of its tokens, once', async () => {
        await store.refreshTokens.rotate('rt-1', next('rt-2'), T1);
        expect(await store.refreshTokens.revokeFamilyOf('rt-1', 'logout', T2)).toBe(true);
        expect(await store.refreshTokens.revokeFamilyOf('rt-2', 'logout', T3)).toBe(false);
        expect(await store.refreshTokens.revokeFamilyOf('rt-missing', 'logout', T3)).toBe(false);
        expect(await store.refreshTokens.getFamily('fam_1')).toEqual({ ...family('fam_1'), revoked_at: T2, revoked_reason: 'logout' });
        expect(await store.refreshTokens.rotate('rt-2', next('rt-3'), T3)).toEqual({ status: 'revoked' });
      });

      it('revokeAllOf ends every live session of one person only', async () => {
        await store.users.create(user('usr_2'));
        await store.refreshTokens.startFamily(family('fam_2'), refreshToken('rt-b', 'fam_2'));
        await store.refreshTokens.startFamily(family('fam_3', 'usr_2'), refreshToken('rt-c', 'fam_3'));
        expect(await store.refreshTokens.revokeAllOf('usr_1', 'password', T1)).toBe(2);
        expect(await store.refreshTokens.revokeAllOf('usr_1', 'password', T2)).toBe(0);
        expect(await store.refreshTokens.rotate('rt-b', next('rt-d'), T2)).toEqual({ status: 'revoked' });
        expect(await store.refreshTokens.rotate('rt-c', next('rt-e'), T2)).toMatchObject({ status: 'rotated' });
      });

      it('a revocation tells this process of its commit (its sockets close at once); a rotation, a refusal or a revocation of nothing does not', async () => {
        const eventually = (check: () => void) => vi.waitFor(check, { timeout: 5000, interval: 20 });
        let calls = 0;
        const off = store.feed.onAppend(() => { calls++; });
        try {
          await store.refreshTokens.rotate('rt-1', next('rt-2'), T1);
          expect(await store.refreshTokens.rotate('rt-missing', next('rt-z'), T1)).toEqual({ status: 'unknown' });
          expect(await store.refreshTokens.revokeAllOf('usr_missing', 'password', T1)).toBe(0);
          expect(await store.refreshTokens.revokeFamilyOf('rt-missing', 'logout', T1)).toBe(false);
          // A spent token presented again: the family is revoked, one commit with an entry.
          expect(await store.refreshTokens.rotate('rt-1', next('rt-x'), T2)).toMatchObject({ status: 'reused' });
          await eventually(() => expect(calls).toBe(1));
          expect(await store.refreshTokens.rotate('rt-1', next('rt-y'), T2)).toEqual({ status: 'revoked' });
          await store.refreshTokens.startFamily(family('fam_2'), refreshToken('rt-a', 'fam_2'));
          expect(await store.refreshTokens.revokeFamilyOf('rt-a', 'logout', T2)).toBe(true);
          await eventually(() => expect(calls).toBe(2));
          await store.refreshTokens.startFamily(family('fam_3'), refreshToken('rt-b', 'fam_3'));
          expect(await store.refreshTokens.revokeAllOf('usr_1', 'password', T3)).toBe(1);
          await eventually(() => expect(calls).toBe(3));
        } finally {
          off();
        }
      });

      it('prune deletes families past their absolute expiry, with their tokens', async () => {
        await store.refreshTokens.startFamily(family('fam_old', 'usr_1', T2), refreshToken('rt-old', 'fam_old', T1));
        expect(await store.refreshTokens.prune(T3)).toBe(1);
        expect(await store.refreshTokens.getFamily('fam_old')).toBeUndefined();
        expect(await store.refreshTokens.rotate('rt-old', next('rt-x'), T0)).toEqual({ status: 'unknown' });
        expect(await store.refreshTokens.getFamily('fam_1')).toEqual(family('fam_1'));
      });
    });

    describe('signing keys', () => {
      it('has no active key at first; ensureActive stores the candidate once and then returns the existing key', async () => {
        expect(await store.signingKeys.active()).toBeUndefined();
        expect(await store.signingKeys.ensureActive(signingKey('kid_1'))).toEqual(signingKey('kid_1'));
        expect(await store.signingKeys.ensureActive(signingKey('kid_2'))).toEqual(signingKey('kid_1'));
        expect(await store.signingKeys.active()).toEqual(signingKey('kid_1'));
        expect(await store.signingKeys.verifiable(T0)).toEqual([signingKey('kid_1')]);
      });

      it('two concurrent ensureActive calls agree on one key', async () => {
        const [a, b] = await Promise.all([store.signingKeys.ensureActive(signingKey('kid_a')), store.signingKeys.ensureActive(signingKey('kid_b'))]);
        expect(a).toEqual(b);
        expect(['kid_a', 'kid_b']).toContain(a.kid);
        expect(await store.signingKeys.verifiable(T0)).toEqual([a]);
      });

      it('rotate retires the active key and activates the next; retired keys verify until their window ends', async () => {
        await store.signingKeys.ensureActive(signingKey('kid_1'));
        expect(await store.signingKeys.rotate(signingKey('kid_2', T1), T1)).toEqual(['kid_1']);
        expect(await store.signingKeys.active()).toEqual(signingKey('kid_2', T1));
        expect(await store.signingKeys.rotate(signingKey('kid_3', T3), T3)).toEqual(['kid_2']);
        expect((await store.signingKeys.verifiable(T0)).map((k) => [k.kid, k.retired_at])).toEqual([['kid_3', null], ['kid_2', T3], ['kid_1', T1]]);
        expect((await store.signingKeys.verifiable(T1)).map((k) => k.kid)).toEqual(['kid_3', 'kid_2']);
        expect((await store.signingKeys.verifiable(T3)).map((k) => k.kid)).toEqual(['kid_3']);
      });
    });

    describe('socket tickets', () => {
      beforeEach(async () => {
        await store.users.create(user('usr_1'));
        await store.socketTickets.create(ticket('wst-1', T2));
      });

      it('is consumed once, before it expires', async () => {
        expect(await store.socketTickets.consume('wst-1', T1)).toEqual({ ...ticket('wst-1', T2), used_at: T1 });
        expect(await store.socketTickets.consume('wst-1', T1)).toBeUndefined();
        await store.socketTickets.create(ticket('wst-2', T2));
        expect(await store.socketTickets.consume('wst-2', T2)).toBeUndefined();
        expect(await store.socketTickets.consume('wst-missing', T0)).toBeUndefined();
      });

      it('two concurrent consumptions: exactly one gets the ticket', async () => {
        const results = await Promise.all([store.socketTickets.consume('wst-1', T1), store.socketTickets.consume('wst-1', T1)]);
        expect(results.filter((r) => r !== undefined).map((r) => r.ticket_hash)).toEqual(['wst-1']);
      });

      it('keeps the sign-in a ticket was issued under', async () => {
        await store.socketTickets.create({ ...ticket('wst-s', T2), session_id: 'fam_7' });
        expect(await store.socketTickets.consume('wst-s', T1)).toEqual({ ...ticket('wst-s', T2), session_id: 'fam_7', used_at: T1 });
      });

      it('prune deletes expired tickets only', async () => {
        await store.socketTickets.create(ticket('wst-2', T4));
        expect(await store.socketTickets.prune(T3)).toBe(1);
        expect(await store.socketTickets.consume('wst-2', T3)).toMatchObject({ ticket_hash: 'wst-2' });
      });
    });

    describe('tool runs', () => {
      const run = (id: string, over: Partial<ToolRunRecord> = {}): ToolRunRecord => ({
        id, org_id: ORG_A, agent_id: 'agt_1', conversation_id: 'conv_1', turn_id: 'turn_1', tool_call_id: `call_${id}`,
        name: 'get_weather', kind: 'http', status: 'succeeded', http_status: 200, error: null, duration_ms: 12,
        response_bytes: 345, created_at: T1, ...over,
      });

      it('records runs and lists a conversation\'s runs of the organization, oldest first, as stored', async () => {
        const failed = run('tr_2', { status: 'failed', http_status: null, error: 'the endpoint did not answer within 100 ms', created_at: T2, response_bytes: 0 });
        const invalid = run('tr_1', { status: 'failed', http_status: null, error: 'invalid arguments: /city must be string', created_at: T2 });
        await store.toolRuns.record(failed);
        await store.toolRuns.record(run('tr_0'));
        await store.toolRuns.record(invalid);
        await store.toolRuns.record(run('tr_9', { conversation_id: 'conv_2' }));
        await store.toolRuns.record(run('tr_8', { org_id: ORG_B }));
        await store.toolRuns.record(run('tr_7', { kind: 'builtin', name: 'search_knowledge', http_status: null, created_at: T3 }));
        expect(await store.toolRuns.listForConversation(ORG_A, 'conv_1')).toEqual([
          run('tr_0'), invalid, failed, run('tr_7', { kind: 'builtin', name: 'search_knowledge', http_status: null, created_at: T3 }),
        ]);
        expect((await store.toolRuns.listForConversation(ORG_A, 'conv_1', 2)).map((r) => r.id)).toEqual(['tr_0', 'tr_1']);
        expect(await store.toolRuns.listForConversation(ORG_B, 'conv_2')).toEqual([]);
      });

      it('refuses a second run with the same id, storing neither it nor its events', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1', ORG_A, ['tool.run']));
        await store.toolRuns.record(run('tr_1'), [outboxEvent('evt_1', 'tool.run')]);
        await expect(store.toolRuns.record(run('tr_1', { name: 'other' }), [outboxEvent('evt_2', 'tool.run')])).rejects.toThrow();
        expect((await store.toolRuns.listForConversation(ORG_A, 'conv_1')).map((r) => r.name)).toEqual(['get_weather']);
        expect(await store.webhooks.getEvent(ORG_A, 'evt_2')).toBeUndefined();
        // The first run's event is stored with it, with a delivery for the subscribed endpoint.
        expect(await store.webhooks.getEvent(ORG_A, 'evt_1')).toEqual(outboxEvent('evt_1', 'tool.run'));
        expect((await store.webhooks.listDeliveries(ORG_A, 'whe_1', { limit: 5 })).data.map((d) => [d.event_id, d.status])).toEqual([['evt_1', 'pending']]);
      });
    });

    describe('agents', () => {
      it('reads back every field; another organization sees undefined', async () => {
        const a = { ...agent('agt_1'), published: true, public_key: 'pk_1' };
        await store.agents.create(a);
        expect(await store.agents.get(ORG_A, 'agt_1')).toEqual(a);
        expect(await store.agents.get(ORG_B, 'agt_1')).toBeUndefined();
        expect(await store.agents.get(ORG_A, 'agt_missing')).toBeUndefined();
      });

      it('lists newest first (descending id), scoped to the organization', async () => {
        for (const id of ['agt_2', 'agt_1', 'agt_3']) await store.agents.create(agent(id));
        await store.agents.create(agent('agt_9', ORG_B));
        expect(await store.agents.list(ORG_A, { limit: 20 }).then(ids)).toEqual(['agt_3', 'agt_2', 'agt_1']);
        expect(await store.agents.list(ORG_B, { limit: 20 }).then(ids)).toEqual(['agt_9']);
        expect(await store.agents.list('org_empty', { limit: 20 })).toEqual({ data: [], has_more: false });
      });

      it('pages with limit, has_more and the after cursor', async () => {
        for (const id of ['agt_1', 'agt_2', 'agt_3', 'agt_4', 'agt_5']) await store.agents.create(agent(id));
        const p1 = await store.agents.list(ORG_A, { limit: 2 });
        expect([ids(p1), p1.has_more]).toEqual([['agt_5', 'agt_4'], true]);
        const p2 = await store.agents.list(ORG_A, { limit: 2, after: 'agt_4' });
        expect([ids(p2), p2.has_more]).toEqual([['agt_3', 'agt_2'], true]);
        const p3 = await store.agents.list(ORG_A, { limit: 2, after: 'agt_2' });
        expect([ids(p3), p3.has_more]).toEqual([['agt_1'], false]);
        expect(await store.agents.list(ORG_A, { limit: 2, after: 'agt_1' })).toEqual({ data: [], has_more: false });
        const exact = await store.agents.list(ORG_A, { limit: 5 });
        expect([ids(exact).length, exact.has_more]).toEqual([5, false]);
      });

      it('refuses a cursor that names no agent of the organization with a 400 AppError', async () => {
        await store.agents.create(agent('agt_1'));
        await store.agents.create(agent('agt_9', ORG_B));
        await expect(store.agents.list(ORG_A, { limit: 2, after: 'agt_missing' })).rejects.toBeInstanceOf(AppError);
        await expect(store.agents.list(ORG_A, { limit: 2, after: 'agt_missing' })).rejects.toMatchObject(unknownCursor('agent'));
        await expect(store.agents.list(ORG_A, { limit: 2, after: 'agt_9' })).rejects.toMatchObject(unknownCursor('agent'));
      });

      it('updates only the patched fields and returns the new record; a missing or foreign agent is undefined', async () => {
        await store.agents.create(agent('agt_1'));
        const updated = await store.agents.update(ORG_A, 'agt_1', { name: 'Renamed', knowledge_base_ids: ['kb_2', 'kb_3'] }, T2);
        const expected = { ...agent('agt_1'), name: 'Renamed', knowledge_base_ids: ['kb_2', 'kb_3'], updated_at: T2 };
        expect(updated).toEqual(expected);
        expect(await store.agents.get(ORG_A, 'agt_1')).toEqual(expected);
        expect(await store.agents.update(ORG_A, 'agt_missing', { name: 'x' }, T2)).toBeUndefined();
        expect(await store.agents.update(ORG_B, 'agt_1', { name: 'x' }, T2)).toBeUndefined();
        expect((await store.agents.get(ORG_A, 'agt_1'))?.name).toBe('Renamed');
      });

      it('keeps allowed_origins and patches them like any field', async () => {
        await store.agents.create({ ...agent('agt_1'), allowed_origins: ['https://shop.example', 'http://localhost:3000'] });
        expect((await store.agents.get(ORG_A, 'agt_1'))?.allowed_origins).toEqual(['https://shop.example', 'http://localhost:3000']);
        expect((await store.agents.update(ORG_A, 'agt_1', { allowed_origins: ['*'] }, T2))?.allowed_origins).toEqual(['*']);
        expect((await store.agents.get(ORG_A, 'agt_1'))?.allowed_origins).toEqual(['*']);
      });

      it('publishes and unpublishes: the public key finds the agent in any organization until it is unpublished', async () => {
        await store.agents.create(agent('agt_1'));
        await store.agents.create(agent('agt_9', ORG_B));
        const published = await store.agents.setPublicKey(ORG_B, 'agt_9', 'pk_nine', T2);
        expect(published).toEqual({ ...agent('agt_9', ORG_B), published: true, public_key: 'pk_nine', updated_at: T2 });
        expect(await store.agents.findByPublicKey('pk_nine')).toEqual(published);
        expect(await store.agents.findByPublicKey('pk_missing')).toBeUndefined();
        expect(await store.agents.setPublicKey(ORG_A, 'agt_9', 'pk_other', T2)).toBeUndefined();
        expect(await store.agents.setPublicKey(ORG_B, 'agt_9', null, T3)).toEqual({ ...agent('agt_9', ORG_B), published: false, public_key: null, updated_at: T3 });
        expect(await store.agents.findByPublicKey('pk_nine')).toBeUndefined();
      });

      it('orgOf names the organization of any agent, undefined for an unknown one', async () => {
        await store.agents.create(agent('agt_1'));
        await store.agents.create(agent('agt_9', ORG_B));
        expect(await store.agents.orgOf('agt_9')).toBe(ORG_B);
        expect(await store.agents.orgOf('agt_1')).toBe(ORG_A);
        expect(await store.agents.orgOf('agt_missing')).toBeUndefined();
      });

      it('findByName finds an organization\'s agents by exact name (case and spaces count), oldest first', async () => {
        await store.agents.create({ ...agent('agt_2', ORG_A, 'Support'), created_at: T1 });
        await store.agents.create({ ...agent('agt_1', ORG_A, 'Support'), created_at: T2 });
        await store.agents.create(agent('agt_3', ORG_A, 'support'));
        await store.agents.create(agent('agt_4', ORG_A, 'Support '));
        await store.agents.create(agent('agt_9', ORG_B, 'Support'));
        expect((await store.agents.findByName(ORG_A, 'Support')).map((a) => a.id)).toEqual(['agt_2', 'agt_1']);
        expect(await store.agents.findByName(ORG_A, 'support')).toEqual([agent('agt_3', ORG_A, 'support')]);
        expect((await store.agents.findByName(ORG_B, 'Support')).map((a) => a.id)).toEqual(['agt_9']);
        expect(await store.agents.findByName(ORG_A, 'Suppor')).toEqual([]);
      });

      it('deletes once: the second delete and a foreign delete are false', async () => {
        await store.agents.create(agent('agt_1'));
        expect(await store.agents.delete(ORG_B, 'agt_1')).toBe(false);
        expect(await store.agents.delete(ORG_A, 'agt_1')).toBe(true);
        expect(await store.agents.delete(ORG_A, 'agt_1')).toBe(false);
        expect(await store.agents.get(ORG_A, 'agt_1')).toBeUndefined();
      });
    });

    describe('knowledge bases and documents', () => {
      beforeEach(async () => {
        await store.knowledge.createBase(base('kb_1'));
        await store.knowledge.createBase(base('kb_2'));
        await store.knowledge.createBase(base('kb_9', ORG_B));
      });

      it('reads back a base; another organization sees undefined', async () => {
        expect(await store.knowledge.getBase(ORG_A, 'kb_1')).toEqual({ id: 'kb_1', org_id: ORG_A, name: 'Base kb_1', created_at: T0 });
        expect(await store.knowledge.getBase(ORG_B, 'kb_1')).toBeUndefined();
      });

      it('lists bases newest first with pages; an unknown or foreign cursor is a 400', async () => {
        await store.knowledge.createBase(base('kb_3'));
        const p1 = await store.knowledge.listBases(ORG_A, { limit: 2 });
        expect([ids(p1), p1.has_more]).toEqual([['kb_3', 'kb_2'], true]);
        const p2 = await store.knowledge.listBases(ORG_A, { limit: 2, after: 'kb_2' });
        expect([ids(p2), p2.has_more]).toEqual([['kb_1'], false]);
        await expect(store.knowledge.listBases(ORG_A, { limit: 2, after: 'kb_missing' })).rejects.toMatchObject(unknownCursor('knowledge base'));
        await expect(store.knowledge.listBases(ORG_A, { limit: 2, after: 'kb_9' })).rejects.toMatchObject(unknownCursor('knowledge base'));
      });

      it('reads back a document only within its organization and knowledge base', async () => {
        const d = doc('doc_1', 'kb_1');
        await store.knowledge.createDocument(d, 'hello');
        expect(await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_1')).toEqual(d);
        expect(await store.knowledge.getDocument(ORG_A, 'kb_2', 'doc_1')).toBeUndefined();
        expect(await store.knowledge.getDocument(ORG_B, 'kb_1', 'doc_1')).toBeUndefined();
      });

      it('findBases finds bases by exact id or name, across organizations or within one, oldest first', async () => {
        await store.knowledge.createBase({ ...base('kb_f1'), name: 'Handbook', created_at: T0 });
        await store.knowledge.createBase({ ...base('kb_f2'), name: 'Handbook', created_at: T1 });
        await store.knowledge.createBase({ ...base('kb_f9', ORG_B), name: 'Handbook', created_at: T2 });
        await store.knowledge.createBase({ ...base('kb_f3'), name: 'kb_f9', created_at: T3 });
        const ids = (list: Array<{ id: string }>) => list.map((b) => b.id);
        expect(ids(await store.knowledge.findBases('Handbook'))).toEqual(['kb_f1', 'kb_f2', 'kb_f9']);
        expect(ids(await store.knowledge.findBases('Handbook', ORG_B))).toEqual(['kb_f9']);
        expect(ids(await store.knowledge.findBases('kb_f9'))).toEqual(['kb_f9', 'kb_f3']);
        expect(ids(await store.knowledge.findBases('kb_f9', ORG_A))).toEqual(['kb_f3']);
        expect(await store.knowledge.findBases('handbook')).toEqual([]);
        expect(await store.knowledge.findBases('kb_f1', ORG_B)).toEqual([]);
        expect(await store.knowledge.findBases('kb_f1')).toEqual([{ id: 'kb_f1', org_id: ORG_A, name: 'Handbook', created_at: T0 }]);
      });

      it('lists a base\'s documents newest first with pages; a cursor of another base is a 400', async () => {
        for (const id of ['doc_1', 'doc_2', 'doc_3']) await store.knowledge.createDocument(doc(id, 'kb_1'), 'x');
        await store.knowledge.createDocument(doc('doc_4', 'kb_2'), 'x');
        const p1 = await store.knowledge.listDocuments(ORG_A, 'kb_1', { limit: 2 });
        expect([ids(p1), p1.has_more]).toEqual([['doc_3', 'doc_2'], true]);
        const p2 = await store.knowledge.listDocuments(ORG_A, 'kb_1', { limit: 2, after: 'doc_2' });
        expect([ids(p2), p2.has_more]).toEqual([['doc_1'], false]);
        expect(await store.knowledge.listDocuments(ORG_B, 'kb_1', { limit: 2 })).toEqual({ data: [], has_more: false });
        await expect(store.knowledge.listDocuments(ORG_A, 'kb_1', { limit: 2, after: 'doc_4' })).rejects.toMatchObject(unknownCursor('document'));
        await expect(store.knowledge.listDocuments(ORG_B, 'kb_1', { limit: 2, after: 'doc_1' })).rejects.toMatchObject(unknownCursor('document'));
        await expect(store.knowledge.listDocuments(ORG_A, 'kb_1', { limit: 2, after: 'doc_missing' })).rejects.toMatchObject(unknownCursor('document'));
      });

      it('keeps the upload with the document: pendingDocuments lists them oldest first across organizations, documentSource returns text as a string and bytes as bytes', async () => {
        expect(await store.knowledge.createDocument(doc('doc_3', 'kb_1', ORG_A, T2), new Uint8Array([0, 255, 7]))).toBe(true);
        await store.knowledge.createDocument(doc('doc_1', 'kb_9', ORG_B, T0), 'héllo wörld');
        await store.knowledge.createDocument(doc('doc_2', 'kb_1', ORG_A, T1), '');
        await store.knowledge.createDocument(doc('doc_4', 'kb_1', ORG_A, T3), new Uint8Array([]));
        const pending = await store.knowledge.pendingDocuments();
        expect(pending.map((p) => p.id)).toEqual(['doc_1', 'doc_2', 'doc_3', 'doc_4']);
        expect(pending[0]).toEqual(doc('doc_1', 'kb_9', ORG_B, T0));
        expect(await store.knowledge.documentSource('doc_1')).toBe('héllo wörld');
        expect(await store.knowledge.documentSource('doc_2')).toBe('');
        const three = await store.knowledge.documentSource('doc_3');
        expect(three).toBeInstanceOf(Uint8Array);
        expect(Array.from(three as Uint8Array)).toEqual([0, 255, 7]);
        const four = await store.knowledge.documentSource('doc_4');
        expect(four).toBeInstanceOf(Uint8Array);
        expect(Array.from(four as Uint8Array)).toEqual([]);
        expect(await store.knowledge.documentSource('doc_missing')).toBeUndefined();
      });

      it('createDocument with transfer stores the bytes and may detach the caller\'s whole-buffer array', async () => {
        const bytes = new Uint8Array([9, 8, 7, 6]);
        expect(await store.knowledge.createDocument(doc('doc_1', 'kb_1'), bytes, { transfer: true })).toBe(true);
        expect(Array.from(await store.knowledge.documentSource('doc_1') as Uint8Array)).toEqual([9, 8, 7, 6]);
      });

      it('createDocument with maxProcessing stores only while the organization has fewer documents processing', async () => {
        expect(await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'a', { maxProcessing: 2 })).toBe(true);
        expect(await store.knowledge.createDocument(doc('doc_2', 'kb_1'), 'b', { maxProcessing: 2 })).toBe(true);
        expect(await store.knowledge.createDocument(doc('doc_3', 'kb_1'), 'c', { maxProcessing: 2 })).toBe(false);
        expect(await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_3')).toBeUndefined();
        expect(await store.knowledge.documentSource('doc_3')).toBeUndefined();
        // Another organization has its own count; without the option there is no bound.
        expect(await store.knowledge.createDocument(doc('doc_4', 'kb_9', ORG_B), 'd', { maxProcessing: 2 })).toBe(true);
        expect(await store.knowledge.createDocument(doc('doc_5', 'kb_1'), 'e')).toBe(true);
        // Ready and failed documents no longer count.
        await store.knowledge.completeDocument('doc_1', [chunk(0, 'alpha')], T1);
        await store.knowledge.failDocument('doc_2', { code: 'invalid_document', message: 'bad' }, T1);
        await store.knowledge.failDocument('doc_5', { code: 'invalid_document', message: 'bad' }, T1);
        expect(await store.knowledge.createDocument(doc('doc_6', 'kb_1'), 'f', { maxProcessing: 2 })).toBe(true);
        expect(await store.knowledge.createDocument(doc('doc_7', 'kb_1'), 'g', { maxProcessing: 2 })).toBe(true);
        expect(await store.knowledge.createDocument(doc('doc_8', 'kb_1'), 'h', { maxProcessing: 2 })).toBe(false);
      });

      it('claimPending takes the documents of no owner, of a dead owner, of an unregistered owner; never a living neighbour\'s', async () => {
        const at = T0;
        await store.processes.register({ id: 'proc_alive', url: 'http://127.0.0.1:1', started_at: at, heartbeat_at: at, draining_at: null });
        await store.processes.register({ id: 'proc_dead', url: 'http://127.0.0.1:2', started_at: at, heartbeat_at: at, draining_at: null });
        await store.processes.register({ id: 'proc_me', url: 'http://127.0.0.1:3', started_at: at, heartbeat_at: at, draining_at: null });
        await store.processes.register({ id: 'proc_other', url: 'http://127.0.0.1:4', started_at: at, heartbeat_at: at, draining_at: null });
        await store.knowledge.createDocument(doc('doc_1', 'kb_1', ORG_A, T0), 'a');
        await store.knowledge.createDocument(doc('doc_2', 'kb_1', ORG_A, T1), 'b', { owner: 'proc_alive' });
        await store.knowledge.createDocument(doc('doc_3', 'kb_1', ORG_A, T2), 'c', { owner: 'proc_dead' });
        await store.knowledge.createDocument(doc('doc_4', 'kb_1', ORG_A, T3), 'd', { owner: 'proc_gone' });
        await store.knowledge.createDocument(doc('doc_5', 'kb_1', ORG_A, T4), 'e', { owner: 'proc_me' });
        await store.knowledge.createDocument(doc('doc_6', 'kb_1', ORG_A, T4), 'f', { owner: 'proc_gone' });
        expect(await store.knowledge.completeDocument('doc_6', [chunk(0, 'done')], T4)).toBe(true);
        // proc_dead is still registered: only named as dead is it taken; proc_gone is not registered.
        expect((await store.knowledge.claimPending('proc_me', [])).map((d) => d.id)).toEqual(['doc_1', 'doc_4']);
        expect((await store.knowledge.claimPending('proc_me', ['proc_dead'])).map((d) => d.id)).toEqual(['doc_3']);
        expect(await store.knowledge.claimPending('proc_other', [])).toEqual([]);
        expect((await store.knowledge.pendingDocuments()).map((d) => d.id)).toEqual(['doc_1', 'doc_2', 'doc_3', 'doc_4', 'doc_5']);
      });

      it('pendingDocuments leaves out ready, failed and deleted documents', async () => {
        for (const id of ['doc_1', 'doc_2', 'doc_3', 'doc_4']) await store.knowledge.createDocument(doc(id, 'kb_1'), id);
        expect(await store.knowledge.completeDocument('doc_1', [chunk(0, 'alpha')], T1)).toBe(true);
        await store.knowledge.failDocument('doc_2', { code: 'invalid_document', message: 'could not parse' }, T1);
        expect(await store.knowledge.deleteDocument(ORG_A, 'kb_1', 'doc_3')).toBe(true);
        expect((await store.knowledge.pendingDocuments()).map((p) => p.id)).toEqual(['doc_4']);
        expect(await store.knowledge.documentSource('doc_3')).toBeUndefined();
      });

      it('completeDocument marks the document ready with its chunk count; failDocument records the error and its code', async () => {
        await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'x');
        await store.knowledge.createDocument(doc('doc_2', 'kb_1'), 'x');
        expect(await store.knowledge.completeDocument('doc_1', [chunk(0, 'one'), chunk(1, 'two'), chunk(2, 'three')], T2)).toBe(true);
        await store.knowledge.failDocument('doc_2', { code: 'document_too_large', message: 'document expands to more than 1024 decompressed bytes' }, T3);
        expect(await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_1')).toEqual({ ...doc('doc_1', 'kb_1'), status: 'ready', chunk_count: 3, updated_at: T2 });
        expect(await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_2')).toEqual({
          ...doc('doc_2', 'kb_1'), status: 'failed', error: 'document expands to more than 1024 decompressed bytes', error_code: 'document_too_large', updated_at: T3,
        });
      });

      it('a failed document stored again (completeDocument) loses its error and its code', async () => {
        await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'x');
        await store.knowledge.failDocument('doc_1', { code: 'ingestion_timeout', message: 'took too long' }, T1);
        expect(await store.knowledge.completeDocument('doc_1', [chunk(0, 'one')], T2)).toBe(true);
        expect(await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_1')).toMatchObject({ status: 'ready', error: null, error_code: null, chunk_count: 1 });
      });

      it('completeDocument of a deleted or unknown document is false and stores nothing searchable', async () => {
        await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'x');
        expect(await store.knowledge.deleteDocument(ORG_A, 'kb_1', 'doc_1')).toBe(true);
        expect(await store.knowledge.completeDocument('doc_1', [chunk(0, 'zebra crossing')], T1)).toBe(false);
        expect(await store.knowledge.completeDocument('doc_missing', [chunk(0, 'zebra crossing')], T1)).toBe(false);
        expect(await store.knowledge.search(ORG_A, ['kb_1'], 'zebra', 10)).toEqual([]);
      });

      it('completeDocument again replaces the chunks instead of adding to them', async () => {
        await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'x');
        expect(await store.knowledge.completeDocument('doc_1', [chunk(0, 'walrus one'), chunk(1, 'walrus two')], T1)).toBe(true);
        expect(await store.knowledge.completeDocument('doc_1', [chunk(0, 'walrus three')], T2)).toBe(true);
        const hits = await store.knowledge.search(ORG_A, ['kb_1'], 'walrus', 10);
        expect(hits.map((h) => h.text)).toEqual(['walrus three']);
        expect((await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_1'))?.chunk_count).toBe(1);
      });

      it('deletes once, only within its organization and base, and its chunks leave the search', async () => {
        await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'x');
        await store.knowledge.completeDocument('doc_1', [chunk(0, 'platypus facts')], T1);
        expect(await store.knowledge.deleteDocument(ORG_B, 'kb_1', 'doc_1')).toBe(false);
        expect(await store.knowledge.deleteDocument(ORG_A, 'kb_2', 'doc_1')).toBe(false);
        expect(await store.knowledge.search(ORG_A, ['kb_1'], 'platypus', 10)).toHaveLength(1);
        expect(await store.knowledge.deleteDocument(ORG_A, 'kb_1', 'doc_1')).toBe(true);
        expect(await store.knowledge.deleteDocument(ORG_A, 'kb_1', 'doc_1')).toBe(false);
        expect(await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_1')).toBeUndefined();
        expect(await store.knowledge.search(ORG_A, ['kb_1'], 'platypus', 10)).toEqual([]);
        expect(await store.knowledge.pendingDocuments()).toEqual([]);
      });

      it('baseStats counts documents of any status, chunks of ready ones and upload bytes per base, zeros for an empty or foreign base', async () => {
        await store.knowledge.createDocument({ ...doc('doc_1', 'kb_1'), bytes: 100 }, 'x');
        await store.knowledge.createDocument({ ...doc('doc_2', 'kb_1'), bytes: 20 }, 'x');
        await store.knowledge.createDocument({ ...doc('doc_3', 'kb_1'), bytes: 3 }, 'x');
        await store.knowledge.createDocument({ ...doc('doc_4', 'kb_2'), bytes: 7 }, 'x');
        await store.knowledge.createDocument({ ...doc('doc_9', 'kb_9', ORG_B), bytes: 1000 }, 'x');
        await store.knowledge.completeDocument('doc_1', [chunk(0, 'one'), chunk(1, 'two')], T1);
        await store.knowledge.failDocument('doc_2', { code: 'invalid_document', message: 'broken' }, T1);
        const stats = await store.knowledge.baseStats(ORG_A, ['kb_1', 'kb_2', 'kb_3', 'kb_9']);
        expect(Object.fromEntries(stats)).toEqual({
          kb_1: { document_count: 3, chunk_count: 2, bytes: 123 },
          kb_2: { document_count: 1, chunk_count: 0, bytes: 7 },
          kb_3: { document_count: 0, chunk_count: 0, bytes: 0 },
          kb_9: { document_count: 0, chunk_count: 0, bytes: 0 },
        });
        expect((await store.knowledge.baseStats(ORG_A, [])).size).toBe(0);
      });

      it('deleteBase removes the base with its documents and chunks, only within its organization', async () => {
        await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'x');
        await store.knowledge.completeDocument('doc_1', [chunk(0, 'narwhal tusks')], T1);
        await store.knowledge.createDocument(doc('doc_2', 'kb_1'), 'pending');
        await store.knowledge.createDocument(doc('doc_3', 'kb_2'), 'x');
        await store.knowledge.completeDocument('doc_3', [chunk(0, 'narwhal songs')], T1);
        expect(await store.knowledge.deleteBase(ORG_B, 'kb_1')).toBe(false);
        expect(await store.knowledge.deleteBase(ORG_A, 'kb_9')).toBe(false);
        expect(await store.knowledge.deleteBase(ORG_A, 'kb_1')).toBe(true);
        expect(await store.knowledge.deleteBase(ORG_A, 'kb_1')).toBe(false);
        expect(await store.knowledge.getBase(ORG_A, 'kb_1')).toBeUndefined();
        expect(await store.knowledge.getDocument(ORG_A, 'kb_1', 'doc_1')).toBeUndefined();
        expect((await store.knowledge.pendingDocuments()).map((p) => p.id)).toEqual([]);
        expect((await store.knowledge.search(ORG_A, ['kb_1', 'kb_2'], 'narwhal', 10)).map((h) => h.document_id)).toEqual(['doc_3']);
        expect(await store.knowledge.completeDocument('doc_2', [chunk(0, 'narwhal late')], T2)).toBe(false);
        expect(await store.knowledge.getBase(ORG_B, 'kb_9')).toBeDefined();
      });
    });

    describe('search', () => {
      beforeEach(async () => {
        await store.knowledge.createBase(base('kb_1'));
        await store.knowledge.createBase(base('kb_2'));
        await store.knowledge.createBase(base('kb_9', ORG_B));
        await store.knowledge.createDocument(doc('doc_kangaroo', 'kb_1', ORG_A, T0, 'Marsupials'), 'x');
        await store.knowledge.completeDocument('doc_kangaroo', [
          chunk(0, 'The kangaroo hops. A kangaroo carries its young in a pouch; kangaroo joeys grow there.', 'Kangaroos'),
          chunk(1, 'Koalas sleep most of the day.', 'Koalas'),
        ], T1);
        await store.knowledge.createDocument(doc('doc_zoo', 'kb_1', ORG_A, T0, 'Zoo guide'), 'x');
        await store.knowledge.completeDocument('doc_zoo', [
          chunk(0, 'The zoo has lions, tigers, penguins, otters, a kangaroo and many other animals to visit.', 'Animals'),
        ], T1);
        await store.knowledge.createDocument(doc('doc_other_kb', 'kb_2', ORG_A, T0, 'Elsewhere'), 'x');
        await store.knowledge.completeDocument('doc_other_kb', [chunk(0, 'A kangaroo in another knowledge base.')], T1);
        await store.knowledge.createDocument(doc('doc_other_org', 'kb_9', ORG_B, T0, 'Foreign'), 'x');
        await store.knowledge.completeDocument('doc_other_org', [chunk(0, 'A kangaroo of another organization.')], T1);
      });

      it('returns the best passage first with its document, title, heading and text', async () => {
        const hits = await store.knowledge.search(ORG_A, ['kb_1'], 'Where does a kangaroo keep its young?', 10);
        expect(hits.map((h) => h.document_id)).toEqual(['doc_kangaroo', 'doc_zoo']);
        expect(hits[0]).toMatchObject({
          document_id: 'doc_kangaroo', title: 'Marsupials', heading: 'Kangaroos',
          text: 'The kangaroo hops. A kangaroo carries its young in a pouch; kangaroo joeys grow there.',
        });
        expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
        expect(new Set(hits.map((h) => h.chunk_id)).size).toBe(2);
      });

      it('returns the page a chunk was stored with (PDF), and null for chunks without one', async () => {
        await store.knowledge.createDocument(doc('doc_manual', 'kb_2', ORG_A, T0, 'Manual'), new Uint8Array([37, 80]));
        await store.knowledge.completeDocument('doc_manual', [
          { ord: 0, heading: 'Intro', text: 'The wombat chapter starts here.', page: 1 },
          { ord: 1, heading: 'Intro > Burrows', text: 'A wombat digs burrows with its claws.', page: 4 },
        ], T1);
        const hits = await store.knowledge.search(ORG_A, ['kb_2'], 'wombat burrows claws', 10);
        expect(hits.map((h) => [h.heading, h.page])).toEqual([['Intro > Burrows', 4], ['Intro', 1]]);
        const plain = await store.knowledge.search(ORG_A, ['kb_1'], 'koalas', 10);
        expect(plain.map((h) => [h.heading, h.page])).toEqual([['Koalas', null]]);
      });

      it('searches only the given knowledge bases of the given organization, at most k', async () => {
        expect((await store.knowledge.search(ORG_A, ['kb_1', 'kb_2'], 'kangaroo', 10)).map((h) => h.document_id).sort())
          .toEqual(['doc_kangaroo', 'doc_other_kb', 'doc_zoo']);
        expect((await store.knowledge.search(ORG_A, ['kb_2'], 'kangaroo', 10)).map((h) => h.document_id)).toEqual(['doc_other_kb']);
        expect(await store.knowledge.search(ORG_A, ['kb_9'], 'kangaroo', 10)).toEqual([]);
        expect((await store.knowledge.search(ORG_B, ['kb_9', 'kb_1'], 'kangaroo', 10)).map((h) => h.document_id)).toEqual(['doc_other_org']);
        expect(await store.knowledge.search(ORG_A, ['kb_1'], 'kangaroo', 1)).toHaveLength(1);
        expect(await store.knowledge.search(ORG_A, [], 'kangaroo', 10)).toEqual([]);
      });

      it('returns only chunks of ready documents', async () => {
        await store.knowledge.createDocument(doc('doc_pending', 'kb_1'), 'wombat');
        await store.knowledge.failDocument('doc_kangaroo', { code: 'invalid_document', message: 'reprocessing failed' }, T2);
        expect((await store.knowledge.search(ORG_A, ['kb_1'], 'kangaroo', 10)).map((h) => h.document_id)).toEqual(['doc_zoo']);
        expect(await store.knowledge.search(ORG_A, ['kb_1'], 'wombat', 10)).toEqual([]);
      });

      it('returns [] for a query with no searchable words, and treats search syntax as plain words', async () => {
        expect(await store.knowledge.search(ORG_A, ['kb_1'], '', 10)).toEqual([]);
        expect(await store.knowledge.search(ORG_A, ['kb_1'], '?!  ... ---', 10)).toEqual([]);
        expect(await store.knowledge.search(ORG_A, ['kb_1'], 'the and of', 10)).toEqual([]);
        expect((await store.knowledge.search(ORG_A, ['kb_1'], 'koalas* OR NEAR(sleep', 10)).map((h) => h.heading)).toEqual(['Koalas']);
      });
    });

    describe('vector search', () => {
      const M = 'embed-test';
      const vec = (...xs: number[]) => new Float32Array(xs);
      const emb = (ord: number, text: string, vector: Float32Array, model = M): NewChunk => ({ ord, heading: '', text, embedding: { model, vector } });

      beforeEach(async () => {
        await store.knowledge.createBase(base('kb_1'));
        await store.knowledge.createBase(base('kb_2'));
        await store.knowledge.createBase(base('kb_9', ORG_B));
        await store.knowledge.createDocument(doc('doc_a', 'kb_1', ORG_A, T0, 'Vectors'), 'x');
        await store.knowledge.completeDocument('doc_a', [
          emb(0, 'east', vec(1, 0, 0)),
          emb(1, 'north-east', vec(1, 1, 0)),
          emb(2, 'north', vec(0, 2, 0)),
          emb(3, 'west', vec(-1, 0, 0)),
          { ord: 4, heading: '', text: 'no embedding' },
          emb(5, 'other model', vec(1, 0, 0), 'another-model'),
          emb(6, 'other dimension', vec(1, 0, 0, 0)),
        ], T1);
        await store.knowledge.createDocument(doc('doc_b', 'kb_2', ORG_A, T0, 'Elsewhere'), 'x');
        await store.knowledge.completeDocument('doc_b', [emb(0, 'east in kb_2', vec(1, 0, 0))], T1);
        await store.knowledge.createDocument(doc('doc_c', 'kb_9', ORG_B, T0, 'Foreign'), 'x');
        await store.knowledge.completeDocument('doc_c', [emb(0, 'east of another org', vec(1, 0, 0))], T1);
      });

      it('ranks by cosine similarity (not by length) and skips chunks without an embedding of that model and dimension', async () => {
        const hits = await store.knowledge.vectorSearch(ORG_A, ['kb_1'], M, vec(2, 0.1, 0), 10);
        expect(hits.map((h) => h.text)).toEqual(['east', 'north-east', 'north', 'west']);
        expect(hits[0]).toMatchObject({ document_id: 'doc_a', title: 'Vectors', heading: '', page: null });
        expect(hits[0]!.score).toBeCloseTo(2 / Math.sqrt(4.01), 5);
        expect(hits[1]!.score).toBeCloseTo(2.1 / (Math.sqrt(4.01) * Math.SQRT2), 5);
        expect(hits[3]!.score).toBeCloseTo(-2 / Math.sqrt(4.01), 5);
        expect((await store.knowledge.vectorSearch(ORG_A, ['kb_1'], 'another-model', vec(0, 1, 0), 10)).map((h) => h.text)).toEqual(['other model']);
      });

      it('searches only the given bases of the organization, ready documents only, at most k', async () => {
        expect((await store.knowledge.vectorSearch(ORG_A, ['kb_1', 'kb_2'], M, vec(1, 0, 0), 2)).map((h) => h.text).sort()).toEqual(['east', 'east in kb_2']);
        expect((await store.knowledge.vectorSearch(ORG_A, ['kb_9'], M, vec(1, 0, 0), 10))).toEqual([]);
        expect((await store.knowledge.vectorSearch(ORG_B, ['kb_9', 'kb_1'], M, vec(1, 0, 0), 10)).map((h) => h.text)).toEqual(['east of another org']);
        expect(await store.knowledge.vectorSearch(ORG_A, [], M, vec(1, 0, 0), 10)).toEqual([]);
        expect(await store.knowledge.vectorSearch(ORG_A, ['kb_1'], M, vec(0, 0, 0), 10)).toEqual([]);
        await store.knowledge.failDocument('doc_a', { code: 'invalid_document', message: 'reprocessing failed' }, T2);
        expect(await store.knowledge.vectorSearch(ORG_A, ['kb_1'], M, vec(1, 0, 0), 10)).toEqual([]);
      });

      it('keeps vectors exactly (float32) and drops them with their document', async () => {
        const v = vec(0.1, -3.5e-8, 12345.678);
        await store.knowledge.createDocument(doc('doc_exact', 'kb_2', ORG_A, T0, 'Exact'), 'x');
        await store.knowledge.completeDocument('doc_exact', [emb(0, 'exact', v)], T1);
        const [hit] = await store.knowledge.vectorSearch(ORG_A, ['kb_2'], M, v, 1);
        expect(hit).toMatchObject({ text: 'exact', score: 1 });
        expect(await store.knowledge.deleteDocument(ORG_A, 'kb_2', 'doc_exact')).toBe(true);
        expect((await store.knowledge.vectorSearch(ORG_A, ['kb_2'], M, v, 5)).map((h) => h.text)).toEqual(['east in kb_2']);
      });
    });

    describe('conversations and messages', () => {
      it('reads back a conversation; another organization sees undefined', async () => {
        await store.conversations.create(conversation('conv_1'));
        expect(await store.conversations.get(ORG_A, 'conv_1')).toEqual(conversation('conv_1'));
        expect(await store.conversations.get(ORG_B, 'conv_1')).toBeUndefined();
      });

      it('lists newest first, filtered by agent and status, with pages', async () => {
        await store.conversations.create(conversation('conv_1', ORG_A, 'agt_1'));
        await store.conversations.create(conversation('conv_2', ORG_A, 'agt_2'));
        await store.conversations.create(conversation('conv_3', ORG_A, 'agt_1', 'closed'));
        await store.conversations.create(conversation('conv_4', ORG_A, 'agt_1'));
        await store.conversations.create(conversation('conv_9', ORG_B, 'agt_1'));
        expect(await store.conversations.list(ORG_A, {}, { limit: 20 }).then(ids)).toEqual(['conv_4', 'conv_3', 'conv_2', 'conv_1']);
        expect(await store.conversations.list(ORG_A, { agent_id: 'agt_1' }, { limit: 20 }).then(ids)).toEqual(['conv_4', 'conv_3', 'conv_1']);
        expect(await store.conversations.list(ORG_A, { agent_id: 'agt_1', status: 'active' }, { limit: 20 }).then(ids)).toEqual(['conv_4', 'conv_1']);
        const p1 = await store.conversations.list(ORG_A, { agent_id: 'agt_1' }, { limit: 2 });
        expect([ids(p1), p1.has_more]).toEqual([['conv_4', 'conv_3'], true]);
        const p2 = await store.conversations.list(ORG_A, { agent_id: 'agt_1' }, { limit: 2, after: 'conv_3' });
        expect([ids(p2), p2.has_more]).toEqual([['conv_1'], false]);
      });

      it('accepts a cursor of the organization that the filter leaves out, and refuses an unknown or foreign one', async () => {
        await store.conversations.create(conversation('conv_1', ORG_A, 'agt_1'));
        await store.conversations.create(conversation('conv_2', ORG_A, 'agt_2'));
        await store.conversations.create(conversation('conv_3', ORG_A, 'agt_1'));
        await store.conversations.create(conversation('conv_9', ORG_B, 'agt_1'));
        expect(await store.conversations.list(ORG_A, { agent_id: 'agt_1' }, { limit: 5, after: 'conv_2' }).then(ids)).toEqual(['conv_1']);
        await expect(store.conversations.list(ORG_A, {}, { limit: 5, after: 'conv_missing' })).rejects.toMatchObject(unknownCursor('conversation'));
        await expect(store.conversations.list(ORG_A, {}, { limit: 5, after: 'conv_9' })).rejects.toMatchObject(unknownCursor('conversation'));
      });

      it('start stores a conversation and its first message together; a failing message stores neither', async () => {
        await store.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello'));
        expect(await store.conversations.get(ORG_A, 'conv_1')).toEqual({ ...conversation('conv_1'), updated_at: T1 });
        expect((await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 5 })).data.map((m) => [m.id, m.content])).toEqual([['msg_1', 'Hello']]);
        // The message names another conversation (a missing one): neither is stored.
        await expect(store.conversations.start(conversation('conv_2'), message('msg_2', 'conv_missing', 'visitor', 'turn_2', 'x'))).rejects.toThrow();
        expect(await store.conversations.get(ORG_A, 'conv_2')).toBeUndefined();
        // A duplicate message id: the conversation is not stored either.
        await expect(store.conversations.start(conversation('conv_3'), message('msg_1', 'conv_3', 'visitor', 'turn_3', 'y'))).rejects.toThrow();
        expect(await store.conversations.get(ORG_A, 'conv_3')).toBeUndefined();
      });

      it('start stores an imported history before the first message, in order, in the same commit', async () => {
        const earlier = [
          message('msg_e1', 'conv_1', 'visitor', null, 'Earlier question'),
          message('msg_e2', 'conv_1', 'agent', null, 'Earlier answer', { finish_reason: null }),
        ];
        await store.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello'), undefined, { earlier });
        expect((await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 5 })).data).toEqual([...earlier, message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello')]);
        expect((await store.conversations.history('conv_1', 10)).map((m) => m.content)).toEqual(['Earlier question', 'Earlier answer', 'Hello']);
        // Its messages are no turns: start-up recovery leaves them alone.
        expect((await store.conversations.failInterruptedTurns({ type: 'api_error', code: 'interrupted', message: 'x' }, T3, undefined, 'unleased')).map((t) => t.turn_id)).toEqual(['turn_1']);
        // One of them fails (a duplicate id): nothing of the conversation is stored.
        await expect(store.conversations.start(conversation('conv_2'), message('msg_2', 'conv_2', 'visitor', 'turn_2', 'x'),
          undefined, { earlier: [message('msg_e1', 'conv_2', 'visitor', null, 'again')] })).rejects.toThrow();
        expect(await store.conversations.get(ORG_A, 'conv_2')).toBeUndefined();
        expect(await store.conversations.listMessages(ORG_A, 'conv_2', { limit: 5 })).toEqual({ data: [], has_more: false });
      });

      it('keeps the visitor token hash of a public conversation (start and create alike)', async () => {
        await store.conversations.start({ ...conversation('conv_1'), visitor_token_hash: 'vth-1' }, message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello'));
        await store.conversations.create({ ...conversation('conv_2'), visitor_token_hash: 'vth-2' });
        expect((await store.conversations.get(ORG_A, 'conv_1'))?.visitor_token_hash).toBe('vth-1');
        expect((await store.conversations.get(ORG_A, 'conv_2'))?.visitor_token_hash).toBe('vth-2');
      });

      it('keeps the public key a public conversation was started through; null when none (start and create alike)', async () => {
        await store.conversations.start({ ...conversation('conv_1'), visitor_token_hash: 'vth-1', public_key: 'pk_one' }, message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello'));
        await store.conversations.create({ ...conversation('conv_2'), visitor_token_hash: 'vth-2', public_key: 'pk_two' });
        const { public_key: _omitted, ...withoutKey } = conversation('conv_3');
        await store.conversations.create(withoutKey);
        expect((await store.conversations.get(ORG_A, 'conv_1'))?.public_key).toBe('pk_one');
        expect((await store.conversations.get(ORG_A, 'conv_2'))?.public_key).toBe('pk_two');
        expect((await store.conversations.get(ORG_A, 'conv_3'))?.public_key).toBeNull();
        expect((await store.conversations.list(ORG_A, {}, { limit: 10 })).data.map((c) => [c.id, c.public_key])).toEqual([['conv_3', null], ['conv_2', 'pk_two'], ['conv_1', 'pk_one']]);
      });

      it('findByVisitorTokenHash finds a conversation by its visitor token hash in any organization; undefined otherwise', async () => {
        await store.conversations.create({ ...conversation('conv_1'), visitor_token_hash: 'vth-a', public_key: 'pk_one' });
        await store.conversations.create({ ...conversation('conv_2', ORG_B), visitor_token_hash: 'vth-b', public_key: 'pk_two' });
        await store.conversations.create(conversation('conv_3'));
        expect((await store.conversations.findByVisitorTokenHash('vth-a'))?.id).toBe('conv_1');
        expect(await store.conversations.findByVisitorTokenHash('vth-b')).toMatchObject({ id: 'conv_2', org_id: ORG_B, public_key: 'pk_two' });
        expect(await store.conversations.findByVisitorTokenHash('vth-missing')).toBeUndefined();
      });

      it('orgOf names the organization of any conversation, undefined for an unknown one', async () => {
        await store.conversations.create(conversation('conv_9', ORG_B));
        expect(await store.conversations.orgOf('conv_9')).toBe(ORG_B);
        expect(await store.conversations.orgOf('conv_missing')).toBeUndefined();
      });

      it('setStatus changes the status and updated_at', async () => {
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.setStatus('conv_1', 'handed_off', T3);
        expect(await store.conversations.get(ORG_A, 'conv_1')).toEqual({ ...conversation('conv_1'), status: 'handed_off', updated_at: T3 });
      });

      it('appends messages, reads them back in stored order with every field, and touches the conversation', async () => {
        await store.conversations.create(conversation('conv_1'));
        const reply = message('msg_a', 'conv_1', 'agent', 'turn_1', 'Hi!', {
          citations: [{ document_id: 'doc_1', chunk_id: 'chk_1', title: 'T', snippet: 's', score: 1.5 }],
          tool_runs: [{ id: 'call_1', name: 'search_knowledge', arguments: { q: 'x' }, output: { hits: 0 }, is_error: false }],
          usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 }, created_at: T2,
        });
        await store.conversations.appendMessage(message('msg_z', 'conv_1', 'visitor', 'turn_1', 'Hello'));
        await store.conversations.appendMessage(reply);
        await store.conversations.appendMessage(message('msg_m', 'conv_1', 'operator', null, 'A person here', { created_at: T3 }));
        const page = await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 20 });
        expect(page).toEqual({ data: [message('msg_z', 'conv_1', 'visitor', 'turn_1', 'Hello'), reply, message('msg_m', 'conv_1', 'operator', null, 'A person here', { created_at: T3 })], has_more: false });
        expect((await store.conversations.get(ORG_A, 'conv_1'))?.updated_at).toBe(T3);
      });

      it('pages messages oldest first after a cursor; a cursor of another conversation or none is a 400', async () => {
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.create(conversation('conv_2'));
        for (const id of ['msg_5', 'msg_1', 'msg_4', 'msg_2']) await store.conversations.appendMessage(message(id, 'conv_1', 'visitor', null, id));
        await store.conversations.appendMessage(message('msg_x', 'conv_2', 'visitor', null, 'x'));
        const p1 = await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 2 });
        expect([ids(p1), p1.has_more]).toEqual([['msg_5', 'msg_1'], true]);
        const p2 = await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 2, after: 'msg_1' });
        expect([ids(p2), p2.has_more]).toEqual([['msg_4', 'msg_2'], false]);
        expect(await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 2, after: 'msg_2' })).toEqual({ data: [], has_more: false });
        expect(await store.conversations.listMessages(ORG_B, 'conv_1', { limit: 2 })).toEqual({ data: [], has_more: false });
        await expect(store.conversations.listMessages(ORG_A, 'conv_1', { limit: 2, after: 'msg_x' })).rejects.toMatchObject(unknownCursor('message'));
        await expect(store.conversations.listMessages(ORG_A, 'conv_1', { limit: 2, after: 'msg_missing' })).rejects.toMatchObject(unknownCursor('message'));
        await expect(store.conversations.listMessages(ORG_B, 'conv_1', { limit: 2, after: 'msg_1' })).rejects.toMatchObject(unknownCursor('message'));
      });

      it('refuses a message whose conversation does not exist, and stores nothing of it', async () => {
        await expect(store.conversations.appendMessage(message('msg_1', 'conv_missing', 'visitor', 'turn_1', 'Hello'))).rejects.toThrow();
        await store.conversations.create(conversation('conv_missing'));
        expect(await store.conversations.listMessages(ORG_A, 'conv_missing', { limit: 20 })).toEqual({ data: [], has_more: false });
      });

      it('history: the last completed messages in turn order, a turn\'s visitor message before its reply', async () => {
        await store.conversations.create(conversation('conv_1'));
        // Turn 2 was queued while turn 1 ran: its visitor message is stored before turn 1's reply.
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Q1'));
        await store.conversations.appendMessage(message('msg_2', 'conv_1', 'visitor', 'turn_2', 'Q2'));
        await store.conversations.appendMessage(message('msg_3', 'conv_1', 'agent', 'turn_1', 'A1'));
        await store.conversations.appendMessage(message('msg_4', 'conv_1', 'agent', 'turn_2', 'A2'));
        await store.conversations.appendMessage(message('msg_5', 'conv_1', 'visitor', 'turn_3', 'Q3'));
        await store.conversations.appendMessage(message('msg_6', 'conv_1', 'agent', 'turn_3', '', { status: 'failed', finish_reason: null, error: { type: 'api_error', code: 'internal_error', message: 'x' } }));
        expect((await store.conversations.history('conv_1', 10)).map((m) => m.content)).toEqual(['Q1', 'A1', 'Q2', 'A2', 'Q3']);
        expect((await store.conversations.history('conv_1', 3)).map((m) => m.content)).toEqual(['A1', 'A2', 'Q3']);
        expect(await store.conversations.history('conv_missing', 10)).toEqual([]);
      });

      it('history: a message of no turn sits where it was stored, between the turns before and after it', async () => {
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', null, 'Imported'));
        await store.conversations.appendMessage(message('msg_2', 'conv_1', 'visitor', 'turn_1', 'Q1'));
        await store.conversations.appendMessage(message('msg_3', 'conv_1', 'operator', null, 'A person, during turn 1'));
        await store.conversations.appendMessage(message('msg_4', 'conv_1', 'agent', 'turn_1', 'A1'));
        await store.conversations.appendMessage(message('msg_5', 'conv_1', 'operator', null, 'A person, after turn 1'));
        await store.conversations.appendMessage(message('msg_6', 'conv_1', 'visitor', 'turn_2', 'Q2'));
        await store.conversations.appendMessage(message('msg_7', 'conv_1', 'agent', 'turn_2', 'A2'));
        expect((await store.conversations.history('conv_1', 10)).map((m) => m.content))
          .toEqual(['Imported', 'Q1', 'A1', 'A person, during turn 1', 'A person, after turn 1', 'Q2', 'A2']);
      });

      it('keeps the timing of an agent message, and null on the others', async () => {
        await store.conversations.create(conversation('conv_1'));
        const timing = { queued_ms: 0.012, setup_ms: 0.5, upstream_first_byte_ms: null, first_token_ms: 1.25, total_ms: 3.375 };
        const reply = message('msg_2', 'conv_1', 'agent', 'turn_1', 'Hi', { timing });
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello'));
        await store.conversations.appendMessage(reply);
        expect((await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 5 })).data.map((m) => m.timing)).toEqual([null, timing]);
        expect((await store.conversations.history('conv_1', 5)).map((m) => m.timing)).toEqual([null, timing]);
      });
    });

    describe('interrupted turns', () => {
      const interrupted = { type: 'api_error', code: 'interrupted', message: 'The server restarted during this turn.' };

      it('appends one failed agent message for each unanswered turn, in stored order, and returns them', async () => {
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.create(conversation('conv_2', ORG_B));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'answered'));
        await store.conversations.appendMessage(message('msg_2', 'conv_1', 'agent', 'turn_1', 'yes'));
        await store.conversations.appendMessage({ ...message('msg_3', 'conv_2', 'visitor', 'turn_2', 'lost'), org_id: ORG_B });
        await store.conversations.appendMessage(message('msg_4', 'conv_1', 'visitor', 'turn_3', 'lost too'));
        await store.conversations.appendMessage(message('msg_5', 'conv_1', 'operator', null, 'operator note'));
        await store.conversations.appendMessage(message('msg_6', 'conv_1', 'visitor', null, 'handed-off visitor message'));

        const failed = await store.conversations.failInterruptedTurns(interrupted, T3, undefined, 'unleased');
        expect(failed.map(({ org_id, conversation_id, turn_id }) => ({ org_id, conversation_id, turn_id }))).toEqual([
          { org_id: ORG_B, conversation_id: 'conv_2', turn_id: 'turn_2' },
          { org_id: ORG_A, conversation_id: 'conv_1', turn_id: 'turn_3' },
        ]);
        expect(failed.every((f) => f.message_id.startsWith('msg_'))).toBe(true);
        expect(failed[0]!.message_id).not.toBe(failed[1]!.message_id);

        const conv1 = await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 20 });
        expect(ids(conv1)).toEqual(['msg_1', 'msg_2', 'msg_4', 'msg_5', 'msg_6', failed[1]!.message_id]);
        expect(conv1.data.at(-1)).toEqual({
          id: failed[1]!.message_id, conversation_id: 'conv_1', org_id: ORG_A, turn_id: 'turn_3', role: 'agent', content: '',
          citations: [], tool_runs: [], usage: null, status: 'failed', finish_reason: null, error: interrupted, timing: null, created_at: T3,
        });
        expect((await store.conversations.listMessages(ORG_B, 'conv_2', { limit: 20 })).data.map((m) => [m.role, m.status, m.turn_id]))
          .toEqual([['visitor', 'completed', 'turn_2'], ['agent', 'failed', 'turn_2']]);
      });

      it('stores the events the caller builds for each reply in the same commit, one delivery per subscribed endpoint', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1', ORG_A, ['message.created']));
        await store.webhooks.createEndpoint(endpoint('whe_2', ORG_B, ['*']));
        await store.conversations.create(conversation('conv_1', ORG_A, 'agt_7'));
        await store.conversations.create(conversation('conv_2', ORG_B, 'agt_8'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'lost'));
        await store.conversations.appendMessage({ ...message('msg_2', 'conv_2', 'visitor', 'turn_2', 'lost too'), org_id: ORG_B });
        const seen: Array<[string, string, string | null, string]> = [];
        const failed = await store.conversations.failInterruptedTurns(interrupted, T3, ({ message: m, agent_id }) => {
          seen.push([m.conversation_id, agent_id, m.turn_id, m.status]);
          // ORG_B's reply carries no event (as when its organization has no endpoint).
          return m.org_id === ORG_A ? [outboxEvent(`evt_${m.turn_id}`, 'message.created', m.org_id, T3)] : undefined;
        }, 'unleased');
        expect(seen).toEqual([['conv_1', 'agt_7', 'turn_1', 'failed'], ['conv_2', 'agt_8', 'turn_2', 'failed']]);
        expect(failed.map((f) => f.turn_id)).toEqual(['turn_1', 'turn_2']);
        const deliveries = await store.webhooks.listDeliveries(ORG_A, 'whe_1', { limit: 10 });
        expect(deliveries.data.map((d) => [d.event_id, d.status])).toEqual([['evt_turn_1', 'pending']]);
        expect(await store.webhooks.getEvent(ORG_A, 'evt_turn_1')).toEqual(outboxEvent('evt_turn_1', 'message.created', ORG_A, T3));
        expect((await store.webhooks.listDeliveries(ORG_B, 'whe_2', { limit: 10 })).data).toEqual([]);
        // The reply the builder saw is the one stored.
        expect((await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 5 })).data.at(-1)).toMatchObject({ id: failed[0]!.message_id, status: 'failed', error: interrupted });
      });

      it('a visitor message taken out of its turn (forwarded to people) is not an interrupted turn', async () => {
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'queued when a person took over'));
        await store.conversations.appendMessage(message('msg_2', 'conv_1', 'agent', 'turn_2', 'not a visitor message'));
        await store.conversations.detachFromTurn('msg_1');
        await store.conversations.detachFromTurn('msg_2');
        await store.conversations.detachFromTurn('msg_missing');
        expect((await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 5 })).data.map((m) => [m.id, m.turn_id])).toEqual([['msg_1', null], ['msg_2', 'turn_2']]);
        expect(await store.conversations.failInterruptedTurns(interrupted, T3, undefined, 'unleased')).toEqual([]);
      });

      it('finds nothing the second time, nor in an empty store', async () => {
        expect(await store.conversations.failInterruptedTurns(interrupted, T1, undefined, 'unleased')).toEqual([]);
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'lost'));
        expect(await store.conversations.failInterruptedTurns(interrupted, T2, undefined, 'unleased')).toHaveLength(1);
        expect(await store.conversations.failInterruptedTurns(interrupted, T3, undefined, 'unleased')).toEqual([]);
        expect((await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 20 })).data).toHaveLength(2);
      });
    });

    describe('group commit', () => {
      it('one failing write rejects alone; the writes issued with it commit', async () => {
        const writes = [
          store.conversations.create(conversation('conv_1')),
          store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'first')),
          store.conversations.appendMessage(message('msg_2', 'conv_missing', 'visitor', 'turn_2', 'orphan')),
          store.conversations.create(conversation('conv_1')),
          store.conversations.appendMessage(message('msg_3', 'conv_1', 'agent', 'turn_1', 'reply')),
        ];
        expect((await Promise.allSettled(writes)).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
        expect(await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 20 }).then(ids)).toEqual(['msg_1', 'msg_3']);
        expect(await store.conversations.get(ORG_A, 'conv_1')).toEqual({ ...conversation('conv_1'), updated_at: T1 });
      });

      it('applies writes in the order they were issued', async () => {
        const writes: Array<Promise<unknown>> = [store.conversations.create(conversation('conv_1'))];
        for (const id of ['msg_9', 'msg_3', 'msg_7', 'msg_1', 'msg_5']) {
          writes.push(store.conversations.appendMessage(message(id, 'conv_1', 'visitor', null, id)));
        }
        writes.push(store.conversations.setStatus('conv_1', 'closed', T2));
        await Promise.all(writes);
        expect(await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 20 }).then(ids)).toEqual(['msg_9', 'msg_3', 'msg_7', 'msg_1', 'msg_5']);
        expect(await store.conversations.get(ORG_A, 'conv_1')).toEqual({ ...conversation('conv_1'), status: 'closed', updated_at: T2 });
      });
    });

    describe('webhooks', () => {
      it('lists endpoints newest first, paged, scoped by organization; updates, rotates and deletes within it', async () => {
        for (const id of ['whe_1', 'whe_2', 'whe_3']) await store.webhooks.createEndpoint(endpoint(id));
        await store.webhooks.createEndpoint(endpoint('whe_9', ORG_B));
        const first = await store.webhooks.listEndpoints(ORG_A, { limit: 2 });
        expect([ids(first), first.has_more]).toEqual([['whe_3', 'whe_2'], true]);
        expect(await store.webhooks.listEndpoints(ORG_A, { limit: 2, after: 'whe_2' }).then(ids)).toEqual(['whe_1']);
        await expect(store.webhooks.listEndpoints(ORG_A, { limit: 2, after: 'whe_9' })).rejects.toMatchObject(unknownCursor('webhook endpoint'));
        expect(await store.webhooks.getEndpoint(ORG_B, 'whe_1')).toBeUndefined();
        expect(await store.webhooks.updateEndpoint(ORG_B, 'whe_1', { url: 'https://x.example' }, T2)).toBeUndefined();
        expect(await store.webhooks.updateEndpoint(ORG_A, 'whe_1', { events: ['tool.run'], enabled: false }, T2))
          .toEqual(endpoint('whe_1', ORG_A, ['tool.run'], { enabled: false, disabled_reason: 'manual', updated_at: T2 }));
        expect(await store.webhooks.rotateSecret(ORG_A, 'whe_2', 'whsec_new', T9, T2))
          .toEqual(endpoint('whe_2', ORG_A, ['*'], { secret: 'whsec_new', previous_secret: 'whsec_whe_2', previous_secret_expires_at: T9, updated_at: T2 }));
        expect(await store.webhooks.orgsWithEndpoints()).toEqual([ORG_A, ORG_B]);
        expect(await store.webhooks.deleteEndpoint(ORG_B, 'whe_2')).toBe(false);
        expect(await store.webhooks.deleteEndpoint(ORG_A, 'whe_2')).toBe(true);
        expect(await store.webhooks.enabledEndpoints().then((l) => l.map((e) => e.id))).toEqual(['whe_3', 'whe_9']);
      });

      it('writes an event with one delivery per enabled endpoint of its organization that subscribes to it, in the same commit as the message', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1', ORG_A, ['*']));
        await store.webhooks.createEndpoint(endpoint('whe_2', ORG_A, ['message.created']));
        await store.webhooks.createEndpoint(endpoint('whe_3', ORG_A, ['tool.run']));
        await store.webhooks.createEndpoint(endpoint('whe_4', ORG_A, ['*'], { enabled: false, disabled_reason: 'manual' }));
        await store.webhooks.createEndpoint(endpoint('whe_5', ORG_B, ['*']));
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', null, 'hi'), [outboxEvent('evt_1', 'message.created')]);
        const count = async (ep: string) => (await store.webhooks.listDeliveries(ORG_A, ep, { limit: 10 })).data.map((d) => [d.event_id, d.status, d.attempt_count, d.next_attempt_at]);
        expect(await count('whe_1')).toEqual([['evt_1', 'pending', 0, T1]]);
        expect(await count('whe_2')).toEqual([['evt_1', 'pending', 0, T1]]);
        expect(await count('whe_3')).toEqual([]);
        expect(await count('whe_4')).toEqual([]);
        expect((await store.webhooks.listDeliveries(ORG_B, 'whe_5', { limit: 10 })).data).toEqual([]);
        expect(await store.webhooks.getEvent(ORG_A, 'evt_1')).toEqual(outboxEvent('evt_1', 'message.created'));
        expect(await store.webhooks.getEvent(ORG_B, 'evt_1')).toBeUndefined();
        // A write that fails stores neither the change nor its event.
        await expect(store.conversations.appendMessage(message('msg_2', 'conv_missing', 'visitor', null, 'x'), [outboxEvent('evt_2', 'message.created')])).rejects.toThrow();
        expect(await store.webhooks.getEvent(ORG_A, 'evt_2')).toBeUndefined();
        await store.conversations.setStatus('conv_1', 'closed', T2, [outboxEvent('evt_3', 'conversation.closed', ORG_A, T2)]);
        expect(await count('whe_1').then((l) => l.map((d) => d[0]))).toEqual(['evt_3', 'evt_1']);
      });

      it('claims due deliveries under an exclusive lease, records attempts in order, and moves the failing streak', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1'));
        await store.webhooks.recordEvents([outboxEvent('evt_1', 'tool.run', ORG_A, T0), outboxEvent('evt_2', 'tool.run', ORG_A, T1)]);
        const [a, b] = await Promise.all([
          store.webhooks.claimDue('whe_1', 'owner-a', T2, T9, 1),
          store.webhooks.claimDue('whe_1', 'owner-b', T2, T9, 5),
        ]);
        expect(a.map((c) => c.event.id)).toEqual(['evt_1']);
        expect(b.map((c) => c.event.id)).toEqual(['evt_2']);
        expect(await store.webhooks.claimDue('whe_1', 'owner-c', T2, T9, 5)).toEqual([]);
        expect(a[0]!.event).toEqual(outboxEvent('evt_1', 'tool.run', ORG_A, T0));
        expect(await store.webhooks.nextDueAt('whe_1')).toBeNull();
        const d1 = a[0]!.delivery_id;
        expect(await store.webhooks.recordAttempt(d1, 'owner-b', failedAttempt(T2, { status: 'pending', next_attempt_at: T4 }))).toBe(false);
        expect(await store.webhooks.recordAttempt(d1, 'owner-a', failedAttempt(T2, { status: 'pending', next_attempt_at: T4 }))).toBe(true);
        expect((await store.webhooks.endpointById('whe_1'))?.failing_since).toBe(T2);
        expect(await store.webhooks.nextDueAt('whe_1')).toBe(T4);
        expect(await store.webhooks.claimDue('whe_1', 'owner-a', T3, T9, 5)).toEqual([]);
        const again = await store.webhooks.claimDue('whe_1', 'owner-a', T4, T9, 5);
        expect(again.map((c) => [c.delivery_id, c.attempt_count, c.event.id])).toEqual([[d1, 1, 'evt_1']]);
        await store.webhooks.recordAttempt(d1, 'owner-a', { response: { status: 204, body: '', duration_ms: 3 }, error: null, at: T4, next: { status: 'succeeded' }, success: true });
        expect((await store.webhooks.endpointById('whe_1'))?.failing_since).toBeNull();
        const got = await store.webhooks.getDelivery(ORG_A, 'whe_1', d1);
        expect(got).toMatchObject({ status: 'succeeded', attempt_count: 2, next_attempt_at: null, last_response: { status: 204, body: '', duration_ms: 3 }, last_error: null });
        expect(got?.attempts).toEqual([
          { number: 1, status: 500, body: 'nope', error: 'HTTP 500', duration_ms: 12, at: T2 },
          { number: 2, status: 204, body: '', duration_ms: 3, error: null, at: T4 },
        ]);
        expect(await store.webhooks.getDelivery(ORG_B, 'whe_1', d1)).toBeUndefined();
      });

      it('the sweep records an interrupted attempt for expired leases and those of dead owners, and makes them due again', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1'));
        await store.webhooks.recordEvents([outboxEvent('evt_1', 'tool.run', ORG_A, T0), outboxEvent('evt_2', 'tool.run', ORG_A, T0)]);
        const [c1] = await store.webhooks.claimDue('whe_1', 'gone', T1, T2, 1);
        const [c2] = await store.webhooks.claimDue('whe_1', 'me', T1, T9, 1);
        expect(await store.webhooks.releaseExpiredLeases(T1, [])).toEqual([]);
        expect(await store.webhooks.releaseExpiredLeases(T3, [])).toEqual(['whe_1']);
        const d1 = await store.webhooks.getDelivery(ORG_A, 'whe_1', c1!.delivery_id);
        expect(d1).toMatchObject({ status: 'pending', attempt_count: 1, next_attempt_at: T3 });
        expect(d1?.attempts).toEqual([{ number: 1, status: 0, body: '', error: expect.stringMatching(/^interrupted/), duration_ms: 0, at: T1 }]);
        expect(await store.webhooks.recordAttempt(c1!.delivery_id, 'gone', failedAttempt(T3, { status: 'failed' }))).toBe(false);
        expect(await store.webhooks.releaseExpiredLeases(T3, ['someone_else'])).toEqual([]);
        expect((await store.webhooks.getDelivery(ORG_A, 'whe_1', c2!.delivery_id))?.attempt_count).toBe(0);
        expect(await store.webhooks.releaseExpiredLeases(T3, ['me'])).toEqual(['whe_1']);
        expect((await store.webhooks.getDelivery(ORG_A, 'whe_1', c2!.delivery_id))?.attempt_count).toBe(1);
      });

      it('retry, recover and the test delivery', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1', ORG_A, ['tool.run']));
        await store.webhooks.recordEvents([outboxEvent('evt_1', 'tool.run', ORG_A, T0), outboxEvent('evt_2', 'tool.run', ORG_A, T2)]);
        const claimed = await store.webhooks.claimDue('whe_1', 'me', T2, T9, 5);
        for (const c of claimed) await store.webhooks.recordAttempt(c.delivery_id, 'me', failedAttempt(T2, { status: 'failed' }));
        const [old, recent] = claimed.map((c) => c.delivery_id);
        expect(await store.webhooks.recoverSince(ORG_B, 'whe_1', T1, T3)).toBe(0);
        expect(await store.webhooks.recoverSince(ORG_A, 'whe_1', T1, T3)).toBe(1);
        expect((await store.webhooks.getDelivery(ORG_A, 'whe_1', recent!))).toMatchObject({ status: 'pending', next_attempt_at: T3, attempt_count: 1 });
        expect((await store.webhooks.getDelivery(ORG_A, 'whe_1', old!))?.status).toBe('failed');
        expect(await store.webhooks.retryDelivery(ORG_B, 'whe_1', old!, T3)).toBeUndefined();
        expect(await store.webhooks.retryDelivery(ORG_A, 'whe_1', old!, T3)).toMatchObject({ id: old, status: 'pending', next_attempt_at: T3 });
        expect(await store.webhooks.enqueueTo(ORG_B, 'whe_1', outboxEvent('evt_t', 'webhook.test', ORG_B))).toBeUndefined();
        const test = await store.webhooks.enqueueTo(ORG_A, 'whe_1', outboxEvent('evt_t', 'webhook.test'));
        expect(test).toMatchObject({ event_id: 'evt_t', event_type: 'webhook.test', status: 'pending', attempt_count: 0 });
      });

      it('stores deliveries durably: a new connection claims what the closed one stored', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1'));
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', null, 'hi'), [outboxEvent('evt_1', 'message.created')]);
        await store.close();
        const again = await sut.reopen();
        expect((await again.webhooks.claimDue('whe_1', 'me', T2, T9, 5)).map((c) => c.event.id)).toEqual(['evt_1']);
      });
    });

    describe('usage', () => {
      const reply = (id: string, conv: string, at: string, input: number, output: number) =>
        message(id, conv, 'agent', null, 'r', { created_at: at, usage: { input_tokens: input, output_tokens: output, total_tokens: input + output } });

      it('counts agent replies per agent and day, scoped and filtered', async () => {
        await store.conversations.create(conversation('conv_1', ORG_A, 'agt_1'));
        await store.conversations.create(conversation('conv_2', ORG_A, 'agt_2'));
        await store.conversations.appendMessage(reply('msg_1', 'conv_1', '2025-01-01T10:00:00.000Z', 10, 5));
        await store.conversations.appendMessage(reply('msg_2', 'conv_1', '2025-01-01T11:00:00.000Z', 1, 2));
        await store.conversations.appendMessage(reply('msg_3', 'conv_2', '2025-01-02T00:00:00.000Z', 7, 0));
        await store.conversations.appendMessage(message('msg_4', 'conv_2', 'visitor', null, 'q'));
        expect(await store.usage.daily(ORG_A, '2025-01-01', '2025-01-31')).toEqual([
          { agent_id: 'agt_1', day: '2025-01-01', input_tokens: 11, output_tokens: 7, total_tokens: 18, turns: 2 },
          { agent_id: 'agt_2', day: '2025-01-02', input_tokens: 7, output_tokens: 0, total_tokens: 7, turns: 1 },
        ]);
        expect((await store.usage.daily(ORG_A, '2025-01-02', '2025-01-02')).map((d) => d.agent_id)).toEqual(['agt_2']);
        expect((await store.usage.daily(ORG_A, '2025-01-01', '2025-01-31', 'agt_1')).map((d) => d.day)).toEqual(['2025-01-01']);
        expect(await store.usage.daily(ORG_B, '2025-01-01', '2025-01-31')).toEqual([]);
      });

      it('fires a threshold once per period, even for replies that cross it in one commit', async () => {
        await store.usage.setThresholds(ORG_A, [{ metric: 'total_tokens', value: 100, period: 'month' }, { metric: 'output_tokens', value: 10, period: 'day' }], T0);
        expect(await store.usage.thresholds(ORG_A)).toEqual([
          { metric: 'output_tokens', value: 10, period: 'day' }, { metric: 'total_tokens', value: 100, period: 'month' },
        ]);
        expect(await store.usage.thresholds(ORG_B)).toEqual([]);
        await store.conversations.create(conversation('conv_1'));
        const fired = await Promise.all([
          store.conversations.appendMessage(reply('msg_1', 'conv_1', '2025-01-01T10:00:00.000Z', 60, 5)),
          store.conversations.appendMessage(reply('msg_2', 'conv_1', '2025-01-01T10:00:01.000Z', 60, 5)),
          store.conversations.appendMessage(reply('msg_3', 'conv_1', '2025-01-01T10:00:02.000Z', 60, 5)),
        ]);
        expect(fired.map((f) => f.map((e) => [e.type, e.data.metric, e.data.period, e.data.period_start, e.data.total]))).toEqual([
          [],
          [['usage.threshold', 'output_tokens', 'day', '2025-01-01', 10], ['usage.threshold', 'total_tokens', 'month', '2025-01-01', 130]],
          [],
        ]);
        const nextDay = await store.conversations.appendMessage(reply('msg_4', 'conv_1', '2025-01-02T10:00:00.000Z', 0, 11));
        expect(nextDay.map((e) => [e.data.metric, e.data.period_start])).toEqual([['output_tokens', '2025-01-02']]);
        const nextMonth = await store.conversations.appendMessage(reply('msg_5', 'conv_1', '2025-02-01T00:00:00.000Z', 100, 0));
        expect(nextMonth.map((e) => [e.data.metric, e.data.period_start])).toEqual([['total_tokens', '2025-02-01']]);
      });
    });

    describe('erasure and retention', () => {
      const FUTURE = '2999-01-01T00:00:00.000Z';
      const P = { id: 'proc_P', url: 'http://10.0.0.1:8080' };
      const toolRun = (id: string, conv: string, org = ORG_A): ToolRunRecord => ({
        id, org_id: org, agent_id: 'agt_1', conversation_id: conv, turn_id: 'turn_1', tool_call_id: `call_${id}`, name: 'lookup',
        kind: 'http', status: 'succeeded', http_status: 200, error: null, duration_ms: 5, response_bytes: 10, created_at: T1,
      });
      const event = (id: string, type: string, data: Record<string, unknown>, created_at = T1): OutboxEvent => ({ id, type, org_id: ORG_A, created_at, data });

      it('erase removes the conversation, its messages and tool runs, only in its organization; usage totals stay', async () => {
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.create(conversation('conv_2'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'my address is 1 Main St'));
        await store.conversations.appendMessage(message('msg_2', 'conv_1', 'agent', 'turn_1', 'noted', { usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10 } }));
        await store.conversations.appendMessage(message('msg_3', 'conv_2', 'visitor', null, 'other'));
        await store.toolRuns.record(toolRun('tr_1', 'conv_1'));
        await store.toolRuns.record(toolRun('tr_2', 'conv_2'));
        const usage = [{ agent_id: 'agt_1', day: '2025-01-01', input_tokens: 7, output_tokens: 3, total_tokens: 10, turns: 1 }];
        expect(await store.usage.daily(ORG_A, '2025-01-01', '2025-01-31')).toEqual(usage);

        expect(await store.conversations.erase(ORG_B, 'conv_1', T3)).toBe(false);
        expect(await store.conversations.get(ORG_A, 'conv_1')).toEqual({ ...conversation('conv_1'), updated_at: T1 });
        expect(await store.conversations.erase(ORG_A, 'conv_1', T3)).toBe(true);
        expect(await store.conversations.get(ORG_A, 'conv_1')).toBeUndefined();
        expect(await store.conversations.orgOf('conv_1')).toBeUndefined();
        expect(await store.conversations.getMessage(ORG_A, 'msg_1')).toBeUndefined();
        expect(await store.conversations.getMessage(ORG_A, 'msg_2')).toBeUndefined();
        expect(await store.conversations.history('conv_1', 10)).toEqual([]);
        expect(await store.toolRuns.listForConversation(ORG_A, 'conv_1')).toEqual([]);
        expect(await store.usage.daily(ORG_A, '2025-01-01', '2025-01-31')).toEqual(usage);
        // The other conversation is untouched; a second erase finds nothing.
        expect(await store.conversations.getMessage(ORG_A, 'msg_3')).toEqual(message('msg_3', 'conv_2', 'visitor', null, 'other'));
        expect(await store.toolRuns.listForConversation(ORG_A, 'conv_2')).toEqual([toolRun('tr_2', 'conv_2')]);
        expect(await store.conversations.erase(ORG_A, 'conv_1', T3)).toBe(false);
        expect(await store.conversations.erase(ORG_A, 'conv_missing', T3)).toBe(false);
        await expect(store.conversations.appendMessage(message('msg_4', 'conv_1', 'visitor', null, 'late'))).rejects.toThrow();
      });

      it('erase replaces the text of the conversation\'s webhook events and of receivers\' responses, and writes its own events after', async () => {
        await store.webhooks.createEndpoint(endpoint('whe_1'));
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.create(conversation('conv_2'));
        const said = { conversation_id: 'conv_1', agent_id: 'agt_1', message_id: 'msg_1', role: 'visitor', turn_id: 'turn_1', status: 'completed', content: 'my card is 4111 1111 1111 1111', created_at: T1 };
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', said.content), [event('evt_1', 'message.created', said)]);
        const tool = {
          conversation_id: 'conv_1', agent_id: 'agt_1', turn_id: 'turn_1', tool_call_id: 'call_1', name: 'lookup', arguments: { email: 'ada@example.com' },
          output: 'found ada@example.com', is_error: false, tool_run_id: 'tr_1', kind: 'http', status: 'succeeded', http_status: 200, error: null, duration_ms: 5,
        };
        const handoff = { conversation_id: 'conv_1', agent_id: 'agt_1', reason: 'I am Ada Lovelace', requested_by: 'visitor' };
        const other = { conversation_id: 'conv_2', agent_id: 'agt_1', message_id: 'msg_9', role: 'visitor', turn_id: null, status: 'completed', content: 'keep me', created_at: T1 };
        await store.webhooks.recordEvents([event('evt_2', 'tool.run', tool), event('evt_3', 'handoff.requested', handoff), event('evt_4', 'message.created', other)]);
        const claimed = await store.webhooks.claimDue('whe_1', 'owner-a', T2, T9, 10);
        expect(claimed.map((c) => c.event.id).sort()).toEqual(['evt_1', 'evt_2', 'evt_3', 'evt_4']);
        for (const c of claimed) {
          expect(await store.webhooks.recordAttempt(c.delivery_id, 'owner-a', {
            response: { status: 500, body: `echo ${c.event.id}: my card is 4111`, duration_ms: 3 }, error: 'HTTP 500', at: T2, next: { status: 'failed' }, success: false,
          })).toBe(true);
        }
        const deleted = event('evt_9', 'conversation.deleted', { conversation_id: 'conv_1', agent_id: 'agt_1' }, T3);

        expect(await store.conversations.erase(ORG_A, 'conv_1', T3, [deleted])).toBe(true);
        expect((await store.webhooks.getEvent(ORG_A, 'evt_1'))!.data).toEqual({ ...said, content: '[erased]' });
        expect((await store.webhooks.getEvent(ORG_A, 'evt_2'))!.data).toEqual({ ...tool, arguments: '[erased]', output: '[erased]' });
        expect((await store.webhooks.getEvent(ORG_A, 'evt_3'))!.data).toEqual({ ...handoff, reason: '[erased]' });
        expect((await store.webhooks.getEvent(ORG_A, 'evt_4'))!.data).toEqual(other);
        const bodies = async (eventId: string) => {
          const c = claimed.find((d) => d.event.id === eventId)!;
          const d = (await store.webhooks.getDelivery(ORG_A, 'whe_1', c.delivery_id))!;
          return [d.last_response!.body, ...d.attempts.map((a) => a.body)];
        };
        expect(await bodies('evt_1')).toEqual(['[erased]', '[erased]']);
        expect(await bodies('evt_2')).toEqual(['[erased]', '[erased]']);
        expect(await bodies('evt_4')).toEqual(['echo evt_4: my card is 4111', 'echo evt_4: my card is 4111']);
        expect(await store.webhooks.getEvent(ORG_A, 'evt_9')).toEqual(deleted);
        expect((await store.webhooks.claimDue('whe_1', 'owner-a', T3, T9, 10)).map((c) => c.event.id)).toEqual(['evt_9']);
      });

      it('a fenced erase needs the lease, ends it for good (late writes under the old fence are refused) and records an erased feed entry', async () => {
        const head = await store.feed.head();
        await store.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1', 'visitor', 'turn_1', 'hi'), undefined, { lease: { owner: P, until: FUTURE } });
        await expect(store.conversations.erase(ORG_A, 'conv_1', T3, undefined, { owner_id: P.id, fence: 2 })).rejects.toMatchObject({ code: 'lease_lost' });
        expect(await store.conversations.get(ORG_A, 'conv_1')).toBeDefined();
        expect(await store.conversations.erase(ORG_A, 'conv_1', T3, undefined, { owner_id: P.id, fence: 1 })).toBe(true);
        await expect(store.toolRuns.record(toolRun('tr_1', 'conv_1'), undefined, { owner_id: P.id, fence: 1 })).rejects.toMatchObject({ code: 'lease_lost' });
        expect(await store.toolRuns.listForConversation(ORG_A, 'conv_1')).toEqual([]);
        expect(await store.leases.get('conv_1')).toMatchObject({ released: true, fence: 2 });
        // Taken again (a request for the erased id), the lease's fence still moves on: the old fence stays refused.
        const again = await store.leases.acquire('conv_1', P, T3, FUTURE);
        expect(again).toMatchObject({ acquired: true, lease: { fence: 3 } });
        await expect(store.toolRuns.record(toolRun('tr_2', 'conv_1'), undefined, { owner_id: P.id, fence: 1 })).rejects.toMatchObject({ code: 'lease_lost' });
        // At once on SQLite; on MongoDB once the change stream has delivered it.
        await vi.waitFor(async () => {
          const entries = await store.feed.read(head, 100);
          expect(entries.filter((e) => e.kind === 'erased')).toEqual([{ kind: 'erased', org_id: ORG_A, conversation_id: 'conv_1', origin: P.id, seq: expect.any(Number), at: T3 }]);
        }, { timeout: 5000, interval: 20 });
      });

      it('idleSince lists an organization\'s conversations last active before a time, least recently active first, at most limit', async () => {
        await store.conversations.create({ ...conversation('conv_1'), updated_at: T0 });
        await store.conversations.create({ ...conversation('conv_2'), updated_at: T0 });
        await store.conversations.appendMessage(message('msg_1', 'conv_2', 'visitor', null, 'x'));
        await store.conversations.create({ ...conversation('conv_3'), updated_at: T3 });
        await store.conversations.create({ ...conversation('conv_4', ORG_B), updated_at: T0 });
        expect(await store.conversations.idleSince(ORG_A, T2, 10)).toEqual(['conv_1', 'conv_2']);
        expect(await store.conversations.idleSince(ORG_A, T2, 1)).toEqual(['conv_1']);
        expect(await store.conversations.idleSince(ORG_A, T1, 10)).toEqual(['conv_1']);
        expect(await store.conversations.idleSince(ORG_A, T0, 10)).toEqual([]);
        expect(await store.conversations.idleSince(ORG_A, T9, 10)).toEqual(['conv_1', 'conv_2', 'conv_3']);
        expect(await store.conversations.idleSince(ORG_B, T2, 10)).toEqual(['conv_4']);
      });

      it('retention_days: none at first, set and cleared per organization, listed for every organization', async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.organizations.create({ id: ORG_B, name: 'Bravo', created_at: T0 });
        expect(await store.organizations.retentionDays(ORG_A)).toBeNull();
        expect(await store.organizations.retentionDays('org_missing')).toBeUndefined();
        expect(await store.organizations.setRetentionDays(ORG_A, 30)).toBe(true);
        expect(await store.organizations.setRetentionDays('org_missing', 30)).toBe(false);
        expect(await store.organizations.retentionDays(ORG_A)).toBe(30);
        expect(await store.organizations.retentionSettings()).toEqual([{ org_id: ORG_A, retention_days: 30 }, { org_id: ORG_B, retention_days: null }]);
        expect(await store.organizations.setRetentionDays(ORG_A, null)).toBe(true);
        expect(await store.organizations.retentionSettings()).toEqual([{ org_id: ORG_A, retention_days: null }, { org_id: ORG_B, retention_days: null }]);
        expect(await store.organizations.get(ORG_A)).toEqual({ id: ORG_A, name: 'Acme', created_at: T0 });
      });
    });

    describe('feed', () => {
      /** The entries after `after`, without their time (some writes stamp the feed with the time of the write). */
      const feedAfter = async (after: number) => (await store.feed.read(after, 100)).map(({ at: _at, seq: _seq, ...change }) => change);
      /**
       * Waits until `check` passes (FeedPort: an entry is readable once the adapter has it, which for MongoDB's
       * change stream is shortly after the commit, for SQLite at once), at most 5 s; throws its last failure.
       */
      const eventually = (check: () => Promise<void> | void) => vi.waitFor(check, { timeout: 5000, interval: 20 });

      it('starts empty; append records changes in order, numbered upwards, and read pages them', async () => {
        expect(await store.feed.head()).toBe(0);
        expect(await store.feed.read(0, 10)).toEqual([]);
        await store.feed.append([{ kind: 'user', user_id: 'usr_1' }, { kind: 'webhooks', org_id: ORG_A }], T1);
        await store.feed.append([{ kind: 'member', org_id: ORG_B, user_id: 'usr_2' }], T2);
        await eventually(async () => expect(await store.feed.read(0, 10)).toHaveLength(3));
        const all = await store.feed.read(0, 10);
        expect(all).toEqual([
          { kind: 'user', user_id: 'usr_1', seq: all[0]!.seq, at: T1 },
          { kind: 'webhooks', org_id: ORG_A, seq: all[1]!.seq, at: T1 },
          { kind: 'member', org_id: ORG_B, user_id: 'usr_2', seq: all[2]!.seq, at: T2 },
        ]);
        expect(all[0]!.seq).toBeGreaterThan(0);
        expect(all[1]!.seq).toBe(all[0]!.seq + 1);
        expect(all[2]!.seq).toBe(all[1]!.seq + 1);
        expect(await store.feed.head()).toBe(all[2]!.seq);
        expect((await store.feed.read(all[0]!.seq, 1)).map((e) => e.seq)).toEqual([all[1]!.seq]);
        expect(await store.feed.read(all[2]!.seq, 10)).toEqual([]);
      });

      it('prune drops entries written before a time; numbers are never reused', async () => {
        await store.feed.append([{ kind: 'user', user_id: 'usr_1' }], T1);
        await store.feed.append([{ kind: 'user', user_id: 'usr_2' }], T3);
        await eventually(async () => expect(await store.feed.read(0, 10)).toHaveLength(2));
        const head = await store.feed.head();
        expect(await store.feed.prune(T2)).toBe(1);
        expect((await store.feed.read(0, 10)).map((e) => e.kind === 'user' && e.user_id)).toEqual(['usr_2']);
        expect(await store.feed.prune(T4)).toBe(1);
        expect(await store.feed.head()).toBe(head);
        await store.feed.append([{ kind: 'user', user_id: 'usr_3' }], T4);
        await eventually(async () => expect((await store.feed.read(0, 10)).map((e) => e.seq)).toEqual([head + 1]));
      });

      it('tells this process of each commit that wrote entries', async () => {
        let calls = 0;
        const off = store.feed.onAppend(() => { calls++; });
        await store.feed.append([{ kind: 'user', user_id: 'usr_1' }], T1);
        await eventually(() => expect(calls).toBe(1));
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.users.create(user('usr_1'));
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_1', role: 'owner', created_at: T0 });
        await eventually(async () => expect(await store.feed.read(0, 10)).toHaveLength(2));
        await eventually(() => expect(calls).toBe(2));
        off();
        await store.feed.append([{ kind: 'user', user_id: 'usr_1' }], T1);
        await eventually(async () => expect(await store.feed.read(0, 10)).toHaveLength(3));
        expect(calls).toBe(2);
      });

      it('people: password set and deletion record a user entry; membership changes a member entry; refused writes nothing', async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        for (const id of ['usr_1', 'usr_2']) await store.users.create(user(id));
        const start = await store.feed.head();
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_1', role: 'owner', created_at: T0 });
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_2', role: 'operator', created_at: T0 });
        expect(await store.memberships.add({ org_id: ORG_A, user_id: 'usr_2', role: 'admin', created_at: T0 })).toBe(false);
        await store.memberships.setRole(ORG_A, 'usr_2', 'admin');
        expect(await store.memberships.setRole(ORG_A, 'usr_1', 'admin')).toBe('last_owner');
        expect(await store.memberships.remove(ORG_A, 'usr_1')).toBe('last_owner');
        await store.memberships.remove(ORG_A, 'usr_2');
        await store.users.setPasswordHash('usr_2', 'h2', T2);
        expect(await store.users.setPasswordHash('usr_missing', 'h', T2)).toBe(false);
        expect(await store.users.delete('usr_1')).toBe('last_owner');
        await store.users.delete('usr_2');
        await eventually(async () => expect(await feedAfter(start)).toHaveLength(6));
        expect(await feedAfter(start)).toEqual([
          { kind: 'member', org_id: ORG_A, user_id: 'usr_1' },
          { kind: 'member', org_id: ORG_A, user_id: 'usr_2' },
          { kind: 'member', org_id: ORG_A, user_id: 'usr_2' },
          { kind: 'member', org_id: ORG_A, user_id: 'usr_2' },
          { kind: 'user', user_id: 'usr_2' },
          { kind: 'user', user_id: 'usr_2' },
        ]);
        expect(await store.memberships.check(ORG_A, 'usr_1')).toEqual({ status: 'member', role: 'owner', access_valid_after: null });
      });

      it('sign-ins: each revoked family records a session entry (logout, password change, reuse)', async () => {
        await store.users.create(user('usr_1'));
        await store.refreshTokens.startFamily(family('fam_1'), refreshToken('rt-1', 'fam_1'));
        await store.refreshTokens.startFamily(family('fam_2'), refreshToken('rt-2', 'fam_2'));
        await store.refreshTokens.startFamily(family('fam_3'), refreshToken('rt-3', 'fam_3'));
        await store.refreshTokens.startFamily(family('fam_4'), refreshToken('rt-4', 'fam_4'));
        const start = await store.feed.head();
        await store.refreshTokens.revokeFamilyOf('rt-1', 'logout', T1);
        expect(await store.refreshTokens.revokeFamilyOf('rt-1', 'logout', T1)).toBe(false);
        await store.refreshTokens.rotate('rt-4', { token_hash: 'rt-4b', created_at: T1, expires_at: T4 }, T1);
        expect(await store.refreshTokens.rotate('rt-4', { token_hash: 'rt-4c', created_at: T1, expires_at: T4 }, T1)).toEqual({ status: 'reused', family_id: 'fam_4' });
        expect(await store.refreshTokens.revokeAllOf('usr_1', 'password', T2)).toBe(2);
        await eventually(async () => expect(await feedAfter(start)).toHaveLength(4));
        const entries = await feedAfter(start);
        expect(entries.slice(0, 2)).toEqual([
          { kind: 'session', session_id: 'fam_1', user_id: 'usr_1' },
          { kind: 'session', session_id: 'fam_4', user_id: 'usr_1' },
        ]);
        expect(entries.slice(2).map((e) => e.kind === 'session' && e.session_id).sort()).toEqual(['fam_2', 'fam_3']);
        expect(entries).toHaveLength(4);
      });

      it('keys, agents and webhook endpoints record their changes', async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.apiKeys.create(apiKey('key_1'));
        await store.apiKeys.create(apiKey('key_2'));
        await store.agents.create(agent('agt_1'));
        const start = await store.feed.head();
        await store.apiKeys.revoke(ORG_A, 'key_1', T1);
        expect(await store.apiKeys.revoke(ORG_A, 'key_1', T1)).toBe(false);
        await store.apiKeys.rotate(ORG_A, 'key_2', apiKey('key_3'), T9, T1);
        await store.agents.update(ORG_A, 'agt_1', { name: 'Renamed' }, T1);
        await store.agents.setPublicKey(ORG_A, 'agt_1', 'pk_1', T1);
        await store.agents.setPublicKey(ORG_A, 'agt_1', null, T2);
        expect(await store.agents.update(ORG_B, 'agt_1', { name: 'x' }, T2)).toBeUndefined();
        await store.agents.setPublicKey(ORG_A, 'agt_1', 'pk_2', T2);
        await store.agents.delete(ORG_A, 'agt_1');
        expect(await store.agents.delete(ORG_A, 'agt_1')).toBe(false);
        await store.webhooks.createEndpoint(endpoint('whe_1'));
        await store.webhooks.updateEndpoint(ORG_A, 'whe_1', { description: 'd' }, T1);
        await store.webhooks.rotateSecret(ORG_A, 'whe_1', 'whsec_2', null, T1);
        await store.webhooks.disableEndpoint('whe_1', 'gone', T2);
        await store.webhooks.disableEndpoint('whe_1', 'gone', T2);
        await store.webhooks.deleteEndpoint(ORG_A, 'whe_1');
        await eventually(async () => expect(await feedAfter(start)).toHaveLength(12));
        expect(await feedAfter(start)).toEqual([
          { kind: 'api_key', org_id: ORG_A, key_id: 'key_1' },
          { kind: 'api_key', org_id: ORG_A, key_id: 'key_2' },
          { kind: 'agent', org_id: ORG_A, agent_id: 'agt_1' },
          { kind: 'agent', org_id: ORG_A, agent_id: 'agt_1' },
          { kind: 'agent', org_id: ORG_A, agent_id: 'agt_1', public_key: 'pk_1' },
          { kind: 'agent', org_id: ORG_A, agent_id: 'agt_1' },
          { kind: 'agent', org_id: ORG_A, agent_id: 'agt_1', public_key: 'pk_2' },
          { kind: 'webhooks', org_id: ORG_A },
          { kind: 'webhooks', org_id: ORG_A },
          { kind: 'webhooks', org_id: ORG_A },
          { kind: 'webhooks', org_id: ORG_A },
          { kind: 'webhooks', org_id: ORG_A },
        ]);
      });
    });

    describe('leases', () => {
      const A = { id: 'proc_a', url: 'http://a.example' };
      const B = { id: 'proc_b', url: 'http://b.example' };
      /** Far in the future: a fenced write checks the lease against the writer's own clock. */
      const LATER = '2999-01-01T00:00:00.000Z';
      const lease = (owner: { id: string; url: string }, fence: number, expires_at: string, released = false) =>
        ({ conversation_id: 'conv_1', owner_id: owner.id, owner_url: owner.url, fence, expires_at, released });

      it('acquire: the first owner gets fence 1, a renewal keeps it, a live owner keeps others out, an expired lease goes to the next with fence + 1', async () => {
        expect(await store.leases.get('conv_1')).toBeUndefined();
        expect(await store.leases.acquire('conv_1', A, T0, T2)).toEqual({ acquired: true, lease: lease(A, 1, T2), took_over_from: null });
        expect(await store.leases.acquire('conv_1', { ...A, url: 'http://a2.example' }, T1, T3))
          .toEqual({ acquired: true, lease: lease({ ...A, url: 'http://a2.example' }, 1, T3), took_over_from: null });
        expect(await store.leases.acquire('conv_1', B, T2, T4)).toEqual({ acquired: false, lease: lease({ ...A, url: 'http://a2.example' }, 1, T3) });
        expect(await store.leases.acquire('conv_1', B, T3, T9)).toEqual({ acquired: true, lease: lease(B, 2, T9), took_over_from: { owner_id: 'proc_a', fence: 1 } });
        expect(await store.leases.get('conv_1')).toEqual(lease(B, 2, T9));
      });

      it('a released lease is taken with nothing to recover; a dead owner\'s live lease is taken at once', async () => {
        await store.leases.acquire('conv_1', A, T0, T9);
        await store.leases.release('conv_1', { owner_id: 'proc_a', fence: 2 });
        expect((await store.leases.get('conv_1'))?.released).toBe(false);
        await store.leases.release('conv_1', { owner_id: 'proc_a', fence: 1 });
        expect(await store.leases.acquire('conv_1', B, T1, T9)).toEqual({ acquired: true, lease: lease(B, 2, T9), took_over_from: null });
        expect(await store.leases.acquire('conv_1', A, T2, T9, 'proc_x')).toMatchObject({ acquired: false });
        expect(await store.leases.acquire('conv_1', A, T2, T9, 'proc_b')).toEqual({ acquired: true, lease: lease(A, 3, T9), took_over_from: { owner_id: 'proc_b', fence: 2 } });
      });

      it('two concurrent acquires of a free lease: exactly one wins', async () => {
        const results = await Promise.all([store.leases.acquire('conv_1', A, T0, T9), store.leases.acquire('conv_1', B, T0, T9)]);
        expect(results.map((r) => r.acquired).sort()).toEqual([false, true]);
        const winner = results.find((r) => r.acquired)!.lease;
        expect(results.find((r) => !r.acquired)!.lease).toEqual(winner);
        expect(winner.fence).toBe(1);
      });

      it('renew extends the owner\'s live leases only; abandoned and heldBy find what a dead owner left', async () => {
        for (const [id, until] of [['conv_1', T2], ['conv_2', T4], ['conv_3', T1]] as const) await store.leases.acquire(id, A, T0, until);
        await store.leases.acquire('conv_9', B, T0, T4);
        await store.leases.acquire('conv_r', A, T0, T4);
        await store.leases.release('conv_r', { owner_id: 'proc_a', fence: 1 });
        expect((await store.leases.renew('proc_a', T1, T9)).sort()).toEqual(['conv_1', 'conv_2']);
        expect((await store.leases.get('conv_1'))?.expires_at).toBe(T9);
        expect((await store.leases.get('conv_3'))?.expires_at).toBe(T1);
        expect((await store.leases.get('conv_9'))?.expires_at).toBe(T4);
        expect((await store.leases.abandoned(T4, 10)).map((l) => l.conversation_id)).toEqual(['conv_3', 'conv_9']);
        expect((await store.leases.abandoned(T4, 1)).map((l) => l.conversation_id)).toEqual(['conv_3']);
        expect((await store.leases.heldBy('proc_a', 10)).map((l) => l.conversation_id).sort()).toEqual(['conv_1', 'conv_2', 'conv_3']);
        expect(await store.leases.heldBy('proc_z', 10)).toEqual([]);
      });

      it('a fenced write lands while its fence holds the lease and records its feed entry; a stale fence is refused with lease_lost and stores nothing', async () => {
        await store.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello'), undefined, { lease: { owner: A, until: LATER } });
        expect(await store.leases.get('conv_1')).toEqual(lease(A, 1, LATER));
        const fence = { owner_id: 'proc_a', fence: 1 };
        await store.conversations.appendMessage(message('msg_2', 'conv_1', 'agent', 'turn_1', 'Hi'), undefined, fence);
        await store.conversations.setStatus('conv_1', 'handed_off', T2, undefined, fence);
        await store.toolRuns.record({
          id: 'tr_1', org_id: ORG_A, agent_id: 'agt_1', conversation_id: 'conv_1', turn_id: 'turn_1', tool_call_id: 'call_1', name: 'x', kind: 'builtin',
          status: 'succeeded', http_status: null, error: null, duration_ms: 1, response_bytes: 1, created_at: T1,
        }, undefined, fence);
        // Another process takes the conversation over: the first owner's late writes are refused.
        await store.leases.release('conv_1', fence);
        expect((await store.leases.acquire('conv_1', B, T1, LATER)).acquired).toBe(true);
        await expect(store.conversations.appendMessage(message('msg_3', 'conv_1', 'agent', 'turn_2', 'late'), [outboxEvent('evt_late', 'message.created')], fence))
          .rejects.toMatchObject({ code: 'lease_lost' });
        await expect(store.conversations.setStatus('conv_1', 'closed', T3, undefined, fence)).rejects.toMatchObject({ code: 'lease_lost' });
        await expect(store.conversations.detachFromTurn('msg_1', { conversationId: 'conv_1', fence })).rejects.toMatchObject({ code: 'lease_lost' });
        expect(await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 10 }).then(ids)).toEqual(['msg_1', 'msg_2']);
        expect((await store.conversations.get(ORG_A, 'conv_1'))?.status).toBe('handed_off');
        expect(await store.webhooks.getEvent(ORG_A, 'evt_late')).toBeUndefined();
        expect((await store.conversations.listMessages(ORG_A, 'conv_1', { limit: 10 })).data[0]!.turn_id).toBe('turn_1');
        await vi.waitFor(async () => expect(await store.feed.read(0, 100)).toHaveLength(4), { timeout: 5000, interval: 20 });
        expect((await store.feed.read(0, 100)).map(({ seq: _s, at: _a, ...c }) => c)).toEqual([
          { kind: 'conversation', org_id: ORG_A, conversation_id: 'conv_1', agent_id: 'agt_1', origin: 'proc_a' },
          { kind: 'message', org_id: ORG_A, conversation_id: 'conv_1', message_id: 'msg_1', role: 'visitor', turn_id: 'turn_1', origin: 'proc_a' },
          { kind: 'message', org_id: ORG_A, conversation_id: 'conv_1', message_id: 'msg_2', role: 'agent', turn_id: 'turn_1', origin: 'proc_a' },
          { kind: 'status', org_id: ORG_A, conversation_id: 'conv_1', status: 'handed_off', origin: 'proc_a' },
        ]);
      });

      it('failInterruptedTurns of one conversation, fenced: the taker stores the cut turn; a lost fence stores nothing', async () => {
        await store.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1', 'visitor', 'turn_1', 'cut'), undefined, { lease: { owner: A, until: T1 } });
        await store.conversations.create(conversation('conv_2'));
        await store.conversations.appendMessage(message('msg_9', 'conv_2', 'visitor', 'turn_9', 'elsewhere'));
        const taken = await store.leases.acquire('conv_1', B, T2, LATER);
        expect(taken).toMatchObject({ acquired: true, took_over_from: { owner_id: 'proc_a', fence: 1 } });
        const err = { type: 'api_error', code: 'interrupted', message: 'cut' };
        await expect(store.conversations.failInterruptedTurns(err, T3, undefined, { conversationId: 'conv_1', fence: { owner_id: 'proc_a', fence: 1 } }))
          .rejects.toMatchObject({ code: 'lease_lost' });
        const failed = await store.conversations.failInterruptedTurns(err, T3, undefined, { conversationId: 'conv_1', fence: { owner_id: 'proc_b', fence: 2 } });
        expect(failed.map((f) => [f.conversation_id, f.turn_id])).toEqual([['conv_1', 'turn_1']]);
        // conv_2 has no lease, but it is not this call's conversation; and a leased conversation is never "unleased".
        expect((await store.conversations.listMessages(ORG_A, 'conv_2', { limit: 5 })).data).toHaveLength(1);
        expect((await store.conversations.failInterruptedTurns(err, T3, undefined, 'unleased')).map((f) => f.conversation_id)).toEqual(['conv_2']);
      });
    });

    describe('processes', () => {
      it('registers, beats, drains and removes processes; the cluster secret is the first one stored', async () => {
        await store.processes.register({ id: 'proc_b', url: 'http://b', started_at: T0, heartbeat_at: T0, draining_at: null });
        await store.processes.register({ id: 'proc_a', url: 'http://a', started_at: T0, heartbeat_at: T0, draining_at: null });
        expect(await store.processes.heartbeat('proc_a', T2)).toBe(true);
        expect(await store.processes.heartbeat('proc_missing', T2)).toBe(false);
        await store.processes.markDraining('proc_b', T3);
        expect(await store.processes.list()).toEqual([
          { id: 'proc_a', url: 'http://a', started_at: T0, heartbeat_at: T2, draining_at: null },
          { id: 'proc_b', url: 'http://b', started_at: T0, heartbeat_at: T0, draining_at: T3 },
        ]);
        await store.processes.register({ id: 'proc_a', url: 'http://a2', started_at: T0, heartbeat_at: T4, draining_at: null });
        await store.processes.remove('proc_b');
        expect(await store.processes.list()).toEqual([{ id: 'proc_a', url: 'http://a2', started_at: T0, heartbeat_at: T4, draining_at: null }]);
        const [first, second] = await Promise.all([store.processes.clusterSecret('secret-1'), store.processes.clusterSecret('secret-2')]);
        expect(first).toBe(second);
        expect(await store.processes.clusterSecret('secret-3')).toBe(first);
      });
    });

    describe('durability', () => {
      it('what a resolved promise stored is read back by a new connection after the store is closed', async () => {
        await store.organizations.create({ id: ORG_A, name: 'Acme', created_at: T0 });
        await store.apiKeys.create({ id: 'key_1', org_id: ORG_A, name: 'ci', key_hash: 'h1', last4: 'abcd', created_at: T0, revoked_at: null, expires_at: null });
        await store.apiKeys.revoke(ORG_A, 'key_1', T1);
        await store.agents.create(agent('agt_1'));
        await store.agents.update(ORG_A, 'agt_1', { name: 'Renamed' }, T1);
        await store.agents.create(agent('agt_2'));
        await store.agents.delete(ORG_A, 'agt_2');
        await store.knowledge.createBase(base('kb_1'));
        await store.knowledge.createDocument(doc('doc_1', 'kb_1'), 'echidna notes');
        await store.knowledge.completeDocument('doc_1', [chunk(0, 'The echidna lays eggs.')], T2);
        await store.knowledge.createDocument(doc('doc_2', 'kb_1'), new Uint8Array([1, 2, 3]));
        await store.conversations.create(conversation('conv_1'));
        await store.conversations.appendMessage(message('msg_1', 'conv_1', 'visitor', 'turn_1', 'Hello'));
        await store.conversations.setStatus('conv_1', 'closed', T2);
        const [lost] = await store.conversations.failInterruptedTurns({ type: 'api_error', code: 'interrupted', message: 'm' }, T3, undefined, 'unleased');
        await store.apiKeys.create(apiKey('key_2'));
        await store.apiKeys.rotate(ORG_A, 'key_2', apiKey('key_3'), T9, T1);
        await store.users.create(user('usr_1'));
        await store.users.create(user('usr_2'));
        await store.users.setPasswordHash('usr_1', 'argon', T1);
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_1', role: 'owner', created_at: T0 });
        await store.memberships.add({ org_id: ORG_A, user_id: 'usr_2', role: 'operator', created_at: T0 });
        await store.memberships.setRole(ORG_A, 'usr_2', 'admin');
        await store.refreshTokens.startFamily(family('fam_1'), refreshToken('rt-1', 'fam_1'));
        await store.refreshTokens.rotate('rt-1', { token_hash: 'rt-2', created_at: T1, expires_at: T4 }, T1);
        await store.signingKeys.ensureActive(signingKey('kid_1'));
        await store.signingKeys.rotate(signingKey('kid_2', T1), T1);
        await store.socketTickets.create(ticket('wst-1', T2));
        await store.socketTickets.consume('wst-1', T1);
        await store.close();

        const again = await sut.reopen();
        expect(await again.organizations.get(ORG_A)).toEqual({ id: ORG_A, name: 'Acme', created_at: T0 });
        expect((await again.apiKeys.findByHash('h1'))?.revoked_at).toBe(T1);
        expect((await again.agents.get(ORG_A, 'agt_1'))?.name).toBe('Renamed');
        expect(await again.agents.get(ORG_A, 'agt_2')).toBeUndefined();
        expect((await again.knowledge.getDocument(ORG_A, 'kb_1', 'doc_1'))?.status).toBe('ready');
        expect((await again.knowledge.search(ORG_A, ['kb_1'], 'echidna', 5)).map((h) => h.text)).toEqual(['The echidna lays eggs.']);
        expect((await again.knowledge.pendingDocuments()).map((p) => p.id)).toEqual(['doc_2']);
        expect(Array.from(await again.knowledge.documentSource('doc_2') as Uint8Array)).toEqual([1, 2, 3]);
        expect((await again.conversations.get(ORG_A, 'conv_1'))?.status).toBe('closed');
        expect(await again.conversations.listMessages(ORG_A, 'conv_1', { limit: 20 }).then(ids)).toEqual(['msg_1', lost!.message_id]);
        expect((await again.apiKeys.findByHash('hash-key_2'))?.expires_at).toBe(T9);
        expect(await again.apiKeys.findByHash('hash-key_3')).toEqual(apiKey('key_3'));
        expect((await again.users.findByEmail('usr_1@example.com'))?.password_hash).toBe('argon');
        expect(await again.memberships.organizationsOf('usr_2')).toEqual([{ id: ORG_A, name: 'Acme', role: 'admin' }]);
        expect(await again.refreshTokens.rotate('rt-1', { token_hash: 'rt-9', created_at: T2, expires_at: T4 }, T2)).toEqual({ status: 'reused', family_id: 'fam_1' });
        expect((await again.signingKeys.verifiable(T0)).map((k) => [k.kid, k.retired_at])).toEqual([['kid_2', null], ['kid_1', T1]]);
        expect(await again.socketTickets.consume('wst-1', T1)).toBeUndefined();
      });
    });
  });
}
