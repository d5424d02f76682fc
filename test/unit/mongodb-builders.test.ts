/**
 * The pure parts of the MongoDB adapter (src/store/mongodb/): the filters, updates and pipelines each
 * port method sends, the rules it applies to what it reads, the index list, the feed's numbering, and
 * the per-key ordering of writes. No server: these are the values the driver is given.
 */
import { describe, expect, it } from 'vitest';
import { agentPatchSet } from '../../src/store/mongodb/agents.js';
import { endKey, usableKey } from '../../src/store/mongodb/api-keys.js';
import { historyOrder, unansweredTurnsPipeline } from '../../src/store/mongodb/conversations.js';
import { entriesAfter, entryOf, isHistoryLost } from '../../src/store/mongodb/feed.js';
import { candidatesPerTerm, corpusOf, textFilter } from '../../src/store/mongodb/knowledge-search.js';
import { acquirableFilter, acquiredOutcome, acquireUpdate, fenceFilter, isLive } from '../../src/store/mongodb/leases.js';
import { dayOf, eventToDoc, metricTotal, newDelivery, periodRange, subscribes, thresholdId, usageDayId } from '../../src/store/mongodb/outbox.js';
import { pageQuery } from '../../src/store/mongodb/pagination.js';
import { familyLive, liveToken } from '../../src/store/mongodb/refresh-tokens.js';
import { COLLECTION_NAMES, indexDefinitions } from '../../src/store/mongodb/schema.js';
import { spendableTicket } from '../../src/store/mongodb/socket-tickets.js';
import { KeyedQueue } from '../../src/store/mongodb/transactions.js';
import { scrubEventData } from '../../src/store/erasure.js';
import { dueFilter, expiredLeaseFilter, finishAttempt, patchedEndpoint } from '../../src/store/mongodb/webhooks.js';
import type { FeedEntry, MessageRecord, WebhookEndpointRecord } from '../../src/store/records.js';
import type { MessageDoc } from '../../src/store/mongodb/schema.js';

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:00:01.000Z';
const T2 = '2025-01-01T00:00:02.000Z';

describe('leases', () => {
  const A = { id: 'proc_a', url: 'http://a' };
  const lease = { conversation_id: 'c', owner_id: 'proc_b', owner_url: 'http://b', fence: 4, expires_at: T1, released: false };

  it('a fenced write matches the lease only with its owner and fence, not released, not expired at the writer\'s now', () => {
    expect(fenceFilter('c', { owner_id: 'proc_a', fence: 3 }, T0)).toEqual({ _id: 'c', owner_id: 'proc_a', fence: 3, released: false, expires_at: { $gt: T0 } });
  });

  it('acquirable: released, expired, already ours, or the dead owner\'s', () => {
    expect(acquirableFilter('c', 'proc_a', T0)).toEqual({ _id: 'c', $or: [{ released: true }, { expires_at: { $lte: T0 } }, { owner_id: 'proc_a' }] });
    expect(acquirableFilter('c', 'proc_a', T0, 'proc_x').$or).toEqual([{ released: true }, { expires_at: { $lte: T0 } }, { owner_id: 'proc_a' }, { owner_id: 'proc_x' }]);
  });

  it('the acquire update keeps the fence on a live renewal and adds one otherwise, all in one pipeline stage', () => {
    expect(acquireUpdate(A, T0, T2)).toEqual([{
      $set: {
        fence: { $cond: [{ $and: [{ $eq: ['$owner_id', 'proc_a'] }, { $eq: ['$released', false] }, { $gt: ['$expires_at', T0] }] }, '$fence', { $add: ['$fence', 1] }] },
        owner_id: { $literal: 'proc_a' }, owner_url: { $literal: 'http://a' }, expires_at: { $literal: T2 }, released: false,
      },
    }]);
  });

  it('the outcome: a renewal keeps the fence and took nothing over; a takeover names the previous owner unless it released', () => {
    expect(acquiredOutcome({ ...lease, owner_id: 'proc_a' }, A, T0, T2)).toEqual({
      acquired: true, lease: { ...lease, owner_id: 'proc_a', owner_url: 'http://a', expires_at: T2 }, took_over_from: null,
    });
    expect(acquiredOutcome(lease, A, T2, T2 + 'x')).toEqual({
      acquired: true, lease: { ...lease, owner_id: 'proc_a', owner_url: 'http://a', fence: 5, expires_at: T2 + 'x' }, took_over_from: { owner_id: 'proc_b', fence: 4 },
    });
    expect(acquiredOutcome({ ...lease, released: true }, A, T0, T2)).toMatchObject({ took_over_from: null });
    expect(acquiredOutcome({ ...lease, owner_id: 'proc_a', expires_at: T0 }, A, T0, T2)).toMatchObject({ lease: { fence: 5 }, took_over_from: { owner_id: 'proc_a', fence: 4 } });
    expect([isLive(lease, T0), isLive(lease, T1), isLive({ ...lease, released: true }, T0)]).toEqual([true, false, false]);
  });
});

