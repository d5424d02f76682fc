/**
 * The refresh-token writes (tables `refresh_families`, `refresh_tokens`; hashes only) as plain functions of
 * a connection and structured-cloneable arguments, like conversation-writes.ts: they run in the SQLite
 * writer thread (src/store/sqlite/writer.ts), each inside the batch's transaction and its own savepoint,
 * so a sign-in or a refresh never holds the event loop while another process has the write lock, nor for
 * its commit's fsync. src/store/sqlite/refresh-tokens.ts is the port; it reads on the main connection.
 *
 * An exchange is decided by one conditional UPDATE (`used_at IS NULL AND expires_at > now AND the family
 * is live ... RETURNING family_id`): of two concurrent exchanges of one token exactly one changes the
 * row, whatever process they run in. Only when it changed nothing does a read say why, and a token
 * found spent revokes its family in the same transaction (RFC 9700 section 4.14.2).
 */
import type Database from 'better-sqlite3';
import type { RefreshFamilyRecord, RefreshRotation, RefreshTokenRecord } from '../records.js';
import { recordChanges } from './feed.js';
import type { Row } from './rows.js';
import { statementCache } from './statement-cache.js';

function prepare(db: Database.Database) {
  return {
    insertFamily: db.prepare(
      'INSERT INTO refresh_families (id, user_id, created_at, absolute_expires_at, revoked_at, revoked_reason) VALUES (?, ?, ?, ?, ?, ?)'),
    insertToken: db.prepare('INSERT INTO refresh_tokens (token_hash, family_id, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?)'),
    spend: db.prepare(
      `UPDATE refresh_tokens SET used_at = @at
       WHERE token_hash = @hash AND used_at IS NULL AND expires_at > @at
         AND family_id IN (SELECT id FROM refresh_families WHERE revoked_at IS NULL AND absolute_expires_at > @at)
       RETURNING family_id`),
    family: db.prepare('SELECT * FROM refresh_families WHERE id = ?'),
    token: db.prepare('SELECT t.used_at, f.id AS family_id, f.revoked_at FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id WHERE t.token_hash = ?'),
    revokeFamily: db.prepare('UPDATE refresh_families SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL'),
    revokeFamilyOf: db.prepare(
      `UPDATE refresh_families SET revoked_at = ?, revoked_reason = ?
       WHERE revoked_at IS NULL AND id = (SELECT family_id FROM refresh_tokens WHERE token_hash = ?)
       RETURNING id, user_id`),
    revokeAllOf: db.prepare('UPDATE refresh_families SET revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND revoked_at IS NULL RETURNING id, user_id'),
    prune: db.prepare('DELETE FROM refresh_families WHERE absolute_expires_at < ?'),
  };
}

const statements = statementCache(prepare);

/** A refresh_families row as a record. */
export function familyFromRow(r: Row): RefreshFamilyRecord {
  return {
    id: r.id as string, user_id: r.user_id as string, created_at: r.created_at as string,
    absolute_expires_at: r.absolute_expires_at as string, revoked_at: (r.revoked_at as string | null) ?? null,
    revoked_reason: (r.revoked_reason as string | null) ?? null,
  };
}

/** Records a `session` feed entry per revoked family, in the caller's transaction (every process closes its sockets). */
function ended(db: Database.Database, families: Array<{ id: string; user_id: string }>, at: string): void {
  recordChanges(db, families.map((f) => ({ kind: 'session', session_id: f.id, user_id: f.user_id })), at);
}

/** The refresh-token writes, by name (merged into CONVERSATION_WRITES); each is the RefreshTokensPort method named. */
export const REFRESH_TOKEN_WRITES = {
  /** RefreshTokensPort.startFamily. */
  refreshFamilyStart(db: Database.Database, a: { family: RefreshFamilyRecord; first: RefreshTokenRecord }): void {
    const sql = statements(db);
    const f = a.family;
    const t = a.first;
    sql.insertFamily.run(f.id, f.user_id, f.created_at, f.absolute_expires_at, f.revoked_at, f.revoked_reason);
    sql.insertToken.run(t.token_hash, f.id, t.created_at, t.expires_at, t.used_at);
  },
  /** RefreshTokensPort.rotate; a `reused` outcome has revoked the family (and recorded its feed entry). */
  refreshTokenRotate(db: Database.Database, a: { hash: string; next: Omit<RefreshTokenRecord, 'family_id' | 'used_at'>; at: string }): RefreshRotation {
    const sql = statements(db);
    const { hash, next, at } = a;
    const spent = sql.spend.get({ hash, at }) as { family_id: string } | undefined;
    if (spent !== undefined) {
      const family = familyFromRow(sql.family.get(spent.family_id) as Row);
      const expiresAt = next.expires_at < family.absolute_expires_at ? next.expires_at : family.absolute_expires_at;
      const token: RefreshTokenRecord = { token_hash: next.token_hash, family_id: family.id, created_at: next.created_at, expires_at: expiresAt, used_at: null };
      sql.insertToken.run(token.token_hash, token.family_id, token.created_at, token.expires_at, null);
      return { status: 'rotated', family, token };
    }
    const t = sql.token.get(hash) as { used_at: string | null; family_id: string; revoked_at: string | null } | undefined;
    if (t === undefined) return { status: 'unknown' };
    if (t.revoked_at !== null) return { status: 'revoked' };
    if (t.used_at !== null) {
      if (sql.revokeFamily.run(at, 'reuse', t.family_id).changes > 0) {
        const f = familyFromRow(sql.family.get(t.family_id) as Row);
        ended(db, [{ id: f.id, user_id: f.user_id }], at);
      }
      return { status: 'reused', family_id: t.family_id };
    }
    return { status: 'expired' };
  },
  /** RefreshTokensPort.revokeFamilyOf. */
  refreshFamilyRevokeOf(db: Database.Database, a: { hash: string; reason: string; at: string }): boolean {
    const rows = statements(db).revokeFamilyOf.all(a.at, a.reason, a.hash) as Array<{ id: string; user_id: string }>;
    ended(db, rows, a.at);
    return rows.length > 0;
  },
  /** RefreshTokensPort.revokeAllOf. */
  refreshFamiliesRevokeAll(db: Database.Database, a: { userId: string; reason: string; at: string }): number {
    const rows = statements(db).revokeAllOf.all(a.at, a.reason, a.userId) as Array<{ id: string; user_id: string }>;
    ended(db, rows, a.at);
    return rows.length;
  },
  /** RefreshTokensPort.prune. */
  refreshFamiliesPrune(db: Database.Database, a: { before: string }): number {
    return statements(db).prune.run(a.before).changes;
  },
} as const;
