import { normalizeEmail } from '../../auth/identity.js';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import type { Store } from '../../store/ports.js';
import type { InvitationRecord, MemberRecord, Page, PageRequest, PendingInvitation, UserOrganization } from '../../store/records.js';
import type { Role } from '../../vocabulary/role.js';

/** How long an invitation can be accepted, ms (7 days). */
export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

/** Most pending invitations `GET /v1/me` lists (the newest). */
export const MAX_LISTED_INVITATIONS = 50;

/**
 * Who changes the members: a person with their role (from the request's principal), or `system` (the
 * command line on the server, which may do anything).
 */
export type MemberActor = { role: Role } | 'system';

const ownersOnly = () => new AppError('forbidden', 'Only an owner can grant, change or take away the owner role.');
const lastOwner = () => new AppError('last_owner', 'An organization keeps at least one owner; make someone else an owner first.');

const noInvitation = () => new AppError('not_found', 'No such invitation for you: it may have expired, been answered, or been replaced by a newer one.');
const goneUser = () => new AppError('invalid_token', 'The person this token was issued to no longer exists.');

/**
 * Members of an organization and their roles, and invitations (API.md "Auth endpoints"). A person joins
 * an organization only by accepting an invitation (`invite`, then `acceptInvitation`), so nobody is put
 * in an organization without their consent, and inviting answers the same whether or not the e-mail has
 * an account; only the server's command line adds a member directly (`add`). Rules of `add`: the person
 * must already exist (404 otherwise); only
 * an owner (or the system) may make someone an owner or change or remove an owner (403 `forbidden` for an
 * admin); the last owner can be neither removed nor demoted (409 `last_owner`, enforced by a conditional
 * write in the store, so two concurrent changes cannot both pass).
 */
export class MemberService {
  constructor(private readonly store: Store, private readonly now: () => number = Date.now) {}

  list(orgId: string, page: PageRequest): Promise<Page<MemberRecord>> {
    return this.store.memberships.list(orgId, page);
  }

  /**
   * Invites `email` to `orgId` as `role`: a `pending` invitation that its invitee accepts or declines
   * (`GET /v1/me` lists it) within {@link INVITATION_TTL_MS}; inviting the same e-mail again replaces
   * the pending one. The answer does not depend on whether the e-mail has an account. Throws AppError
   * `forbidden` (an admin inviting an owner), `already_member` (409: a member of `orgId` has this e-mail).
   */
  async invite(actor: MemberActor, orgId: string, invitedBy: string | null, email: string, role: Role): Promise<InvitationRecord> {
    if (role === 'owner' && !isOwner(actor)) throw ownersOnly();
    const now = this.now();
    const invitation: InvitationRecord = {
      id: newId('inv'), org_id: orgId, email: normalizeEmail(email), role, status: 'pending', invited_by: invitedBy,
      created_at: iso(now), expires_at: iso(now + INVITATION_TTL_MS), responded_at: null,
    };
    if (await this.store.invitations.create(invitation) === 'already_member') {
      throw new AppError('already_member', 'A member of this organization has this e-mail; change their role instead.');
    }
    return invitation;
  }

  /** The pending invitations of the person `userId` (by their e-mail), newest first, at most {@link MAX_LISTED_INVITATIONS}. */
  async invitationsFor(userId: string): Promise<PendingInvitation[]> {
    const user = await this.store.users.get(userId);
    if (user === undefined) return [];
    return this.store.invitations.pendingFor(user.email, iso(this.now()), MAX_LISTED_INVITATIONS);
  }

  /**
   * The person `userId` accepts invitation `invitationId` (one of their e-mail, pending, not expired) and
   * becomes a member of its organization with its role (a member already keeps their role). Returns the
   * organization with their role there. Throws AppError `not_found` (no such pending invitation for them),
   * `invalid_token` (401: the person no longer exists).
   */
  async acceptInvitation(userId: string, invitationId: string): Promise<UserOrganization> {
    const user = await this.store.users.get(userId);
    if (user === undefined) throw goneUser();
    const outcome = await this.store.invitations.accept(invitationId, user.email, userId, iso(this.now()));
    if (outcome.status === 'not_found') throw noInvitation();
    return outcome.organization;
  }

