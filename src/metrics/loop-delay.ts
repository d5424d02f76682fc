import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** Default of {@link LoopDelaySampler}'s `idleIntervalMs`: the period while the event loop is idle, ms. */
export const IDLE_INTERVAL_MS = 250;
/** An event loop busy for less than this share of a period counts as idle (0..1). */
export const IDLE_UTILIZATION = 0.05;
/** How long the event loop must stay idle before the sampler slows down, ms. */
export const IDLE_AFTER_MS = 1000;

/**
 * Event-loop delay, measured with one timer: each tick records how late it fired (ms). Two readings come
 * from the same samples:
 * - `lagMs`: the median lateness of the last `windowTicks` ticks, for load shedding (src/runtime/
 *   admission.ts). It rises when the loop is behind on most ticks (sustained overload), not for one long
 *   task such as a start-up step or a GC pause, after which the following ticks are on time again.
 * - `takeWindow()`: the quantiles of every lateness since the previous call, for /metrics. (Node's
 *   perf_hooks.monitorEventLoopDelay drops the first delay after a reset or enable, so a stall right
 *   after a scrape would go unseen; this sampler does not.)
 *
 * The period adapts to load. While the event loop works, the timer runs every `intervalMs` (10 ms). When
 * the loop was busy under {@link IDLE_UTILIZATION} (5%) of a one-second span ({@link IDLE_AFTER_MS};
 * Node's event-loop utilization), the period becomes `idleIntervalMs` (250 ms). The first tick that finds
 * the loop busier than that goes back to `intervalMs`. An idle server then wakes 4 times a second for this
 * timer instead of 100: its CPU while idle went from 14 to 4 ms per second (`npm run bench -- connections`,
 * row `server CPU while idle at start`, 2026-11-27). Lateness is
 * measured the same way at either period, so a stall in an idle server is still seen, at most one idle
 * period late.
 */
export class LoopDelaySampler {
  private readonly recent: number[];
  private readonly sorted: number[];
  private i = 0;
  private median = 0;
  private expected: number;
  private period: number;
  private spanMs = 0;
  private spanBusyMs = 0;
  private window: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastUtilization: EventLoopUtilization = performance.eventLoopUtilization();
  private readonly onTimer = (): void => {
    const now = performance.now();
    const current = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(current, this.lastUtilization).utilization;
    this.lastUtilization = current;
    this.schedule(this.tick(now, busy));
  };

  /**
   * @param intervalMs timer period while the loop works, ms (default 10).
   * @param windowTicks ticks `lagMs` looks back over (default 10).
   * @param start performance.now() of the first period's start; when given (tests), no timer runs and the
   *   caller feeds {@link tick} by hand.
   * @param maxWindow most samples kept between two `takeWindow` calls (older ones are dropped first).
   * @param idleIntervalMs timer period while the loop is idle, ms (default {@link IDLE_INTERVAL_MS}); equal
   *   to `intervalMs`, the period never changes.
   * @throws RangeError when `intervalMs` or `idleIntervalMs` is not a positive number, or `idleIntervalMs`
   *   is below `intervalMs`.
   */
  constructor(
    private readonly intervalMs = 10,
    windowTicks = 10,
    start?: number,
    private readonly maxWindow = 100_000,
    private readonly idleIntervalMs = IDLE_INTERVAL_MS,
  ) {
    if (!(intervalMs > 0)) throw new RangeError(`intervalMs must be positive, got ${intervalMs}`);
    if (!(idleIntervalMs >= intervalMs)) throw new RangeError(`idleIntervalMs must be at least intervalMs (${intervalMs}), got ${idleIntervalMs}`);
    this.recent = new Array<number>(windowTicks).fill(0);
    this.sorted = new Array<number>(windowTicks).fill(0);
    this.period = intervalMs;
    this.expected = (start ?? performance.now()) + intervalMs;
    if (start === undefined) this.schedule(intervalMs);
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(this.onTimer, ms).unref();
  }

  /**
   * Feeds one timer firing at time `now` (ms, performance.now()), `busy` being the share of the time
   * since the previous tick that the event loop worked (0..1; default 1). Returns the period until the
   * next tick, ms: `idleIntervalMs` once the loop was busy under {@link IDLE_UTILIZATION} of a span of
   * {@link IDLE_AFTER_MS} (the mean over its ticks, weighted by their length), until a tick finds it
   * busier; else `intervalMs`. Exposed for tests.
   */
  tick(now: number, busy = 1): number {
    const late = Math.max(0, now - this.expected);
    const elapsed = this.period + late;
    if (this.period === this.intervalMs) {
      // Working pace: average the utilization over spans of IDLE_AFTER_MS, so one busy tick (a GC, a
      // scrape) does not keep an idle server at the fast pace.
      this.spanMs += elapsed;
      this.spanBusyMs += busy * elapsed;
      if (this.spanMs >= IDLE_AFTER_MS) {
        if (this.spanBusyMs < IDLE_UTILIZATION * this.spanMs) this.period = this.idleIntervalMs;
        this.spanMs = 0;
        this.spanBusyMs = 0;
      }
    } else if (busy >= IDLE_UTILIZATION) {
      this.period = this.intervalMs;
    }
    this.expected = now + this.period;
    const n = this.recent.length;
    this.recent[this.i] = late;
    this.i = (this.i + 1) % n;
    // Median of the last n ticks: an insertion sort of n (10) numbers into a kept array, no allocation.
    const s = this.sorted;
    for (let k = 0; k < n; k++) {
      const v = this.recent[k]!;
      let j = k - 1;
      while (j >= 0 && s[j]! > v) { s[j + 1] = s[j]!; j--; }
      s[j + 1] = v;
    }
    this.median = s[Math.floor(n / 2)]!;
    if (this.window.length >= this.maxWindow) this.window.shift();
    this.window.push(late);
    return this.period;
  }

  /** Median lateness of the recent ticks, ms. Computed at each tick: reading it costs nothing. */
  get lagMs(): number {
    return this.median;
  }

  /** Quantiles (ms) of the lateness samples since the previous call, and how many there were; then starts a new window. */
  takeWindow(): { count: number; p50: number; p90: number; p99: number; max: number } {
    const xs = this.window.sort((a, b) => a - b);
    this.window = [];
    const q = (p: number) => (xs.length === 0 ? 0 : xs[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!);
    return { count: xs.length, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: xs.length === 0 ? 0 : xs[xs.length - 1]! };
  }

  /** The timer period while the loop works, ms: the resolution of the delays under load. */
  get resolutionMs(): number {
    return this.intervalMs;
  }

  /** The current timer period, ms: `intervalMs`, or `idleIntervalMs` while the loop is idle. */
  get periodMs(): number {
    return this.period;
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
