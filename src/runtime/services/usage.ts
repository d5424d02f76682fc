import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';
import type { UsageDay, UsageThreshold } from '../../store/records.js';

/** Longest range GET /v1/usage answers, days. */
export const MAX_USAGE_RANGE_DAYS = 366;

/**
 * Token usage of an organization (API.md "Usage"): totals per agent and UTC day, counted with every
 * agent reply, and the thresholds whose crossing fires `usage.threshold` once per period.
 */
export class UsageService {
  constructor(private readonly store: Store, private readonly now: () => number = Date.now) {}

  /**
   * Totals per agent and day for `from`..`to` (`YYYY-MM-DD`, inclusive; default: the last 30 days up
   * to today, UTC). Throws AppError `validation_failed` when `from` is after `to` or the range is longer
   * than MAX_USAGE_RANGE_DAYS.
   */
  async daily(orgId: string, q: { from?: string | undefined; to?: string | undefined; agent_id?: string | undefined }): Promise<{ from: string; to: string; data: UsageDay[] }> {
    const today = new Date(this.now()).toISOString().slice(0, 10);
    const to = q.to ?? today;
    const from = q.from ?? new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
    const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000;
    if (days < 0) throw new AppError('validation_failed', '`from` is after `to`.', { errors: [{ path: 'from', message: 'after to' }] });
    if (days >= MAX_USAGE_RANGE_DAYS) {
      throw new AppError('validation_failed', `Ask for at most ${MAX_USAGE_RANGE_DAYS} days at once.`, { errors: [{ path: 'from', message: 'range too long' }] });
    }
    return { from, to, data: await this.store.usage.daily(orgId, from, to, q.agent_id) };
  }

  thresholds(orgId: string): Promise<UsageThreshold[]> {
    return this.store.usage.thresholds(orgId);
  }

  /** Replaces the thresholds (duplicates collapse); a threshold already fired this period does not fire again. */
  async setThresholds(orgId: string, thresholds: UsageThreshold[]): Promise<UsageThreshold[]> {
    await this.store.usage.setThresholds(orgId, thresholds, new Date(this.now()).toISOString());
    return this.store.usage.thresholds(orgId);
  }
}
