/**
 * The webhook dispatcher (DESIGN.md "Actors", API.md "Webhooks"): one webhook-endpoint actor
 * (actors/webhook-endpoint/) per enabled endpoint. The machine decides (idle, delivering, backing off,
 * disabled); this module does the I/O of its `pump`: claim due deliveries under a lease, send them
 * (src/webhooks/sender.ts), record each attempt, and schedule the retry (actors/webhook-endpoint/retry.rules.ts).
 *
 * Nothing is lost with a timer or an actor: due times and leases live in the store. Every process sharing
 * the store runs an actor per endpoint; a delivery is claimed under a lease, so one process attempts it at
 * a time. A sweep (at start, then every `sweepIntervalMs`) takes back the deliveries whose lease ended
 * (an attempt cut short by a crash or a stall), records that attempt as interrupted and makes them due
 * again, and wakes the endpoints with deliveries due (another process may have stored them and died);
 * the leases of a process found dead are taken back at once (`ownerGone`). An endpoint actor that crashes
 * is started again from the store after a capped backoff (supervision), never taking the process down.
 */
import { randomBytes } from 'node:crypto';
import { createActor, fromCallback, type ActorRefFrom } from 'xstate';
import { nextRetry, retryAfterMs } from '../../../actors/webhook-endpoint/retry.rules.js';
import { webhookEndpointMachine } from '../../../actors/webhook-endpoint/webhook-endpoint.machine.js';
import type { AttemptOutcome as MachineOutcome, PumpInput, WebhookEndpointEvent } from '../../../actors/webhook-endpoint/webhook-endpoint.types.js';
import type { Outbox } from '../../events/outbox.js';
import type { Logger } from '../../log/logger.js';
import type { Store } from '../../store/ports.js';
import type { AttemptOutcome, ClaimedDelivery, WebhookEndpointRecord } from '../../store/records.js';
import type { WebhookSender } from '../../webhooks/sender.js';
import { deliveryHeaders } from '../../webhooks/signing.js';

/** Options of WebhookDispatcher (durations in ms). */
export interface WebhookDispatcherOptions {
  store: Store;
  logger: Logger;
  sender: WebhookSender;
  outbox: Outbox;
  /** Delay before each attempt (the first is normally 0); after the last, a delivery fails for good. */
  retryScheduleMs: readonly number[];
  /** Attempts in flight at once per endpoint. */
  maxInFlight: number;
  /** An endpoint failing this long without a success is disabled (API.md: 5 days). */
  disableAfterMs: number;
  /** How long a claimed delivery stays leased; must exceed the attempt timeout. */
  leaseMs: number;
  /** Period of the lease sweep. */
  sweepIntervalMs: number;
  /** `User-Agent` of every delivery, `Parley/<version>`. */
  userAgent: string;
  /** The lease owner id of this process's claims (its process id); default a new random one. */
  owner?: string | undefined;
  /** Replaces the endpoint machine (tests inject faults); default the real one. */
  endpointLogic?: typeof webhookEndpointMachine;
}

type EndpointActor = ActorRefFrom<typeof webhookEndpointMachine>;

interface Entry {
  endpoint: WebhookEndpointRecord;
  actor: EndpointActor;
  /** Work may have arrived while the pump was running: it must look again before reporting drained. */
  dirty: boolean;
  /** Wakes a pump waiting for an in-flight attempt or new work. */
  kick?: (() => void) | undefined;
  /** The disable the machine decided was stored (or is being stored). */
  disablePersisted: boolean;
}

/** The envelope of a delivery (API.md "Webhooks"): the exact bytes signed and sent. */
export function envelopeOf(event: ClaimedDelivery['event']): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, org_id: event.org_id, data: event.data });
}

