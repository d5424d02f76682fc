/**
 * The outbox and the webhook and usage writes, as plain functions of a connection and structured-cloneable
 * arguments (like conversation-writes.ts), so they run in the writer thread (src/store/sqlite/writer.ts)
 * inside the caller's transaction and savepoint, or on the main thread's connection (knowledge writes).
 *
 * The outbox rule (API.md "Webhooks": durability): an event is inserted in the same transaction as the
 * change that caused it, together with one `pending` delivery per enabled endpoint of its organization
 * that subscribes to its type, so a crash can never keep the change and lose its event.
 */
import type Database from 'better-sqlite3';
import { newId } from '../../ids/ids.js';
import type { AttemptOutcome, ClaimedDelivery, EndpointDisabledReason, OutboxEvent, UsageThreshold, WebhookEndpointPatch, WebhookEndpointRecord } from '../records.js';
import { fromJson, toJson, type Row } from './rows.js';
import { recordChanges } from './feed.js';
import { statementCache } from './statement-cache.js';

function prepare(db: Database.Database) {
  return {
    insertEvent: db.prepare('INSERT INTO webhook_events (id, org_id, type, data, created_at, conversation_id) VALUES (?, ?, ?, ?, ?, ?)'),
    endpointsOf: db.prepare('SELECT id, events FROM webhook_endpoints WHERE org_id = ? AND enabled = 1'),
    endpointOf: db.prepare('SELECT id FROM webhook_endpoints WHERE org_id = ? AND id = ?'),
    insertDelivery: db.prepare(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, org_id, event_type, status, attempt_count, next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`),
    insertEndpoint: db.prepare(
      `INSERT INTO webhook_endpoints (id, org_id, url, description, events, enabled, disabled_reason, secret, previous_secret,
         previous_secret_expires_at, failing_since, created_at, updated_at)
       VALUES (@id, @org_id, @url, @description, @events, @enabled, @disabled_reason, @secret, @previous_secret,
         @previous_secret_expires_at, @failing_since, @created_at, @updated_at)`),
    endpointById: db.prepare('SELECT * FROM webhook_endpoints WHERE org_id = ? AND id = ?'),
    updateEndpoint: db.prepare(
      `UPDATE webhook_endpoints SET url = @url, description = @description, events = @events, enabled = @enabled,
         disabled_reason = @disabled_reason, failing_since = @failing_since, updated_at = @updated_at WHERE id = @id`),
    deleteEndpoint: db.prepare('DELETE FROM webhook_endpoints WHERE org_id = ? AND id = ?'),
    orgOfEndpoint: db.prepare('SELECT org_id FROM webhook_endpoints WHERE id = ?'),
    rotate: db.prepare(
      `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?, secret = ?, updated_at = ?
       WHERE org_id = ? AND id = ?`),
    disable: db.prepare(
      `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1`),
    claim: db.prepare(
      `UPDATE webhook_deliveries SET lease_owner = ?, lease_expires_at = ?, attempt_started_at = ?
       WHERE id IN (SELECT id FROM webhook_deliveries
                    WHERE endpoint_id = ? AND status = 'pending' AND lease_owner IS NULL AND next_attempt_at <= ?
                    ORDER BY next_attempt_at, id LIMIT ?)
       RETURNING id, endpoint_id, attempt_count, event_id, next_attempt_at`),
    eventById: db.prepare('SELECT * FROM webhook_events WHERE id = ?'),
    deliveryLease: db.prepare('SELECT endpoint_id, attempt_count, lease_owner FROM webhook_deliveries WHERE id = ?'),
    insertAttempt: db.prepare(
      'INSERT INTO webhook_attempts (delivery_id, number, status, body, error, duration_ms, at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    finishAttempt: db.prepare(
      `UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, attempt_count = attempt_count + 1,
         lease_owner = NULL, lease_expires_at = NULL, attempt_started_at = NULL,
         last_status = ?, last_body = ?, last_duration_ms = ?, last_error = ?, updated_at = ?
       WHERE id = ?`),
    streakEnds: db.prepare('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL'),
    streakGoes: db.prepare('UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL'),
    expiredLeases: db.prepare(
      `SELECT id, endpoint_id, attempt_count, attempt_started_at FROM webhook_deliveries
       WHERE lease_owner IS NOT NULL AND (lease_expires_at < ? OR lease_owner IN (SELECT value FROM json_each(?)))`),
    retry: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, updated_at = ?
       WHERE org_id = ? AND endpoint_id = ? AND id = ? AND lease_owner IS NULL`),
    recover: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, updated_at = ?
       WHERE org_id = ? AND endpoint_id = ? AND status = 'failed' AND created_at >= ?`),
    deleteThresholds: db.prepare('DELETE FROM usage_thresholds WHERE org_id = ?'),
    insertThreshold: db.prepare('INSERT OR IGNORE INTO usage_thresholds (org_id, metric, value, period, created_at) VALUES (?, ?, ?, ?, ?)'),
    thresholdsOf: db.prepare('SELECT metric, value, period FROM usage_thresholds WHERE org_id = ?'),
    addUsage: db.prepare(
      `INSERT INTO usage_daily (org_id, day, agent_id, input_tokens, output_tokens, turns)
       SELECT ?, ?, agent_id, ?, ?, 1 FROM conversations WHERE id = ? AND true
       ON CONFLICT (org_id, day, agent_id) DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens,
         output_tokens = output_tokens + excluded.output_tokens, turns = turns + 1`),
    periodTotals: db.prepare(
      `SELECT coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens
       FROM usage_daily WHERE org_id = ? AND day >= ? AND day <= ?`),
    mark: db.prepare(
      `INSERT OR IGNORE INTO usage_threshold_marks (org_id, metric, value, period, period_start, event_id, fired_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`),
  };
}

const statements = statementCache(prepare);

/** True when an endpoint subscribed to `events` (its stored JSON list) takes an event of `type`. */
function subscribes(eventsJson: string, type: string): boolean {
  const events = fromJson<string[]>(eventsJson);
  return events.includes('*') || events.includes(type);
}

/**
 * Inserts `events` with their deliveries (the outbox rule above). Must run inside a transaction; with
 * no enabled endpoint in the organization it inserts the event alone (one indexed read more).
 */
export function writeOutbox(db: Database.Database, events: readonly OutboxEvent[] | undefined): void {
  if (events === undefined || events.length === 0) return;
  const sql = statements(db);
  for (const e of events) {
    const conversationId = typeof e.data.conversation_id === 'string' ? e.data.conversation_id : null;
    sql.insertEvent.run(e.id, e.org_id, e.type, toJson(e.data), e.created_at, conversationId);
    for (const ep of sql.endpointsOf.all(e.org_id) as Array<{ id: string; events: string }>) {
      if (subscribes(ep.events, e.type)) sql.insertDelivery.run(newId('dlv'), e.id, ep.id, e.org_id, e.type, e.created_at, e.created_at, e.created_at);
    }
  }
}

/** `YYYY-MM-DD` of an RFC 3339 time (UTC). */
const dayOf = (at: string): string => at.slice(0, 10);

/** First and last day (`YYYY-MM-DD`) of the period of `period` that contains `day`. */
function periodRange(period: UsageThreshold['period'], day: string): [string, string] {
  if (period === 'day') return [day, day];
  return [`${day.slice(0, 7)}-01`, `${day.slice(0, 7)}-31`];
}

/**
 * Counts an agent reply's tokens for its conversation's agent and day, then fires the organization's
 * thresholds that the period's total now reaches: each is marked with a conditional insert (the mark's
 * primary key is the threshold and the period's first day), and only the insert that adds the mark
 * writes a `usage.threshold` event to the outbox. Returns the events written.
 */
export function countUsage(db: Database.Database, args: { org_id: string; conversation_id: string; at: string; input_tokens: number; output_tokens: number }): OutboxEvent[] {
  const sql = statements(db);
  const day = dayOf(args.at);
  sql.addUsage.run(args.org_id, day, args.input_tokens, args.output_tokens, args.conversation_id);
  const thresholds = sql.thresholdsOf.all(args.org_id) as UsageThreshold[];
  if (thresholds.length === 0) return [];
  const fired: OutboxEvent[] = [];
  for (const t of thresholds) {
    const [from, to] = periodRange(t.period, day);
    const totals = sql.periodTotals.get(args.org_id, from, to) as { input_tokens: number; output_tokens: number };
    const total = t.metric === 'input_tokens' ? totals.input_tokens
      : t.metric === 'output_tokens' ? totals.output_tokens : totals.input_tokens + totals.output_tokens;
    if (total < t.value) continue;
    const event: OutboxEvent = {
      id: newId('evt'), type: 'usage.threshold', org_id: args.org_id, created_at: args.at,
      data: { metric: t.metric, value: t.value, period: t.period, period_start: from, total, conversation_id: args.conversation_id },
    };
    if (sql.mark.run(args.org_id, t.metric, t.value, t.period, from, event.id, args.at).changes === 0) continue;
    writeOutbox(db, [event]);
    fired.push(event);
  }
  return fired;
}

/** An endpoint row as a record. */
export function endpointFromRow(r: Row): WebhookEndpointRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, url: r.url as string, description: (r.description as string | null) ?? null,
    events: fromJson(r.events), enabled: r.enabled === 1, disabled_reason: (r.disabled_reason as EndpointDisabledReason | null) ?? null,
    secret: r.secret as string, previous_secret: (r.previous_secret as string | null) ?? null,
    previous_secret_expires_at: (r.previous_secret_expires_at as string | null) ?? null,
    failing_since: (r.failing_since as string | null) ?? null, created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

/** Records that `orgId`'s endpoints changed (a `webhooks` feed entry), in the caller's transaction. */
function endpointsChanged(db: Database.Database, orgId: string, at: string): void {
  recordChanges(db, [{ kind: 'webhooks', org_id: orgId }], at);
}

/** The error recorded for an attempt whose outcome was lost (the process stopped during it). */
export const INTERRUPTED_ATTEMPT = 'interrupted: the server stopped during this attempt, so its outcome is unknown; the delivery is sent again';

/** The webhook and usage writes, by name (merged into the writer's registry). Arguments and results are structured-cloneable. */
export const OUTBOX_WRITES = {
  /** Writes events with their deliveries in a commit of their own. */
  recordEvents(db: Database.Database, events: OutboxEvent[]): void {
    writeOutbox(db, events);
  },
  createEndpoint(db: Database.Database, e: WebhookEndpointRecord): void {
    statements(db).insertEndpoint.run({ ...e, events: toJson(e.events), enabled: e.enabled ? 1 : 0 });
    endpointsChanged(db, e.org_id, e.created_at);
  },
  updateEndpoint(db: Database.Database, a: { orgId: string; id: string; patch: WebhookEndpointPatch; at: string }): WebhookEndpointRecord | undefined {
    const sql = statements(db);
    const row = sql.endpointById.get(a.orgId, a.id) as Row | undefined;
    if (row === undefined) return undefined;
    const cur = endpointFromRow(row);
    const next: WebhookEndpointRecord = { ...cur, ...a.patch, updated_at: a.at };
    if (a.patch.enabled === true && !cur.enabled) { next.disabled_reason = null; next.failing_since = null; }
    if (a.patch.enabled === false && cur.enabled) next.disabled_reason = 'manual';
    sql.updateEndpoint.run({ ...next, events: toJson(next.events), enabled: next.enabled ? 1 : 0 });
    endpointsChanged(db, a.orgId, a.at);
    return next;
  },
  deleteEndpoint(db: Database.Database, a: { orgId: string; id: string }): boolean {
    if (statements(db).deleteEndpoint.run(a.orgId, a.id).changes === 0) return false;
    endpointsChanged(db, a.orgId, new Date().toISOString());
    return true;
  },
  rotateSecret(db: Database.Database, a: { orgId: string; id: string; secret: string; previousExpiresAt: string | null; at: string }): WebhookEndpointRecord | undefined {
    const sql = statements(db);
    if (sql.rotate.run(a.previousExpiresAt, a.secret, a.at, a.orgId, a.id).changes === 0) return undefined;
    endpointsChanged(db, a.orgId, a.at);
    return endpointFromRow(sql.endpointById.get(a.orgId, a.id) as Row);
  },
  disableEndpoint(db: Database.Database, a: { id: string; reason: EndpointDisabledReason; at: string }): void {
    const sql = statements(db);
    if (sql.disable.run(a.reason, a.at, a.id).changes === 0) return;
    const org = sql.orgOfEndpoint.get(a.id) as { org_id: string } | undefined;
    if (org !== undefined) endpointsChanged(db, org.org_id, a.at);
  },
  enqueueTo(db: Database.Database, a: { orgId: string; endpointId: string; event: OutboxEvent }): string | undefined {
    const sql = statements(db);
    if (sql.endpointOf.get(a.orgId, a.endpointId) === undefined) return undefined;
    const e = a.event;
    const conversationId = typeof e.data.conversation_id === 'string' ? e.data.conversation_id : null;
    sql.insertEvent.run(e.id, e.org_id, e.type, toJson(e.data), e.created_at, conversationId);
    const id = newId('dlv');
    sql.insertDelivery.run(id, e.id, a.endpointId, e.org_id, e.type, e.created_at, e.created_at, e.created_at);
    return id;
  },
  claimDue(db: Database.Database, a: { endpointId: string; owner: string; now: string; leaseUntil: string; limit: number }): ClaimedDelivery[] {
    const sql = statements(db);
    const rows = sql.claim.all(a.owner, a.leaseUntil, a.now, a.endpointId, a.now, a.limit) as Array<{ id: string; endpoint_id: string; attempt_count: number; event_id: string; next_attempt_at: string }>;
    rows.sort((x, y) => (x.next_attempt_at < y.next_attempt_at ? -1 : x.next_attempt_at > y.next_attempt_at ? 1 : x.id < y.id ? -1 : 1));
    return rows.map((r) => {
      const ev = sql.eventById.get(r.event_id) as Row;
      return {
        delivery_id: r.id, endpoint_id: r.endpoint_id, attempt_count: r.attempt_count,
        event: { id: ev.id as string, type: ev.type as string, org_id: ev.org_id as string, created_at: ev.created_at as string, data: fromJson(ev.data) },
      };
    });
  },
  recordAttempt(db: Database.Database, a: { deliveryId: string; owner: string; outcome: AttemptOutcome }): boolean {
    const sql = statements(db);
    const d = sql.deliveryLease.get(a.deliveryId) as { endpoint_id: string; attempt_count: number; lease_owner: string | null } | undefined;
    if (d === undefined || d.lease_owner !== a.owner) return false;
    const o = a.outcome;
    sql.insertAttempt.run(a.deliveryId, d.attempt_count + 1, o.response.status, o.response.body, o.error, o.response.duration_ms, o.at);
    const nextAt = o.next.status === 'pending' ? o.next.next_attempt_at : null;
    sql.finishAttempt.run(o.next.status, nextAt, o.response.status, o.response.body, o.response.duration_ms, o.error, o.at, a.deliveryId);
    if (o.success) sql.streakEnds.run(d.endpoint_id);
    else sql.streakGoes.run(o.at, d.endpoint_id);
    return true;
  },
  releaseExpiredLeases(db: Database.Database, a: { now: string; deadOwners: readonly string[] }): string[] {
    const sql = statements(db);
    const rows = sql.expiredLeases.all(a.now, JSON.stringify(a.deadOwners)) as Array<{ id: string; endpoint_id: string; attempt_count: number; attempt_started_at: string | null }>;
    const endpoints = new Set<string>();
    for (const r of rows) {
      const at = r.attempt_started_at ?? a.now;
      sql.insertAttempt.run(r.id, r.attempt_count + 1, 0, '', INTERRUPTED_ATTEMPT, 0, at);
      sql.finishAttempt.run('pending', a.now, 0, '', 0, INTERRUPTED_ATTEMPT, a.now, r.id);
      endpoints.add(r.endpoint_id);
    }
    return [...endpoints];
  },
  retryDelivery(db: Database.Database, a: { orgId: string; endpointId: string; id: string; at: string }): boolean {
    return statements(db).retry.run(a.at, a.at, a.orgId, a.endpointId, a.id).changes > 0;
  },
  recoverSince(db: Database.Database, a: { orgId: string; endpointId: string; since: string; at: string }): number {
    return statements(db).recover.run(a.at, a.at, a.orgId, a.endpointId, a.since).changes;
  },
  setThresholds(db: Database.Database, a: { orgId: string; thresholds: UsageThreshold[]; at: string }): void {
    const sql = statements(db);
    sql.deleteThresholds.run(a.orgId);
    for (const t of a.thresholds) sql.insertThreshold.run(a.orgId, t.metric, t.value, t.period, a.at);
  },
} as const;
