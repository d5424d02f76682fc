import { AppError } from '../../errors/app-error.js';
import type { Outbox } from '../../events/outbox.js';
import { newId } from '../../ids/ids.js';
import { checkDestinationUrl } from '../../net/outbound-guard.js';
import type { Store } from '../../store/ports.js';
import type { DeliveryRecord, DeliveryWithAttempts, Page, PageRequest, WebhookEndpointRecord } from '../../store/records.js';
import { TEST_EVENT_TYPE, WEBHOOK_EVENTS, type WebhookEventType } from '../../vocabulary/webhook.js';
import { generateSigningSecret } from '../../webhooks/signing.js';
import type { WebhookDispatcher } from '../webhooks/dispatcher.js';

/** Default overlap after a rotation during which the previous secret still signs, s (API.md: 24 h). */
export const DEFAULT_SECRET_OVERLAP_S = 24 * 3600;

/** A new endpoint as asked for (the validated body of POST /v1/webhooks). */
export interface EndpointInput {
  url: string;
  /** Event names, or `["*"]`. */
  events: string[];
  description?: string | undefined;
}

/** A change to an endpoint (the validated body of PATCH). */
export interface EndpointChange {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

/**
 * Webhook endpoints and their deliveries (API.md "Webhooks"), scoped by organization: another
 * organization's endpoint or delivery is `not_found`. Every change is told to the dispatcher (its actor
 * for the endpoint) and to the outbox's set of organizations with an endpoint.
 */
export class WebhookService {
  constructor(
    private readonly store: Store,
    private readonly dispatcher: WebhookDispatcher,
    private readonly outbox: Outbox,
    private readonly allowPrivate: boolean,
    private readonly now: () => number = Date.now,
  ) {}

  /** The nine events of SPEC.md 6.2 and conversation.deleted, with their descriptions. */
  events(): Array<{ name: WebhookEventType; description: string }> {
    return (Object.entries(WEBHOOK_EVENTS) as Array<[WebhookEventType, string]>).map(([name, description]) => ({ name, description }));
  }

  /**
   * Registers an endpoint with a new signing secret (the record carries it: shown once by the route).
   * Throws AppError `validation_failed` for a URL the outbound guard refuses (API.md: private
   * destinations unless allowed) or an unknown event name.
   */
  async create(orgId: string, input: EndpointInput): Promise<WebhookEndpointRecord> {
    const url = checkDestinationUrl(input.url, this.allowPrivate, 'url').toString();
    const at = new Date(this.now()).toISOString();
    const rec: WebhookEndpointRecord = {
      id: newId('whe'), org_id: orgId, url, description: input.description ?? null, events: normalizeEvents(input.events),
      enabled: true, disabled_reason: null, secret: generateSigningSecret(), previous_secret: null, previous_secret_expires_at: null,
      failing_since: null, created_at: at, updated_at: at,
    };
    await this.store.webhooks.createEndpoint(rec);
    this.outbox.setHasEndpoints(orgId, true);
    this.dispatcher.endpointChanged(rec);
    return rec;
  }

  list(orgId: string, page: PageRequest): Promise<Page<WebhookEndpointRecord>> {
    return this.store.webhooks.listEndpoints(orgId, page);
  }

  /** The endpoint; throws AppError `not_found`. */
  async get(orgId: string, id: string): Promise<WebhookEndpointRecord> {
    const rec = await this.store.webhooks.getEndpoint(orgId, id);
    if (rec === undefined) throw new AppError('not_found', 'No such webhook endpoint.');
    return rec;
  }

  /**
   * Changes an endpoint; `enabled: true` re-enables one that was disabled (by 410, by 5 days of failure
   * or by hand) and its pending deliveries go out again. Throws AppError `not_found`, `validation_failed`.
   */
  async update(orgId: string, id: string, change: EndpointChange): Promise<WebhookEndpointRecord> {
    const patch: Parameters<Store['webhooks']['updateEndpoint']>[2] = {};
    if (change.url !== undefined) patch.url = checkDestinationUrl(change.url, this.allowPrivate, 'url').toString();
    if (change.events !== undefined) patch.events = normalizeEvents(change.events);
    if (change.description !== undefined) patch.description = change.description;
    if (change.enabled !== undefined) patch.enabled = change.enabled;
    const rec = await this.store.webhooks.updateEndpoint(orgId, id, patch, new Date(this.now()).toISOString());
    if (rec === undefined) throw new AppError('not_found', 'No such webhook endpoint.');
    await this.refreshOrg(orgId);
    this.dispatcher.endpointChanged(rec);
    return rec;
  }

