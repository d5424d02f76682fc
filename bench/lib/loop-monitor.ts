/**
 * The event-loop delay monitor of the bench's own servers (baseline, floor), published like prom-client
 * does it (see bench/lib/prom-text.ts): `GET /metrics` answers the percentiles since the previous scrape
 * and resets the histogram.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Starts `perf_hooks.monitorEventLoopDelay` at `resolutionMs` (default 1 ms) and returns a function that
 * renders the Prometheus text for the time since its previous call (values in seconds, as prom-client
 * names them, plus `bench_eventloop_resolution_seconds`) and resets the histogram.
 */
export function startLoopMonitor(resolutionMs = 1): () => string {
  const h = monitorEventLoopDelay({ resolution: resolutionMs });
  h.enable();
  return () => {
    // An empty histogram (no sample since the reset) reports min as 2^63; publish zeros then.
    const s = (ns: number) => (h.count > 0 && Number.isFinite(ns) ? ns / 1e9 : 0);
    const lines = [
      ['nodejs_eventloop_lag_min_seconds', s(h.min)],
      ['nodejs_eventloop_lag_max_seconds', s(h.max)],
      ['nodejs_eventloop_lag_mean_seconds', s(h.mean)],
      ['nodejs_eventloop_lag_p50_seconds', s(h.percentile(50))],
      ['nodejs_eventloop_lag_p90_seconds', s(h.percentile(90))],
      ['nodejs_eventloop_lag_p99_seconds', s(h.percentile(99))],
      ['bench_eventloop_resolution_seconds', resolutionMs / 1000],
    ] as const;
    h.reset();
    return `${lines.map(([k, v]) => `# TYPE ${k} gauge\n${k} ${v}`).join('\n')}\n`;
  };
}
