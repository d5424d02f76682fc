import type Database from 'better-sqlite3';
import type { OrganizationsPort } from '../ports.js';
import type { OrganizationRecord, RetentionSetting } from '../records.js';
import type { Row } from './rows.js';
import { writeTransaction } from './write-lock.js';

function organizationFromRow(r: Row): OrganizationRecord {
  return { id: r.id as string, name: r.name as string, created_at: r.created_at as string };
}

/** OrganizationsPort on SQLite (table `organizations`); each write is its own transaction. */
export function createOrganizations(db: Database.Database): OrganizationsPort {
  const insert = db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)');
  const byId = db.prepare('SELECT * FROM organizations WHERE id = ?');
  const count = db.prepare('SELECT count(*) AS n FROM organizations');
  const retention = db.prepare('SELECT retention_days FROM organizations WHERE id = ?');
  const setRetention = db.prepare('UPDATE organizations SET retention_days = ? WHERE id = ?');
  const settings = db.prepare('SELECT id AS org_id, retention_days FROM organizations ORDER BY id');
  return {
    async create(o) {
      writeTransaction(db, () => insert.run(o.id, o.name, o.created_at));
    },
    async get(id) {
      const r = byId.get(id) as Row | undefined;
      return r ? organizationFromRow(r) : undefined;
    },
    async count() {
      return (count.get() as { n: number }).n;
    },
    async retentionDays(id) {
      const r = retention.get(id) as { retention_days: number | null } | undefined;
      return r === undefined ? undefined : r.retention_days;
    },
    async setRetentionDays(id, days) {
      return writeTransaction(db, () => setRetention.run(days, id).changes === 1);
    },
    async retentionSettings() {
      return settings.all() as RetentionSetting[];
    },
  };
}
