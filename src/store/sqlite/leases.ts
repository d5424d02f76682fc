import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { LeasesPort, ProcessesPort } from '../ports.js';
import type { ProcessRecord } from '../records.js';
import { leaseFromRow } from './lease-writes.js';
import type { ConversationWriter } from './writer.js';
import { writeTransaction } from './write-lock.js';

/**
 * LeasesPort on SQLite (table `conversation_leases`): reads on the main thread's connection, writes through
 * the writer (lease-writes.ts), where they commit without an fsync of their own. Conditional writes are
 * exclusive across processes because SQLite runs one write transaction at a time (BEGIN IMMEDIATE).
 */
export function createLeases(db: Database.Database, writer: ConversationWriter): LeasesPort {
  const sql = {
    get: db.prepare('SELECT * FROM conversation_leases WHERE conversation_id = ?'),
    abandoned: db.prepare('SELECT * FROM conversation_leases WHERE released = 0 AND expires_at <= ? ORDER BY expires_at LIMIT ?'),
    heldBy: db.prepare('SELECT * FROM conversation_leases WHERE released = 0 AND owner_id = ? LIMIT ?'),
  };
  return {
    acquire(conversationId, owner, now, until, deadOwner) {
      return writer.run('leaseAcquire', { conversationId, owner, now, until, deadOwner });
    },
    renew(ownerId, now, until) {
      return writer.run('leaseRenew', { ownerId, now, until });
    },
    release(conversationId, fence) {
      return writer.run('leaseRelease', { conversationId, fence });
    },
    async get(conversationId) {
      const r = sql.get.get(conversationId) as Record<string, unknown> | undefined;
      return r === undefined ? undefined : leaseFromRow(r);
    },
    async abandoned(now, limit) {
      return (sql.abandoned.all(now, limit) as Array<Record<string, unknown>>).map(leaseFromRow);
    },
    async heldBy(ownerId, limit) {
      return (sql.heldBy.all(ownerId, limit) as Array<Record<string, unknown>>).map(leaseFromRow);
    },
  };
}

/** ProcessesPort on SQLite (tables `processes`, `cluster_secret`). */
export function createProcesses(db: Database.Database, writer: ConversationWriter): ProcessesPort {
  const sql = {
    list: db.prepare('SELECT * FROM processes ORDER BY id'),
    secret: db.prepare('SELECT secret FROM cluster_secret WHERE id = 1'),
    insertSecret: db.prepare('INSERT INTO cluster_secret (id, secret, created_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING'),
  };
  return {
    register(rec) {
      return writer.run('processRegister', rec);
    },
    heartbeat(id, at) {
      return writer.run('processHeartbeat', { id, at });
    },
    async list() {
      return (sql.list.all() as ProcessRecord[]).map((p) => ({ ...p, draining_at: p.draining_at ?? null }));
    },
    remove(id) {
      return writer.run('processRemove', { id });
    },
    markDraining(id, at) {
      return writer.run('processDraining', { id, at });
    },
    async clusterSecret(candidate) {
      writeTransaction(db, () => sql.insertSecret.run(candidate, new Date().toISOString()));
      return (sql.secret.get() as { secret: string }).secret;
    },
  };
}

/** A new random cluster secret (256 bits, base64url). */
export function newClusterSecret(): string {
  return randomBytes(32).toString('base64url');
}
