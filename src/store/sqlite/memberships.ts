import type Database from 'better-sqlite3';
import type { MembershipsPort } from '../ports.js';
import type { MemberCheck, MemberRecord, MembershipRecord, Role, UserOrganization } from '../records.js';
import { NewestFirstList, toPage } from './pagination.js';
import { recordChanges, type FeedSignal } from './feed.js';
import type { Row } from './rows.js';
import { lockedTransaction } from './write-lock.js';

function memberFromRow(r: Row): MemberRecord {
  return { org_id: r.org_id as string, user_id: r.user_id as string, role: r.role as Role, created_at: r.created_at as string, email: r.email as string };
}

/**
 * MembershipsPort on SQLite (table `memberships`, key (org_id, user_id); view `members` adds the e-mail).
 *
 * The last-owner rule is enforced by the writes themselves: the UPDATE and DELETE carry the condition
 * "the member is not an owner, or another owner exists" in their WHERE clause, so the check and the
 * change are one statement and two concurrent demotions of an organization's two owners cannot both
 * pass. When such a write changes nothing, a read (in the same IMMEDIATE transaction) says why.
 */
export function createMemberships(db: Database.Database, signal: FeedSignal): MembershipsPort {
  const otherOwner = `(role <> 'owner' OR EXISTS (SELECT 1 FROM memberships o WHERE o.org_id = memberships.org_id AND o.role = 'owner' AND o.user_id <> memberships.user_id))`;
  const sql = {
    insert: db.prepare('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (org_id, user_id) DO NOTHING'),
    check: db.prepare('SELECT m.role, u.access_valid_after FROM users u LEFT JOIN memberships m ON m.user_id = u.id AND m.org_id = ? WHERE u.id = ?'),
    get: db.prepare('SELECT * FROM members WHERE org_id = ? AND user_id = ?'),
    organizationsOf: db.prepare(
      'SELECT o.id, o.name, m.role FROM memberships m JOIN organizations o ON o.id = m.org_id WHERE m.user_id = ? ORDER BY o.id'),
    exists: db.prepare('SELECT 1 FROM memberships WHERE org_id = ? AND user_id = ?'),
    setRole: db.prepare(`UPDATE memberships SET role = @role WHERE org_id = @org AND user_id = @user AND (@role = 'owner' OR ${otherOwner})`),
    remove: db.prepare(`DELETE FROM memberships WHERE org_id = ? AND user_id = ? AND ${otherOwner}`),
  };
  const list = new NewestFirstList(db, 'members', 'org_id = ?', 'member');

  const changed = (org: string, user: string) => recordChanges(db, [{ kind: 'member', org_id: org, user_id: user }], new Date().toISOString());
  const add = lockedTransaction(db, (m: MembershipRecord): boolean => {
    if (sql.insert.run(m.org_id, m.user_id, m.role, m.created_at).changes === 0) return false;
    changed(m.org_id, m.user_id);
    return true;
  });
  const setRole = lockedTransaction(db, (org: string, user: string, role: Role): 'updated' | 'not_found' | 'last_owner' => {
    if (sql.setRole.run({ org, user, role }).changes > 0) {
      changed(org, user);
      return 'updated';
    }
    return sql.exists.get(org, user) === undefined ? 'not_found' : 'last_owner';
  });
  const remove = lockedTransaction(db, (org: string, user: string): 'removed' | 'not_found' | 'last_owner' => {
    if (sql.remove.run(org, user).changes > 0) {
      changed(org, user);
      return 'removed';
    }
    return sql.exists.get(org, user) === undefined ? 'not_found' : 'last_owner';
  });
  const signalled = <T>(outcome: T, changedWhen: T): T => {
    if (outcome === changedWhen) signal.fire();
    return outcome;
  };

  return {
    async add(m) {
      return signalled(add(m), true);
    },
    async check(orgId, userId): Promise<MemberCheck> {
      const r = sql.check.get(orgId, userId) as { role: Role | null; access_valid_after: string | null } | undefined;
      if (r === undefined) return { status: 'no_user' };
      const access_valid_after = r.access_valid_after ?? null;
      return r.role === null ? { status: 'not_a_member', access_valid_after } : { status: 'member', role: r.role, access_valid_after };
    },
    async get(orgId, userId) {
      const r = sql.get.get(orgId, userId) as Row | undefined;
      return r ? memberFromRow(r) : undefined;
    },
    async list(orgId, page) {
      return toPage(list.rows([orgId], page), page, memberFromRow);
    },
    async organizationsOf(userId) {
      return sql.organizationsOf.all(userId) as UserOrganization[];
    },
    async setRole(orgId, userId, role) {
      return signalled(setRole(orgId, userId, role), 'updated');
    },
    async remove(orgId, userId) {
      return signalled(remove(orgId, userId), 'removed');
    },
  };
}
