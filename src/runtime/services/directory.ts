import { newSigningKey } from '../../auth/access-tokens.js';
import { emailProblem, normalizeEmail, passwordProblem } from '../../auth/identity.js';
import type { PasswordHasher } from '../../auth/passwords.js';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import type { Store } from '../../store/ports.js';
import type { OrganizationRecord, UserRecord } from '../../store/records.js';

const invalid = (path: string, message: string) =>
  new AppError('validation_failed', `${path} ${message}.`, { errors: [{ path, message }] });

/**
 * Organizations, persons and passwords as the server's operator manages them (the `parley` command line
 * and the first-start bootstrap); the HTTP API has no endpoint for these.
 */
export class DirectoryService {
  constructor(private readonly store: Store, private readonly passwords: PasswordHasher, private readonly now: () => number = Date.now) {}

  /** A new organization. Throws AppError `validation_failed` for an empty or longer than 200 characters name. */
  async createOrganization(name: string): Promise<OrganizationRecord> {
    const trimmed = name.trim();
    if (trimmed.length === 0 || trimmed.length > 200) throw invalid('name', 'must be 1 to 200 characters');
    const org: OrganizationRecord = { id: newId('org'), name: trimmed, created_at: this.iso() };
    await this.store.organizations.create(org);
    return org;
  }

  /** The organization `id`; throws AppError `not_found`. */
  async organization(id: string): Promise<OrganizationRecord> {
    const org = await this.store.organizations.get(id);
    if (org === undefined) throw new AppError('not_found', `No organization ${id}.`);
    return org;
  }

  /**
   * A new person with e-mail `email` (normalized: trimmed, lower-case) and, when given, a password (8..128
   * characters, hashed with argon2id). Throws AppError `validation_failed` (bad e-mail or password, or the
   * e-mail is taken).
   */
  async createUser(email: string, password?: string): Promise<UserRecord> {
    const normalized = normalizeEmail(email);
    const emailIssue = emailProblem(normalized);
    if (emailIssue) throw invalid('email', emailIssue);
    if (password !== undefined) {
      const issue = passwordProblem(password);
      if (issue) throw invalid('password', issue);
    }
    const now = this.iso();
    const user: UserRecord = {
      id: newId('usr'), email: normalized, password_hash: password === undefined ? null : await this.passwords.hash(password),
      access_valid_after: null, created_at: now, updated_at: now,
    };
    if (!(await this.store.users.create(user))) throw invalid('email', 'is already taken by another person');
    return user;
  }

  /** The person with e-mail `email`; throws AppError `not_found`. */
  async userByEmail(email: string): Promise<UserRecord> {
    const user = await this.store.users.findByEmail(normalizeEmail(email));
    if (user === undefined) throw new AppError('not_found', `No person has the e-mail ${normalizeEmail(email)}.`);
    return user;
  }

  /**
   * Sets the password of the person with e-mail `email` and ends all their sessions (every refresh-token
   * family is revoked; access tokens already issued run out within 15 minutes). Returns how many sessions
   * ended. Throws AppError `validation_failed` (password policy) or `not_found`.
   */
  async setPassword(email: string, password: string): Promise<{ user: UserRecord; sessionsEnded: number }> {
    const issue = passwordProblem(password);
    if (issue) throw invalid('password', issue);
    const user = await this.userByEmail(email);
    await this.store.users.setPasswordHash(user.id, await this.passwords.hash(password), this.iso());
    const sessionsEnded = await this.store.refreshTokens.revokeAllOf(user.id, 'password', this.iso());
    return { user, sessionsEnded };
  }

  /** Deletes the person with e-mail `email` with their memberships and sessions. Throws AppError `not_found` or `last_owner`. */
  async deleteUser(email: string): Promise<UserRecord> {
    const user = await this.userByEmail(email);
    const outcome = await this.store.users.delete(user.id);
    if (outcome === 'last_owner') throw new AppError('last_owner', `${user.email} is the only owner of an organization; make someone else an owner first.`);
    if (outcome === 'not_found') throw new AppError('not_found', `No person has the e-mail ${user.email}.`);
    return user;
  }

  /**
   * Retires the active token signing key and makes a new one. Tokens the old key signed stay valid until
   * they expire (at most 15 minutes); servers pick the new key up at their next sign-in or refresh.
   */
  async rotateSigningKey(): Promise<{ kid: string; retired: string[] }> {
    const key = await newSigningKey(this.iso());
    const retired = await this.store.signingKeys.rotate(key, this.iso());
    return { kid: key.kid, retired };
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }
}
