import type { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import {
  DeliverySchema, DeliveryWithAttemptsSchema, EmptyQuery, ErrorSchema, listOf, PageQuery, UsageQuery, UsageReportSchema, UsageThresholdsSchema,
  WebhookCreateSchema, WebhookEndpointSchema, WebhookEndpointWithSecretSchema, WebhookEventListSchema, WebhookPatchSchema, WebhookRecoveredSchema,
  WebhookRecoverSchema, WebhookRotateSchema, WebhookTestSchema,
} from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { deliveryView, deliveryWithAttemptsView, pageView, webhookEndpointView, webhookEndpointWithSecretView } from '../views.js';
import { NO_STORE } from './auth.js';

type Ctx<B = unknown, Q = unknown> = { principal: { orgId: string }; params: Record<string, string>; body: B; query: Q };

const NOT_FOUND = { status: 404, description: 'No such endpoint (or delivery) in this organization', schema: ErrorSchema };

/**
 * `/v1/webhooks` (API.md "Webhooks"): endpoints, their deliveries and attempts, test, retry and recover.
 * Managed like agents and knowledge bases: an API key, or an owner or admin.
 */
export function webhookRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'GET', path: '/v1/webhooks/events', tag: 'Webhooks', access: ACCESS.member, query: EmptyQuery,
      summary: 'The event names an endpoint can subscribe to (SPEC.md 6.2), with what each means',
      responses: [{ status: 200, description: 'The nine events of SPEC.md 6.2, and conversation.deleted', schema: WebhookEventListSchema }],
      handle() {
        return { kind: 'json', status: 200, body: { data: s.webhooks.events() } };
      },
    },
    {
      method: 'POST', path: '/v1/webhooks', tag: 'Webhooks', access: ACCESS.manage, body: WebhookCreateSchema, query: EmptyQuery,
      summary: 'Register an endpoint; its signing secret is in this response only',
      responses: [{ status: 201, description: 'The endpoint with its secret', schema: WebhookEndpointWithSecretSchema }],
      async handle({ principal, body }: Ctx<z.infer<typeof WebhookCreateSchema>>) {
        const rec = await s.webhooks.create(principal.orgId, body);
        return { kind: 'json', status: 201, body: webhookEndpointWithSecretView(rec), headers: NO_STORE };
      },
    },
    {
      method: 'GET', path: '/v1/webhooks', tag: 'Webhooks', access: ACCESS.manage, query: PageQuery,
      summary: 'List the organization\'s endpoints, newest first (never a secret)',
      responses: [{ status: 200, description: 'Endpoints', schema: listOf(WebhookEndpointSchema, 'WebhookEndpointList') }],
      async handle({ principal, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.webhooks.list(principal.orgId, query), webhookEndpointView) };
      },
    },
    {
      method: 'GET', path: '/v1/webhooks/{endpoint_id}', tag: 'Webhooks', access: ACCESS.manage, query: EmptyQuery,
      summary: 'One endpoint', responses: [{ status: 200, description: 'The endpoint', schema: WebhookEndpointSchema }, NOT_FOUND],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: webhookEndpointView(await s.webhooks.get(principal.orgId, params.endpoint_id!)) };
      },
    },
    {
      method: 'PATCH', path: '/v1/webhooks/{endpoint_id}', tag: 'Webhooks', access: ACCESS.manage, body: WebhookPatchSchema, query: EmptyQuery,
      summary: 'Change the URL, events or description, or enable/disable the endpoint (enabling re-sends its pending deliveries)',
      responses: [{ status: 200, description: 'The endpoint', schema: WebhookEndpointSchema }, NOT_FOUND],
      async handle({ principal, params, body }: Ctx<z.infer<typeof WebhookPatchSchema>>) {
        return { kind: 'json', status: 200, body: webhookEndpointView(await s.webhooks.update(principal.orgId, params.endpoint_id!, body)) };
      },
    },
    {
      method: 'DELETE', path: '/v1/webhooks/{endpoint_id}', tag: 'Webhooks', access: ACCESS.manage, query: EmptyQuery,
      summary: 'Delete an endpoint with its delivery history', responses: [{ status: 204, description: 'Deleted' }, NOT_FOUND],
      async handle({ principal, params }) {
        await s.webhooks.delete(principal.orgId, params.endpoint_id!);
        return { kind: 'empty', status: 204 };
      },
    },
    {
      method: 'POST', path: '/v1/webhooks/{endpoint_id}/rotate-secret', tag: 'Webhooks', access: ACCESS.manage, body: WebhookRotateSchema, query: EmptyQuery,
      summary: 'A new signing secret (in this response only); the previous one keeps signing beside it for overlap_seconds (default 24 h)',
      responses: [{ status: 200, description: 'The endpoint with its new secret', schema: WebhookEndpointWithSecretSchema }, NOT_FOUND],
      async handle({ principal, params, body }: Ctx<z.infer<typeof WebhookRotateSchema>>) {
        const rec = await s.webhooks.rotateSecret(principal.orgId, params.endpoint_id!, body.overlap_seconds);
        return { kind: 'json', status: 200, body: webhookEndpointWithSecretView(rec), headers: NO_STORE };
      },
    },
    {
      method: 'GET', path: '/v1/webhooks/{endpoint_id}/deliveries', tag: 'Webhooks', access: ACCESS.manage, query: PageQuery,
      summary: 'Delivery history, newest first, with the last response the receiver returned',
      responses: [{ status: 200, description: 'Deliveries', schema: listOf(DeliverySchema, 'WebhookDeliveryList') }, NOT_FOUND],
      async handle({ principal, params, query }: Ctx<unknown, z.infer<typeof PageQuery>>) {
        return { kind: 'json', status: 200, body: pageView(await s.webhooks.deliveries(principal.orgId, params.endpoint_id!, query), deliveryView) };
      },
    },
    {
      method: 'GET', path: '/v1/webhooks/{endpoint_id}/deliveries/{delivery_id}', tag: 'Webhooks', access: ACCESS.manage, query: EmptyQuery,
      summary: 'One delivery with every attempt (status, first 4 KiB of the body, error, duration)',
      responses: [{ status: 200, description: 'The delivery', schema: DeliveryWithAttemptsSchema }, NOT_FOUND],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: deliveryWithAttemptsView(await s.webhooks.delivery(principal.orgId, params.endpoint_id!, params.delivery_id!)) };
      },
    },
    {
      method: 'POST', path: '/v1/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry', tag: 'Webhooks', access: ACCESS.manage, query: EmptyQuery,
      summary: 'Send a delivery again now (same event id)',
      responses: [
        { status: 202, description: 'Queued', schema: DeliverySchema }, NOT_FOUND,
        { status: 409, description: 'An attempt of it is running (delivery_in_progress)', schema: ErrorSchema },
      ],
      async handle({ principal, params }) {
        return { kind: 'json', status: 202, body: deliveryView(await s.webhooks.retry(principal.orgId, params.endpoint_id!, params.delivery_id!)) };
      },
    },
    {
      method: 'POST', path: '/v1/webhooks/{endpoint_id}/test', tag: 'Webhooks', access: ACCESS.manage, query: EmptyQuery,
      summary: 'Send a sample event (type webhook.test) to this endpoint, signed like a real one',
      responses: [{ status: 202, description: 'Queued', schema: WebhookTestSchema }, NOT_FOUND],
      async handle({ principal, params }) {
        return { kind: 'json', status: 202, body: await s.webhooks.test(principal.orgId, params.endpoint_id!) };
      },
    },
    {
      method: 'POST', path: '/v1/webhooks/{endpoint_id}/recover', tag: 'Webhooks', access: ACCESS.manage, body: WebhookRecoverSchema, query: EmptyQuery,
      summary: 'Re-send the deliveries that failed for good since a time (same event ids), e.g. after re-enabling the endpoint',
      responses: [{ status: 202, description: 'How many were queued again', schema: WebhookRecoveredSchema }, NOT_FOUND],
      async handle({ principal, params, body }: Ctx<z.infer<typeof WebhookRecoverSchema>>) {
        return { kind: 'json', status: 202, body: { recovered: await s.webhooks.recover(principal.orgId, params.endpoint_id!, body.since) } };
      },
    },
  ];
}

