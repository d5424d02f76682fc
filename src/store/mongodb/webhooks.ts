import type { Document } from 'mongodb';
import type { UsagePort, WebhooksPort } from '../ports.js';
import type { AttemptRecord, ClaimedDelivery, DeliveryRecord, OutboxEvent, UsageDay, UsageThreshold, WebhookEndpointPatch, WebhookEndpointRecord } from '../records.js';
import { toPage } from '../list-page.js';
import type { MongoContext } from './context.js';
import { eventToDoc, newDelivery, thresholdId, writeOutbox } from './outbox.js';
import { newestFirst } from './pagination.js';
import type { WebhookDeliveryDoc, WebhookEndpointDoc, WebhookEventDoc } from './schema.js';
import { recordChanges } from './transactions.js';

/** The error recorded for an attempt whose outcome was lost (the process stopped during it). */
export const INTERRUPTED_ATTEMPT = 'interrupted: the server stopped during this attempt, so its outcome is unknown; the delivery is sent again';

export const endpointToDoc = (e: WebhookEndpointRecord): WebhookEndpointDoc => {
  const { id, ...rest } = e;
  return { _id: id, ...rest };
};

export const endpointFromDoc = (d: WebhookEndpointDoc): WebhookEndpointRecord => ({
  id: d._id, org_id: d.org_id, url: d.url, description: d.description ?? null, events: d.events, enabled: d.enabled,
  disabled_reason: d.disabled_reason ?? null, secret: d.secret, previous_secret: d.previous_secret ?? null,
  previous_secret_expires_at: d.previous_secret_expires_at ?? null, failing_since: d.failing_since ?? null,
  created_at: d.created_at, updated_at: d.updated_at,
});

export const deliveryFromDoc = (d: WebhookDeliveryDoc): DeliveryRecord => ({
  id: d._id, event_id: d.event_id, event_type: d.event_type, endpoint_id: d.endpoint_id, org_id: d.org_id, status: d.status,
  attempt_count: d.attempt_count, next_attempt_at: d.status === 'pending' ? d.next_attempt_at ?? null : null,
  last_response: d.last_status === null || d.last_status === undefined ? null
    : { status: d.last_status, body: d.last_body ?? '', duration_ms: d.last_duration_ms ?? 0 },
  last_error: d.last_error ?? null, created_at: d.created_at, updated_at: d.updated_at,
});

const eventFromDoc = (d: WebhookEventDoc): OutboxEvent => ({ id: d._id, type: d.type, org_id: d.org_id, created_at: d.created_at, data: d.data });

/**
 * The endpoint after `patch` (WebhooksPort.updateEndpoint): `enabled: true` on a disabled endpoint also
 * clears `disabled_reason` and `failing_since`; `enabled: false` on an enabled one sets `disabled_reason`
 * `manual`.
 */
export function patchedEndpoint(cur: WebhookEndpointRecord, patch: WebhookEndpointPatch, at: string): WebhookEndpointRecord {
  const next: WebhookEndpointRecord = { ...cur, ...patch, updated_at: at };
  if (patch.enabled === true && !cur.enabled) { next.disabled_reason = null; next.failing_since = null; }
  if (patch.enabled === false && cur.enabled) next.disabled_reason = 'manual';
  return next;
}

/** The filter of endpoint `endpointId`'s deliveries due at `now` and not under a lease. */
export function dueFilter(endpointId: string, now: string): Document {
  return { endpoint_id: endpointId, status: 'pending', lease_owner: null, next_attempt_at: { $lte: now } };
}

/** The filter of the deliveries the sweep takes back: a lease ended before `now`, or held by a process known dead. */
export function expiredLeaseFilter(now: string, deadOwners: readonly string[]): Document {
  const or: Document[] = [{ lease_owner: { $type: 'string' }, lease_expires_at: { $lt: now } }];
  if (deadOwners.length > 0) or.push({ lease_owner: { $in: [...deadOwners] } });
  return { $or: or };
}