  /** Deletes an endpoint with its delivery history; throws AppError `not_found`. */
  async delete(orgId: string, id: string): Promise<void> {
    if (!(await this.store.webhooks.deleteEndpoint(orgId, id))) throw new AppError('not_found', 'No such webhook endpoint.');
    this.dispatcher.endpointDeleted(id);
    await this.refreshOrg(orgId);
  }

  /**
   * A new signing secret (returned on the record, shown once); the previous one still signs for
   * `overlapSeconds` (default 24 h; 0 = it stops at once). Throws AppError `not_found`.
   */
  async rotateSecret(orgId: string, id: string, overlapSeconds = DEFAULT_SECRET_OVERLAP_S): Promise<WebhookEndpointRecord> {
    const at = this.now();
    const until = overlapSeconds > 0 ? new Date(at + overlapSeconds * 1000).toISOString() : null;
    const rec = await this.store.webhooks.rotateSecret(orgId, id, generateSigningSecret(), until, new Date(at).toISOString());
    if (rec === undefined) throw new AppError('not_found', 'No such webhook endpoint.');
    this.dispatcher.endpointChanged(rec);
    return rec;
  }

  /** The endpoint's deliveries, newest first; throws AppError `not_found` for an unknown endpoint. */
  async deliveries(orgId: string, id: string, page: PageRequest): Promise<Page<DeliveryRecord>> {
    await this.get(orgId, id);
    return this.store.webhooks.listDeliveries(orgId, id, page);
  }

  /** One delivery with its attempts; throws AppError `not_found`. */
  async delivery(orgId: string, id: string, deliveryId: string): Promise<DeliveryWithAttempts> {
    const d = await this.store.webhooks.getDelivery(orgId, id, deliveryId);
    if (d === undefined) throw new AppError('not_found', 'No such delivery.');
    return d;
  }

  /**
   * Sends a delivery again now (same event id), whatever its state, unless an attempt of it is running.
   * Throws AppError `not_found`, or `delivery_in_progress` (409) while it is being attempted.
   */
  async retry(orgId: string, id: string, deliveryId: string): Promise<DeliveryRecord> {
    const d = await this.store.webhooks.retryDelivery(orgId, id, deliveryId, new Date(this.now()).toISOString());
    if (d === undefined) {
      await this.delivery(orgId, id, deliveryId);
      throw new AppError('delivery_in_progress', 'An attempt of this delivery is running; retry when it is recorded.');
    }
    this.dispatcher.wake(id);
    return d;
  }

  /**
   * Queues a sample event (`webhook.test`) for this endpoint only, signed and sent like any other.
   * Throws AppError `not_found`.
   */
  async test(orgId: string, id: string): Promise<{ delivery_id: string; event_id: string }> {
    const at = new Date(this.now()).toISOString();
    const event = {
      id: newId('evt'), type: TEST_EVENT_TYPE, org_id: orgId, created_at: at,
      data: { endpoint_id: id, message: 'A test delivery from Parley: it is signed like every other delivery.' },
    };
    const d = await this.store.webhooks.enqueueTo(orgId, id, event);
    if (d === undefined) throw new AppError('not_found', 'No such webhook endpoint.');
    this.dispatcher.wake(id);
    return { delivery_id: d.id, event_id: event.id };
  }

  /**
   * Sends again every delivery of the endpoint that failed for good since `since` (RFC 3339), with the
   * same event ids; the count. Throws AppError `not_found`.
   */
  async recover(orgId: string, id: string, since: string): Promise<number> {
    await this.get(orgId, id);
    const n = await this.store.webhooks.recoverSince(orgId, id, new Date(since).toISOString(), new Date(this.now()).toISOString());
    if (n > 0) this.dispatcher.wake(id);
    return n;
  }

  private async refreshOrg(orgId: string): Promise<void> {
    this.outbox.setHasEndpoints(orgId, (await this.store.webhooks.orgsWithEndpoints()).includes(orgId));
  }
}

/** Event names deduplicated in catalogue order; `*` alone stands for all. */
function normalizeEvents(events: string[]): string[] {
  if (events.includes('*')) return ['*'];
  const order = Object.keys(WEBHOOK_EVENTS);
  return [...new Set(events)].sort((a, b) => order.indexOf(a) - order.indexOf(b));
}
