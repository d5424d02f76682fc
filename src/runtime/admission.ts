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
  /**
   * Event-loop lag (ms) that the adaptive limit on live turns steers to (see {@link AdmissionControl});
   * 0 or absent: no adaptive limit (only `maxLiveTurns` bounds live turns).
   */
  targetLagMs?: number;
  /**
   * Share of time (0..1) the event loop may be busy, measured over each {@link ADJUST_EVERY_MS} span
   * (Node's event-loop utilization), that the adaptive limit on live turns steers to; 0, absent or
   * >= 1: utilization is not used. It leads the lag: a loop busy 100% of the time has no slack left for a
   * burst of arrivals or refusals, and its lag grows only after that.
   */
  targetUtilization?: number;
  /** Most live turns at once, whatever the lag; also the adaptive limit's start value. Default: no bound. */
  maxLiveTurns?: number;
  /** The adaptive limit never goes below this many live turns. Default {@link DEFAULT_MIN_LIVE_TURNS} (or `maxLiveTurns` if lower). */
  minLiveTurns?: number;
}

/** Default {@link AdmissionLimits.minLiveTurns}: a lag caused by something else never shuts chat out. */
export const DEFAULT_MIN_LIVE_TURNS = 16;
/** How often the adaptive limit is adjusted, ms: the span over which the lag sampler takes its median. */
export const ADJUST_EVERY_MS = 100;
/** Multiplicative decrease of the adaptive limit: the live turns times this, while the loop is over a target. */
export const DECREASE_FACTOR = 0.9;
/**
 * After a cut, the next one waits this long, ms: the turns still live keep the loop busy until they end,
 * so cutting on every span would follow them down far below what the loop can carry.
 */
export const CUT_COOLDOWN_MS = 300;
/** Increase per adjustment while the limit binds and the loop has room: this share of the limit (at least 1 turn). */
export const INCREASE_SHARE = 0.1;
/**
 * Weight of the newest span in the smoothed utilization (an exponentially weighted moving average): one
 * busy span, such as a burst of new connections, does not cut the limit by itself.
 */
export const UTILIZATION_WEIGHT = 0.5;
/** At most one `refusing new turns` log line per this span, ms (the refusals in between are counted in it). */
export const REFUSAL_LOG_EVERY_MS = 10_000;

/** Where the admission decision reads the event loop's current lag, ms (a LoopDelaySampler in production). */
export interface LagSource {
  readonly lagMs: number;
}

/** Where the admission decision reads how many turns are live now (running or queued, not ended). */
export interface LiveSource {
  readonly live: number;
}

/** Receives the rate-limited summary of refusals (a pino logger's `warn` fits). */
export interface RefusalLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Releases an admitted set-up slot; idempotent. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  refuse: (err: AppError) => void;
  timer: NodeJS.Timeout;
}

/** Options of {@link AdmissionControl} besides its limits and lag source. */
export interface AdmissionOptions {
  /** Live turns now; without it the live-turn limits do not apply. */
  live?: LiveSource;
  /** Where the summary of refusals goes (one line per {@link REFUSAL_LOG_EVERY_MS} at most). */
  log?: RefusalLog;
  /** Clock, ms (tests); default performance.now. */
  now?: () => number;
  /**
   * The event loop's busy share (0..1) since the previous call (tests); default: from Node's
   * `performance.eventLoopUtilization()`.
   */
  utilization?: () => number;
}

/** `performance.eventLoopUtilization()` between calls: the busy share since the previous call (0 on the first). */
function loopUtilization(): () => number {
  let previous: ReturnType<typeof performance.eventLoopUtilization> | undefined;
  return () => {
    const current = performance.eventLoopUtilization();
    const share = previous === undefined ? 0 : performance.eventLoopUtilization(current, previous).utilization;
    previous = current;
    return share;
  };
}

/**
 * Admission control for new turns, in front of any work for them: past any of its bounds a request is
 * refused with AppError `overloaded` (503, `Retry-After`) at once, so a refusal costs microseconds and
 * the admitted turns keep their latency.
 *
 * - Set-up: at most `maxInSetup` turns between acceptance and the model call, and a wait queue of
 *   `maxWaiting` in front of it, each waiting at most `maxWaitMs`.
 * - Live turns: at most `limit` turns live at once (accepted and not yet ended). Set-up is short, but a
 *   live turn costs the event loop for as long as it streams, so this is the bound that keeps the loop
 *   from saturating. Without targets the limit is `maxLiveTurns`. With a target, the limit adapts to the
 *   event loop's load (AIMD, as TCP congestion control and Netflix's concurrency-limits do): every
 *   {@link ADJUST_EVERY_MS} ms (checked on arrivals, no timer), while the loop's utilization (smoothed,
 *   {@link UTILIZATION_WEIGHT}) is above `targetUtilization` or its lag above `targetLagMs`, the limit
 *   drops to {@link DECREASE_FACTOR} x the live turns (not below `minLiveTurns`), at most once per
 *   {@link CUT_COOLDOWN_MS}; while both are at or below target and the live turns reach 90% of the
 *   limit, it grows by {@link INCREASE_SHARE} of itself (at least 1), up to `maxLiveTurns`. It starts at
 *   `maxLiveTurns`, so an unloaded server never refuses for it. Measured on a 2-core machine at about
 *   twice its capacity (docs/configuration.md, "Admission control"): a utilization target of 85-90% kept
 *   the admitted turns' added first-token p99 at 52-99 ms instead of 270-300 ms, and refused 5-10% of
 *   the turns at capacity; the server's default leaves it off.
 * - Lag: while the event loop lags more than `maxLagMs`, every new turn is refused.
 */
