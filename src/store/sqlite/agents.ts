import type Database from 'better-sqlite3';
import type { AgentsPort } from '../ports.js';
import type { AgentRecord } from '../records.js';
import { NewestFirstList, toPage } from './pagination.js';
import { recordChanges, type FeedSignal } from './feed.js';
import { fromJson, toJson, type Row } from './rows.js';
import { lockedTransaction, writeTransaction } from './write-lock.js';

function agentFromRow(r: Row): AgentRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, name: r.name as string,
    description: r.description as string, instructions: r.instructions as string,
    model: { provider: r.model_provider as string, name: r.model_name as string },
    knowledge_base_ids: fromJson(r.knowledge_base_ids), tools: fromJson(r.tools), safety: fromJson(r.safety),
    published: r.published === 1, public_key: (r.public_key as string | null) ?? null,
    allowed_origins: fromJson(r.allowed_origins), created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

/**
 * AgentsPort on SQLite (table `agents`; `model` in two columns, lists and settings as JSON text); each
 * write is its own transaction. An update reads and writes in one synchronous step, so nothing interleaves.
 * Changes record an `agent` feed entry in their transaction.
 */
export function createAgents(db: Database.Database, signal: FeedSignal): AgentsPort {
  const insert = db.prepare(
    `INSERT INTO agents (id, org_id, name, description, instructions, model_provider, model_name, knowledge_base_ids, tools, safety, published, public_key, allowed_origins, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const byId = db.prepare('SELECT * FROM agents WHERE org_id = ? AND id = ?');
  const update = db.prepare(
    `UPDATE agents SET name = ?, description = ?, instructions = ?, model_provider = ?, model_name = ?,
     knowledge_base_ids = ?, tools = ?, safety = ?, allowed_origins = ?, updated_at = ? WHERE org_id = ? AND id = ?`);
  const remove = db.prepare('DELETE FROM agents WHERE org_id = ? AND id = ?');
  const byPublicKey = db.prepare('SELECT * FROM agents WHERE public_key = ? AND published = 1');
  const setPublicKey = db.prepare('UPDATE agents SET published = ?, public_key = ?, updated_at = ? WHERE org_id = ? AND id = ?');
  const orgOf = db.prepare('SELECT org_id FROM agents WHERE id = ?');
  const byName = db.prepare('SELECT * FROM agents WHERE org_id = ? AND name = ? ORDER BY created_at, id');
  const list = new NewestFirstList(db, 'agents', 'org_id = ?', 'agent');
  const changed = (orgId: string, id: string, at: string, publicKey?: string | null) => {
    recordChanges(db, [{ kind: 'agent', org_id: orgId, agent_id: id, ...(publicKey ? { public_key: publicKey } : {}) }], at);
  };
  const updateTx = lockedTransaction(db, (orgId: string, id: string, patch: Parameters<AgentsPort['update']>[2], at: string): AgentRecord | undefined => {
    const cur = byId.get(orgId, id) as Row | undefined;
    if (!cur) return undefined;
    const next: AgentRecord = { ...agentFromRow(cur), ...patch, updated_at: at };
    update.run(next.name, next.description, next.instructions, next.model.provider, next.model.name,
      toJson(next.knowledge_base_ids), toJson(next.tools), toJson(next.safety), toJson(next.allowed_origins), at, orgId, id);
    changed(orgId, id, at);
    return next;
  });
  const deleteTx = lockedTransaction(db, (orgId: string, id: string): boolean => {
    const cur = byId.get(orgId, id) as Row | undefined;
    if (!cur || remove.run(orgId, id).changes === 0) return false;
    changed(orgId, id, new Date().toISOString(), cur.public_key as string | null);
    return true;
  });
  const setPublicKeyTx = lockedTransaction(db, (orgId: string, id: string, publicKey: string | null, at: string): AgentRecord | undefined => {
    const cur = byId.get(orgId, id) as Row | undefined;
    if (!cur) return undefined;
    setPublicKey.run(publicKey === null ? 0 : 1, publicKey, at, orgId, id);
    const before = cur.public_key as string | null;
    changed(orgId, id, at, before !== publicKey ? before : null);
    return agentFromRow(byId.get(orgId, id) as Row);
  });
  const fired = <T>(value: T): T => {
    if (value !== undefined && value !== false) signal.fire();
    return value;
  };
  return {
    async create(a) {
      writeTransaction(db, () => insert.run(a.id, a.org_id, a.name, a.description, a.instructions, a.model.provider, a.model.name,
        toJson(a.knowledge_base_ids), toJson(a.tools), toJson(a.safety), a.published ? 1 : 0, a.public_key, toJson(a.allowed_origins),
        a.created_at, a.updated_at));
    },
    async get(orgId, id) {
      const r = byId.get(orgId, id) as Row | undefined;
      return r ? agentFromRow(r) : undefined;
    },
    async list(orgId, page) {
      return toPage(list.rows([orgId], page), page, agentFromRow);
    },
    async update(orgId, id, patch, at) {
      return fired(updateTx(orgId, id, patch, at));
    },
    async delete(orgId, id) {
      return fired(deleteTx(orgId, id));
    },
    async findByPublicKey(publicKey) {
      const r = byPublicKey.get(publicKey) as Row | undefined;
      return r ? agentFromRow(r) : undefined;
    },
    async findByName(orgId, name) {
      return (byName.all(orgId, name) as Row[]).map(agentFromRow);
    },
    async setPublicKey(orgId, id, publicKey, at) {
      return fired(setPublicKeyTx(orgId, id, publicKey, at));
    },
    async orgOf(id) {
      return (orgOf.get(id) as { org_id: string } | undefined)?.org_id;
    },
  };
}
