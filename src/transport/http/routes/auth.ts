import type { z } from 'zod';
import { AppError } from '../../../errors/app-error.js';
import { ACCESS, type PersonPrincipal, type Principal } from '../../../runtime/services/access.js';
import { EmptyQuery, ErrorSchema, InvitationAnswerSchema, LoginSchema, LogoutSchema, MeSchema, RefreshSchema, SessionSchema, SocketTicketSchema } from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { meView, sessionView } from '../views.js';

/** Token responses must not be cached (RFC 6749 section 5.1). */
export const NO_STORE = { 'Cache-Control': 'no-store' } as const;

/** The principal of a person-only route (the access rule guarantees it); AppError `forbidden` otherwise. */
export function personOf(principal: Principal): PersonPrincipal {
  if (principal.kind !== 'person') throw new AppError('forbidden', 'Only a signed-in person can do this.');
  return principal;
}

/** The signed-in person of a route with `ACCESS.self`; AppError `forbidden` otherwise. */
function userOf(userId: string | undefined): string {
  if (userId === undefined) throw new AppError('forbidden', 'Only a signed-in person can do this.');
  return userId;
}

/**
 * Person sign-in (SPEC.md 5.4-5.6, API.md "Auth endpoints"), `GET /v1/me`, and what a person does about
 * their own memberships: answer invitations, leave an organization.
 */
export function authRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'POST', path: '/v1/auth/login', tag: 'Auth', access: ACCESS.public, body: LoginSchema, query: EmptyQuery,
      summary: 'Sign in with e-mail and password: a 900 s access token and a single-use refresh token',
      responses: [
        { status: 200, description: 'Signed in', schema: SessionSchema },
        { status: 401, description: 'invalid_credentials: unknown e-mail or wrong password (one error for both)', schema: ErrorSchema },
        { status: 429, description: 'rate_limited: too many failed sign-ins from this address, on this account or in all, or the account is past its ceiling and this address failed on it lately (see Retry-After)', schema: ErrorSchema },
        { status: 503, description: 'overloaded: too many sign-ins being checked at once (see Retry-After)', schema: ErrorSchema },
      ],
      async handle({ body, req }: { body: z.infer<typeof LoginSchema>; req: { remoteAddress: string } }) {
        const session = await s.sessions.login(body.email, body.password, req.remoteAddress);
        return { kind: 'json', status: 200, body: sessionView(session), headers: NO_STORE };
      },
    },
    {
      method: 'POST', path: '/v1/auth/refresh', tag: 'Auth', access: ACCESS.public, body: RefreshSchema, query: EmptyQuery,
      summary: 'Exchange a refresh token for a new pair; the token used is spent, and spending it twice ends the session (RFC 9700 4.14.2)',
      responses: [
        { status: 200, description: 'A new access token and a new refresh token', schema: SessionSchema },
        { status: 401, description: 'invalid_refresh_token: unknown, expired, spent (the session is then ended) or of an ended session', schema: ErrorSchema },
      ],
      async handle({ body }: { body: z.infer<typeof RefreshSchema> }) {
        return { kind: 'json', status: 200, body: sessionView(await s.sessions.refresh(body.refresh_token)), headers: NO_STORE };
      },
    },
    {
      method: 'POST', path: '/v1/auth/logout', tag: 'Auth', access: ACCESS.public, body: LogoutSchema, query: EmptyQuery,
      summary: 'Sign out: end the session of this refresh token (also for an unknown or spent token, RFC 7009 2.2)',
      responses: [{ status: 204, description: 'The session is ended' }],
      async handle({ body }: { body: z.infer<typeof LogoutSchema> }) {
        await s.sessions.logout(body.refresh_token);
        return { kind: 'empty', status: 204 };
      },
    },
    {
      method: 'POST', path: '/v1/auth/ws-ticket', tag: 'Auth', access: ACCESS.personMember, query: EmptyQuery,
      summary: 'A single-use WebSocket ticket (wst_..., 60 s) for the person and the organization of X-Org-Id, to pass as ?token= instead of the access token',
      responses: [{ status: 201, description: 'The ticket', schema: SocketTicketSchema }],
      async handle({ principal }) {
        const t = await s.sessions.issueTicket(personOf(principal));
        return { kind: 'json', status: 201, body: { ticket: t.ticket, expires_in: t.expiresIn }, headers: NO_STORE };
      },
    },
    {
      method: 'GET', path: '/v1/me', tag: 'Auth', access: ACCESS.self, query: EmptyQuery,
      summary: 'The signed-in person, their organizations with their role in each, and their pending invitations (no X-Org-Id needed)',
      responses: [{ status: 200, description: 'The person', schema: MeSchema }],
      async handle({ userId }) {
        const me = await s.sessions.me(userOf(userId));
        return { kind: 'json', status: 200, body: meView(me, await s.members.invitationsFor(me.user.id)) };
      },
    },
    {
      method: 'POST', path: '/v1/me/invitations/{invitation_id}/accept', tag: 'Auth', access: ACCESS.self, query: EmptyQuery,
      summary: 'Accept an invitation of your e-mail: you become a member of its organization with its role (no X-Org-Id needed)',
      responses: [
        { status: 200, description: 'Accepted: the organization with your role there', schema: InvitationAnswerSchema },
        { status: 404, description: 'not_found: no pending invitation with this id for your e-mail (expired, answered, replaced, or another person\'s)', schema: ErrorSchema },
      ],
      async handle({ userId, params }) {
        const organization = await s.members.acceptInvitation(userOf(userId), params.invitation_id!);
        return { kind: 'json', status: 200, body: { id: params.invitation_id!, status: 'accepted', organization } };
      },
    },
    {
      method: 'POST', path: '/v1/me/invitations/{invitation_id}/decline', tag: 'Auth', access: ACCESS.self, query: EmptyQuery,
      summary: 'Decline an invitation of your e-mail (no X-Org-Id needed)',
      responses: [
        { status: 200, description: 'Declined', schema: InvitationAnswerSchema },
        { status: 404, description: 'not_found: no pending invitation with this id for your e-mail', schema: ErrorSchema },
      ],
      async handle({ userId, params }) {
        await s.members.declineInvitation(userOf(userId), params.invitation_id!);
        return { kind: 'json', status: 200, body: { id: params.invitation_id!, status: 'declined' } };
      },
    },
    {
      method: 'DELETE', path: '/v1/me/organizations/{org_id}', tag: 'Auth', access: ACCESS.self, query: EmptyQuery,
      summary: 'Leave an organization (no X-Org-Id needed); its last owner cannot leave',
      responses: [
        { status: 204, description: 'You are no longer a member' },
        { status: 404, description: 'not_found: you are not a member of this organization', schema: ErrorSchema },
        { status: 409, description: 'last_owner: you are its only owner; make someone else an owner first', schema: ErrorSchema },
      ],
      async handle({ userId, params }) {
        await s.members.leave(userOf(userId), params.org_id!);
        return { kind: 'empty', status: 204 };
      },
    },
  ];
}