describe('keys, tokens and tickets', () => {
  it('a usable key: not revoked, and no expiry at or before now', () => {
    expect(usableKey('org', 'k', T1)).toEqual({ _id: 'k', org_id: 'org', revoked_at: null, $or: [{ expires_at: null }, { expires_at: { $gt: T1 } }] });
  });

  it('ending a key: revoked now without grace; with grace the earlier of its expiry and the grace end, in one pipeline', () => {
    expect(endKey(T1, null)).toEqual({ $set: { revoked_at: T1 } });
    expect(endKey(T1, T2)).toEqual([{ $set: { expires_at: { $cond: [{ $or: [{ $eq: ['$expires_at', null] }, { $gt: ['$expires_at', T2] }] }, T2, '$expires_at'] } } }]);
  });

  it('a refresh token is spent only while unspent and not expired; its family must be neither revoked nor past its absolute expiry', () => {
    expect(liveToken('h', T1)).toEqual({ _id: 'h', used_at: null, expires_at: { $gt: T1 } });
    expect([
      familyLive({ revoked_at: null, absolute_expires_at: T2 }, T1),
      familyLive({ revoked_at: null, absolute_expires_at: T1 }, T1),
      familyLive({ revoked_at: T0, absolute_expires_at: T2 }, T1),
    ]).toEqual([true, false, false]);
    expect(spendableTicket('t', T1)).toEqual({ _id: 't', used_at: null, expires_at: { $gt: T1 } });
  });
});

describe('agents, lists, endpoints', () => {
  it('an agent patch sets only what it names (the model in its two fields) and updated_at', () => {
    expect(agentPatchSet({ name: 'N', model: { provider: 'openai', name: 'gpt' }, description: undefined }, T1)).toEqual({
      updated_at: T1, name: 'N', model_provider: 'openai', model_name: 'gpt',
    });
    expect(agentPatchSet({ knowledge_base_ids: [], allowed_origins: ['*'], tools: [], safety: { blocked_phrases: [], redact_pii: false, blocked_message: 'x' }, instructions: 'i' }, T2))
      .toEqual({ updated_at: T2, knowledge_base_ids: [], allowed_origins: ['*'], tools: [], safety: { blocked_phrases: [], redact_pii: false, blocked_message: 'x' }, instructions: 'i' });
  });

  it('a page: the scope and the filter, ids below the cursor; the scope wins over a filter on the same field', () => {
    expect(pageQuery({ org_id: 'o' }, { status: 'active' }, undefined)).toEqual({ status: 'active', org_id: 'o' });
    expect(pageQuery({ org_id: 'o' }, { org_id: 'x' }, 'conv_5')).toEqual({ org_id: 'o', _id: { $lt: 'conv_5' } });
  });

  const ep: WebhookEndpointRecord = {
    id: 'whe_1', org_id: 'o', url: 'https://h', description: null, events: ['*'], enabled: false, disabled_reason: 'failing',
    secret: 's', previous_secret: null, previous_secret_expires_at: null, failing_since: T0, created_at: T0, updated_at: T0,
  };

  it('enabling an endpoint clears why it was disabled and its failing streak; disabling it by hand says manual', () => {
    expect(patchedEndpoint(ep, { enabled: true }, T1)).toEqual({ ...ep, enabled: true, disabled_reason: null, failing_since: null, updated_at: T1 });
    expect(patchedEndpoint({ ...ep, enabled: true, disabled_reason: null }, { enabled: false }, T1)).toEqual({ ...ep, disabled_reason: 'manual', updated_at: T1 });
    expect(patchedEndpoint(ep, { url: 'https://x' }, T1)).toEqual({ ...ep, url: 'https://x', updated_at: T1 });
  });

  it('deliveries: due ones have no lease; the sweep takes expired leases and those of dead processes; an attempt ends the lease', () => {
    expect(dueFilter('whe_1', T1)).toEqual({ endpoint_id: 'whe_1', status: 'pending', lease_owner: null, next_attempt_at: { $lte: T1 } });
    expect(expiredLeaseFilter(T1, [])).toEqual({ $or: [{ lease_owner: { $type: 'string' }, lease_expires_at: { $lt: T1 } }] });
    expect(expiredLeaseFilter(T1, ['proc_x'])).toEqual({ $or: [{ lease_owner: { $type: 'string' }, lease_expires_at: { $lt: T1 } }, { lease_owner: { $in: ['proc_x'] } }] });
    expect(finishAttempt({ status: 'pending', next_attempt_at: T2 }, { status: 500, body: 'b', duration_ms: 7 }, 'HTTP 500', T1)).toEqual({
      $set: {
        status: 'pending', next_attempt_at: T2, lease_owner: null, lease_expires_at: null, attempt_started_at: null,
        last_status: 500, last_body: 'b', last_duration_ms: 7, last_error: 'HTTP 500', updated_at: T1,
      },
      $inc: { attempt_count: 1 },
    });
  });
});