/** `/v1/usage` (API.md "Usage"): token totals per agent and day, and usage thresholds. */
export function usageRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'GET', path: '/v1/usage', tag: 'Usage', access: ACCESS.member, query: UsageQuery,
      summary: 'Token totals per agent and UTC day (default: the last 30 days)',
      responses: [{ status: 200, description: 'Totals by day, then agent', schema: UsageReportSchema }],
      async handle({ principal, query }: Ctx<unknown, z.infer<typeof UsageQuery>>) {
        return { kind: 'json', status: 200, body: await s.usage.daily(principal.orgId, query) };
      },
    },
    {
      method: 'GET', path: '/v1/usage/thresholds', tag: 'Usage', access: ACCESS.member, query: EmptyQuery,
      summary: 'The usage thresholds', responses: [{ status: 200, description: 'Thresholds', schema: UsageThresholdsSchema }],
      async handle({ principal }) {
        return { kind: 'json', status: 200, body: { thresholds: await s.usage.thresholds(principal.orgId) } };
      },
    },
    {
      method: 'PUT', path: '/v1/usage/thresholds', tag: 'Usage', access: ACCESS.manage, body: UsageThresholdsSchema, query: EmptyQuery,
      summary: 'Replace the usage thresholds; crossing one fires usage.threshold once per period',
      responses: [{ status: 200, description: 'Thresholds as stored', schema: UsageThresholdsSchema }],
      async handle({ principal, body }: Ctx<z.infer<typeof UsageThresholdsSchema>>) {
        return { kind: 'json', status: 200, body: { thresholds: await s.usage.setThresholds(principal.orgId, body.thresholds) } };
      },
    },
  ];
}
