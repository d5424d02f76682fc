import { randomUUID } from 'node:crypto';
import type { ClientSession, Document } from 'mongodb';
import type { LeasesPort, ProcessesPort } from '../ports.js';
import type { ConversationLease, Fence, LeaseOutcome, LeaseOwner, ProcessRecord } from '../records.js';
import { LeaseLost } from '../lease-lost.js';
import type { MongoContext } from './context.js';
import type { Collections, LeaseDoc } from './schema.js';
import { isDuplicateKey } from './transactions.js';

export const leaseFromDoc = (d: LeaseDoc): ConversationLease => ({
  conversation_id: d._id, owner_id: d.owner_id, owner_url: d.owner_url, fence: d.fence, expires_at: d.expires_at, released: d.released,
});

/** The filter of the lease of `conversationId` while `fence` holds it at `now`: same owner and fence, not released, not expired. */
export function fenceFilter(conversationId: string, fence: Fence, now: string): Document {
  return { _id: conversationId, owner_id: fence.owner_id, fence: fence.fence, released: false, expires_at: { $gt: now } };
}

/**
 * The fence check of a fenced write, in its transaction (ConversationsPort): a conditional update of the
 * lease that matches only while `fence` holds it, by the writer's clock. It writes the lease document
 * (a counter), so a concurrent takeover (which writes it too) conflicts with the write it guards: either
 * the takeover waits for this transaction, or this transaction runs again and finds the lease lost. A
 * read alone would not do: under snapshot isolation both could commit. Throws LeaseLost.
 */
export async function checkFence(c: Collections, session: ClientSession, conversationId: string, fence: Fence): Promise<void> {
  const r = await c.conversation_leases.updateOne(fenceFilter(conversationId, fence, new Date().toISOString()), { $inc: { writes: 1 } }, { session });
  if (r.matchedCount === 0) throw new LeaseLost(conversationId);
}

/** True when `lease` is live at `now`: not released and not expired. */
export const isLive = (lease: Pick<ConversationLease, 'released' | 'expires_at'>, now: string): boolean => !lease.released && lease.expires_at > now;

/**
 * The filter of a lease `owner` may take at `now` (LeasesPort.acquire): released, expired, already
 * `owner`'s, or held by `deadOwner` (a process known to be dead).
 */
export function acquirableFilter(conversationId: string, ownerId: string, now: string, deadOwner?: string): Document {
  const or: Document[] = [{ released: true }, { expires_at: { $lte: now } }, { owner_id: ownerId }];
  if (deadOwner !== undefined) or.push({ owner_id: deadOwner });
  return { _id: conversationId, $or: or };
}

/**
 * The update (a pipeline: the new fence depends on the old lease) that gives the lease to `owner` until
 * `until`: the fence stays when `owner` holds it live at `now` (a renewal), else grows by one (a new owner,
 * or the same owner after its lease ran out).
 */
export function acquireUpdate(owner: LeaseOwner, now: string, until: string): Document[] {
  const renewal = { $and: [{ $eq: ['$owner_id', owner.id] }, { $eq: ['$released', false] }, { $gt: ['$expires_at', now] }] };
  return [{
    $set: {
      fence: { $cond: [renewal, '$fence', { $add: ['$fence', 1] }] },
      owner_id: { $literal: owner.id }, owner_url: { $literal: owner.url }, expires_at: { $literal: until }, released: false,
    },
  }];
}

/** What acquire() returns for the lease `before` it was taken by `owner` at `now` until `until`. */
export function acquiredOutcome(before: ConversationLease, owner: LeaseOwner, now: string, until: string): LeaseOutcome {
  const renewal = before.owner_id === owner.id && isLive(before, now);
  return {
    acquired: true,
    lease: { ...before, owner_id: owner.id, owner_url: owner.url, fence: renewal ? before.fence : before.fence + 1, expires_at: until, released: false },
    took_over_from: renewal || before.released ? null : { owner_id: before.owner_id, fence: before.fence },
  };
}

/**
 * LeasesPort on MongoDB (collection `conversation_leases`, `_id` the conversation id). acquire is a
 * conditional findOneAndUpdate (only an acquirable lease matches; the update computes the fence from the
 * old one), or, when there is no lease yet, an insert of fence 1; of concurrent acquires one wins: the
 * others match nothing (or meet the `_id` of the inserted one) and read the winner's lease.
 */