describe('outbox and usage', () => {
  it('subscriptions, the delivery of an event, and the ids of usage documents', () => {
    expect([subscribes(['*'], 'tool.run'), subscribes(['tool.run'], 'tool.run'), subscribes(['message.created'], 'tool.run')]).toEqual([true, true, false]);
    const d = newDelivery({ id: 'evt_1', type: 'tool.run', org_id: 'o', created_at: T1, data: {} }, 'whe_1');
    expect(d._id).toMatch(/^dlv_/);
    expect({ ...d, _id: 'x' }).toEqual({
      _id: 'x', event_id: 'evt_1', endpoint_id: 'whe_1', org_id: 'o', event_type: 'tool.run', status: 'pending', attempt_count: 0, next_attempt_at: T1,
      lease_owner: null, lease_expires_at: null, attempt_started_at: null, last_status: null, last_body: null, last_duration_ms: null, last_error: null,
      created_at: T1, updated_at: T1,
    });
    expect(thresholdId('o', { metric: 'total_tokens', value: 100, period: 'month' })).toBe('o/total_tokens/100/month');
    expect(usageDayId('o', '2025-01-02', 'agt_1')).toBe('o/2025-01-02/agt_1');
  });

  it('periods and totals of thresholds', () => {
    expect(dayOf('2025-03-04T23:59:59.000Z')).toBe('2025-03-04');
    expect(periodRange('day', '2025-03-04')).toEqual(['2025-03-04', '2025-03-04']);
    expect(periodRange('month', '2025-03-04')).toEqual(['2025-03-01', '2025-03-31']);
    const totals = { input_tokens: 7, output_tokens: 5 };
    expect([metricTotal('input_tokens', totals), metricTotal('output_tokens', totals), metricTotal('total_tokens', totals)]).toEqual([7, 5, 12]);
  });
});

describe('conversations', () => {
  const m = (id: string, turn: string | null, role: MessageRecord['role'], seq: number) => ({ _id: id, turn_id: turn, role, seq }) as MessageDoc;

  it('history order: a turn sits where it started (also when its start is out of the window), its visitor message first; a message of no turn at its own place', () => {
    // turn_1 started at seq 1 (its visitor message, out of the window), turn_2 at seq 3, turn_3 at seq 6.
    const docs = [
      m('a3', 'turn_3', 'agent', 8), m('op', null, 'operator', 5), m('a1', 'turn_1', 'agent', 7), m('v3', 'turn_3', 'visitor', 6),
      m('a2', 'turn_2', 'agent', 4), m('v2', 'turn_2', 'visitor', 3), m('op0', null, 'operator', 2),
    ];
    const starts = new Map([['turn_1', 1], ['turn_2', 3], ['turn_3', 6]]);
    expect(historyOrder(docs, starts).map((d) => d._id)).toEqual(['a1', 'op0', 'v2', 'a2', 'op', 'v3', 'a3']);
    // At one place a visitor message comes first; the input is not reordered.
    const tie = [m('a', 'turn_9', 'agent', 9), m('v', 'turn_9', 'visitor', 9)];
    expect(historyOrder(tie, new Map([['turn_9', 9]])).map((d) => d._id)).toEqual(['v', 'a']);
    expect(tie.map((d) => d._id)).toEqual(['a', 'v']);
  });

  it('the cut-turns pipeline: visitor messages with a turn, without an agent reply, one per turn, oldest first', () => {
    const p = unansweredTurnsPipeline([{ $match: { _id: 'conv_1' } }]);
    expect(p[0]).toEqual({ $match: { _id: 'conv_1' } });
    expect(p).toContainEqual({ $match: { answer: { $size: 0 } } });
    expect(JSON.stringify(p)).toContain('"pipeline":[{"$match":{"role":"visitor","turn_id":{"$type":"string"}}}');
    expect(JSON.stringify(p)).toContain('"localField":"visit.turn_id","foreignField":"turn_id","as":"answer","pipeline":[{"$match":{"role":"agent"}},{"$limit":1}');
    expect(p.at(-1)).toEqual({ $sort: { created_at: 1, first_message: 1 } });
  });
});

