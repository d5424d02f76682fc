import type { OrganizationsPort } from '../ports.js';
import type { MongoContext } from './context.js';

/** OrganizationsPort on MongoDB (collection `organizations`). */
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
  };
}
