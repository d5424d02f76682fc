/** Scraping a server's `/metrics` over a window while a load runs (the streams benchmarks). */

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const now = () => performance.now();

/**
 * GET `path` on 127.0.0.1:`port` at fromMs (the answer is dropped: it resets the server's histogram)
 * and at toMs from now; resolves with the second answer's text and the time between the two.
 */
export async function scrapeWindow(port: number, m: { path: string; fromMs: number; toMs: number }): Promise<{ metricsText?: string; metricsWindowMs?: number; metricsError?: string }> {
  const url = `http://127.0.0.1:${port}${m.path}`;
  const t0 = now();
  try {
    await sleep(m.fromMs);
    const first = await fetch(url);
    await first.text();
    const a = now();
    await sleep(Math.max(0, m.toMs - (a - t0)));
    const second = await fetch(url);
    const text = await second.text();
    if (!second.ok) return { metricsError: `GET ${m.path}: HTTP ${second.status}` };
    return { metricsText: text, metricsWindowMs: now() - a };
  } catch (err) {
    return { metricsError: `GET ${m.path}: ${err instanceof Error ? err.message : String(err)}` };
  }
}
