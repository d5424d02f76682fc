import type Database from 'better-sqlite3';
import type { SigningKeysPort } from '../ports.js';
import type { SigningKeyRecord } from '../records.js';
import { fromJson, toJson, type Row } from './rows.js';
import { lockedTransaction } from './write-lock.js';

function keyFromRow(r: Row): SigningKeyRecord {
  return {
    kid: r.kid as string, algorithm: r.algorithm as string, public_jwk: fromJson(r.public_jwk), private_jwk: fromJson(r.private_jwk),
    created_at: r.created_at as string, retired_at: (r.retired_at as string | null) ?? null,
  };
}

/**
 * SigningKeysPort on SQLite (table `signing_keys`, JWKs as JSON text). A partial unique index allows at
 * most one active key (`retired_at IS NULL`), so ensureActive() of two processes starting at once cannot
 * leave two active keys: the loser's INSERT does nothing and it reads the winner's key.
 */
export function createSigningKeys(db: Database.Database): SigningKeysPort {
  const sql = {
    active: db.prepare('SELECT * FROM signing_keys WHERE retired_at IS NULL'),
    verifiable: db.prepare('SELECT * FROM signing_keys WHERE retired_at IS NULL OR retired_at > ? ORDER BY created_at DESC, kid DESC'),
    insertIfNone: db.prepare(
      `INSERT INTO signing_keys (kid, algorithm, public_jwk, private_jwk, created_at, retired_at)
       SELECT ?, ?, ?, ?, ?, NULL WHERE NOT EXISTS (SELECT 1 FROM signing_keys WHERE retired_at IS NULL)`),
    insert: db.prepare('INSERT INTO signing_keys (kid, algorithm, public_jwk, private_jwk, created_at, retired_at) VALUES (?, ?, ?, ?, ?, NULL)'),
    retire: db.prepare('UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL RETURNING kid'),
  };
  const ensureActive = lockedTransaction(db, (k: SigningKeyRecord): SigningKeyRecord => {
    sql.insertIfNone.run(k.kid, k.algorithm, toJson(k.public_jwk), toJson(k.private_jwk), k.created_at);
    return keyFromRow(sql.active.get() as Row);
  });
  const rotate = lockedTransaction(db, (k: SigningKeyRecord, at: string): string[] => {
    const retired = (sql.retire.all(at) as Array<{ kid: string }>).map((r) => r.kid);
    sql.insert.run(k.kid, k.algorithm, toJson(k.public_jwk), toJson(k.private_jwk), k.created_at);
    return retired;
  });
  return {
    async active() {
      const r = sql.active.get() as Row | undefined;
      return r ? keyFromRow(r) : undefined;
    },
    async verifiable(retiredAfter) {
      return (sql.verifiable.all(retiredAfter) as Row[]).map(keyFromRow);
    },
    async ensureActive(candidate) {
      return ensureActive(candidate);
    },
    async rotate(next, at) {
      return rotate(next, at);
    },
  };
}
