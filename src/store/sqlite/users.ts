import type Database from 'better-sqlite3';
import type { UsersPort } from '../ports.js';
import type { UserRecord } from '../records.js';
import { recordChanges, type FeedSignal } from './feed.js';
import type { Row } from './rows.js';
import { lockedTransaction, writeTransaction } from './write-lock.js';

function userFromRow(r: Row): UserRecord {
  return {
    id: r.id as string, email: r.email as string, password_hash: (r.password_hash as string | null) ?? null,
    access_valid_after: (r.access_valid_after as string | null) ?? null, created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

/**
 * UsersPort on SQLite (table `users`, `email` unique). Deleting a person is one IMMEDIATE transaction
 * that first checks, in the same statement that could refuse, that they are not an organization's only
 * owner; their memberships, refresh-token families (with tokens) and socket tickets go with them (foreign
 * keys ON DELETE CASCADE). Setting a password and deleting a person record a `user` feed entry.
 */
export function createUsers(db: Database.Database, signal: FeedSignal): UsersPort {
  const sql = {
    insert: db.prepare(
      'INSERT INTO users (id, email, password_hash, access_valid_after, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (email) DO NOTHING'),
    byId: db.prepare('SELECT * FROM users WHERE id = ?'),
    byEmail: db.prepare('SELECT * FROM users WHERE email = ?'),
    setPassword: db.prepare('UPDATE users SET password_hash = @hash, access_valid_after = @at, updated_at = @at WHERE id = @id'),
    soleOwner: db.prepare(
      `SELECT 1 FROM memberships m WHERE m.user_id = ? AND m.role = 'owner'
       AND NOT EXISTS (SELECT 1 FROM memberships o WHERE o.org_id = m.org_id AND o.role = 'owner' AND o.user_id <> m.user_id) LIMIT 1`),
    remove: db.prepare('DELETE FROM users WHERE id = ?'),
  };
  const remove = lockedTransaction(db, (id: string): 'deleted' | 'not_found' | 'last_owner' => {
    if (sql.soleOwner.get(id) !== undefined) return 'last_owner';
    if (sql.remove.run(id).changes === 0) return 'not_found';
    recordChanges(db, [{ kind: 'user', user_id: id }], new Date().toISOString());
    return 'deleted';
  });
  const setPassword = lockedTransaction(db, (id: string, hash: string, at: string): boolean => {
    if (sql.setPassword.run({ id, hash, at }).changes === 0) return false;
    recordChanges(db, [{ kind: 'user', user_id: id }], at);
    return true;
  });
  return {
    async create(u) {
      return writeTransaction(db, () => sql.insert.run(u.id, u.email, u.password_hash, u.access_valid_after, u.created_at, u.updated_at).changes > 0);
    },
    async get(id) {
      const r = sql.byId.get(id) as Row | undefined;
      return r ? userFromRow(r) : undefined;
    },
    async findByEmail(email) {
      const r = sql.byEmail.get(email) as Row | undefined;
      return r ? userFromRow(r) : undefined;
    },
    async setPasswordHash(id, hash, at) {
      const done = setPassword(id, hash, at);
      if (done) signal.fire();
      return done;
    },
    async delete(id) {
      const outcome = remove(id);
      if (outcome === 'deleted') signal.fire();
      return outcome;
    },
  };
}