export function createLeases({ c }: MongoContext): LeasesPort {
  return {
    async acquire(conversationId, owner, now, until, deadOwner) {
      for (let round = 0; round < 3; round++) {
        const before = await c.conversation_leases.findOneAndUpdate(
          acquirableFilter(conversationId, owner.id, now, deadOwner), acquireUpdate(owner, now, until), { returnDocument: 'before' },
        );
        if (before !== null) return acquiredOutcome(leaseFromDoc(before), owner, now, until);
        try {
          await c.conversation_leases.insertOne({ _id: conversationId, owner_id: owner.id, owner_url: owner.url, fence: 1, expires_at: until, released: false });
          return { acquired: true, lease: { conversation_id: conversationId, owner_id: owner.id, owner_url: owner.url, fence: 1, expires_at: until, released: false }, took_over_from: null };
        } catch (err) {
          if (!isDuplicateKey(err)) throw err;
        }
        const current = await c.conversation_leases.findOne({ _id: conversationId });
        // Held by a live owner: not acquired. Otherwise it changed between the two writes: try again.
        if (current !== null && isLive(current, now) && current.owner_id !== owner.id && current.owner_id !== deadOwner) {
          return { acquired: false, lease: leaseFromDoc(current) };
        }
      }
      const current = await c.conversation_leases.findOne({ _id: conversationId });
      return { acquired: false, lease: leaseFromDoc(current!) };
    },
    async renew(ownerId, now, until) {
      // The renewal marks the leases it extends, so they can be read back exactly (a lease taken over in
      // between has another owner and is not reported).
      const renewal = randomUUID();
      const r = await c.conversation_leases.updateMany(
        { owner_id: ownerId, released: false, expires_at: { $gt: now } }, { $set: { expires_at: until, renewal } },
      );
      if (r.modifiedCount === 0) return [];
      return (await c.conversation_leases.find({ owner_id: ownerId, renewal }, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
    },
    async release(conversationId, fence) {
      await c.conversation_leases.updateOne({ _id: conversationId, owner_id: fence.owner_id, fence: fence.fence }, { $set: { released: true } });
    },
    async get(conversationId) {
      const d = await c.conversation_leases.findOne({ _id: conversationId });
      return d === null ? undefined : leaseFromDoc(d);
    },
    async abandoned(now, limit) {
      return (await c.conversation_leases.find({ released: false, expires_at: { $lte: now } }).sort({ expires_at: 1 }).limit(limit).toArray()).map(leaseFromDoc);
    },
    async heldBy(ownerId, limit) {
      return (await c.conversation_leases.find({ released: false, owner_id: ownerId }).limit(limit).toArray()).map(leaseFromDoc);
    },
  };
}

/**
 * ProcessesPort on MongoDB (collections `processes` and `settings`). `feedSeenAt` gives this process's
 * change-stream position (the feed's), stored with every heartbeat so that the lag of each process's
 * stream can be watched (docs/operations.md).
 */
export function createProcesses({ c }: MongoContext, feedSeenAt: () => string | null): ProcessesPort {
  return {
    async register(rec) {
      const { id, ...fields } = rec;
      await c.processes.updateOne({ _id: id }, { $set: fields }, { upsert: true });
    },
    async heartbeat(id, at) {
      return (await c.processes.updateOne({ _id: id }, { $set: { heartbeat_at: at, feed_seen_at: feedSeenAt() } })).matchedCount > 0;
    },
    async list(): Promise<ProcessRecord[]> {
      const docs = await c.processes.find({}).sort({ _id: 1 }).toArray();
      return docs.map((d) => ({ id: d._id, url: d.url, started_at: d.started_at, heartbeat_at: d.heartbeat_at, draining_at: d.draining_at ?? null }));
    },
    async remove(id) {
      await c.processes.deleteOne({ _id: id });
    },
    async markDraining(id, at) {
      await c.processes.updateOne({ _id: id }, { $set: { draining_at: at } });
    },
    async clusterSecret(candidate) {
      await c.settings.updateOne({ _id: 'cluster' }, { $setOnInsert: { secret: candidate, created_at: new Date().toISOString() } }, { upsert: true });
      return (await c.settings.findOne({ _id: 'cluster' }))!.secret;
    },
  };
}
