import type Database from 'better-sqlite3';
import type { OrganizationsPort } from '../ports.js';
import type { OrganizationRecord } from '../records.js';
import type { Row } from './rows.js';

function organizationFromRow(r: Row): OrganizationRecord {
  return { id: r.id as string, name: r.name as string, created_at: r.created_at as string };
}

/** OrganizationsPort on SQLite (table `organizations`); each write is its own transaction. */
export function createOrganizations(db: Database.Database): OrganizationsPort {
  const insert = db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)');
  const byId = db.prepare('SELECT * FROM organizations WHERE id = ?');
  const count = db.prepare('SELECT count(*) AS n FROM organizations');
  return {
    async create(o) {
      insert.run(o.id, o.name, o.created_at);
    },
    async get(id) {
      const r = byId.get(id) as Row | undefined;
      return r ? organizationFromRow(r) : undefined;
    },
    async count() {
      return (count.get() as { n: number }).n;
    },
  };
}
