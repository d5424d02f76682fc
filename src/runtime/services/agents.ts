import { AppError } from '../../errors/app-error.js';
import { checkHttpTool } from '../../tools/http-tool.js';
import { newId } from '../../ids/ids.js';
import type { ModelRegistry } from '../../models/registry.js';
import { DEFAULT_SAFETY } from '../../moderation/safety-check.js';
import type { Store } from '../../store/ports.js';
import { randomBytes } from 'node:crypto';
import type { AgentDirectory } from '../agent-directory.js';
import type { LiveHub } from '../live/live-hub.js';
import type { AgentPatch, AgentRecord, Page, PageRequest } from '../../store/records.js';
import type { AgentTool, ModelChoice, SafetySettings } from '../../vocabulary/agent.js';

/** The shape of an agent id (src/ids/ids.ts: `agt_` and a 26-character time-sortable body). */
const AGENT_ID = /^agt_[0-9A-Z]{26}$/;

/** What a caller may set on a new agent (API.md "Agents"); omitted fields take the defaults below. */
export interface AgentDraft {
  name: string;
  description?: string | undefined;
  instructions?: string | undefined;
  model?: ModelChoice | undefined;
  knowledge_base_ids?: string[] | undefined;
  tools?: AgentTool[] | undefined;
  safety?: SafetySettings | undefined;
  /** Origins the published agent may be used from (`["*"]`: any; the default). */
  allowed_origins?: string[] | undefined;
}

/**
 * Agents of an organization (API.md "Agents"). Every method is scoped by `orgId`; an agent of another
 * organization is `not_found` (404), never forbidden.
 */
export class AgentService {
  constructor(
    private readonly store: Store,
    private readonly models: ModelRegistry,
    private readonly directory?: AgentDirectory,
    private readonly live?: LiveHub,
    private readonly opts: { toolsAllowPrivate?: boolean } = {},
  ) {}

  list(orgId: string, page: PageRequest): Promise<Page<AgentRecord>> {
    return this.store.agents.list(orgId, page);
  }

  /**
   * The model providers configured on this server (API.md "Agents": `builtin` always, `openai` when
   * PARLEY_OPENAI_BASE_URL is set), in registration order: what an agent's `model.provider` may name.
   */
  providers(): string[] {
    return this.models.names();
  }

  /** The organization of agent `id`, or undefined (the org of a socket opened with a person's token). */
  orgOf(agentId: string): Promise<string | undefined> {
    return this.store.agents.orgOf(agentId);
  }

  /**
   * The agent a `model` of the OpenAI-compatible endpoints names (API.md "OpenAI-compatible"): an agent id
   * of the organization, else the exact name of one of its agents (the oldest when several share it).
   * Read through the agent cache when there is one. Throws AppError `model_not_found` (404).
   */
  async byModel(orgId: string, model: string): Promise<AgentRecord> {
    let agent: AgentRecord | undefined;
    if (AGENT_ID.test(model)) {
      const byId = this.directory ? this.directory.get(orgId, model) : this.store.agents.get(orgId, model);
      agent = byId instanceof Promise ? await byId : byId;
    }
    if (agent === undefined) {
      const byName = this.directory ? this.directory.byName(orgId, model) : this.store.agents.findByName(orgId, model).then((a) => a[0]);
      agent = byName instanceof Promise ? await byName : byName;
    }
    if (agent === undefined) throw new AppError('model_not_found', `The model ${JSON.stringify(model)} does not exist: name one of your agents by id (agt_...) or by its exact name (GET /v1/models lists them).`);
    return agent;
  }

  /** Every agent of the organization, newest first (GET /v1/models: not paged, as OpenAI's list is not). */
  async listAll(orgId: string): Promise<AgentRecord[]> {
    const all: AgentRecord[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.store.agents.list(orgId, after === undefined ? { limit: 100 } : { limit: 100, after });
      all.push(...page.data);
      if (!page.has_more || page.data.length === 0) return all;
      after = page.data[page.data.length - 1]!.id;
    }
  }

  /** The agent; throws AppError `not_found`. */
  async get(orgId: string, agentId: string): Promise<AgentRecord> {
    const agent = await this.store.agents.get(orgId, agentId);
    if (!agent) throw new AppError('not_found', 'No such agent.');
    return agent;
  }

  /**
   * Creates an agent. Defaults: model `builtin/builtin`, tools `["search_knowledge"]`, the default safety
   * settings. Throws AppError `unknown_provider` (provider not configured on this server) or
   * `validation_failed` (a knowledge base that is not the organization's; an HTTP tool whose `parameters`
   * is not a JSON Schema of an object that ajv compiles, or whose `url` is not an http(s) URL, carries
   * credentials, or names a private address while PARLEY_TOOLS_ALLOW_PRIVATE is off).
   */
  async create(orgId: string, draft: AgentDraft): Promise<AgentRecord> {
    await this.checkReferences(orgId, draft);
    const now = new Date().toISOString();
    const agent: AgentRecord = {
      id: newId('agt'), org_id: orgId, name: draft.name, description: draft.description ?? '',
      instructions: draft.instructions ?? '', model: draft.model ?? { provider: 'builtin', name: 'builtin' },
      knowledge_base_ids: draft.knowledge_base_ids ?? [], tools: draft.tools ?? ['search_knowledge'],
      safety: draft.safety ?? { ...DEFAULT_SAFETY, blocked_phrases: [...DEFAULT_SAFETY.blocked_phrases] },
      published: false, public_key: null, allowed_origins: draft.allowed_origins ?? ['*'], created_at: now, updated_at: now,
    };
    await this.store.agents.create(agent);
    return agent;
  }

