import type { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import { EmptyQuery, ErrorSchema, OrganizationPatchSchema, OrganizationSchema } from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { organizationView } from '../views.js';

/**
 * The caller's organization and its settings (API.md "Conversations and handoff": `PATCH /v1/organization`
 * `{"retention_days": int | null}`; `GET` added so the dashboard can show the setting).
 */
export function organizationRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'GET', path: '/v1/organization', tag: 'Organization', access: ACCESS.member, query: EmptyQuery,
      summary: 'The caller\'s organization, with its retention_days and the server\'s default',
      responses: [{ status: 200, description: 'The organization', schema: OrganizationSchema }],
      async handle({ principal }) {
        return { kind: 'json', status: 200, body: organizationView(await s.organization.get(principal.orgId)) };
      },
    },
    {
      method: 'PATCH', path: '/v1/organization', tag: 'Organization', access: ACCESS.manage, body: OrganizationPatchSchema, query: EmptyQuery,
      summary: 'Set retention_days: conversations with no activity for that long are erased (each with conversation.deleted) by a sweep that runs hourly; null: the server\'s default',
      responses: [{ status: 200, description: 'The organization', schema: OrganizationSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, body }: { principal: { orgId: string }; body: z.infer<typeof OrganizationPatchSchema> }) {
        return { kind: 'json', status: 200, body: organizationView(await s.organization.setRetentionDays(principal.orgId, body.retention_days)) };
      },
    },
  ];
}
