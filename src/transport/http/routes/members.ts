import type { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import { EmptyQuery, ErrorSchema, InvitationSchema, listOf, MemberCreateSchema, MemberPatchSchema, MemberSchema, PageQuery } from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { invitationView, memberView, pageView } from '../views.js';
import { personOf } from './auth.js';

/**
 * `/v1/members`: the people of the organization in X-Org-Id and their roles. Any member may list them;
 * owners and admins invite people (they join by accepting: `/v1/me/invitations/{id}/accept`) and change
 * or remove members (only an owner touches the owner role); the last owner stays (409 last_owner).
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
      summary: 'Invite a person by e-mail with a role: they become a member when they accept (the same answer whether or not the e-mail has an account); inviting again replaces the pending invitation; only an owner may invite an owner',
      responses: [
        { status: 202, description: 'The invitation, pending for 7 days', schema: InvitationSchema },
        { status: 409, description: 'already_member: a member of this organization has this e-mail', schema: ErrorSchema },
      ],
      async handle({ principal, body }: { principal: Parameters<typeof personOf>[0]; body: z.infer<typeof MemberCreateSchema> }) {
        const actor = personOf(principal);
        return { kind: 'json', status: 202, body: invitationView(await s.members.invite(actor, actor.orgId, actor.userId, body.email, body.role)) };
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
