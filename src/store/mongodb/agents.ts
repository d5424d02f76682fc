import type { AgentsPort } from '../ports.js';
import type { AgentPatch, AgentRecord } from '../records.js';
import { toPage } from '../list-page.js';
import type { MongoContext } from './context.js';
import { newestFirst } from './pagination.js';
import type { AgentDoc } from './schema.js';
import { recordChanges } from './transactions.js';

/** An agent record as its document (`model` in two fields, as in SQLite). */
export const agentToDoc = (a: AgentRecord): AgentDoc => ({
  _id: a.id, org_id: a.org_id, name: a.name, description: a.description, instructions: a.instructions,
  model_provider: a.model.provider, model_name: a.model.name, knowledge_base_ids: a.knowledge_base_ids, tools: a.tools, safety: a.safety,
  published: a.published, public_key: a.public_key, allowed_origins: a.allowed_origins, created_at: a.created_at, updated_at: a.updated_at,
});

/** An agent document as its record. */
export const agentFromDoc = (d: AgentDoc): AgentRecord => ({
  id: d._id, org_id: d.org_id, name: d.name, description: d.description, instructions: d.instructions,
  model: { provider: d.model_provider, name: d.model_name }, knowledge_base_ids: d.knowledge_base_ids, tools: d.tools, safety: d.safety,
  published: d.published, public_key: d.public_key ?? null, allowed_origins: d.allowed_origins, created_at: d.created_at, updated_at: d.updated_at,
});

/** The `$set` of an agent patch: only the patched fields (undefined ones are not patched), and `updated_at`. */
export function agentPatchSet(patch: AgentPatch, at: string): Partial<AgentDoc> {
  const set: Partial<AgentDoc> = { updated_at: at };
  for (const key of ['name', 'description', 'instructions', 'knowledge_base_ids', 'tools', 'safety', 'allowed_origins'] as const) {
    if (patch[key] !== undefined) (set as Record<string, unknown>)[key] = patch[key];
  }
  if (patch.model !== undefined) {
    set.model_provider = patch.model.provider;
    set.model_name = patch.model.name;
  }
  return set;
}

/**
 * AgentsPort on MongoDB (collection `agents`; `public_key` unique among published agents). Every change
 * is a transaction: one findOneAndUpdate (or delete) scoped by organization, and the `agent` feed entry
 * (with the public key that stopped working, when one did).
 */
export function createAgents({ c, tx }: MongoContext): AgentsPort {
  const changed = (orgId: string, id: string, publicKey?: string | null) =>
    [{ kind: 'agent' as const, org_id: orgId, agent_id: id, ...(publicKey ? { public_key: publicKey } : {}) }];
  return {
    async create(a) {
      await c.agents.insertOne(agentToDoc(a));
    },
    async findByName(orgId, name) {
      return (await c.agents.find({ org_id: orgId, name }).sort({ created_at: 1, _id: 1 }).toArray()).map(agentFromDoc);
    },
    async get(orgId, id) {
      const d = await c.agents.findOne({ _id: id, org_id: orgId });
      return d === null ? undefined : agentFromDoc(d);
    },
    async list(orgId, page) {
      return toPage(await newestFirst(c.agents, { org_id: orgId }, page, 'agent'), page, agentFromDoc);
    },
    update(orgId, id, patch, at) {
      return tx(async (session) => {
        const d = await c.agents.findOneAndUpdate({ _id: id, org_id: orgId }, { $set: agentPatchSet(patch, at) }, { session, returnDocument: 'after' });
        if (d === null) return undefined;
        await recordChanges(c, session, changed(orgId, id), at);
        return agentFromDoc(d);
      });
    },
    delete(orgId, id) {
      return tx(async (session) => {
        const d = await c.agents.findOneAndDelete({ _id: id, org_id: orgId }, { session });
        if (d === null) return false;
        await recordChanges(c, session, changed(orgId, id, d.public_key), new Date().toISOString());
        return true;
      });
    },
    async findByPublicKey(publicKey) {
      const d = await c.agents.findOne({ public_key: publicKey, published: true });
      return d === null ? undefined : agentFromDoc(d);
    },
    setPublicKey(orgId, id, publicKey, at) {
      return tx(async (session) => {
        const before = await c.agents.findOneAndUpdate(
          { _id: id, org_id: orgId }, { $set: { published: publicKey !== null, public_key: publicKey, updated_at: at } }, { session, returnDocument: 'before' },
        );
        if (before === null) return undefined;
        await recordChanges(c, session, changed(orgId, id, before.public_key !== publicKey ? before.public_key : null), at);
        return agentFromDoc({ ...before, published: publicKey !== null, public_key: publicKey, updated_at: at });
      });
    },
    async orgOf(id) {
      return (await c.agents.findOne({ _id: id }, { projection: { org_id: 1 } }))?.org_id;
    },
  };
}
