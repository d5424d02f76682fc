import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';
import type { OrganizationRecord } from '../../store/records.js';

/** An organization with its retention (API.md "Conversations and handoff": PATCH /v1/organization). */
export interface OrganizationSettings {
  organization: OrganizationRecord;
  /** The organization's own setting, days; null: `defaultRetentionDays` applies. */
  retentionDays: number | null;
  /** The server's default (PARLEY_RETENTION_DAYS), days; null keeps everything. */
  defaultRetentionDays: number | null;
}

/** The caller's organization and its settings (`GET` and `PATCH /v1/organization`). */
export class OrganizationService {
  constructor(private readonly store: Pick<Store, 'organizations'>, private readonly defaultRetentionDays: number | undefined) {}

  /** The organization `orgId` with its retention. Throws AppError `not_found` when it does not exist. */
  async get(orgId: string): Promise<OrganizationSettings> {
    const [organization, retentionDays] = await Promise.all([this.store.organizations.get(orgId), this.store.organizations.retentionDays(orgId)]);
    if (organization === undefined || retentionDays === undefined) throw new AppError('not_found', 'No such organization.');
    return { organization, retentionDays, defaultRetentionDays: this.defaultRetentionDays ?? null };
  }

  /**
   * Sets the organization's `retention_days` (1..36500), or clears it (null: back to the server's default).
   * The retention sweep applies it within its period (src/runtime/retention/retention-sweep.ts). Throws
   * AppError `not_found` when the organization does not exist.
   */
  async setRetentionDays(orgId: string, days: number | null): Promise<OrganizationSettings> {
    if (!await this.store.organizations.setRetentionDays(orgId, days)) throw new AppError('not_found', 'No such organization.');
    return this.get(orgId);
  }
}
