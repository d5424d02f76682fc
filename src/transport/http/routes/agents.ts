import type { z } from 'zod';
import { AppError } from '../../../errors/app-error.js';
import { newId } from '../../../ids/ids.js';
import { DEFAULT_SAFETY } from '../../../moderation/safety-check.js';
import type { AgentRecord } from '../../../store/ports.js';
import { AgentCreateSchema, AgentPatchSchema, AgentSchema, EmptyQuery, ErrorSchema, listOf, PageQuery } from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { agentView, pageView } from '../views.js';

const notFound = () => new AppError('not_found', 'No such agent.');

/** Checks that the model provider is configured and every knowledge base belongs to the org. */
async function checkReferences(s: Services, orgId: string, body: { model?: { provider: string } | undefined; knowledge_base_ids?: string[] | undefined }): Promise<void> {
  if (body.model) s.models.get(body.model.provider);
  for (const kbId of body.knowledge_base_ids ?? []) {
    if (!(await s.store.knowledge.getBase(orgId, kbId))) {
      throw new AppError('validation_failed', `Knowledge base ${kbId} does not exist.`, { errors: [{ path: 'knowledge_base_ids', message: `unknown knowledge base ${kbId}` }] });
    }
  }
}

/** `/v1/agents` routes (API.md "Agents"). */
export function agentRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'GET', path: '/v1/agents', tag: 'Agents', summary: 'List agents', auth: 'api_key', query: PageQuery,
      responses: [{ status: 200, description: 'Agents, newest first', schema: listOf(AgentSchema, 'AgentList') }],
      async handle({ principal, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.store.agents.list(principal.orgId, query), agentView) };
      },
    },
    {
      method: 'POST', path: '/v1/agents', tag: 'Agents', summary: 'Create an agent', auth: 'api_key', body: AgentCreateSchema, query: EmptyQuery,
      responses: [{ status: 201, description: 'The agent', schema: AgentSchema }, { status: 400, description: 'Invalid', schema: ErrorSchema }],
      async handle({ principal, body }: { principal: { orgId: string }; body: z.infer<typeof AgentCreateSchema> }) {
        await checkReferences(s, principal.orgId, body);
        const now = new Date().toISOString();
        const agent: AgentRecord = {
          id: newId('agt'), org_id: principal.orgId, name: body.name, description: body.description ?? '',
          instructions: body.instructions ?? '', model: body.model ?? { provider: 'builtin', name: 'builtin' },
          knowledge_base_ids: body.knowledge_base_ids ?? [], tools: body.tools ?? ['search_knowledge'],
          safety: body.safety ?? { ...DEFAULT_SAFETY, blocked_phrases: [...DEFAULT_SAFETY.blocked_phrases] },
          published: false, public_key: null, created_at: now, updated_at: now,
        };
        await s.store.agents.create(agent);
        return { kind: 'json', status: 201, body: agentView(agent) };
      },
    },
    {
      method: 'GET', path: '/v1/agents/{agent_id}', tag: 'Agents', summary: 'Get an agent', auth: 'api_key', query: EmptyQuery,
      responses: [{ status: 200, description: 'The agent', schema: AgentSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        const agent = await s.store.agents.get(principal.orgId, params.agent_id!);
        if (!agent) throw notFound();
        return { kind: 'json', status: 200, body: agentView(agent) };
      },
    },
    {
      method: 'PATCH', path: '/v1/agents/{agent_id}', tag: 'Agents', summary: 'Update an agent', auth: 'api_key', body: AgentPatchSchema, query: EmptyQuery,
      responses: [{ status: 200, description: 'The updated agent', schema: AgentSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params, body }: { principal: { orgId: string }; params: Record<string, string>; body: z.infer<typeof AgentPatchSchema> }) {
        await checkReferences(s, principal.orgId, body);
        const patch = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
        const agent = await s.store.agents.update(principal.orgId, params.agent_id!, patch, new Date().toISOString());
        if (!agent) throw notFound();
        return { kind: 'json', status: 200, body: agentView(agent) };
      },
    },
    {
      method: 'DELETE', path: '/v1/agents/{agent_id}', tag: 'Agents', summary: 'Delete an agent', auth: 'api_key', query: EmptyQuery,
      responses: [{ status: 204, description: 'Deleted' }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        if (!(await s.store.agents.delete(principal.orgId, params.agent_id!))) throw notFound();
        return { kind: 'empty', status: 204 };
      },
    },
  ];
}
