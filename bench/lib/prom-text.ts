/**
 * Reading a server's `GET /metrics` (Prometheus text exposition) for the event-loop delay rows. Pure;
 * unit-tested in test/unit/bench-prom-text.test.ts.
 *
 * Convention (prom-client's, which Parley uses, and bench/lib/loop-monitor.ts for the baseline and the
 * floor): `nodejs_eventloop_lag_p99_seconds` etc. come from `perf_hooks.monitorEventLoopDelay`, cover the
 * time since the previous scrape, and the histogram is reset on every scrape. monitorEventLoopDelay
 * records the time between two runs of its own timer, so an idle loop reads about the timer's period
 * (the resolution); the delay is the reading minus the resolution.
 *
 * Preferred when present: a summary `parley_event_loop_delay_seconds{quantile="0.99"}` (and
 * `{quantile="1"}` for the max), taken as the delay beyond the sampling period since the previous scrape.
 */

/**
 * Parses Prometheus text exposition into `name{labels}` -> value (comments and blank lines skipped,
 * labels kept verbatim in the key, timestamps ignored). Unparseable lines are skipped.
 */
export function parsePromText(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const close = line.lastIndexOf('}');
    const split = close >= 0 ? close + 1 : line.indexOf(' ');
    if (split <= 0) continue;
    const key = line.slice(0, split).trim();
    const value = Number(line.slice(split).trim().split(/\s+/)[0]);
    if (key !== '' && !Number.isNaN(value)) out.set(key, value);
  }
  return out;
}

/** The gauge bench servers (and, we ask, Parley) publish with the monitor's resolution, seconds. */
export const RESOLUTION_METRICS = ['parley_eventloop_resolution_seconds', 'bench_eventloop_resolution_seconds'] as const;
/** prom-client's default `eventLoopMonitoringPrecision` (ms), used when no resolution gauge is published. */
export const PROM_CLIENT_DEFAULT_RESOLUTION_MS = 10;

/** The event-loop delay read from one scrape. All values in ms. */
export interface LoopDelay {
  /** p99 of the delay beyond the sampling period (raw p99 minus the resolution, floored at 0), ms. */
  p99Ms: number;
  /** Max of the delay beyond the sampling period, ms. */
  maxMs: number;
  /** The raw monitorEventLoopDelay p99 (includes the timer period), ms. */
  rawP99Ms: number;
  /** The monitor's resolution used for the subtraction, ms. */
  resolutionMs: number;
  /** Where the value came from: Parley's own summary, a published resolution gauge, or prom-client's default resolution (checked against the minimum). */
  resolutionSource: 'parley summary' | 'gauge' | 'prom-client default';
}

/**
 * The event-loop delay from a `/metrics` text scraped at the end of a window (the previous scrape, at
 * the start of the window, reset the histogram). Returns a reason string instead when the metrics are
 * absent, or when no resolution gauge is published and the minimum reading contradicts prom-client's
 * default 10 ms resolution (min < half of it: the server must be sampling faster, and subtracting 10 ms
 * would understate the delay).
 */
export function loopDelayFromMetrics(text: string): LoopDelay | string {
  const m = parsePromText(text);
  const own = m.get('parley_event_loop_delay_seconds{quantile="0.99"}');
  if (own !== undefined) {
    const ownMax = m.get('parley_event_loop_delay_seconds{quantile="1"}');
    const res = m.get('parley_eventloop_resolution_seconds');
    return {
      p99Ms: own * 1000, maxMs: ownMax === undefined ? Number.NaN : ownMax * 1000, rawP99Ms: own * 1000,
      resolutionMs: res === undefined ? Number.NaN : res * 1000, resolutionSource: 'parley summary',
    };
  }
  const p99 = m.get('nodejs_eventloop_lag_p99_seconds');
  const max = m.get('nodejs_eventloop_lag_max_seconds');
  const min = m.get('nodejs_eventloop_lag_min_seconds');
  if (p99 === undefined || max === undefined) return 'no nodejs_eventloop_lag_p99_seconds / _max_seconds in /metrics';
  let resolutionMs: number;
  let source: LoopDelay['resolutionSource'];
  const gauge = RESOLUTION_METRICS.map((n) => m.get(n)).find((v) => v !== undefined);
  if (gauge !== undefined) {
    resolutionMs = gauge * 1000;
    source = 'gauge';
  } else {
    resolutionMs = PROM_CLIENT_DEFAULT_RESOLUTION_MS;
    source = 'prom-client default';
    if (min !== undefined && min * 1000 < resolutionMs / 2) {
      return `no resolution gauge and min reading ${(min * 1000).toFixed(3)} ms < half of prom-client's default ${resolutionMs} ms: resolution unknown`;
    }
  }
  return {
    p99Ms: Math.max(0, p99 * 1000 - resolutionMs),
    maxMs: Math.max(0, max * 1000 - resolutionMs),
    rawP99Ms: p99 * 1000,
    resolutionMs,
    resolutionSource: source,
  };
}

/** The labels of a `name{labels}` key of {@link parsePromText}, as a map (values unescaped); {} without labels. */
export function labelsOf(key: string): Record<string, string> {
  const out: Record<string, string> = {};
  // A metric name holds no `="`: every match is a label.
  for (const m of key.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) out[m[1]!] = m[2]!.replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
  return out;
}

/**
 * The samples of metric `name` in a /metrics text, summed by the value of label `by` (samples without it
 * are left out), counting only those whose labels include every pair of `where`. For a PARLEY_PROCESSES
 * group (each series labelled `process`): `sumBy(text, 'parley_turns_total', 'process', {outcome:
 * 'succeeded'})` -> `{"0": 812, "1": 790}`.
 */
export function sumBy(text: string, name: string, by: string, where: Record<string, string> = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of parsePromText(text)) {
    if (!key.startsWith(`${name}{`)) continue; // (a sample without labels has no `by` label)
    const labels = labelsOf(key);
    const v = labels[by];
    if (v === undefined) continue;
    if (!Object.entries(where).every(([k, w]) => labels[k] === w)) continue;
    out[v] = (out[v] ?? 0) + value;
  }
  return out;
}