describe('knowledge search', () => {
  it('candidates are chunks of ready documents of one knowledge base of the organization, matched by $text', () => {
    expect(textFilter('o', 'kb_1', 'kangaroo pouch')).toEqual({ kb_id: 'kb_1', org_id: 'o', ready: true, $text: { $search: 'kangaroo pouch' } });
    expect([candidatesPerTerm(4), candidatesPerTerm(20)]).toEqual([50, 80]);
  });

  it('the corpus of several bases adds their rows and tokens up', () => {
    const df = new Map([['x', 3]]);
    expect(corpusOf([{ rows: 10, tokens: 100 }, { rows: 30, tokens: 500 }], df)).toEqual({ rows: 40, avgLength: 15, docFreq: df });
    expect(corpusOf([], df)).toEqual({ rows: 0, avgLength: 0, docFreq: df });
  });
});

describe('feed', () => {
  const e = (seq: number): FeedEntry => ({ kind: 'user', user_id: 'u', seq, at: T0 });

  it('reads the entries after a number, at most limit, from a list with gaps', () => {
    const list = [e(2), e(3), e(5), e(6)];
    expect(entriesAfter(list, 0, 10).map((x) => x.seq)).toEqual([2, 3, 5, 6]);
    expect(entriesAfter(list, 3, 10).map((x) => x.seq)).toEqual([5, 6]);
    expect(entriesAfter(list, 4, 1).map((x) => x.seq)).toEqual([5]);
    expect(entriesAfter(list, 6, 10)).toEqual([]);
    expect(entriesAfter(list, 0, 0)).toEqual([]);
  });

  it('an entry is its change with the local number and the time it was written', () => {
    expect(entryOf({ change: { kind: 'webhooks', org_id: 'o' }, created_at: T1 }, 7)).toEqual({ kind: 'webhooks', org_id: 'o', seq: 7, at: T1 });
  });

  it('lost history is the server\'s code 286 (ChangeStreamHistoryLost)', () => {
    expect([isHistoryLost({ code: 286 }), isHistoryLost({ codeName: 'ChangeStreamHistoryLost' }), isHistoryLost({ code: 280 }), isHistoryLost(null)]).toEqual([true, true, false, false]);
  });
});

