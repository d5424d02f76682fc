import { parsePromText } from '../../bench/lib/prom-text.js';

/**
 * `url`/metrics as text, with the `process` label every series carries taken out (src/metrics/metrics.ts
 * `labelProcess`: a process's index in a PARLEY_PROCESSES group, else its id), so that a test of one
 * process can match its series as `name{labels} value` or `name value`.
 */
export async function metricsText(url: string): Promise<string> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.replace(/\{process="[^"]*"\}/g, '').replace(/,process="[^"]*"/g, '').replace(/\{process="[^"]*",/g, '{');
}

/**
 * The samples of metric `name` on `url`/metrics that have exactly one label, `label`, keyed by that
 * label's value: e.g. `labelled(url, 'parley_ingest_workers', 'state')` -> `{threads: 2, warm: 0}`.
 * Parsed with the bench's own Prometheus text parser (bench/lib/prom-text.ts).
 */
export async function labelled(url: string, name: string, label: string): Promise<Record<string, number>> {
  const pattern = new RegExp(`^${name}\\{${label}="([^"]*)"\\}$`);
  const out: Record<string, number> = {};
  for (const [key, value] of parsePromText(await metricsText(url))) {
    const match = pattern.exec(key)?.[1];
    if (match !== undefined) out[match] = value;
  }
  return out;
}
