/**
 * A lock shared by the browser tabs of one origin, kept in localStorage, for browsers without the Web
 * Locks API (it exists only in secure contexts: a dashboard served over plain HTTP from a host other
 * than localhost has no `navigator.locks`). This file uses no DOM types, so Node tests can run it on
 * an in-memory storage.
 *
 * localStorage has no compare-and-set, so a tab takes a free lock by writing its own id, waiting a
 * moment (`settleMs`) and reading it back: when two tabs write at nearly the same time, the later write
 * wins and the earlier tab sees someone else's id and waits. A holder that died (a closed tab) is
 * overtaken once its entry expires (`ttlMs`), so the work done under the lock must finish well within
 * that time.
 */

/** The part of the Web Storage interface the lock needs. */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Timing of the lock, ms, and its clock (replaceable in tests). */
export interface StorageLockOptions {
  /** How long an entry holds the lock unless released: the longest the guarded work may take. */
  ttlMs: number;
  /**
   * Wait between writing the entry and reading it back, ms (default 250). It must outlast the time a
   * write of one tab takes to reach the others: Chromium copies localStorage between renderer processes
   * asynchronously, and with 50 ms two tabs opened at once on a loaded machine (the dashboard's browser
   * test amid the whole suite, 2026-11-27) both read back their own entry and refreshed with the same
   * token, which ends the session (refresh token reuse).
   */
  settleMs: number;
  /** Wait between attempts while another tab holds the lock (plus up to half of it at random). */
  pollMs: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

interface Entry {
  id: string;
  expires: number;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A named lock across tabs in `storage` (see the file's comment). */
export class StorageLock {
  private readonly opts: StorageLockOptions;

  constructor(private readonly storage: KeyValueStorage, private readonly key: string, opts: Partial<StorageLockOptions> = {}) {
    this.opts = { ttlMs: 20_000, settleMs: 250, pollMs: 100, now: () => Date.now(), sleep: realSleep, ...opts };
  }

  /** Runs `fn` while holding the lock, and releases it afterwards (also when `fn` throws). */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const id = `${this.opts.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    for (;;) {
      const held = this.read();
      if (held === undefined || held.expires <= this.opts.now()) {
        this.storage.setItem(this.key, JSON.stringify({ id, expires: this.opts.now() + this.opts.ttlMs } satisfies Entry));
        await this.opts.sleep(this.opts.settleMs);
        if (this.read()?.id === id) break;
      }
      await this.opts.sleep(this.opts.pollMs * (1 + Math.random() / 2));
    }
    try {
      return await fn();
    } finally {
      if (this.read()?.id === id) this.storage.removeItem(this.key);
    }
  }

  private read(): Entry | undefined {
    const raw = this.storage.getItem(this.key);
    if (raw === null) return undefined;
    try {
      const e = JSON.parse(raw) as Partial<Entry>;
      return typeof e.id === 'string' && typeof e.expires === 'number' ? { id: e.id, expires: e.expires } : undefined;
    } catch {
      return undefined;
    }
  }
}
