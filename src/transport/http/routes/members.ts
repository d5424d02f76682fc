import type { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import { EmptyQuery, ErrorSchema, listOf, MemberCreateSchema, MemberPatchSchema, MemberSchema, PageQuery } from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { memberView, pageView } from '../views.js';
import { personOf } from './auth.js';

/**
 * `/v1/members`: the people of the organization in X-Org-Id and their roles. Any member may list them;
 * owners and admins change them (only an owner touches the owner role); the last owner stays (409 last_owner).
 * A person only: an API key gets 403 forbidden.
 */
export function memberRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'GET', path: '/v1/members', tag: 'Members', access: ACCESS.personMember, query: PageQuery,
      summary: 'List the organization\'s members with their e-mail and role, newest person first',
      responses: [{ status: 200, description: 'Members', schema: listOf(MemberSchema, 'MemberList') }],
      async handle({ principal, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.members.list(principal.orgId, query), memberView) };
      },
    },
    {
      method: 'POST', path: '/v1/members', tag: 'Members', access: ACCESS.personManage, body: MemberCreateSchema, query: EmptyQuery,
      summary: 'Add an existing person (by e-mail) with a role; only an owner may add an owner',
      responses: [
        { status: 201, description: 'The new member', schema: MemberSchema },
        { status: 404, description: 'No person has this e-mail', schema: ErrorSchema },
        { status: 409, description: 'already_member', schema: ErrorSchema },
      ],
      async handle({ principal, body }: { principal: Parameters<typeof personOf>[0]; body: z.infer<typeof MemberCreateSchema> }) {
        const actor = personOf(principal);
        return { kind: 'json', status: 201, body: memberView(await s.members.add(actor, actor.orgId, body.email, body.role)) };
      },
    },
    {
      method: 'PATCH', path: '/v1/members/{user_id}', tag: 'Members', access: ACCESS.personManage, body: MemberPatchSchema, query: EmptyQuery,
      summary: 'Change a member\'s role; only an owner may grant or take away owner; the last owner cannot be demoted',
      responses: [
        { status: 200, description: 'The member', schema: MemberSchema },
        { status: 404, description: 'Not a member', schema: ErrorSchema },
        { status: 409, description: 'last_owner: the organization\'s only owner', schema: ErrorSchema },
      ],
      async handle({ principal, params, body }: { principal: Parameters<typeof personOf>[0]; params: Record<string, string>; body: z.infer<typeof MemberPatchSchema> }) {
        const actor = personOf(principal);
        return { kind: 'json', status: 200, body: memberView(await s.members.setRole(actor, actor.orgId, params.user_id!, body.role)) };
      },
    },
    {
      method: 'DELETE', path: '/v1/members/{user_id}', tag: 'Members', access: ACCESS.personManage, query: EmptyQuery,
      summary: 'Remove a member; only an owner may remove an owner; the last owner cannot be removed',
      responses: [
        { status: 204, description: 'Removed' },
        { status: 404, description: 'Not a member', schema: ErrorSchema },
        { status: 409, description: 'last_owner: the organization\'s only owner', schema: ErrorSchema },
      ],
      async handle({ principal, params }) {
        const actor = personOf(principal);
        await s.members.remove(actor, actor.orgId, params.user_id!);
        return { kind: 'empty', status: 204 };
      },
    },
  ];
}
