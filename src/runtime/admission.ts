import { AppError } from '../errors/app-error.js';

/** Limits of admission control (API.md "Errors": 503 `overloaded` with `Retry-After`). */
export interface AdmissionLimits {
  /** Turns that may be in set-up at once (accepted, model not called yet). */
  maxInSetup: number;
  /** Requests that may wait for a set-up slot; one more is refused at once. */
  maxWaiting: number;
  /** Longest wait for a set-up slot, ms; a request still waiting then is refused. */
  maxWaitMs: number;
  /** Event-loop lag (ms) above which new turns are refused at once, so admitted ones keep flowing. */
  maxLagMs: number;
  /** `Retry-After` of a refusal, seconds. */
  retryAfterSeconds: number;
}

/** Where the admission decision reads the event loop's current lag, ms (a LoopLagMonitor in production). */
export interface LagSource {
  readonly lagMs: number;
}

/** Releases an admitted set-up slot; idempotent. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  refuse: (err: AppError) => void;
  timer: NodeJS.Timeout;
}

/**
 * Admission control for new turns: a bounded number of turns in set-up and a bounded, time-limited wait
 * queue in front of it, plus load shedding when the event loop lags. Past any bound the request is
 * refused with AppError `overloaded` (503, `Retry-After`), before any work is done for it, so a refusal
 * costs microseconds and the admitted turns keep their latency (the pattern of concurrency limiters such
 * as Netflix's concurrency-limits and Envoy's adaptive concurrency, with fixed limits).
 */
export class AdmissionControl {
  private inSetup = 0;
  private readonly waiting: Waiter[] = [];
  private refusedCount = 0;

  constructor(private readonly limits: AdmissionLimits, private readonly lag: LagSource) {}

  /** Turns in set-up now. */
  get active(): number {
    return this.inSetup;
  }

  /** Requests waiting for a slot now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Requests refused since start. */
  get refused(): number {
    return this.refusedCount;
  }

  /**
   * A set-up slot: synchronously when one is free (the hot path allocates no promise), else a promise
   * that resolves when one frees up. Throws (or rejects with) AppError `overloaded` when the event loop
   * lags more than `maxLagMs`, the wait queue is full, or no slot freed within `maxWaitMs`.
   */
  acquire(): Release | Promise<Release> {
    if (this.lag.lagMs > this.limits.maxLagMs) throw this.refusal(`the server is lagging ${Math.round(this.lag.lagMs)} ms`);
    if (this.inSetup < this.limits.maxInSetup && this.waiting.length === 0) return this.grant();
    if (this.waiting.length >= this.limits.maxWaiting) throw this.refusal('too many turns are waiting to start');
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        grant: resolve,
        refuse: reject,
        timer: setTimeout(() => {
          const i = this.waiting.indexOf(waiter);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(this.refusal('no turn slot freed in time'));
        }, this.limits.maxWaitMs),
      };
      this.waiting.push(waiter);
    });
  }

  private grant(): Release {
    this.inSetup++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inSetup--;
      const next = this.waiting.shift();
      if (next) {
        clearTimeout(next.timer);
        next.grant(this.grant());
      }
    };
  }

  private refusal(why: string): AppError {
    this.refusedCount++;
    return new AppError('overloaded', `The server is overloaded (${why}); retry after ${this.limits.retryAfterSeconds} s.`, {
      headers: { 'Retry-After': String(this.limits.retryAfterSeconds) },
    });
  }

  /** Refuses everything still waiting (shutdown). */
  close(): void {
    for (const w of this.waiting.splice(0)) {
      clearTimeout(w.timer);
      w.refuse(new AppError('shutting_down', 'The server is shutting down; retry on another instance.'));
    }
  }
}
