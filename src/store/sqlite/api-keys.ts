import type Database from 'better-sqlite3';
import type { ApiKeysPort } from '../ports.js';
import type { ApiKeyRecord } from '../records.js';
import { NewestFirstList, toPage } from './pagination.js';
import { recordChanges, type FeedSignal } from './feed.js';
import type { Row } from './rows.js';
import { lockedTransaction, writeTransaction } from './write-lock.js';

function apiKeyFromRow(r: Row): ApiKeyRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, name: r.name as string, key_hash: r.key_hash as string,
    last4: r.last4 as string, created_at: r.created_at as string, revoked_at: (r.revoked_at as string | null) ?? null,
    expires_at: (r.expires_at as string | null) ?? null,
  };
}

/**
 * ApiKeysPort on SQLite (table `api_keys`, `key_hash` unique). A rotation is one IMMEDIATE transaction:
 * a conditional UPDATE ends the old key only if it is still usable, and the new key is inserted only if
 * that UPDATE changed a row.
 */
export function createApiKeys(db: Database.Database, signal: FeedSignal): ApiKeysPort {
  const insert = db.prepare(
    'INSERT INTO api_keys (id, org_id, name, key_hash, last4, created_at, revoked_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  const byHash = db.prepare('SELECT * FROM api_keys WHERE key_hash = ?');
  const byId = db.prepare('SELECT * FROM api_keys WHERE org_id = ? AND id = ?');
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND id = ? AND revoked_at IS NULL');
  const usable = 'org_id = @org AND id = @id AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > @at)';
  const endNow = db.prepare(`UPDATE api_keys SET revoked_at = @at WHERE ${usable}`);
  const endLater = db.prepare(
    `UPDATE api_keys SET expires_at = CASE WHEN expires_at IS NULL OR expires_at > @ends THEN @ends ELSE expires_at END WHERE ${usable}`);
  const list = new NewestFirstList(db, 'api_keys', 'org_id = ?', 'API key');
  const add = (k: ApiKeyRecord) => insert.run(k.id, k.org_id, k.name, k.key_hash, k.last4, k.created_at, k.revoked_at, k.expires_at);
  const changed = (org: string, id: string, at: string) => recordChanges(db, [{ kind: 'api_key', org_id: org, key_id: id }], at);
  const rotate = lockedTransaction(db, (org: string, id: string, next: ApiKeyRecord, ends: string | null, at: string): boolean => {
    const n = ends === null ? endNow.run({ org, id, at }).changes : endLater.run({ org, id, at, ends }).changes;
    if (n === 0) return false;
    add(next);
    changed(org, id, at);
    return true;
  });
  const revokeNow = lockedTransaction(db, (org: string, id: string, at: string): boolean => {
    if (revoke.run(at, org, id).changes === 0) return false;
    changed(org, id, at);
    return true;
  });
  const fired = (done: boolean): boolean => {
    if (done) signal.fire();
    return done;
  };
  return {
    async create(k) {
      writeTransaction(db, () => add(k));
    },
    async findByHash(hash) {
      const r = byHash.get(hash) as Row | undefined;
      return r ? apiKeyFromRow(r) : undefined;
    },
    async get(orgId, id) {
      const r = byId.get(orgId, id) as Row | undefined;
      return r ? apiKeyFromRow(r) : undefined;
    },
    async list(orgId, page) {
      return toPage(list.rows([orgId], page), page, apiKeyFromRow);
    },
    async revoke(orgId, id, at) {
      return fired(revokeNow(orgId, id, at));
    },
    async rotate(orgId, id, next, graceEndsAt, at) {
      return fired(rotate(orgId, id, next, graceEndsAt, at));
    },
  };
}