/** The update that ends an attempt: the delivery's next state, its last response, the lease ended. */
export function finishAttempt(next: { status: DeliveryRecord['status']; next_attempt_at: string | null }, response: { status: number; body: string; duration_ms: number }, error: string | null, at: string): Document {
  return {
    $set: {
      status: next.status, next_attempt_at: next.next_attempt_at, lease_owner: null, lease_expires_at: null, attempt_started_at: null,
      last_status: response.status, last_body: response.body, last_duration_ms: response.duration_ms, last_error: error, updated_at: at,
    },
    $inc: { attempt_count: 1 },
  };
}

/**
 * WebhooksPort on MongoDB (collections `webhook_endpoints`, `webhook_events`, `webhook_deliveries`,
 * `webhook_attempts`). Endpoint changes are transactions with their `webhooks` feed entry.
 *
 * Deliveries are leased with conditional findOneAndUpdate: a claim takes the oldest due delivery that
 * has no lease (one update per delivery, so concurrent claimers on any process each get different ones),
 * and recording an attempt is a transaction whose first write matches only while `owner` still holds the
 * lease. This process's claims of one endpoint run one after the other, in the order they were made.
 */
export function createWebhooks({ c, tx, queue }: MongoContext): WebhooksPort {
  const changed = (orgId: string) => [{ kind: 'webhooks' as const, org_id: orgId }];
  return {
    createEndpoint(e) {
      return tx(async (session) => {
        await c.webhook_endpoints.insertOne(endpointToDoc(e), { session });
        await recordChanges(c, session, changed(e.org_id), e.created_at);
      });
    },
    async getEndpoint(orgId, id) {
      const d = await c.webhook_endpoints.findOne({ _id: id, org_id: orgId });
      return d === null ? undefined : endpointFromDoc(d);
    },
    async endpointById(id) {
      const d = await c.webhook_endpoints.findOne({ _id: id });
      return d === null ? undefined : endpointFromDoc(d);
    },
    async listEndpoints(orgId, page) {
      return toPage(await newestFirst(c.webhook_endpoints, { org_id: orgId }, page, 'webhook endpoint'), page, endpointFromDoc);
    },
    updateEndpoint(orgId, id, patch, at) {
      return tx(async (session) => {
        const d = await c.webhook_endpoints.findOne({ _id: id, org_id: orgId }, { session });
        if (d === null) return undefined;
        const next = patchedEndpoint(endpointFromDoc(d), patch, at);
        const { _id, ...fields } = endpointToDoc(next);
        await c.webhook_endpoints.updateOne({ _id }, { $set: fields }, { session });
        await recordChanges(c, session, changed(orgId), at);
        return next;
      });
    },
    deleteEndpoint(orgId, id) {
      return tx(async (session) => {
        if ((await c.webhook_endpoints.deleteOne({ _id: id, org_id: orgId }, { session })).deletedCount === 0) return false;
        const deliveries = (await c.webhook_deliveries.find({ endpoint_id: id }, { session, projection: { _id: 1 } }).toArray()).map((d) => d._id);
        await c.webhook_attempts.deleteMany({ delivery_id: { $in: deliveries } }, { session });
        await c.webhook_deliveries.deleteMany({ endpoint_id: id }, { session });
        await recordChanges(c, session, changed(orgId), new Date().toISOString());
        return true;
      });
    },
    rotateSecret(orgId, id, secret, previousExpiresAt, at) {
      return tx(async (session) => {
        const d = await c.webhook_endpoints.findOneAndUpdate(
          { _id: id, org_id: orgId },
          [{ $set: { previous_secret: '$secret', previous_secret_expires_at: previousExpiresAt, secret: { $literal: secret }, updated_at: at } }],
          { session, returnDocument: 'after' },
        );
        if (d === null) return undefined;
        await recordChanges(c, session, changed(orgId), at);
        return endpointFromDoc(d);
      });
    },
    async disableEndpoint(id, reason, at) {
      await tx(async (session) => {
        const d = await c.webhook_endpoints.findOneAndUpdate(
          { _id: id, enabled: true }, { $set: { enabled: false, disabled_reason: reason, updated_at: at } }, { session, projection: { org_id: 1 } },
        );
        if (d !== null) await recordChanges(c, session, changed(d.org_id), at);
      });
    },
    async orgsWithEndpoints() {
      return ((await c.webhook_endpoints.distinct('org_id', { enabled: true })) as string[]).sort();
    },
    async enabledEndpoints() {
      return (await c.webhook_endpoints.find({ enabled: true }).sort({ _id: 1 }).toArray()).map(endpointFromDoc);
    },
    async recordEvents(events) {
      await tx((session) => writeOutbox(c, session, events));
    },
    enqueueTo(orgId, endpointId, event) {
      return tx(async (session) => {
        if ((await c.webhook_endpoints.countDocuments({ _id: endpointId, org_id: orgId }, { session, limit: 1 })) === 0) return undefined;
        await c.webhook_events.insertOne(eventToDoc(event), { session });
        const delivery = newDelivery(event, endpointId);
        await c.webhook_deliveries.insertOne(delivery, { session });
        return deliveryFromDoc(delivery);
      });
    },
    claimDue(endpointId, owner, now, leaseUntil, limit) {
      return queue.run(`endpoint/${endpointId}`, async (): Promise<ClaimedDelivery[]> => {
        const claimed: WebhookDeliveryDoc[] = [];
        while (claimed.length < limit) {
          const d = await c.webhook_deliveries.findOneAndUpdate(
            dueFilter(endpointId, now), { $set: { lease_owner: owner, lease_expires_at: leaseUntil, attempt_started_at: now } },
            { sort: { next_attempt_at: 1, _id: 1 }, returnDocument: 'after' },
          );
          if (d === null) break;
          claimed.push(d);
        }
        if (claimed.length === 0) return [];
        const events = new Map((await c.webhook_events.find({ _id: { $in: claimed.map((d) => d.event_id) } }).toArray()).map((e) => [e._id, e]));
        return claimed.flatMap((d) => {
          const e = events.get(d.event_id);
          return e === undefined ? [] : [{ delivery_id: d._id, endpoint_id: d.endpoint_id, attempt_count: d.attempt_count, event: eventFromDoc(e) }];
        });
      });
    },
    async nextDueAt(endpointId) {
      const d = await c.webhook_deliveries.findOne(
        { endpoint_id: endpointId, status: 'pending', lease_owner: null }, { sort: { next_attempt_at: 1 }, projection: { next_attempt_at: 1 } },
      );
      return d?.next_attempt_at ?? null;
    },
    recordAttempt(deliveryId, owner, o) {
      return tx(async (session) => {
        const next = { status: o.next.status, next_attempt_at: o.next.status === 'pending' ? o.next.next_attempt_at : null };
        const before = await c.webhook_deliveries.findOneAndUpdate(
          { _id: deliveryId, lease_owner: owner }, finishAttempt(next, o.response, o.error, o.at), { session, projection: { attempt_count: 1, endpoint_id: 1 } },
        );
        if (before === null) return false;
        const number = before.attempt_count + 1;
        await c.webhook_attempts.insertOne({
          _id: `${deliveryId}/${number}`, delivery_id: deliveryId, number, status: o.response.status, body: o.response.body, error: o.error,
          duration_ms: o.response.duration_ms, at: o.at,
        }, { session });
        if (o.success) await c.webhook_endpoints.updateOne({ _id: before.endpoint_id, failing_since: { $ne: null } }, { $set: { failing_since: null } }, { session });
        else await c.webhook_endpoints.updateOne({ _id: before.endpoint_id, failing_since: null }, { $set: { failing_since: o.at } }, { session });
        return true;
      });
    },
    async releaseExpiredLeases(now, deadOwners) {
      const expired = await c.webhook_deliveries.find(expiredLeaseFilter(now, deadOwners), { projection: { endpoint_id: 1, lease_owner: 1, lease_expires_at: 1, attempt_started_at: 1 } }).toArray();
      const endpoints = new Set<string>();
      for (const d of expired) {
        const released = await tx(async (session) => {
          const before = await c.webhook_deliveries.findOneAndUpdate(
            { _id: d._id, lease_owner: d.lease_owner, lease_expires_at: d.lease_expires_at },
            finishAttempt({ status: 'pending', next_attempt_at: now }, { status: 0, body: '', duration_ms: 0 }, INTERRUPTED_ATTEMPT, now),
            { session, projection: { attempt_count: 1 } },
          );
          if (before === null) return false;
          const number = before.attempt_count + 1;
          await c.webhook_attempts.insertOne({
            _id: `${d._id}/${number}`, delivery_id: d._id, number, status: 0, body: '', error: INTERRUPTED_ATTEMPT, duration_ms: 0, at: d.attempt_started_at ?? now,
          }, { session });
          return true;
        });
        if (released) endpoints.add(d.endpoint_id);
      }
      return [...endpoints];
    },
    async listDeliveries(orgId, endpointId, page) {
      return toPage(await newestFirst(c.webhook_deliveries, { org_id: orgId, endpoint_id: endpointId }, page, 'delivery'), page, deliveryFromDoc);
    },
    async getDelivery(orgId, endpointId, id) {
      const d = await c.webhook_deliveries.findOne({ _id: id, org_id: orgId, endpoint_id: endpointId });
      if (d === null) return undefined;
      const attempts = (await c.webhook_attempts.find({ delivery_id: id }).sort({ number: 1 }).toArray()).map((a): AttemptRecord => ({
        number: a.number, status: a.status, body: a.body, error: a.error ?? null, duration_ms: a.duration_ms, at: a.at,
      }));
      return { ...deliveryFromDoc(d), attempts };
    },
    async retryDelivery(orgId, endpointId, id, at) {
      const d = await c.webhook_deliveries.findOneAndUpdate(
        { _id: id, org_id: orgId, endpoint_id: endpointId, lease_owner: null },
        { $set: { status: 'pending', next_attempt_at: at, updated_at: at } }, { returnDocument: 'after' },
      );
      return d === null ? undefined : deliveryFromDoc(d);
    },
    async recoverSince(orgId, endpointId, since, at) {
      const r = await c.webhook_deliveries.updateMany(
        { org_id: orgId, endpoint_id: endpointId, status: 'failed', created_at: { $gte: since } },
        { $set: { status: 'pending', next_attempt_at: at, updated_at: at } },
      );
      return r.modifiedCount;
    },
    async getEvent(orgId, id) {
      const d = await c.webhook_events.findOne({ _id: id, org_id: orgId });
      return d === null ? undefined : eventFromDoc(d);
    },
  };
}

