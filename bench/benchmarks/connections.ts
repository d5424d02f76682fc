/**
 * connections: memory per idle SSE connection. N chat streams are opened and held idle (the mock's
 * first token is 10 minutes away, so after the `conversation` event nothing moves); the server's RSS
 * (VmRSS) grows by (RSS with N open - RSS before) / N per connection. Then the client closes them all
 * and RSS is read again. The direct row is the mock itself holding N idle upstream streams.
 */
import { startLoadGen } from '../lib/loadgen-client.js';
import type { ConnectionsOpenResult } from '../lib/loadgen.js';
import { CpuMeter, openFds, rssBytes, tcpCounters, tcpDelta } from '../lib/proc.js';
import { startBaselineServer, startMock, startParleyServer, type Owned } from '../lib/processes.js';
import type { BenchOutcome, Row } from '../lib/report.js';
import type { TargetSpec } from '../lib/raw-client.js';
import { baselineTarget, directTarget, parleyTarget, sleep, stopAll, parleyOptions, type Ctx, type TargetName } from './common.js';

interface ConnResult {
  open: ConnectionsOpenResult;
  rssBefore: number;
  rssOpen: number;
  rssAfterClose: number;
  fdsOpen: number;
  stillOpenAfterSettle: number;
  closedByServer: number;
  bytesPerConnection: number;
  cpuOpenS: number;
  tcp: ReturnType<typeof tcpCounters>;
}

