/**
 * Who runs a conversation's turns, and where (DESIGN.md "Several processes"). This module is the one
 * rule; everything else asks it.
 *
 * - A conversation has one owner at a time: the process holding its lease in the store (LeasesPort:
 *   owner, address, expiry, fence). The owner runs the conversation's actor and its turns, and every
 *   write of a turn carries the fence it started under, so a stale owner's late write is refused.
 * - A new conversation is owned by the process that creates it: its lease (fence 1) is stored in the
 *   same commit as the conversation (no extra write on the chat path).
 * - A request for a conversation (a message, a handoff, an operator message, a cancel) goes to `route`:
 *   `local` when this process holds the lease or takes it now (free, released, expired, or its owner is
 *   known dead: fence + 1); `remote` with the owner's address otherwise, and the caller forwards the
 *   request there (src/runtime/placement/remote-turns.ts).
 * - The owner renews its leases every third of the lease time while it has the conversation loaded, and
 *   releases a lease when the conversation unloads (idle) or at a drain. A lease it fails to renew (it
 *   stalled past the expiry; maybe another process took over) is lost: its actor is dropped and its
 *   running turns aborted, and they cannot write.
 * - When the owner dies: the next request for the conversation takes it over once the lease expired
 *   (at once when the owner is known dead: src/cluster/process-registry.ts), and the sweep takes over
 *   every abandoned lease (expired, not released) that no request touched. Taking over a lease that was
 *   not released stores the cut turns of the conversation as failed (`interrupted`), fenced by the new
 *   owner's fence. A process never fails a living neighbour's turns: only expired or dead owners' leases
 *   are taken.
 */
import type { ProcessRegistry } from '../../cluster/process-registry.js';
import type { Logger } from '../../log/logger.js';
import type { Store } from '../../store/ports.js';
import type { Fence, LeaseOwner, LeaseOutcome } from '../../store/records.js';

/** Where a conversation's request runs: here (with the fence its writes carry), or at the owner's address. */
export type Route = { kind: 'local'; fence: Fence } | { kind: 'remote'; url: string; ownerId: string; expiresAt: string };

/** Options of {@link Placement}. */
export interface PlacementOptions {
  store: Pick<Store, 'leases'>;
  /** This process. */
  self: LeaseOwner;
  registry?: ProcessRegistry | undefined;
  /** How long a lease lasts without renewal, ms (PARLEY_LEASE_MS). */
  leaseMs: number;
  logger: Logger;
  /**
   * Stores the cut turns of a conversation this process just took over from an owner that did not release
   * it (its turns were cut short), fenced by `fence`. Must not throw (log instead).
   */
  recover: (conversationId: string, fence: Fence) => Promise<void>;
  /** This process lost the lease of a conversation it holds: drop its actor and abort its turns. */
  lost: (conversationId: string) => void;
  /**
   * True while the conversation's actor is loaded here. A lease held for a conversation that is not
   * loaded (a request that took the lease, then failed before loading it) is released at the next renewal.
   */
  loaded: (conversationId: string) => boolean;
  /** Current time, ms (default Date.now). */
  now?: () => number;
}

interface Held {
  fence: number;
  /** Lease expiry, ms since the epoch. */
  until: number;
  /** When this process took it, ms since the epoch. */
  since: number;
}

/** See the module comment. */
export class Placement {
  private readonly held = new Map<string, Held>();
  private renewTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private stopped = false;

