/**
 * The outbox and usage counting inside a caller's transaction (the MongoDB twin of
 * src/store/sqlite/outbox-writes.ts): an event is inserted in the same transaction as the change that
 * caused it, with one `pending` delivery per enabled endpoint of its organization that subscribes to it,
 * so a change and its events are durable together or not at all (API.md "Webhooks": durability).
 */
import type { ClientSession } from 'mongodb';
import { newId } from '../../ids/ids.js';
import type { OutboxEvent, UsageThreshold } from '../records.js';
import type { Collections, WebhookDeliveryDoc, WebhookEventDoc } from './schema.js';

/** The stored form of `e`, with its data's `conversation_id` beside it (null when it has none: ConversationsPort.erase). */
export const eventToDoc = (e: OutboxEvent): WebhookEventDoc => ({
  _id: e.id, org_id: e.org_id, type: e.type, data: e.data, created_at: e.created_at,
  conversation_id: typeof e.data.conversation_id === 'string' ? e.data.conversation_id : null,
});

/** True when an endpoint subscribed to `events` takes an event of `type` (`*` takes every event). */
export function subscribes(events: readonly string[], type: string): boolean {
  return events.includes('*') || events.includes(type);
}

/** A new `pending` delivery of `e` to endpoint `endpointId`, due at once (at the event's time). */
export function newDelivery(e: OutboxEvent, endpointId: string): WebhookDeliveryDoc {
  return {
    _id: newId('dlv'), event_id: e.id, endpoint_id: endpointId, org_id: e.org_id, event_type: e.type, status: 'pending',
    attempt_count: 0, next_attempt_at: e.created_at, lease_owner: null, lease_expires_at: null, attempt_started_at: null,
    last_status: null, last_body: null, last_duration_ms: null, last_error: null, created_at: e.created_at, updated_at: e.created_at,
  };
}

/**
 * Inserts `events` with their deliveries in the transaction of `session` (the outbox rule above). With no
 * enabled endpoint in the organization it inserts the events alone (one indexed read more).
 */
export async function writeOutbox(c: Collections, session: ClientSession, events: readonly OutboxEvent[] | undefined): Promise<void> {
  if (events === undefined || events.length === 0) return;
  await c.webhook_events.insertMany(events.map(eventToDoc), { session });
  const endpointsOf = new Map<string, Array<{ _id: string; events: string[] }>>();
  const deliveries: WebhookDeliveryDoc[] = [];
  for (const e of events) {
    let endpoints = endpointsOf.get(e.org_id);
    if (endpoints === undefined) {
      endpoints = await c.webhook_endpoints.find({ org_id: e.org_id, enabled: true }, { session, projection: { events: 1 } }).toArray();
      endpointsOf.set(e.org_id, endpoints);
    }
    for (const ep of endpoints) if (subscribes(ep.events, e.type)) deliveries.push(newDelivery(e, ep._id));
  }
  if (deliveries.length > 0) await c.webhook_deliveries.insertMany(deliveries, { session });
}

/** `YYYY-MM-DD` of an RFC 3339 time (UTC). */
export const dayOf = (at: string): string => at.slice(0, 10);

/** First and last day (`YYYY-MM-DD`) of the period of `period` that contains `day` (a month ends on the 31st as text). */
export function periodRange(period: UsageThreshold['period'], day: string): [string, string] {
  if (period === 'day') return [day, day];
  return [`${day.slice(0, 7)}-01`, `${day.slice(0, 7)}-31`];
}

/** The total a threshold of `metric` compares with its value. */
export function metricTotal(metric: UsageThreshold['metric'], totals: { input_tokens: number; output_tokens: number }): number {
  if (metric === 'input_tokens') return totals.input_tokens;
  if (metric === 'output_tokens') return totals.output_tokens;
  return totals.input_tokens + totals.output_tokens;
}

/** The `_id` of a threshold of an organization (one per metric, value and period). */
export const thresholdId = (orgId: string, t: UsageThreshold): string => `${orgId}/${t.metric}/${t.value}/${t.period}`;

/** The `_id` of a day's usage of one agent. */
export const usageDayId = (orgId: string, day: string, agentId: string): string => `${orgId}/${day}/${agentId}`;

/**
 * Counts an agent reply's tokens for agent `agent_id` on the reply's day, then fires the organization's
 * thresholds that the period's total now reaches, in the transaction of `session`: each is marked with
 * an upsert of the mark (`_id` the threshold and the period's first day) and only the upsert that inserts
 * the mark writes a `usage.threshold` event to the outbox. Of two transactions crossing one threshold at
 * once, the second's upsert conflicts with the first's, runs again, finds the mark, and fires nothing.
 * Returns the events written.
 */
export async function countUsage(c: Collections, session: ClientSession, a: {
  org_id: string; agent_id: string; conversation_id: string; at: string; input_tokens: number; output_tokens: number;
}): Promise<OutboxEvent[]> {
  const day = dayOf(a.at);
  await c.usage_daily.updateOne(
    { _id: usageDayId(a.org_id, day, a.agent_id) },
    { $inc: { input_tokens: a.input_tokens, output_tokens: a.output_tokens, turns: 1 }, $setOnInsert: { org_id: a.org_id, day, agent_id: a.agent_id } },
    { upsert: true, session },
  );
  const thresholds = await c.usage_thresholds.find({ org_id: a.org_id }, { session }).toArray();
  const fired: OutboxEvent[] = [];
  for (const doc of thresholds) {
    const t = { metric: doc.metric, value: doc.value, period: doc.period } as UsageThreshold;
    const [from, to] = periodRange(t.period, day);
    const [sums] = await c.usage_daily.aggregate<{ input_tokens: number; output_tokens: number }>([
      { $match: { org_id: a.org_id, day: { $gte: from, $lte: to } } },
      { $group: { _id: null, input_tokens: { $sum: '$input_tokens' }, output_tokens: { $sum: '$output_tokens' } } },
    ], { session }).toArray();
    const total = metricTotal(t.metric, sums ?? { input_tokens: 0, output_tokens: 0 });
    if (total < t.value) continue;
    const event: OutboxEvent = {
      id: newId('evt'), type: 'usage.threshold', org_id: a.org_id, created_at: a.at,
      data: { metric: t.metric, value: t.value, period: t.period, period_start: from, total, conversation_id: a.conversation_id },
    };
    const mark = await c.usage_threshold_marks.updateOne(
      { _id: `${thresholdId(a.org_id, t)}/${from}` },
      { $setOnInsert: { org_id: a.org_id, metric: t.metric, value: t.value, period: t.period, period_start: from, event_id: event.id, fired_at: a.at } },
      { upsert: true, session },
    );
    if (mark.upsertedCount === 0) continue;
    await writeOutbox(c, session, [event]);
    fired.push(event);
  }
  return fired;
}
