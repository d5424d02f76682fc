import type Database from 'better-sqlite3';
import type { InvitationsPort } from '../ports.js';
import type { InvitationAcceptance, InvitationRecord, InvitationStatus, PendingInvitation, Role } from '../records.js';
import { recordChanges, type FeedSignal } from './feed.js';
import type { Row } from './rows.js';
import { lockedTransaction } from './write-lock.js';

function invitationFromRow(r: Row): InvitationRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, email: r.email as string, role: r.role as Role,
    status: r.status as InvitationStatus, invited_by: (r.invited_by as string | null) ?? null,
    created_at: r.created_at as string, expires_at: r.expires_at as string, responded_at: (r.responded_at as string | null) ?? null,
  };
}

/**
 * InvitationsPort on SQLite (table `invitations`; at most one `pending` invitation per organization and
 * e-mail: a partial unique index). Each write is one IMMEDIATE transaction whose statements carry their
 * conditions (pending, not expired, the invitee's e-mail), so two concurrent answers to one invitation
 * cannot both pass. The membership check of `create` reads the `members` view by e-mail: one read whether
 * or not the e-mail has an account. An accepted invitation records a `member` feed entry with the membership.
 */
export function createInvitations(db: Database.Database, signal: FeedSignal): InvitationsPort {
  const sql = {
    isMember: db.prepare('SELECT 1 FROM members WHERE org_id = ? AND email = ?'),
    replace: db.prepare(`UPDATE invitations SET status = 'replaced', responded_at = ? WHERE org_id = ? AND email = ? AND status = 'pending'`),
    insert: db.prepare(`INSERT INTO invitations (id, org_id, email, role, status, invited_by, created_at, expires_at, responded_at)
      VALUES (@id, @org_id, @email, @role, @status, @invited_by, @created_at, @expires_at, @responded_at)`),
    get: db.prepare('SELECT * FROM invitations WHERE id = ?'),
    pendingFor: db.prepare(`SELECT i.*, o.name AS org_name FROM invitations i JOIN organizations o ON o.id = i.org_id
      WHERE i.email = ? AND i.status = 'pending' AND i.expires_at > ? ORDER BY i.created_at DESC, i.id DESC LIMIT ?`),
    answer: db.prepare(`UPDATE invitations SET status = @status, responded_at = @at
      WHERE id = @id AND email = @email AND status = 'pending' AND expires_at > @at RETURNING org_id, role`),
    join: db.prepare('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (org_id, user_id) DO NOTHING'),
    membership: db.prepare('SELECT o.id, o.name, m.role FROM memberships m JOIN organizations o ON o.id = m.org_id WHERE m.org_id = ? AND m.user_id = ?'),
  };

  const create = lockedTransaction(db, (rec: InvitationRecord): 'created' | 'already_member' => {
    if (sql.isMember.get(rec.org_id, rec.email) !== undefined) return 'already_member';
    sql.replace.run(rec.created_at, rec.org_id, rec.email);
    sql.insert.run(rec);
    return 'created';
  });
  const accept = lockedTransaction(db, (id: string, email: string, userId: string, at: string): InvitationAcceptance => {
    const answered = sql.answer.get({ status: 'accepted', at, id, email }) as { org_id: string; role: Role } | undefined;
    if (answered === undefined) return { status: 'not_found' };
    if (sql.join.run(answered.org_id, userId, answered.role, at).changes > 0) {
      recordChanges(db, [{ kind: 'member', org_id: answered.org_id, user_id: userId }], at);
    }
    const organization = sql.membership.get(answered.org_id, userId) as { id: string; name: string; role: Role };
    return { status: 'accepted', organization };
  });
  const decline = lockedTransaction(db, (id: string, email: string, at: string): boolean =>
    sql.answer.get({ status: 'declined', at, id, email }) !== undefined);

  return {
    async create(rec) {
      return create(rec);
    },
    async get(id) {
      const r = sql.get.get(id) as Row | undefined;
      return r ? invitationFromRow(r) : undefined;
    },
    async pendingFor(email, at, limit) {
      return (sql.pendingFor.all(email, at, limit) as Row[]).map((r): PendingInvitation => ({ ...invitationFromRow(r), org_name: r.org_name as string }));
    },
    async accept(id, email, userId, at) {
      const outcome = accept(id, email, userId, at);
      if (outcome.status === 'accepted') signal.fire();
      return outcome;
    },
    async decline(id, email, at) {
      return decline(id, email, at);
    },
  };
}