describe('erasure', () => {
  it('a stored event carries its data\'s conversation id beside it (null without one), so an erasure finds it by index', () => {
    const at = '2026-01-01T00:00:00.000Z';
    expect(eventToDoc({ id: 'evt_1', org_id: 'o', type: 'message.created', data: { conversation_id: 'conv_1', content: 'hi' }, created_at: at }))
      .toEqual({ _id: 'evt_1', org_id: 'o', type: 'message.created', data: { conversation_id: 'conv_1', content: 'hi' }, created_at: at, conversation_id: 'conv_1' });
    expect(eventToDoc({ id: 'evt_2', org_id: 'o', type: 'usage.threshold', data: { metric: 'tokens' }, created_at: at }).conversation_id).toBeNull();
    expect(eventToDoc({ id: 'evt_3', org_id: 'o', type: 'x', data: { conversation_id: 7 }, created_at: at }).conversation_id).toBeNull();
  });

  it('an erased event keeps ids, kinds, statuses, times and numbers; every other field becomes [erased]; nulls stay', () => {
    expect(scrubEventData({
      conversation_id: 'conv_1', message_id: 'msg_1', role: 'visitor', status: 'completed', created_at: 'T', name: 'lookup', kind: 'http',
      http_status: 200, duration_ms: 12, is_error: false, requested_by: 'operator', finish_reason: 'stop', metric: 'tokens', value: 5,
      period: 'day', period_start: 'D', total: 9, content: 'my card is 4111', metadata: { email: 'a@b.c' }, reason: 'angry', error: null,
    })).toEqual({
      conversation_id: 'conv_1', message_id: 'msg_1', role: 'visitor', status: 'completed', created_at: 'T', name: 'lookup', kind: 'http',
      http_status: 200, duration_ms: 12, is_error: false, requested_by: 'operator', finish_reason: 'stop', metric: 'tokens', value: 5,
      period: 'day', period_start: 'D', total: 9, content: '[erased]', metadata: '[erased]', reason: '[erased]', error: null,
    });
  });

  it('the retention sweep and an erasure read by index: conversations by last activity, events by conversation, deliveries by event', () => {
    const defs = indexDefinitions({ ttl: false });
    const find = (collection: string, name: string) => defs.find((d) => d.collection === collection && d.options.name === name);
    expect(find('conversations', 'org_updated')?.key).toEqual({ org_id: 1, updated_at: 1, _id: 1 });
    expect(find('webhook_events', 'conversation')).toEqual({
      collection: 'webhook_events', key: { conversation_id: 1, org_id: 1 }, options: { name: 'conversation', partialFilterExpression: { conversation_id: { $type: 'string' } } },
    });
    expect(find('webhook_deliveries', 'event')?.key).toEqual({ event_id: 1 });
  });
});

describe('indexes', () => {
  it('unique where the ports need one winner; TTL indexes only when asked; every name unique per collection', () => {
    const defs = indexDefinitions({ ttl: false });
    const unique = defs.filter((d) => d.options.unique).map((d) => `${d.collection}.${d.options.name}`).sort();
    expect(unique).toEqual([
      'agents.public_key', 'api_keys.key_hash', 'invitations.one_pending', 'memberships.org_user', 'messages.conversation_seq', 'signing_keys.one_active',
      'usage_daily.org_day_agent', 'users.email', 'webhook_attempts.delivery_number',
    ]);
    expect(defs.filter((d) => d.options.expireAfterSeconds !== undefined)).toEqual([]);
    const ttl = indexDefinitions({ ttl: true }).filter((d) => d.options.expireAfterSeconds !== undefined).map((d) => [d.collection, d.key, d.options.expireAfterSeconds]);
    expect(ttl).toEqual([
      ['socket_tickets', { expire_at: 1 }, 86_400], ['refresh_families', { expire_at: 1 }, 86_400], ['refresh_tokens', { expire_at: 1 }, 86_400], ['feed', { written_at: 1 }, 86_400],
    ]);
    const names = indexDefinitions({ ttl: true }).map((d) => `${d.collection}.${d.options.name}`);
    expect(new Set(names).size).toBe(names.length);
    for (const d of indexDefinitions({ ttl: true })) expect(COLLECTION_NAMES).toContain(d.collection);
    expect(defs.find((d) => d.options.name === 'kb_text')).toEqual({
      collection: 'chunks', key: { kb_id: 1, title: 'text', heading: 'text', body: 'text' },
      options: { name: 'kb_text', weights: { title: 4, heading: 2, body: 1 }, default_language: 'english', language_override: 'text_language' },
    });
  });
});

describe('KeyedQueue', () => {
  it('runs the operations of one key in the order they started, those of other keys meanwhile; a failure is its own', async () => {
    const q = new KeyedQueue();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const a1 = q.run('a', async () => { await gate; log.push('a1'); throw new Error('a1 failed'); });
    const a2 = q.run('a', async () => { log.push('a2'); return 2; });
    const b1 = q.run('b', async () => { log.push('b1'); return 'b'; });
    expect(await b1).toBe('b');
    expect(log).toEqual(['b1']);
    release();
    await expect(a1).rejects.toThrow('a1 failed');
    expect(await a2).toBe(2);
    expect(log).toEqual(['b1', 'a1', 'a2']);
    await new Promise((r) => setImmediate(r));
    expect(q.size).toBe(0);
  });
});
