import type Database from 'better-sqlite3';
import type { UsagePort, WebhooksPort } from '../ports.js';
import type { AttemptRecord, DeliveryRecord, DeliveryStatus, OutboxEvent, UsageDay, UsageThreshold } from '../records.js';
import { endpointFromRow } from './outbox-writes.js';
import { NewestFirstList, toPage } from './pagination.js';
import { fromJson, type Row } from './rows.js';
import type { FeedSignal } from './feed.js';
import type { ConversationWriter } from './writer.js';

function deliveryFromRow(r: Row): DeliveryRecord {
  return {
    id: r.id as string, event_id: r.event_id as string, event_type: r.event_type as string, endpoint_id: r.endpoint_id as string,
    org_id: r.org_id as string, status: r.status as DeliveryStatus, attempt_count: r.attempt_count as number,
    next_attempt_at: r.status === 'pending' ? (r.next_attempt_at as string | null) : null,
    last_response: r.last_status === null ? null
      : { status: r.last_status as number, body: r.last_body as string, duration_ms: r.last_duration_ms as number },
    last_error: (r.last_error as string | null) ?? null, created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

/**
 * WebhooksPort on SQLite: tables `webhook_endpoints`, `webhook_events`, `webhook_deliveries` and
 * `webhook_attempts` (migration 5). Reads use `db`; every write goes through `writer` (the writer thread
 * or the main-thread group commit: src/store/sqlite/writer.ts), so attempt records at a high delivery
 * rate share commits and their fsyncs stay off the event loop. The writes are in outbox-writes.ts.
 * Lease claims are exclusive because every write is applied by that one writer, one at a time.
 */
export function createWebhooks(db: Database.Database, writer: ConversationWriter, signal: FeedSignal): WebhooksPort {
  /** Endpoint writes record a `webhooks` feed entry in their commit: this process hears of it once committed. */
  const fired = <T>(p: Promise<T>): Promise<T> => p.then((v) => { signal.fire(); return v; });
  const sql = {
    endpoint: db.prepare('SELECT * FROM webhook_endpoints WHERE org_id = ? AND id = ?'),
    endpointById: db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?'),
    orgs: db.prepare('SELECT DISTINCT org_id FROM webhook_endpoints WHERE enabled = 1 ORDER BY org_id'),
    enabled: db.prepare('SELECT * FROM webhook_endpoints WHERE enabled = 1 ORDER BY id'),
    nextDue: db.prepare(`SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'pending' AND lease_owner IS NULL`),
    delivery: db.prepare('SELECT * FROM webhook_deliveries WHERE org_id = ? AND endpoint_id = ? AND id = ?'),
    deliveryById: db.prepare('SELECT * FROM webhook_deliveries WHERE id = ?'),
    attempts: db.prepare('SELECT number, status, body, error, duration_ms, at FROM webhook_attempts WHERE delivery_id = ? ORDER BY number'),
    event: db.prepare('SELECT * FROM webhook_events WHERE org_id = ? AND id = ?'),
    // The predicate of outbox-writes.ts `expiredLeases`, on the partial index webhook_deliveries_leased.
    anyExpiredLease: db.prepare(
      `SELECT 1 FROM webhook_deliveries WHERE lease_owner IS NOT NULL AND (lease_expires_at < ? OR lease_owner IN (SELECT value FROM json_each(?))) LIMIT 1`),
  };
  const endpoints = new NewestFirstList(db, 'webhook_endpoints', 'org_id = ?', 'webhook endpoint');
  const deliveries = new NewestFirstList(db, 'webhook_deliveries', 'org_id = ? AND endpoint_id = ?', 'delivery');

  return {
    createEndpoint(rec) {
      return fired(writer.run('createEndpoint', rec));
    },
    async getEndpoint(orgId, id) {
      const r = sql.endpoint.get(orgId, id) as Row | undefined;
      return r ? endpointFromRow(r) : undefined;
    },
    async endpointById(id) {
      const r = sql.endpointById.get(id) as Row | undefined;
      return r ? endpointFromRow(r) : undefined;
    },
    async listEndpoints(orgId, page) {
      return toPage(endpoints.rows([orgId], page), page, endpointFromRow);
    },
    updateEndpoint(orgId, id, patch, at) {
      return fired(writer.run('updateEndpoint', { orgId, id, patch, at }));
    },
    deleteEndpoint(orgId, id) {
      return fired(writer.run('deleteEndpoint', { orgId, id }));
    },
    rotateSecret(orgId, id, secret, previousExpiresAt, at) {
      return fired(writer.run('rotateSecret', { orgId, id, secret, previousExpiresAt, at }));
    },
    disableEndpoint(id, reason, at) {
      return fired(writer.run('disableEndpoint', { id, reason, at }));
    },
    async orgsWithEndpoints() {
      return (sql.orgs.all() as Array<{ org_id: string }>).map((r) => r.org_id);
    },
    async enabledEndpoints() {
      return (sql.enabled.all() as Row[]).map(endpointFromRow);
    },
    recordEvents(events) {
      return writer.run('recordEvents', events);
    },
    async enqueueTo(orgId, endpointId, event) {
      const id = await writer.run('enqueueTo', { orgId, endpointId, event });
      if (id === undefined) return undefined;
      return deliveryFromRow(sql.deliveryById.get(id) as Row);
    },
    claimDue(endpointId, owner, now, leaseUntil, limit) {
      return writer.run('claimDue', { endpointId, owner, now, leaseUntil, limit });
    },
    async nextDueAt(endpointId) {
      return (sql.nextDue.get(endpointId) as { at: string | null }).at;
    },
    recordAttempt(deliveryId, owner, outcome) {
      return writer.run('recordAttempt', { deliveryId, owner, outcome });
    },
    releaseExpiredLeases(now, deadOwners) {
      // Read first: with no expired lease (the usual case, and always on a fresh server) the sweep commits
      // nothing, so an idle server does not start the writer thread (about 18 MB of RSS) at start-up or
      // wake it every sweep. A lease taken after this read expires after `now`, so skipping misses none.
      if (sql.anyExpiredLease.get(now, JSON.stringify(deadOwners)) === undefined) return Promise.resolve([]);
      return writer.run('releaseExpiredLeases', { now, deadOwners });
    },
    async listDeliveries(orgId, endpointId, page) {
      return toPage(deliveries.rows([orgId, endpointId], page), page, deliveryFromRow);
    },
    async getDelivery(orgId, endpointId, id) {
      const r = sql.delivery.get(orgId, endpointId, id) as Row | undefined;
      if (r === undefined) return undefined;
      const attempts = (sql.attempts.all(id) as Row[]).map((a): AttemptRecord => ({
        number: a.number as number, status: a.status as number, body: a.body as string, error: (a.error as string | null) ?? null,
        duration_ms: a.duration_ms as number, at: a.at as string,
      }));
      return { ...deliveryFromRow(r), attempts };
    },
    async retryDelivery(orgId, endpointId, id, at) {
      if (!(await writer.run('retryDelivery', { orgId, endpointId, id, at }))) return undefined;
      return deliveryFromRow(sql.deliveryById.get(id) as Row);
    },
    recoverSince(orgId, endpointId, since, at) {
      return writer.run('recoverSince', { orgId, endpointId, since, at });
    },
    async getEvent(orgId, id): Promise<OutboxEvent | undefined> {
      const r = sql.event.get(orgId, id) as Row | undefined;
      return r ? { id: r.id as string, type: r.type as string, org_id: r.org_id as string, created_at: r.created_at as string, data: fromJson(r.data) } : undefined;
    },
  };
}

/**
 * UsagePort on SQLite: `usage_daily` (written with each agent reply, conversation-writes.ts),
 * `usage_thresholds` (writes through `writer`).
 */
export function createUsage(db: Database.Database, writer: ConversationWriter): UsagePort {
  const sql = {
    daily: db.prepare(
      `SELECT agent_id, day, input_tokens, output_tokens, turns FROM usage_daily
       WHERE org_id = ? AND day >= ? AND day <= ? AND (? IS NULL OR agent_id = ?) ORDER BY day, agent_id`),
    thresholds: db.prepare('SELECT metric, value, period FROM usage_thresholds WHERE org_id = ? ORDER BY metric, period, value'),
  };
  return {
    async daily(orgId, from, to, agentId): Promise<UsageDay[]> {
      const rows = sql.daily.all(orgId, from, to, agentId ?? null, agentId ?? null) as Array<Omit<UsageDay, 'total_tokens'>>;
      return rows.map((r) => ({
        agent_id: r.agent_id, day: r.day, input_tokens: r.input_tokens, output_tokens: r.output_tokens,
        total_tokens: r.input_tokens + r.output_tokens, turns: r.turns,
      }));
    },
    setThresholds(orgId, thresholds, at) {
      return writer.run('setThresholds', { orgId, thresholds, at });
    },
    async thresholds(orgId) {
      return sql.thresholds.all(orgId) as UsageThreshold[];
    },
  };
}
