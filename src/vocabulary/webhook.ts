/**
 * The outbound webhook events of SPEC.md 6.2, and `conversation.deleted` (API.md "Conversations and
 * handoff": an addition beyond SPEC.md's nine), with the description `GET /v1/webhooks/events` shows, and
 * the event of `POST /v1/webhooks/{endpoint_id}/test` (API.md "Webhooks"), which is never subscribed to:
 * it goes to the one endpoint that asked for it.
 */
export const WEBHOOK_EVENTS = {
  'message.created': 'A message was added to a conversation: by a visitor, by the agent (also a failed reply) or by an operator.',
  'conversation.created': 'A new conversation started (its first visitor message is stored with it).',
  'conversation.closed': 'A conversation was closed; later messages to it are refused.',
  'handoff.requested': 'A conversation needs a human: asked for by the visitor, the agent (handoff_to_human tool) or an operator.',
  'handoff.resolved': 'A human handed the conversation back to the agent.',
  'document.ready': 'A knowledge-base document finished ingesting and is searchable.',
  'document.failed': 'Ingesting a knowledge-base document failed; data.error says why, data.error_code is its stable code (document_too_large, ...).',
  'tool.run': 'The agent called a tool during a turn; data carries the call and its outcome.',
  'usage.threshold': 'Token usage crossed a configured threshold (once per threshold and period).',
  'conversation.deleted': 'A conversation was erased (DELETE, or its organization\'s retention_days): its messages and tool runs are gone, and the text of its earlier events is replaced by "[erased]". Beyond SPEC.md\'s nine.',
} as const;

/** The name of a webhook event (SPEC.md 6.2). */
export type WebhookEventType = keyof typeof WEBHOOK_EVENTS;

/** The names, in catalogue order. */
export const WEBHOOK_EVENT_TYPES = Object.keys(WEBHOOK_EVENTS) as WebhookEventType[];

/** The type of the sample event sent by `POST /v1/webhooks/{endpoint_id}/test`. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** True when `name` is one of the events above. */
export function isWebhookEventType(name: string): name is WebhookEventType {
  return Object.hasOwn(WEBHOOK_EVENTS, name);
}

/** Why an endpoint is disabled: a 410 Gone, 5 days of failures, or by its owner (PATCH enabled=false). */
export type EndpointDisabledReason = 'gone' | 'failing' | 'manual';

/** A delivery's state: waiting for an attempt (or a retry), delivered (a 2xx), or given up. */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** Usage metrics a threshold can watch (API.md "Usage"). */
export const USAGE_METRICS = ['total_tokens', 'input_tokens', 'output_tokens'] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];
/** Periods a threshold counts over (UTC calendar day or month). */
export const USAGE_PERIODS = ['day', 'month'] as const;
export type UsagePeriod = (typeof USAGE_PERIODS)[number];