/** UsagePort on MongoDB (`usage_daily`, written with each agent reply: outbox.ts countUsage; `usage_thresholds`). */
export function createUsage({ c, tx }: MongoContext): UsagePort {
  return {
    async daily(orgId, from, to, agentId): Promise<UsageDay[]> {
      const filter = { org_id: orgId, day: { $gte: from, $lte: to }, ...(agentId === undefined ? {} : { agent_id: agentId }) };
      const docs = await c.usage_daily.find(filter).sort({ day: 1, agent_id: 1 }).toArray();
      return docs.map((d) => ({
        agent_id: d.agent_id, day: d.day, input_tokens: d.input_tokens, output_tokens: d.output_tokens,
        total_tokens: d.input_tokens + d.output_tokens, turns: d.turns,
      }));
    },
    async setThresholds(orgId, thresholds, at) {
      await tx(async (session) => {
        await c.usage_thresholds.deleteMany({ org_id: orgId }, { session });
        for (const t of thresholds) {
          await c.usage_thresholds.updateOne(
            { _id: thresholdId(orgId, t) }, { $setOnInsert: { org_id: orgId, metric: t.metric, value: t.value, period: t.period, created_at: at } },
            { upsert: true, session },
          );
        }
      });
    },
    async thresholds(orgId) {
      const docs = await c.usage_thresholds.find({ org_id: orgId }).sort({ metric: 1, period: 1, value: 1 }).toArray();
      return docs.map((d) => ({ metric: d.metric, value: d.value, period: d.period }) as UsageThreshold);
    },
  };
}
