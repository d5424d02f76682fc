/**
 * Conversation leases and process records on SQLite (tables `conversation_leases`, `processes`): the
 * writes, as plain functions of a connection (they run in the writer thread, like the conversation writes,
 * and commit without an fsync when a batch holds nothing else: UNACKNOWLEDGED_WRITES), and the fence check
 * every fenced conversation write runs first.
 */
import type Database from 'better-sqlite3';
import type { ConversationLease, Fence, LeaseOutcome, LeaseOwner } from '../records.js';
import { LeaseLost } from '../lease-lost.js';
import { statementCache } from './statement-cache.js';

export { LeaseLost };

function prepare(db: Database.Database) {
  return {
    get: db.prepare('SELECT * FROM conversation_leases WHERE conversation_id = ?'),
    insert: db.prepare(
      'INSERT INTO conversation_leases (conversation_id, owner_id, owner_url, fence, expires_at, released) VALUES (?, ?, ?, 1, ?, 0)'),
    take: db.prepare(
      `UPDATE conversation_leases SET owner_id = @owner, owner_url = @url, fence = fence + 1, expires_at = @until, released = 0
       WHERE conversation_id = @id AND fence = @fence`),
    extend: db.prepare(
      'UPDATE conversation_leases SET expires_at = @until, owner_url = @url WHERE conversation_id = @id AND owner_id = @owner AND fence = @fence'),
    renew: db.prepare(
      `UPDATE conversation_leases SET expires_at = @until
       WHERE owner_id = @owner AND released = 0 AND expires_at > @now RETURNING conversation_id`),
    release: db.prepare('UPDATE conversation_leases SET released = 1 WHERE conversation_id = ? AND owner_id = ? AND fence = ?'),
    heartbeat: db.prepare('UPDATE processes SET heartbeat_at = ? WHERE id = ?'),
    register: db.prepare(
      `INSERT INTO processes (id, url, started_at, heartbeat_at, draining_at) VALUES (@id, @url, @started_at, @heartbeat_at, @draining_at)
       ON CONFLICT (id) DO UPDATE SET url = excluded.url, heartbeat_at = excluded.heartbeat_at, draining_at = excluded.draining_at`),
    draining: db.prepare('UPDATE processes SET draining_at = ? WHERE id = ?'),
    remove: db.prepare('DELETE FROM processes WHERE id = ?'),
  };
}

const statements = statementCache(prepare);

/** A lease row as a record. */
export function leaseFromRow(r: Record<string, unknown>): ConversationLease {
  return {
    conversation_id: r.conversation_id as string, owner_id: r.owner_id as string, owner_url: r.owner_url as string,
    fence: r.fence as number, expires_at: r.expires_at as string, released: r.released === 1,
  };
}

/**
 * Throws LeaseLost unless `fence` holds `conversationId`'s lease now: same owner, same fence, not released,
 * not expired at `now` (the writer's clock). Runs in the caller's transaction, before its write.
 */
export function checkFence(db: Database.Database, conversationId: string, fence: Fence, now: string): void {
  const row = statements(db).get.get(conversationId) as Record<string, unknown> | undefined;
  if (row === undefined || row.owner_id !== fence.owner_id || row.fence !== fence.fence || row.released === 1 || (row.expires_at as string) <= now) {
    throw new LeaseLost(conversationId);
  }
}

/** Inserts the first lease of a new conversation (fence 1), in the caller's transaction. */
export function insertLease(db: Database.Database, conversationId: string, owner: LeaseOwner, until: string): void {
  statements(db).insert.run(conversationId, owner.id, owner.url, until);
}

/** The lease and process writes, by name (merged into CONVERSATION_WRITES). */
export const LEASE_WRITES = {
  /** LeasesPort.acquire (see there). */
  leaseAcquire(db: Database.Database, a: { conversationId: string; owner: LeaseOwner; now: string; until: string; deadOwner?: string | undefined }): LeaseOutcome {
    const sql = statements(db);
    const row = sql.get.get(a.conversationId) as Record<string, unknown> | undefined;
    if (row === undefined) {
      sql.insert.run(a.conversationId, a.owner.id, a.owner.url, a.until);
      return { acquired: true, lease: leaseFromRow(sql.get.get(a.conversationId) as Record<string, unknown>), took_over_from: null };
    }
    const lease = leaseFromRow(row);
    const live = !lease.released && lease.expires_at > a.now;
    if (live && lease.owner_id === a.owner.id) {
      sql.extend.run({ id: a.conversationId, owner: a.owner.id, url: a.owner.url, fence: lease.fence, until: a.until });
      return { acquired: true, lease: { ...lease, owner_url: a.owner.url, expires_at: a.until }, took_over_from: null };
    }
    if (live && lease.owner_id !== a.deadOwner) return { acquired: false, lease };
    sql.take.run({ id: a.conversationId, owner: a.owner.id, url: a.owner.url, until: a.until, fence: lease.fence });
    const took = lease.released ? null : { owner_id: lease.owner_id, fence: lease.fence };
    return { acquired: true, lease: { ...lease, owner_id: a.owner.id, owner_url: a.owner.url, fence: lease.fence + 1, expires_at: a.until, released: false }, took_over_from: took };
  },
  /** LeasesPort.renew. */
  leaseRenew(db: Database.Database, a: { ownerId: string; now: string; until: string }): string[] {
    return (statements(db).renew.all({ owner: a.ownerId, now: a.now, until: a.until }) as Array<{ conversation_id: string }>).map((r) => r.conversation_id);
  },
  /** LeasesPort.release. */
  leaseRelease(db: Database.Database, a: { conversationId: string; fence: Fence }): void {
    statements(db).release.run(a.conversationId, a.fence.owner_id, a.fence.fence);
  },
  /** ProcessesPort.register. */
  processRegister(db: Database.Database, rec: { id: string; url: string; started_at: string; heartbeat_at: string; draining_at: string | null }): void {
    statements(db).register.run(rec);
  },
  /** ProcessesPort.markDraining. */
  processDraining(db: Database.Database, a: { id: string; at: string }): void {
    statements(db).draining.run(a.at, a.id);
  },
  /** ProcessesPort.heartbeat. */
  processHeartbeat(db: Database.Database, a: { id: string; at: string }): boolean {
    return statements(db).heartbeat.run(a.at, a.id).changes > 0;
  },
  /** ProcessesPort.remove. */
  processRemove(db: Database.Database, a: { id: string }): void {
    statements(db).remove.run(a.id);
  },
} as const;

/** Lease and process writes: they need no fsync of their own (LeasesPort: a lost lease is one nobody holds). */
export const LEASE_WRITE_NAMES: readonly string[] = Object.keys(LEASE_WRITES);