  /** Applies the fields of `patch` that are set. Throws like `create`, and `not_found`. */
  async update(orgId: string, agentId: string, patch: Partial<AgentDraft>): Promise<AgentRecord> {
    await this.checkReferences(orgId, patch);
    const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as AgentPatch;
    const agent = await this.store.agents.update(orgId, agentId, set, new Date().toISOString());
    this.directory?.invalidate(orgId, agentId);
    if (!agent) throw new AppError('not_found', 'No such agent.');
    if (agent.public_key !== null) this.directory?.invalidatePublicKey(agent.public_key);
    return agent;
  }

  /**
   * Takes knowledge base `kbId` out of the knowledge bases of every agent of the organization that has it
   * (after the base was deleted). Pages through the agents; each change goes through `update`.
   */
  async detachKnowledgeBase(orgId: string, kbId: string): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const page = await this.store.agents.list(orgId, after === undefined ? { limit: 100 } : { limit: 100, after });
      for (const agent of page.data) {
        if (!agent.knowledge_base_ids.includes(kbId)) continue;
        const set: AgentPatch = { knowledge_base_ids: agent.knowledge_base_ids.filter((id) => id !== kbId) };
        await this.store.agents.update(orgId, agent.id, set, new Date().toISOString());
        this.directory?.invalidate(orgId, agent.id);
        if (agent.public_key !== null) this.directory?.invalidatePublicKey(agent.public_key);
      }
      if (!page.has_more || page.data.length === 0) return;
      after = page.data[page.data.length - 1]!.id;
    }
  }

  /** Deletes the agent (a published one stops answering at once: its public sockets close). Throws AppError `not_found`. */
  async delete(orgId: string, agentId: string): Promise<void> {
    const agent = await this.store.agents.get(orgId, agentId);
    const deleted = await this.store.agents.delete(orgId, agentId);
    this.directory?.invalidate(orgId, agentId);
    if (!deleted) throw new AppError('not_found', 'No such agent.');
    if (agent?.public_key) this.revokePublicKey(agent.public_key);
  }

  /**
   * Publishes the agent (API.md "Agents"): it gets a public key `pk_` + 32 base64url characters (192
   * random bits), which grants chat with this agent only. An agent already published keeps its key.
   * Returns the agent. Throws AppError `not_found`.
   */
  async publish(orgId: string, agentId: string): Promise<AgentRecord> {
    const agent = await this.get(orgId, agentId);
    if (agent.published && agent.public_key !== null) return agent;
    const published = await this.store.agents.setPublicKey(orgId, agentId, `pk_${randomBytes(24).toString('base64url')}`, new Date().toISOString());
    this.directory?.invalidate(orgId, agentId);
    if (!published) throw new AppError('not_found', 'No such agent.');
    return published;
  }

  /**
   * Unpublishes the agent: its public key stops working at once (public requests get 404, its open public
   * sockets are closed with 4404), on other processes sharing the store within the feed's poll (100 ms). A
   * later publish issues a new key; the visitor tokens of the conversations started through the old key
   * stay dead (a visitor token works only through the key its conversation was started through:
   * chat-service.ts visitorTokenMatches). Returns the agent. Throws AppError `not_found`.
   */
  async unpublish(orgId: string, agentId: string): Promise<AgentRecord> {
    const before = await this.get(orgId, agentId);
    const agent = await this.store.agents.setPublicKey(orgId, agentId, null, new Date().toISOString());
    this.directory?.invalidate(orgId, agentId);
    if (!agent) throw new AppError('not_found', 'No such agent.');
    if (before.public_key !== null) this.revokePublicKey(before.public_key);
    return agent;
  }

  /**
   * The key stops working here at once; its open sockets close when the store feed tells of the change,
   * on this process and every other (the write recorded an `agent` entry with the key: access-changes.ts).
   */
  private revokePublicKey(publicKey: string): void {
    this.directory?.invalidatePublicKey(publicKey);
  }

  private async checkReferences(orgId: string, draft: Partial<AgentDraft>): Promise<void> {
    if (draft.model) this.models.get(draft.model.provider);
    (draft.tools ?? []).forEach((tool, i) => {
      if (typeof tool !== 'string') checkHttpTool(tool, this.opts.toolsAllowPrivate ?? false, `tools[${i}]`);
    });
    for (const kbId of draft.knowledge_base_ids ?? []) {
      if (!(await this.store.knowledge.getBase(orgId, kbId))) {
        throw new AppError('validation_failed', `Knowledge base ${kbId} does not exist.`, { errors: [{ path: 'knowledge_base_ids', message: `unknown knowledge base ${kbId}` }] });
      }
    }
  }
}
