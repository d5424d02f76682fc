import type Database from 'better-sqlite3';
import type { ApiKeysPort } from '../ports.js';
import type { ApiKeyRecord } from '../records.js';
import type { Row } from './rows.js';

function apiKeyFromRow(r: Row): ApiKeyRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, name: r.name as string, key_hash: r.key_hash as string,
    last4: r.last4 as string, created_at: r.created_at as string, revoked_at: (r.revoked_at as string | null) ?? null,
  };
}

/** ApiKeysPort on SQLite (table `api_keys`, `key_hash` unique); each write is its own transaction. */
export function createApiKeys(db: Database.Database): ApiKeysPort {
  const insert = db.prepare(
    'INSERT INTO api_keys (id, org_id, name, key_hash, last4, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const byHash = db.prepare('SELECT * FROM api_keys WHERE key_hash = ?');
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND id = ? AND revoked_at IS NULL');
  return {
    async create(k) {
      insert.run(k.id, k.org_id, k.name, k.key_hash, k.last4, k.created_at, k.revoked_at);
    },
    async findByHash(hash) {
      const r = byHash.get(hash) as Row | undefined;
      return r ? apiKeyFromRow(r) : undefined;
    },
    async revoke(orgId, id, at) {
      return revoke.run(at, orgId, id).changes > 0;
    },
  };
}
