import type { OrganizationsPort } from '../ports.js';
import type { MongoContext } from './context.js';

/** OrganizationsPort on MongoDB (collection `organizations`; `retention_days` absent reads as null). */
export function createOrganizations({ c }: MongoContext): OrganizationsPort {
  return {
    async create(o) {
      await c.organizations.insertOne({ _id: o.id, name: o.name, created_at: o.created_at });
    },
    async get(id) {
      const d = await c.organizations.findOne({ _id: id });
      return d === null ? undefined : { id: d._id, name: d.name, created_at: d.created_at };
    },
    async count() {
      return c.organizations.countDocuments({});
    },
    async retentionDays(id) {
      const d = await c.organizations.findOne({ _id: id }, { projection: { retention_days: 1 } });
      return d === null ? undefined : d.retention_days ?? null;
    },
    async setRetentionDays(id, days) {
      return (await c.organizations.updateOne({ _id: id }, { $set: { retention_days: days } })).matchedCount === 1;
    },
    async retentionSettings() {
      const docs = await c.organizations.find({}, { projection: { retention_days: 1 } }).sort({ _id: 1 }).toArray();
      return docs.map((d) => ({ org_id: d._id, retention_days: d.retention_days ?? null }));
    },
  };
}