  constructor(private readonly opts: PlacementOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** This process (owner id and address). */
  get self(): LeaseOwner {
    return this.opts.self;
  }

  /** Starts renewing held leases and sweeping abandoned ones (and takes over what it finds abandoned now). */
  async start(): Promise<void> {
    this.renewTimer = setInterval(() => { void this.renew(); }, Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    this.renewTimer.unref();
    this.sweepTimer = setInterval(() => { void this.sweep(); }, Math.max(100, this.opts.leaseMs));
    this.sweepTimer.unref();
    await this.sweep();
  }

  /**
   * The lease a new conversation is created with (ConversationsPort.start): this process, until one lease
   * time from now. Call `adopt` once the conversation is stored.
   */
  newLease(): { owner: LeaseOwner; until: string } {
    return { owner: this.opts.self, until: new Date(this.now() + this.opts.leaseMs).toISOString() };
  }

  /** Records that this process holds a new conversation's lease (fence 1) until `until`. Returns that fence. */
  adopt(conversationId: string, until: string): Fence {
    this.held.set(conversationId, { fence: 1, until: Date.parse(until), since: this.now() });
    return { owner_id: this.opts.self.id, fence: 1 };
  }

  /** Forgets a lease adopted for a new conversation that was not stored after all. */
  forget(conversationId: string): void {
    this.held.delete(conversationId);
  }

  /** The fence of a conversation this process holds the lease of now, else undefined. */
  fenceOf(conversationId: string): Fence | undefined {
    const h = this.held.get(conversationId);
    if (h === undefined || h.until <= this.now()) return undefined;
    return { owner_id: this.opts.self.id, fence: h.fence };
  }

  /**
   * Where a request for `conversationId` runs (see the module comment). `deadOwner`: the owner the caller
   * found dead (it does not answer as itself), whose lease may be taken before it expires. Throws what the
   * store throws.
   */
  async route(conversationId: string, deadOwner?: string): Promise<Route> {
    const h = this.held.get(conversationId);
    const now = this.now();
    // Held with more than a third of the lease left: the renewal keeps it, no store round trip.
    if (h !== undefined && h.until - now > this.opts.leaseMs / 3) return { kind: 'local', fence: { owner_id: this.opts.self.id, fence: h.fence } };
    const outcome = await this.opts.store.leases.acquire(conversationId, this.opts.self, new Date(now).toISOString(), new Date(now + this.opts.leaseMs).toISOString(), deadOwner);
    return this.settle(conversationId, outcome);
  }

  /**
   * The owner at `route.url` did not answer. When it is known dead (src/cluster/process-registry.ts), or
   * its lease has expired meanwhile, the conversation is taken over here (`local`); otherwise the owner is
   * alive as far as anyone knows (paused, draining): undefined, and the caller answers 503 for now.
   */
  async ownerUnreachable(conversationId: string, route: Extract<Route, { kind: 'remote' }>): Promise<Route | undefined> {
    const dead = this.opts.registry !== undefined && await this.opts.registry.isDead(route.ownerId, route.url);
    const next = await this.route(conversationId, dead ? route.ownerId : undefined);
    if (next.kind === 'local') return next;
    return next.url === route.url ? undefined : next;
  }

  /** The conversation unloaded (idle) here: its lease is released (nothing to recover). */
  release(conversationId: string): void {
    const h = this.held.get(conversationId);
    if (h === undefined) return;
    this.held.delete(conversationId);
    this.opts.store.leases.release(conversationId, { owner_id: this.opts.self.id, fence: h.fence })
      .catch((err: unknown) => this.opts.logger.error({ err, conversation_id: conversationId }, 'could not release a conversation lease'));
  }

  /** Conversations whose lease this process holds. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Takes over every lease of process `ownerId`, found dead (src/cluster/process-registry.ts), storing the
   * cut turns of each, then releases them: whoever gets the next request for one of them owns it.
   */
  async takeOverFrom(ownerId: string): Promise<void> {
    for (;;) {
      const leases = await this.opts.store.leases.heldBy(ownerId, 100);
      if (leases.length === 0) return;
      for (const l of leases) await this.recoverAndRelease(l.conversation_id, ownerId);
      if (leases.length < 100) return;
    }
  }

  /** Stops the renewal and the sweep, and releases every held lease (a drain: nothing to recover). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer);
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    const held = [...this.held];
    this.held.clear();
    await Promise.all(held.map(([id, h]) => this.opts.store.leases.release(id, { owner_id: this.opts.self.id, fence: h.fence }).catch(() => {})));
  }

  private async settle(conversationId: string, outcome: LeaseOutcome): Promise<Route> {
    const l = outcome.lease;
    if (!outcome.acquired) {
      this.held.delete(conversationId);
      return { kind: 'remote', url: l.owner_url, ownerId: l.owner_id, expiresAt: l.expires_at };
    }
    const prev = this.held.get(conversationId);
    this.held.set(conversationId, { fence: l.fence, until: Date.parse(l.expires_at), since: prev?.fence === l.fence ? prev.since : this.now() });
    const fence = { owner_id: this.opts.self.id, fence: l.fence };
    if (outcome.took_over_from !== null) {
      this.opts.logger.warn({ conversation_id: conversationId, from: outcome.took_over_from.owner_id, fence: l.fence }, 'took a conversation over from a process that stopped or stalled');
      await this.opts.recover(conversationId, fence);
    }
    return { kind: 'local', fence };
  }

  /** Renews every held lease; those it could not renew are lost. */
  private async renew(): Promise<void> {
    if (this.stopped || this.held.size === 0) return;
    const now = this.now();
    const until = now + this.opts.leaseMs;
    let renewed: string[];
    try {
      renewed = await this.opts.store.leases.renew(this.opts.self.id, new Date(now).toISOString(), new Date(until).toISOString());
    } catch (err) {
      this.opts.logger.error({ err }, 'could not renew conversation leases');
      return;
    }
    const ok = new Set(renewed);
    for (const [id, h] of this.held) {
      if (ok.has(id)) {
        h.until = until;
        if (!this.opts.loaded(id) && now - h.since > this.opts.leaseMs / 3) this.release(id);
        continue;
      }
      if (h.until > this.now()) continue; // acquired after the renewal read (a new conversation): still valid
      this.held.delete(id);
      this.opts.logger.warn({ conversation_id: id }, 'lost the lease of a conversation (this process stalled past its expiry)');
      this.opts.lost(id);
    }
  }

  /** Takes over abandoned leases (expired, not released) and stores their cut turns. */
  private async sweep(): Promise<void> {
    if (this.stopped) return;
    try {
      const abandoned = await this.opts.store.leases.abandoned(new Date(this.now()).toISOString(), 50);
      for (const l of abandoned) {
        if (l.owner_id === this.opts.self.id && this.held.has(l.conversation_id)) continue;
        await this.recoverAndRelease(l.conversation_id, undefined);
      }
    } catch (err) {
      this.opts.logger.error({ err }, 'the abandoned-lease sweep failed');
    }
  }

  private async recoverAndRelease(conversationId: string, deadOwner: string | undefined): Promise<void> {
    if (this.held.has(conversationId)) return;
    const now = this.now();
    const outcome = await this.opts.store.leases.acquire(conversationId, this.opts.self, new Date(now).toISOString(), new Date(now + this.opts.leaseMs).toISOString(), deadOwner);
    if (!outcome.acquired) return;
    const fence = { owner_id: this.opts.self.id, fence: outcome.lease.fence };
    if (outcome.took_over_from !== null) await this.opts.recover(conversationId, fence);
    await this.opts.store.leases.release(conversationId, fence);
  }
}