/** Runs the webhook-endpoint actors. */
export class WebhookDispatcher {
  /** This process's lease owner id (its process id in the store: src/cluster/process-registry.ts). */
  readonly owner: string;
  private readonly entries = new Map<string, Entry>();
  private readonly byOrg = new Map<string, Set<string>>();
  private readonly inflight = new Set<Promise<unknown>>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly opts: WebhookDispatcherOptions) {
    this.owner = opts.owner ?? `proc_${process.pid}_${randomBytes(6).toString('hex')}`;
    opts.outbox.onCommitted((orgId) => this.wakeOrg(orgId));
  }

  /**
   * Loads the enabled endpoints (the outbox's set of organizations, an actor each: each starts by
   * pumping, so deliveries an earlier run left due go out at once), takes back the expired leases, and
   * starts the periodic sweep. Leases of a process found dead are taken back by `ownerGone`.
   */
  async start(): Promise<void> {
    const { store } = this.opts;
    const endpoints = await store.webhooks.enabledEndpoints();
    this.opts.outbox.reset(endpoints.map((e) => e.org_id));
    await this.release([]);
    for (const e of endpoints) this.ensure(e);
    this.sweepTimer = setInterval(() => { void this.sweep(); }, this.opts.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  /**
   * The sweep: deliveries whose lease ended are recorded as interrupted and sent again, and every endpoint
   * is woken, so deliveries another process committed and never sent (it died right after) go out too.
   */
  async sweep(): Promise<void> {
    if (this.closed) return;
    try {
      await this.release([]);
      const now = Date.now();
      for (const id of [...this.entries.keys()]) {
        const next = await this.opts.store.webhooks.nextDueAt(id);
        if (next !== null && Date.parse(next) <= now) this.wake(id);
      }
    } catch (err) {
      this.opts.logger.error({ err }, 'webhook lease sweep failed');
    }
  }

  /**
   * Process `ownerId` is gone (src/cluster/process-registry.ts): its deliveries under lease are recorded
   * as interrupted and sent again now, without waiting for their leases to expire.
   */
  async ownerGone(ownerId: string): Promise<void> {
    if (this.closed) return;
    await this.release([ownerId]);
  }

  private async release(deadOwners: string[]): Promise<void> {
    const endpointIds = await this.opts.store.webhooks.releaseExpiredLeases(new Date().toISOString(), deadOwners);
    if (endpointIds.length > 0) this.opts.logger.warn({ endpoints: endpointIds.length }, 'webhook deliveries cut short by a stop recorded as interrupted and sent again');
    for (const id of endpointIds) this.wake(id);
  }

  /** New deliveries of `orgId` were committed: wake its endpoints. */
  wakeOrg(orgId: string): void {
    for (const id of this.byOrg.get(orgId) ?? []) this.wake(id);
  }

  /** Deliveries of endpoint `id` may be due (a retry or recover was asked for, a test was queued). */
  wake(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    entry.dirty = true;
    entry.kick?.();
    entry.actor.send({ type: 'wake' });
  }

  /** An endpoint was created or changed (URL, secrets, events, enabled). */
  endpointChanged(endpoint: WebhookEndpointRecord): void {
    const entry = this.entries.get(endpoint.id);
    if (entry === undefined) {
      if (endpoint.enabled) this.ensure(endpoint);
      return;
    }
    const wasEnabled = entry.endpoint.enabled;
    entry.endpoint = endpoint;
    if (endpoint.enabled && !wasEnabled) {
      entry.disablePersisted = false;
      entry.actor.send({ type: 'enable' });
    } else if (!endpoint.enabled && wasEnabled) {
      entry.disablePersisted = true;
      entry.actor.send({ type: 'disable' });
    } else if (endpoint.enabled && entry.actor.getSnapshot().value === 'disabled') {
      entry.disablePersisted = false;
      entry.actor.send({ type: 'enable' });
    }
  }

  /**
   * The store feed says `orgId`'s endpoints changed (here or on another process sharing the store):
   * brings this process's actors and the outbox's set of organizations in line with the store.
   */
  async reloadOrg(orgId: string): Promise<void> {
    if (this.closed) return;
    const { store } = this.opts;
    const enabled = (await store.webhooks.enabledEndpoints()).filter((e) => e.org_id === orgId);
    const seen = new Set<string>();
    for (const e of enabled) {
      seen.add(e.id);
      this.endpointChanged(e);
    }
    for (const id of [...(this.byOrg.get(orgId) ?? [])]) {
      if (seen.has(id)) continue;
      const rec = await store.webhooks.endpointById(id);
      if (rec === undefined) this.endpointDeleted(id);
      else this.endpointChanged(rec);
    }
    this.opts.outbox.setHasEndpoints(orgId, enabled.length > 0);
  }

  /** An endpoint was deleted: its actor stops (attempts in flight finish; their records find no delivery). */
  endpointDeleted(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    this.entries.delete(id);
    this.byOrg.get(entry.endpoint.org_id)?.delete(id);
    entry.actor.stop();
  }

  /** The machine state of endpoint `id` (tests, the dashboard), or undefined when it has no actor. */
  stateOf(id: string): string | undefined {
    const v = this.entries.get(id)?.actor.getSnapshot().value;
    return v === undefined ? undefined : String(v);
  }

  /** Stops the sweep and the actors, and waits (up to `graceMs`) for attempts in flight to be recorded. */
  async close(graceMs = 2000): Promise<void> {
    this.closed = true;
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    for (const e of this.entries.values()) e.actor.stop();
    this.entries.clear();
    const deadline = new Promise((r) => setTimeout(r, graceMs).unref());
    await Promise.race([Promise.allSettled([...this.inflight]), deadline]);
  }

  private ensure(endpoint: WebhookEndpointRecord): void {
    if (this.closed || this.entries.has(endpoint.id)) return;
    const logic = (this.opts.endpointLogic ?? webhookEndpointMachine).provide({
      actors: { pump: fromCallback<{ type: 'stop' }, PumpInput>(({ input, sendBack }) => this.pump(input, sendBack as (e: WebhookEndpointEvent) => void)) },
    });
    const actor = createActor(logic, {
      input: {
        endpointId: endpoint.id, maxInFlight: this.opts.maxInFlight, disableAfterMs: this.opts.disableAfterMs,
        disabled: !endpoint.enabled, failingSince: endpoint.failing_since === null ? null : Date.parse(endpoint.failing_since),
      },
    });
    const entry: Entry = { endpoint, actor, dirty: false, disablePersisted: !endpoint.enabled };
    this.entries.set(endpoint.id, entry);
    let set = this.byOrg.get(endpoint.org_id);
    if (set === undefined) { set = new Set(); this.byOrg.set(endpoint.org_id, set); }
    set.add(endpoint.id);
    actor.subscribe({
      next: (snapshot) => this.persistDisable(entry, snapshot.value, snapshot.context.disabledReason),
      // Supervision (DESIGN.md "Actors"): a crashed endpoint actor is logged and started again from the
      // store after a capped backoff; the process and the other endpoints go on.
      error: (err) => this.crashed(endpoint.id, entry, err),
    });
    actor.start();
  }

  /** Restarts of endpoint actors in a row, by endpoint id (reset when one runs for a minute). */
  private readonly restarts = new Map<string, { count: number; at: number }>();

  private crashed(id: string, entry: Entry, err: unknown): void {
    if (this.entries.get(id) === entry) {
      this.entries.delete(id);
      this.byOrg.get(entry.endpoint.org_id)?.delete(id);
    }
    const now = Date.now();
    const prev = this.restarts.get(id);
    const count = prev !== undefined && now - prev.at < 60_000 ? prev.count + 1 : 1;
    this.restarts.set(id, { count, at: now });
    const wait = Math.min(30_000, 100 * 2 ** (count - 1));
    this.opts.logger.error({ err, endpoint_id: id, restart_in_ms: wait }, 'webhook endpoint actor crashed; starting it again');
    setTimeout(() => {
      if (this.closed || this.entries.has(id)) return;
      this.opts.store.webhooks.endpointById(id).then((rec) => {
        if (rec !== undefined && !this.closed) this.ensure(rec);
      }).catch((e: unknown) => this.opts.logger.error({ err: e, endpoint_id: id }, 'could not restart a webhook endpoint actor'));
    }, wait).unref();
  }

  /** The machine disabled the endpoint (410 Gone, or failing too long): store it once. */
  private persistDisable(entry: Entry, value: unknown, reason: string | null): void {
    if (value !== 'disabled' || entry.disablePersisted) return;
    if (reason !== 'gone' && reason !== 'failing') return;
    const endpoint = entry.endpoint;
    entry.disablePersisted = true;
    entry.endpoint = { ...endpoint, enabled: false, disabled_reason: reason };
    this.opts.logger.warn({ endpoint_id: endpoint.id, org_id: endpoint.org_id, reason }, reason === 'gone'
      ? 'webhook endpoint disabled: the receiver answered 410 Gone'
      : 'webhook endpoint disabled: its deliveries have failed for too long');
    void this.opts.store.webhooks.disableEndpoint(endpoint.id, reason, new Date().toISOString())
      .then(() => this.refreshOrg(endpoint.org_id))
      .catch((err: unknown) => this.opts.logger.error({ err, endpoint_id: endpoint.id }, 'could not store the disabled endpoint'));
  }

  /** Re-reads whether the organization still has an enabled endpoint (for the outbox's hot-path check). */
  private async refreshOrg(orgId: string): Promise<void> {
    const orgs = await this.opts.store.webhooks.orgsWithEndpoints();
    this.opts.outbox.setHasEndpoints(orgId, orgs.includes(orgId));
  }

  /**
   * The `pump` of one endpoint's actor: claims due deliveries (at most `maxInFlight` in flight), sends
   * them, reports each outcome, and reports `drained` with the next due time once nothing is due and
   * nothing is in flight. Returns the cleanup the actor runs when it leaves `delivering`.
   */
  private pump(input: PumpInput, sendBack: (e: WebhookEndpointEvent) => void): () => void {
    const entry = this.entries.get(input.endpointId);
    let stopped = false;
    if (entry === undefined) return () => {};
    const { store } = this.opts;
    let inFlight = 0;
    const waitKick = () => new Promise<void>((resolve) => { entry.kick = () => { entry.kick = undefined; resolve(); }; });
    const loop = async (): Promise<void> => {
      while (!stopped && !this.closed) {
        entry.dirty = false;
        const free = input.maxInFlight - inFlight;
        let claimed: ClaimedDelivery[] = [];
        if (free > 0) {
          const now = Date.now();
          claimed = await store.webhooks.claimDue(input.endpointId, this.owner, new Date(now).toISOString(), new Date(now + this.opts.leaseMs).toISOString(), free);
        }
        for (const c of claimed) {
          inFlight++;
          const job = this.attempt(entry, c).then((outcome) => {
            inFlight--;
            if (!stopped) sendBack({ type: 'attempt.finished', outcome, at: Date.now() });
            entry.kick?.();
          });
          this.inflight.add(job);
          void job.finally(() => this.inflight.delete(job));
        }
        // Fewer than `free` claimed means nothing else is due now: wait for an attempt to end or a wake
        // (either kicks), instead of asking the store again at once.
        if (inFlight > 0) { await waitKick(); continue; }
        if (entry.dirty) continue;
        const next = await store.webhooks.nextDueAt(input.endpointId);
        if (entry.dirty || stopped) continue;
        sendBack({ type: 'drained', nextDueInMs: next === null ? null : Math.max(0, Date.parse(next) - Date.now()) });
        return;
      }
    };
    loop().catch((err: unknown) => {
      this.opts.logger.error({ err, endpoint_id: input.endpointId }, 'webhook pump failed; retrying after the sweep interval');
      if (!stopped) sendBack({ type: 'drained', nextDueInMs: this.opts.sweepIntervalMs });
    });
    return () => { stopped = true; entry.kick?.(); };
  }

  /** One attempt of a claimed delivery: sign, send, record; resolves with the machine's outcome. Never rejects. */
  private async attempt(entry: Entry, claimed: ClaimedDelivery): Promise<MachineOutcome> {
    const endpoint = entry.endpoint;
    const startedAt = Date.now();
    const body = envelopeOf(claimed.event);
    const previousValid = endpoint.previous_secret !== null && endpoint.previous_secret_expires_at !== null
      && Date.parse(endpoint.previous_secret_expires_at) > startedAt;
    const headers = deliveryHeaders({
      secrets: { current: endpoint.secret, previous: previousValid ? endpoint.previous_secret! : undefined },
      eventId: claimed.event.id, eventType: claimed.event.type, deliveryId: claimed.delivery_id,
      timestampSeconds: Math.floor(startedAt / 1000), body, userAgent: this.opts.userAgent,
    });
    const result = await this.opts.sender.send(endpoint.url, headers, body);
    const success = result.status >= 200 && result.status < 300;
    const gone = result.status === 410;
    let next: AttemptOutcome['next'];
    if (success) next = { status: 'succeeded' };
    else if (gone) next = { status: 'failed' };
    else {
      const now = Date.now();
      const plan = nextRetry(claimed.attempt_count + 1, this.opts.retryScheduleMs, Math.random(), 0.2, retryAfterMs(result.retryAfter, now));
      next = 'giveUp' in plan ? { status: 'failed' } : { status: 'pending', next_attempt_at: new Date(now + plan.retryInMs).toISOString() };
    }
    const outcome: AttemptOutcome = {
      response: { status: result.status, body: result.body, duration_ms: result.durationMs },
      error: result.error, at: new Date(startedAt).toISOString(), next, success,
    };
    try {
      const recorded = await this.opts.store.webhooks.recordAttempt(claimed.delivery_id, this.owner, outcome);
      if (!recorded) this.opts.logger.warn({ delivery_id: claimed.delivery_id }, 'webhook attempt finished after its lease was taken back; not recorded');
    } catch (err) {
      this.opts.logger.error({ err, delivery_id: claimed.delivery_id }, 'could not record a webhook attempt; the sweep sends it again');
    }
    if (!success) this.opts.logger.info({ delivery_id: claimed.delivery_id, endpoint_id: endpoint.id, status: result.status, error: result.error, ...(result.detail === undefined ? {} : { detail: result.detail }) }, 'webhook attempt failed');
    return success ? 'succeeded' : gone ? 'gone' : 'failed';
  }
}