export async function connections(ctx: Ctx): Promise<BenchOutcome> {
  const smoke = ctx.smoke;
  const n = smoke ? 500 : 10_000;
  const rate = smoke ? 1000 : 2000;
  const settleMs = smoke ? 500 : 3000;
  const config = {
    connections: n, open_rate_per_s: rate, settle_ms: settleMs,
    mock: { ttft_ms: 600_000, deltas: 4, interval_ms: 20 },
    idle_point: 'Parley/baseline: the `conversation` event arrived; direct: the mock sent its 200 head',
    rss: 'VmRSS of the server process from /proc/<pid>/status',
  };
  const mock = await startMock(ctx.root, { ttftMs: 600_000, deltas: 4, intervalMs: 20 });
  const loadgen = await startLoadGen(ctx.root);
  const results: Partial<Record<TargetName, ConnResult>> = {};
  const notes: string[] = [];
  let parley: Awaited<ReturnType<typeof startParleyServer>> | undefined;
  let baseline: Awaited<ReturnType<typeof startBaselineServer>> | undefined;

  const measure = async (t: TargetName, server: Owned, spec: TargetSpec, warm: TargetSpec) => {
    ctx.log(`connections: ${t}: warm-up, then ${n} idle streams at ${rate}/s`);
    await loadgen.run({ type: 'warmup', target: warm, count: smoke ? 50 : 300, concurrency: 16, sse: true, timeoutMs: 20_000 });
    await sleep(smoke ? 300 : 1000);
    const rssBefore = rssBytes(server.pid);
    const meter = new CpuMeter({ server: server.pid }).start();
    const tcp0 = tcpCounters();
    const open = await loadgen.run<ConnectionsOpenResult>({ type: 'connections-open', target: spec, count: n, rate, timeoutMs: smoke ? 20_000 : 90_000 });
    await sleep(settleMs);
    const cpuOpenS = meter.stop().cpuS.server ?? Number.NaN;
    const tcp = tcpDelta(tcp0, tcpCounters());
    const rssOpen = rssBytes(server.pid);
    const fdsOpen = openFds(server.pid);
    const check = await loadgen.run<{ open: number; closedByServer: number }>({ type: 'connections-check' });
    await loadgen.run({ type: 'connections-close' });
    await sleep(settleMs);
    const rssAfterClose = rssBytes(server.pid);
    const r: ConnResult = {
      open, rssBefore, rssOpen, rssAfterClose, fdsOpen, tcp, stillOpenAfterSettle: check.open, closedByServer: check.closedByServer, cpuOpenS,
      bytesPerConnection: open.idle > 0 ? (rssOpen - rssBefore) / open.idle : Number.NaN,
    };
    ctx.log(`  ${open.idle}/${n} idle (${open.errors.server} server failures, ${open.errors.client} load-generator limits ${JSON.stringify(open.errors.byCode)}), RSS ${(rssBefore / 2 ** 20).toFixed(1)} -> ${(rssOpen / 2 ** 20).toFixed(1)} MiB (${(r.bytesPerConnection / 1024).toFixed(2)} KiB/conn), after close ${(rssAfterClose / 2 ** 20).toFixed(1)} MiB`);
    results[t] = r;
  };

  try {
    // Direct first: the mock's own cost of an idle streaming response.
    await measure('direct', mock, directTarget(mock, 'bench', true), directTarget(mock, 'mock-slow-0', true));

    parley = await startParleyServer(ctx.root, parleyOptions(ctx, mock.url, { PARLEY_MODEL_TIMEOUT_MS: '900000' }));
    const agent = await parley.createAgent('bench');
    const warmAgent = await parley.createAgent('mock-slow-0');
    await measure('parley', parley, parleyTarget(parley, agent, true), parleyTarget(parley, warmAgent, true));
    await parley.stop(3000); // its turns keep waiting upstream after the clients left; free the mock

    baseline = await startBaselineServer(ctx.root, mock.url);
    await measure('baseline', baseline, baselineTarget(baseline, 'bench', true), baselineTarget(baseline, 'mock-slow-0', true));
    await baseline.stop(3000);

    const v = (t: TargetName, f: (r: ConnResult) => number) => (results[t] ? f(results[t]!) : null);
    const row = (metric: string, unit: string, better: Row['better'], f: (r: ConnResult) => number): Row => ({
      bench: 'connections', metric, unit, better, parley: v('parley', f), baseline: v('baseline', f), direct: v('direct', f),
    });
    const kib = row(`RSS per idle SSE connection (${n})`, 'KiB', 'lower', (r) => r.bytesPerConnection / 1024);
    kib.target = { text: '<= 4 KiB per idle connection', pass: kib.parley === null ? null : kib.parley <= 4 };
    const rows: Row[] = [
      kib,
      row('idle streams established', 'count', 'higher', (r) => r.open.idle),
      row('server failures while opening', 'count', 'lower', (r) => r.open.errors.server),
      row('load-generator limit errors (EMFILE, EADDRNOTAVAIL)', 'count', 'none', (r) => r.open.errors.client),
      row('streams still open after settle', 'count', 'higher', (r) => r.stillOpenAfterSettle),
      row('RSS before', 'MiB', 'lower', (r) => r.rssBefore / 2 ** 20),
      row(`RSS with ${n} open`, 'MiB', 'lower', (r) => r.rssOpen / 2 ** 20),
      row('RSS after the clients closed', 'MiB', 'lower', (r) => r.rssAfterClose / 2 ** 20),
      row('server open fds with all open', 'count', 'none', (r) => r.fdsOpen),
      row('server CPU to accept them', 'ms per conn', 'lower', (r) => (r.open.idle > 0 ? (r.cpuOpenS / r.open.idle) * 1000 : Number.NaN)),
      row('time to open them all', 's', 'lower', (r) => r.open.wallS),
      row('kernel SYN retransmits while opening', 'count', 'none', (r) => r.tcp.synRetrans),
    ];
    notes.push('Parley keeps a turn running after its client leaves (by design), so its "after close" RSS still holds the pending turns.');
    notes.push('Parley and the baseline both hold one upstream socket per pending stream (about 2 fds per visitor): see "server open fds".');
    for (const t of ['direct', 'parley', 'baseline'] as const) {
      const e = results[t]?.open.errors;
      if (e && e.total > 0) notes.push(`${t}: open errors ${JSON.stringify(e.byCode)}${e.sample ? ` e.g. ${e.sample}` : ''}`);
    }
    return {
      name: 'connections', rows, config, results, notes,
      charts: [
        { title: `RSS per idle SSE connection (${n} connections)`, unit: 'KiB', groups: [{ label: 'per connection', values: { parley: kib.parley, baseline: kib.baseline, direct: kib.direct } }] },
        {
          title: 'Server RSS', unit: 'MiB',
          groups: [
            { label: 'before', values: { parley: v('parley', (r) => r.rssBefore / 2 ** 20), baseline: v('baseline', (r) => r.rssBefore / 2 ** 20), direct: v('direct', (r) => r.rssBefore / 2 ** 20) } },
            { label: `${n} open`, values: { parley: v('parley', (r) => r.rssOpen / 2 ** 20), baseline: v('baseline', (r) => r.rssOpen / 2 ** 20), direct: v('direct', (r) => r.rssOpen / 2 ** 20) } },
            { label: 'after close', values: { parley: v('parley', (r) => r.rssAfterClose / 2 ** 20), baseline: v('baseline', (r) => r.rssAfterClose / 2 ** 20), direct: v('direct', (r) => r.rssAfterClose / 2 ** 20) } },
          ],
        },
      ],
    };
  } finally {
    await loadgen.run({ type: 'connections-close' }).catch(() => undefined);
    await stopAll([loadgen, parley, baseline, mock]);
  }
}
