import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import type { ModelRegistry } from '../../models/registry.js';
import { DEFAULT_SAFETY } from '../../moderation/safety-check.js';
import type { Store } from '../../store/ports.js';
import type { AgentDirectory } from '../agent-directory.js';
import type { AgentPatch, AgentRecord, Page, PageRequest } from '../../store/records.js';
import type { ModelChoice, SafetySettings } from '../../vocabulary/agent.js';

/** What a caller may set on a new agent (API.md "Agents"); omitted fields take the defaults below. */
export interface AgentDraft {
  name: string;
  description?: string | undefined;
  instructions?: string | undefined;
  model?: ModelChoice | undefined;
  knowledge_base_ids?: string[] | undefined;
  tools?: string[] | undefined;
  safety?: SafetySettings | undefined;
}

/**
 * Agents of an organization (API.md "Agents"). Every method is scoped by `orgId`; an agent of another
 * organization is `not_found` (404), never forbidden.
 */
export class AgentService {
  constructor(private readonly store: Store, private readonly models: ModelRegistry, private readonly directory?: AgentDirectory) {}

  list(orgId: string, page: PageRequest): Promise<Page<AgentRecord>> {
    return this.store.agents.list(orgId, page);
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
   * `validation_failed` (a knowledge base that is not the organization's).
   */
  async create(orgId: string, draft: AgentDraft): Promise<AgentRecord> {
    await this.checkReferences(orgId, draft);
    const now = new Date().toISOString();
    const agent: AgentRecord = {
      id: newId('agt'), org_id: orgId, name: draft.name, description: draft.description ?? '',
      instructions: draft.instructions ?? '', model: draft.model ?? { provider: 'builtin', name: 'builtin' },
      knowledge_base_ids: draft.knowledge_base_ids ?? [], tools: draft.tools ?? ['search_knowledge'],
      safety: draft.safety ?? { ...DEFAULT_SAFETY, blocked_phrases: [...DEFAULT_SAFETY.blocked_phrases] },
      published: false, public_key: null, created_at: now, updated_at: now,
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
    return agent;
  }

  /** Deletes the agent; throws AppError `not_found`. */
  async delete(orgId: string, agentId: string): Promise<void> {
    const deleted = await this.store.agents.delete(orgId, agentId);
    this.directory?.invalidate(orgId, agentId);
    if (!deleted) throw new AppError('not_found', 'No such agent.');
  }

  private async checkReferences(orgId: string, draft: Partial<AgentDraft>): Promise<void> {
    if (draft.model) this.models.get(draft.model.provider);
    for (const kbId of draft.knowledge_base_ids ?? []) {
      if (!(await this.store.knowledge.getBase(orgId, kbId))) {
        throw new AppError('validation_failed', `Knowledge base ${kbId} does not exist.`, { errors: [{ path: 'knowledge_base_ids', message: `unknown knowledge base ${kbId}` }] });
      }
    }
  }
}
