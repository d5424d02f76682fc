import type Database from 'better-sqlite3';
import type { RefreshTokensPort } from '../ports.js';
import type { RefreshFamilyRecord, RefreshRotation, RefreshTokenRecord } from '../records.js';
import { recordChanges, type FeedSignal } from './feed.js';
import type { Row } from './rows.js';

function familyFromRow(r: Row): RefreshFamilyRecord {
  return {
    id: r.id as string, user_id: r.user_id as string, created_at: r.created_at as string,
    absolute_expires_at: r.absolute_expires_at as string, revoked_at: (r.revoked_at as string | null) ?? null,
    revoked_reason: (r.revoked_reason as string | null) ?? null,
  };
}

/**
 * RefreshTokensPort on SQLite (tables `refresh_families` and `refresh_tokens`, hashes only).
 *
 * An exchange is decided by one conditional UPDATE (`used_at IS NULL AND expires_at > now AND the family
 * is live ... RETURNING family_id`): of two concurrent exchanges of one token exactly one changes the
 * row, whatever process they run in. Only when it changed nothing does a read say why, and a token
 * found spent revokes its family in the same IMMEDIATE transaction (RFC 9700 section 4.14.2).
 */
export function createRefreshTokens(db: Database.Database, signal: FeedSignal): RefreshTokensPort {
  const sql = {
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
    familyIdOf: db.prepare('SELECT family_id FROM refresh_tokens WHERE token_hash = ?'),
    revokeAllOf: db.prepare('UPDATE refresh_families SET revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND revoked_at IS NULL RETURNING id, user_id'),
    prune: db.prepare('DELETE FROM refresh_families WHERE absolute_expires_at < ?'),
  };

  /** Records a `session` feed entry per revoked family (in the caller's transaction). */
  const ended = (families: Array<{ id: string; user_id: string }>, at: string) =>
    recordChanges(db, families.map((f) => ({ kind: 'session', session_id: f.id, user_id: f.user_id })), at);
  const revokeFamilyOf = db.transaction((hash: string, reason: string, at: string): boolean => {
    const rows = sql.revokeFamilyOf.all(at, reason, hash) as Array<{ id: string; user_id: string }>;
    ended(rows, at);
    return rows.length > 0;
  });
  const revokeAllOf = db.transaction((userId: string, reason: string, at: string): number => {
    const rows = sql.revokeAllOf.all(at, reason, userId) as Array<{ id: string; user_id: string }>;
    ended(rows, at);
    return rows.length;
  });
  const fired = <T>(value: T, changed: boolean): T => {
    if (changed) signal.fire();
    return value;
  };

  const startFamily = db.transaction((f: RefreshFamilyRecord, t: RefreshTokenRecord) => {
    sql.insertFamily.run(f.id, f.user_id, f.created_at, f.absolute_expires_at, f.revoked_at, f.revoked_reason);
    sql.insertToken.run(t.token_hash, f.id, t.created_at, t.expires_at, t.used_at);
  });

  const rotate = db.transaction((hash: string, next: Omit<RefreshTokenRecord, 'family_id' | 'used_at'>, at: string): RefreshRotation => {
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
        ended([{ id: f.id, user_id: f.user_id }], at);
      }
      return { status: 'reused', family_id: t.family_id };
    }
    return { status: 'expired' };
  });

  return {
    async startFamily(family, first) {
      startFamily.immediate(family, first);
    },
    async rotate(hash, next, at) {
      const outcome = rotate.immediate(hash, next, at);
      return fired(outcome, outcome.status === 'reused');
    },
    async revokeFamilyOf(hash, reason, at) {
      const done = revokeFamilyOf.immediate(hash, reason, at);
      return fired(done, done);
    },
    async familyIdOf(hash) {
      return (sql.familyIdOf.get(hash) as { family_id: string } | undefined)?.family_id;
    },
    async revokeAllOf(userId, reason, at) {
      const n = revokeAllOf.immediate(userId, reason, at);
      return fired(n, n > 0);
    },
    async getFamily(id) {
      const r = sql.family.get(id) as Row | undefined;
      return r ? familyFromRow(r) : undefined;
    },
    async prune(before) {
      return sql.prune.run(before).changes;
    },
  };
}
