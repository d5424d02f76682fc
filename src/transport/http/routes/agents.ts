import type { z } from 'zod';
import { AgentCreateSchema, AgentPatchSchema, AgentSchema, AgentSummarySchema, EmptyQuery, ErrorSchema, listOf, ModelProviderListSchema, PageQuery, PublishedSchema } from '../schemas.js';
import { ACCESS } from '../../../runtime/services/access.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { agentSummaryView, agentView, pageView } from '../views.js';

/** `/v1/agents` routes (API.md "Agents"). */
export function agentRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'GET', path: '/v1/model-providers', tag: 'Agents', access: ACCESS.member, query: EmptyQuery,
      summary: 'The model providers configured on this server, which an agent\'s model.provider may name',
      responses: [{ status: 200, description: 'Providers, builtin first', schema: ModelProviderListSchema }],
      handle() {
        const data = s.agents.providers().map((id) => ({ id, default_model: id === 'builtin' ? 'builtin' : null }));
        return { kind: 'json', status: 200, body: { data } };
      },
    },
    {
      method: 'GET', path: '/v1/agents', tag: 'Agents', summary: 'List agents (summaries: GET /v1/agents/{agent_id} has the instructions, tools and safety settings)', access: ACCESS.member, query: PageQuery,
      responses: [{ status: 200, description: 'Agents, newest first', schema: listOf(AgentSummarySchema, 'AgentList') }],
      async handle({ principal, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.agents.list(principal.orgId, query), agentSummaryView) };
      },
    },
    {
      method: 'POST', path: '/v1/agents', tag: 'Agents', summary: 'Create an agent', access: ACCESS.manage, body: AgentCreateSchema, query: EmptyQuery,
      responses: [{ status: 201, description: 'The agent', schema: AgentSchema }, { status: 400, description: 'Invalid', schema: ErrorSchema }],
      async handle({ principal, body }: { principal: { orgId: string }; body: z.infer<typeof AgentCreateSchema> }) {
        const agent = await s.agents.create(principal.orgId, body);
        return { kind: 'json', status: 201, body: agentView(agent) };
      },
    },
    {
      method: 'GET', path: '/v1/agents/{agent_id}', tag: 'Agents', summary: 'Get an agent', access: ACCESS.member, query: EmptyQuery,
      responses: [{ status: 200, description: 'The agent', schema: AgentSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        const agent = await s.agents.get(principal.orgId, params.agent_id!);
        return { kind: 'json', status: 200, body: agentView(agent) };
      },
    },
    {
      method: 'PATCH', path: '/v1/agents/{agent_id}', tag: 'Agents', summary: 'Update an agent', access: ACCESS.manage, body: AgentPatchSchema, query: EmptyQuery,
      responses: [{ status: 200, description: 'The updated agent', schema: AgentSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params, body }: { principal: { orgId: string }; params: Record<string, string>; body: z.infer<typeof AgentPatchSchema> }) {
        const agent = await s.agents.update(principal.orgId, params.agent_id!, body);
        return { kind: 'json', status: 200, body: agentView(agent) };
      },
    },
    {
      method: 'POST', path: '/v1/agents/{agent_id}/publish', tag: 'Agents', access: ACCESS.manage, query: EmptyQuery,
      summary: 'Publish an agent: its public key (pk_...) grants chat with it, and nothing else, under /v1/public/agents/{public_key}/... (an agent already published keeps its key)',
      responses: [{ status: 200, description: 'The public key', schema: PublishedSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        const agent = await s.agents.publish(principal.orgId, params.agent_id!);
        return { kind: 'json', status: 200, body: { public_key: agent.public_key } };
      },
    },
    {
      method: 'POST', path: '/v1/agents/{agent_id}/unpublish', tag: 'Agents', access: ACCESS.manage, query: EmptyQuery,
      summary: 'Unpublish: the public key stops working at once (its sockets close with 4404), and so do, for good, the visitor tokens of the conversations started through it',
      responses: [{ status: 200, description: 'The agent, unpublished', schema: AgentSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: agentView(await s.agents.unpublish(principal.orgId, params.agent_id!)) };
      },
    },
    {
      method: 'DELETE', path: '/v1/agents/{agent_id}', tag: 'Agents', summary: 'Delete an agent', access: ACCESS.manage, query: EmptyQuery,
      responses: [{ status: 204, description: 'Deleted' }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        await s.agents.delete(principal.orgId, params.agent_id!);
        return { kind: 'empty', status: 204 };
      },
    },
  ];
}