export class AdmissionControl {
  private inSetup = 0;
  private readonly waiting: Waiter[] = [];
  private refusedCount = 0;
  private liveLimit: number;
  private lastAdjust = Number.NEGATIVE_INFINITY;
  private lastCut = Number.NEGATIVE_INFINITY;
  private readonly live: LiveSource | undefined;
  private readonly log: RefusalLog | undefined;
  private readonly now: () => number;
  private readonly targetLagMs: number;
  private readonly targetUtilization: number;
  /** Which signals steer the limit: a lag target is set; a utilization target in (0, 1) is set. */
  private readonly steerOnLag: boolean;
  private readonly steerOnBusy: boolean;
  private readonly utilization: () => number;
  private readonly maxLive: number;
  private readonly minLive: number;
  private lastLogAt = Number.NEGATIVE_INFINITY;
  private refusedSinceLog = 0;
  /** Smoothed busy share of the event loop (see UTILIZATION_WEIGHT). */
  private busy = 0;

  /**
   * @throws RangeError when `targetLagMs`, `targetUtilization`, `maxLiveTurns` or `minLiveTurns` is negative or not a number,
   *   or `minLiveTurns` > `maxLiveTurns`.
   */
  constructor(private readonly limits: AdmissionLimits, private readonly lag: LagSource, opts: AdmissionOptions = {}) {
    this.targetLagMs = limits.targetLagMs ?? 0;
    this.targetUtilization = limits.targetUtilization ?? 0;
    this.steerOnLag = this.targetLagMs > 0;
    this.steerOnBusy = this.targetUtilization > 0 && this.targetUtilization < 1;
    this.maxLive = limits.maxLiveTurns ?? Number.POSITIVE_INFINITY;
    this.minLive = limits.minLiveTurns ?? Math.min(DEFAULT_MIN_LIVE_TURNS, this.maxLive);
    for (const [name, v] of [['targetLagMs', this.targetLagMs], ['targetUtilization', this.targetUtilization], ['maxLiveTurns', this.maxLive], ['minLiveTurns', this.minLive]] as const) {
      if (!(v >= 0)) throw new RangeError(`${name} must be a number >= 0, got ${String(v)}`);
    }
    if (this.minLive > this.maxLive) throw new RangeError(`minLiveTurns (${this.minLive}) must not exceed maxLiveTurns (${this.maxLive})`);
    this.liveLimit = this.maxLive;
    this.live = opts.live;
    this.log = opts.log;
    this.now = opts.now ?? (() => performance.now());
    this.utilization = opts.utilization ?? loopUtilization();
  }

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

  /** The limit on live turns now (Infinity when there is none). */
  get limit(): number {
    return this.liveLimit;
  }

  /**
   * A set-up slot: synchronously when one is free (the hot path allocates no promise), else a promise
   * that resolves when one frees up. Throws (or rejects with) AppError `overloaded` when the event loop
   * lags more than `maxLagMs`, the live turns are at their limit, the wait queue is full, or no slot
   * freed within `maxWaitMs`.
   */
  acquire(): Release | Promise<Release> {
    const lagMs = this.lag.lagMs;
    if (lagMs > this.limits.maxLagMs) throw this.refusal(`the server is lagging ${Math.round(lagMs)} ms`);
    if (this.live !== undefined) {
      const live = this.live.live;
      if (this.steerOnLag || this.steerOnBusy) this.adjust(live, lagMs);
      if (live >= this.liveLimit) throw this.refusal(`${live} turns are live, its limit for now`);
    }
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

  /** One AIMD step of the live-turn limit, at most every ADJUST_EVERY_MS (see the class comment). */
  private adjust(live: number, lagMs: number): void {
    const now = this.now();
    if (now - this.lastAdjust < ADJUST_EVERY_MS) return;
    this.lastAdjust = now;
    this.busy += UTILIZATION_WEIGHT * (this.utilization() - this.busy);
    const over = (this.steerOnLag && lagMs > this.targetLagMs) || (this.steerOnBusy && this.busy > this.targetUtilization);
    if (over) {
      if (now - this.lastCut >= CUT_COOLDOWN_MS) {
        this.liveLimit = Math.max(this.minLive, Math.min(this.liveLimit, Math.floor(live * DECREASE_FACTOR)));
        this.lastCut = now;
      }
    } else if (live >= this.liveLimit * 0.9 && this.liveLimit < this.maxLive) {
      this.liveLimit = Math.min(this.maxLive, this.liveLimit + Math.max(1, Math.floor(this.liveLimit * INCREASE_SHARE)));
    }
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
    this.refusedSinceLog++;
    if (this.log !== undefined) {
      const now = this.now();
      if (now - this.lastLogAt >= REFUSAL_LOG_EVERY_MS) {
        // One line per span, not one per refusal: under overload a line each would add to the load.
        this.log.warn({ refused: this.refusedSinceLog, reason: why, live_limit: this.liveLimit, in_setup: this.inSetup, waiting: this.waiting.length },
          'refusing new turns: the server is overloaded');
        this.lastLogAt = now;
        this.refusedSinceLog = 0;
      }
    }
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
