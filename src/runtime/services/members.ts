import { normalizeEmail } from '../../auth/identity.js';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';
import type { MemberRecord, Page, PageRequest } from '../../store/records.js';
import type { Role } from '../../vocabulary/role.js';

/**
 * Who changes the members: a person with their role (from the request's principal), or `system` (the
 * command line on the server, which may do anything).
 */
export type MemberActor = { role: Role } | 'system';

const ownersOnly = () => new AppError('forbidden', 'Only an owner can grant, change or take away the owner role.');
const lastOwner = () => new AppError('last_owner', 'An organization keeps at least one owner; make someone else an owner first.');

/**
 * Members of an organization and their roles. Rules: the person must already exist (404 otherwise); only
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
   * Adds the person with e-mail `email` to `orgId` as `role`. Throws AppError `not_found` (no person with
   * this e-mail), `already_member` (409), `forbidden` (an admin adding an owner).
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
