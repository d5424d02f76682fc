import { newId } from '../ids/ids.js';
import type { WebhookEventType } from '../vocabulary/webhook.js';

/** An event for the outbox: its type and JSON `data` (the envelope's other fields are added by Outbox.events). */
export interface EventSpec {
  type: WebhookEventType;
  data: Record<string, unknown>;
}

/** An event as written to the outbox (the webhook envelope of API.md "Webhooks"). Same shape as the store's OutboxEvent. */
export interface StoredEvent {
  id: string;
  type: string;
  org_id: string;
  created_at: string;
  data: Record<string, unknown>;
}

/**
 * The writers' side of the outbox (API.md "Webhooks": durability). A change that causes webhook events
 * asks `events()` for them and hands them to the store write that makes the change, which stores them
 * (with their deliveries) in the same commit; once that write resolved it calls `committed()` so the
 * dispatcher sends them at once.
 *
 * The chat hot path pays nothing when no webhook exists: `events()` answers `undefined` (no id, no
 * allocation, nothing for the writer to do) for an organization without an enabled endpoint, from an
 * in-memory set that the webhook service keeps current (loaded at start, updated on every endpoint
 * change in this process, the store's single user).
 */
export class Outbox {
  private readonly orgs = new Set<string>();
  private readonly listeners: Array<(orgId: string) => void> = [];

  /** Replaces the set of organizations with at least one enabled endpoint. */
  reset(orgIds: Iterable<string>): void {
    this.orgs.clear();
    for (const id of orgIds) this.orgs.add(id);
  }

  /** Marks whether `orgId` has an enabled endpoint. */
  setHasEndpoints(orgId: string, has: boolean): void {
    if (has) this.orgs.add(orgId);
    else this.orgs.delete(orgId);
  }

  /** True when events of `orgId` would reach an endpoint. */
  wants(orgId: string): boolean {
    return this.orgs.has(orgId);
  }

  /**
   * The events to store with a change of `orgId` (ids `evt_...`, `created_at` = `at`), or undefined when
   * the organization has no enabled endpoint (then the write carries no events at all).
   */
  events(orgId: string, specs: readonly EventSpec[], at: string = new Date().toISOString()): StoredEvent[] | undefined {
    if (!this.orgs.has(orgId) || specs.length === 0) return undefined;
    return specs.map((s) => ({ id: newId('evt'), type: s.type, org_id: orgId, created_at: at, data: s.data }));
  }

  /** Tells the dispatcher that events of `orgId` were committed (no-op for undefined or empty `events`). */
  committed(events: readonly StoredEvent[] | undefined): void {
    if (events === undefined || events.length === 0) return;
    const orgIds = new Set(events.map((e) => e.org_id));
    for (const orgId of orgIds) for (const l of this.listeners) l(orgId);
  }

  /** Adds a listener for committed events (the dispatcher's wake-up). */
  onCommitted(listener: (orgId: string) => void): void {
    this.listeners.push(listener);
  }
}
