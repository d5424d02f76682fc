/**
 * Event-loop delay, measured with one timer: every `intervalMs` it records how late it fired (ms). Two
 * readings come from the same samples:
 * - `lagMs`: the median lateness of the last `windowTicks` ticks, for load shedding (src/runtime/
 *   admission.ts). It rises when the loop is behind on most ticks (sustained overload), not for one long
 *   task such as a start-up step or a GC pause, after which the following ticks are on time again.
 * - `takeWindow()`: the quantiles of every lateness since the previous call, for /metrics. (Node's
 *   perf_hooks.monitorEventLoopDelay drops the first delay after a reset or enable, so a stall right
 *   after a scrape would go unseen; this sampler does not.)
 */
export class LoopDelaySampler {
  private readonly recent: number[];
  private i = 0;
  private median = 0;
  private expected: number;
  private window: number[] = [];
  private readonly timer: NodeJS.Timeout;

  /**
   * @param intervalMs timer period, ms (default 10).
   * @param windowTicks ticks `lagMs` looks back over (default 10).
   * @param start performance.now() of the first period's start (tests pass their own and call `tick`).
   * @param maxWindow most samples kept between two `takeWindow` calls (older ones are dropped first).
   */
  constructor(private readonly intervalMs = 10, windowTicks = 10, start = performance.now(), private readonly maxWindow = 100_000) {
    this.recent = new Array<number>(windowTicks).fill(0);
    this.expected = start + intervalMs;
    this.timer = setInterval(() => this.tick(performance.now()), intervalMs).unref();
  }

  /** Feeds one timer firing at time `now` (ms, performance.now()); exposed for tests. */
  tick(now: number): void {
    const late = Math.max(0, now - this.expected);
    this.expected = now + this.intervalMs;
    this.recent[this.i] = late;
    this.i = (this.i + 1) % this.recent.length;
    const sorted = [...this.recent].sort((a, b) => a - b);
    this.median = sorted[Math.floor(sorted.length / 2)]!;
    if (this.window.length >= this.maxWindow) this.window.shift();
    this.window.push(late);
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

  /** The timer period, ms. */
  get resolutionMs(): number {
    return this.intervalMs;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
