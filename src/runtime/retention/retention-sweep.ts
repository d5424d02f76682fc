import { AppError } from '../../errors/app-error.js';
import type { Logger } from '../../log/logger.js';
import type { Store } from '../../store/ports.js';

/** Options of {@link RetentionSweep}. */
export interface RetentionSweepOptions {
  store: Pick<Store, 'organizations' | 'conversations'>;
  /** Erases one conversation where it is owned (ConversationControl.erase); throws AppError `not_found` when it is gone already. */
  erase: (orgId: string, conversationId: string) => Promise<void>;
  /** PARLEY_RETENTION_DAYS: the retention of organizations that set none; undefined keeps their conversations. */
  defaultDays: number | undefined;
  logger: Logger;
  /** How often the sweep runs, ms (default 1 hour); the first run is `firstRunMs` after start (default 1 minute). */
  intervalMs?: number;
  firstRunMs?: number;
  /** Conversations read per batch (default 50); the event loop gets a turn between batches. */
  batch?: number;
  /** Current time, ms (default Date.now). */
  now?: () => number;
}

const DAY_MS = 86_400_000;

/**
 * Retention (API.md "Conversations and handoff": `retention_days`): conversations with no activity for
 * their organization's `retention_days` (or PARLEY_RETENTION_DAYS when it sets none) are erased, exactly as
 * `DELETE /v1/conversations/{id}` erases one (each with its `conversation.deleted` event), on the process
 * that owns it. The sweep runs every `intervalMs`, organization by organization, in batches of `batch`
 * conversations: each erasure is one write of its own (on the SQLite writer thread by default), and the
 * event loop gets a turn between batches, so a large backlog never stalls chat. One sweep at a time per
 * process; several processes may sweep at once (an erasure that finds the conversation gone skips it).
 */
export class RetentionSweep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly opts: RetentionSweepOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Starts the periodic sweep (timers do not keep the process alive). */
  start(): void {
    const every = this.opts.intervalMs ?? 3_600_000;
    this.timer = setTimeout(() => {
      void this.sweep();
      this.timer = setInterval(() => { void this.sweep(); }, every);
      this.timer.unref();
    }, this.opts.firstRunMs ?? 60_000);
    this.timer.unref();
  }

  /** Stops the timer and waits for a sweep in progress to finish its current erasure. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.timer);
    await this.running?.catch(() => {});
  }

  /**
   * One sweep now (or joins the one running): how many conversations it erased. Never rejects: a
   * failure is logged and the sweep goes on with the next conversation or organization.
   */
  sweep(): Promise<number> {
    this.running ??= this.run().finally(() => { this.running = undefined; });
    return this.running;
  }

  private async run(): Promise<number> {
    let erased = 0;
    let settings;
    try {
      settings = await this.opts.store.organizations.retentionSettings();
    } catch (err) {
      this.opts.logger.error({ err }, 'retention sweep: could not read the organizations');
      return 0;
    }
    for (const { org_id: orgId, retention_days: own } of settings) {
      const days = own ?? this.opts.defaultDays;
      if (days === undefined || this.stopped) continue;
      const before = new Date(this.now() - days * DAY_MS).toISOString();
      erased += await this.sweepOrg(orgId, before);
    }
    if (erased > 0) this.opts.logger.info({ conversations: erased }, 'retention sweep: conversations past their organization\'s retention erased');
    return erased;
  }

  private async sweepOrg(orgId: string, before: string): Promise<number> {
    const batch = this.opts.batch ?? 50;
    let erased = 0;
    for (;;) {
      if (this.stopped) return erased;
      let ids: string[];
      try {
        ids = await this.opts.store.conversations.idleSince(orgId, before, batch);
      } catch (err) {
        this.opts.logger.error({ err, org_id: orgId }, 'retention sweep: could not list idle conversations');
        return erased;
      }
      let progress = 0;
      for (const id of ids) {
        if (this.stopped) return erased;
        try {
          await this.opts.erase(orgId, id);
          erased++;
          progress++;
        } catch (err) {
          if (err instanceof AppError && err.code === 'not_found') { progress++; continue; }
          this.opts.logger.error({ err, org_id: orgId, conversation_id: id }, 'retention sweep: could not erase a conversation');
        }
      }
      // A short batch was the last; a batch where nothing could be erased would come back the same: stop.
      if (ids.length < batch || progress === 0) return erased;
      await new Promise((r) => setImmediate(r));
    }
  }
}