  /**
   * The person `userId` declines invitation `invitationId`. Throws AppError `not_found` (no such pending
   * invitation for them), `invalid_token` (401: the person no longer exists).
   */
  async declineInvitation(userId: string, invitationId: string): Promise<void> {
    const user = await this.store.users.get(userId);
    if (user === undefined) throw goneUser();
    if (!(await this.store.invitations.decline(invitationId, user.email, iso(this.now())))) throw noInvitation();
  }

  /**
   * The person `userId` leaves `orgId`. Throws AppError `not_found` (not a member: also for an
   * organization that does not exist), `last_owner` (409: the organization's only owner).
   */
  async leave(userId: string, orgId: string): Promise<void> {
    const outcome = await this.store.memberships.remove(orgId, userId);
    if (outcome === 'not_found') throw new AppError('not_found', 'You are not a member of this organization.');
    if (outcome === 'last_owner') throw new AppError('last_owner', 'You are this organization\'s only owner; make someone else an owner before you leave.');
  }

  /**
   * Adds the person with e-mail `email` to `orgId` as `role` at once, without an invitation: for the
   * server's command line (`members add`), the operator of the server. Throws AppError `not_found` (no
   * person with this e-mail), `already_member` (409), `forbidden` (an admin adding an owner).
   */
  async add(actor: MemberActor, orgId: string, email: string, role: Role): Promise<MemberRecord> {
    if (role === 'owner' && !isOwner(actor)) throw ownersOnly();
    const user = await this.store.users.findByEmail(normalizeEmail(email));
    if (user === undefined) throw new AppError('not_found', 'No person has this e-mail; they must have an account first.');
    const created_at = new Date(this.now()).toISOString();
    if (!(await this.store.memberships.add({ org_id: orgId, user_id: user.id, role, created_at }))) {
      throw new AppError('already_member', 'This person is already a member; change their role instead.');
    }
    return { org_id: orgId, user_id: user.id, role, created_at, email: user.email };
  }

  /**
   * Changes the role of member `userId`. Throws AppError `not_found` (not a member), `forbidden` (an admin
   * touching the owner role), `last_owner` (409: demoting the only owner).
   */
  async setRole(actor: MemberActor, orgId: string, userId: string, role: Role): Promise<MemberRecord> {
    const member = await this.find(orgId, userId);
    if ((member.role === 'owner' || role === 'owner') && !isOwner(actor)) throw ownersOnly();
    const outcome = await this.store.memberships.setRole(orgId, userId, role);
    if (outcome === 'not_found') throw new AppError('not_found', 'No such member.');
    if (outcome === 'last_owner') throw lastOwner();
    return { ...member, role };
  }

  /**
   * Removes member `userId`. Throws AppError `not_found`, `forbidden` (an admin removing an owner),
   * `last_owner` (409: the only owner).
   */
  async remove(actor: MemberActor, orgId: string, userId: string): Promise<void> {
    const member = await this.find(orgId, userId);
    if (member.role === 'owner' && !isOwner(actor)) throw ownersOnly();
    const outcome = await this.store.memberships.remove(orgId, userId);
    if (outcome === 'not_found') throw new AppError('not_found', 'No such member.');
    if (outcome === 'last_owner') throw lastOwner();
  }

  /** Member `userId` of `orgId`; throws AppError `not_found`. */
  async find(orgId: string, userId: string): Promise<MemberRecord> {
    const member = await this.store.memberships.get(orgId, userId);
    if (member === undefined) throw new AppError('not_found', 'No such member.');
    return member;
  }
}

const isOwner = (actor: MemberActor) => actor === 'system' || actor.role === 'owner';

const iso = (ms: number) => new Date(ms).toISOString();
