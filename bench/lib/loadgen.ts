/**
 * The load generator: a child process of the runner (spawned with a raised open-files limit), driven
 * over IPC, one job at a time. It only talks to servers through raw sockets (raw-client.ts) and sends
 * back summaries (percentiles computed here), never raw samples. Every loop is bounded in count and time.
 */
import { buildTarget, Conn, ConnPool, isTypedRefusal, type Exchange, type ExchangeResult, type Target, type TargetSpec } from './raw-client.js';
import { cpuSeconds, hostBusySeconds, mainThreadCpuSeconds, tcpCounters, tcpDelta, waitForQuietHost, type QuietGate } from './proc.js';
import { scrapeWindow } from './scrape.js';
import { firstTokenSplit, timingOf } from './server-timing.js';
import { Samples, summarize, type Summary } from './stats.js';
import { pushCheck, pushClose, pushListen, pushRun, wsCheck, wsClose, wsOpen, wsStreams, type WsJob } from './ws-load.js';

export type Job =
  | { type: 'warmup'; target: TargetSpec; count: number; concurrency: number; sse: boolean; timeoutMs: number }
  | { type: 'sequential'; targets: TargetSpec[]; samples: number; deadlineMs: number; expectFirstMs: number }
  /**
   * Like `sequential`, but each response's body is kept and the server's own timing figures read from it
   * (bench/lib/server-timing.ts), to check them against this process's clock. Not a latency measurement:
   * decoding bodies costs this client time.
   */
  | { type: 'timing'; targets: TargetSpec[]; samples: number; deadlineMs: number; expectFirstMs: number }
  | {
      type: 'open-loop'; targets: TargetSpec[]; rounds: number; rate: number; durationMs: number; drainMs: number;
      expectFirstMs: number; stallTimeoutMs: number; pauseMs: number; cpuPids: Record<string, Record<string, number>>;
      /** Keep-alive connections opened (and idle) before each window, so no connect storm is measured. */
      prewarm: number;
      /**
       * Successful streams count towards `okInWindow` when they end by window end + this many ms
       * (overload's goodput: completions over the window, shifted by one nominal stream duration).
       */
      goodputGraceMs?: number;
      /** Before each window, wait (bounded) for a quiet host. */
      quiet?: QuietGate;
      /**
       * How a request picks its pre-opened connection: the last released (default) or a random idle one,
       * so requests spread over every process listening on one port (raw-client.ts ConnPool).
       */
      pick?: 'stack' | 'random';
    }
  | {
      type: 'closed-loop'; targets: TargetSpec[]; rounds: number; clients: number; durationMs: number; drainMs: number;
      expectFirstMs: number; stallTimeoutMs: number; pauseMs: number; cpuPids: Record<string, Record<string, number>>;
      /** Keep-alive connections opened before each window; every turn takes a random idle one (see `pick` above). */
      connections: number;
      /**
       * Client i starts at i x rampMs / clients, so that clients whose turns all last about as long do not
       * move in lockstep (50 requests at once, every stream duration); latencies of turns sent during the
       * ramp are not recorded (the window measures `clients` at once). Default 0.
       */
      rampMs?: number;
      quiet?: QuietGate;
    }
  | {
      type: 'streams'; target: TargetSpec; slots: number; durationMs: number; rampMs: number; intervalMs: number;
      expectFirstMs: number; stallMs: number; drainMs: number; stallTimeoutMs: number;
      /**
       * Scrape `GET <path>` on the target's port at start + fromMs (resets the server's event-loop
       * histogram) and at start + toMs (kept, returned as `metricsText`), while the streams run.
       */
      metrics?: { path: string; fromMs: number; toMs: number };
    }
  | { type: 'connections-open'; target: TargetSpec; count: number; rate: number; timeoutMs: number; idleOn?: 'marker' | 'token' }
  | { type: 'connections-check' }
  | { type: 'connections-close' }
  | { type: 'one-shot'; target: TargetSpec; connections: number; durationMs: number; timeoutMs: number }
  | WsJob;

/** Failures, split into the load generator's own limits and everything else (the server's). */
export interface Errors {
  total: number;
  server: number;
  client: number;
  byCode: Record<string, number>;
  /** One example response body of a failure, for diagnosis. */
  sample: string;
}

export interface SequentialResult { perTarget: Record<string, { ttft: Summary; conversation: Summary; ok: number; errors: Errors }>; cpuS: number; wallS: number }
/**
 * One target's `timing` outcome, ms: the client's TTFT (every successful turn, also of a target that
 * reports no timing, e.g. the mock called directly); the server's `first_token_ms` and `setup_ms`; per
 * turn, the split of bench/lib/server-timing.ts `firstTokenSplit` (model, parley, client minus server);
 * `negative`: turns whose client TTFT was below the server's first_token_ms (a clock that cannot be right);
 * `unreadable`: successful turns without a readable timing.
 */
export interface TimingTarget {
  ok: number; errors: Errors; unreadable: number; negative: number;
  clientTtft: Summary; serverFirstToken: Summary; serverSetup: Summary; model: Summary; parley: Summary; clientMinusServer: Summary;
  /** Client TTFT minus the server's model share, per turn: everything but the model, as the client sees it. */
  clientMinusModel: Summary;
}
export interface TimingResult { perTarget: Record<string, TimingTarget>; wallS: number }
/** One target's open-loop outcome. Times in ms, CPU in seconds. */
export interface OpenLoopTarget {
  /** TTFT of the successful streams, from each request's scheduled time. */
  ttft: Summary; conversation: Summary; requests: number; ok: number;
  /** Failures other than typed refusals (see isTypedRefusal). */
  errors: Errors;
  /** Typed refusals (HTTP 503 overloaded with Retry-After) and their latency from the scheduled time. */
  refused: number; refusalLatency: Summary;
  /** How late the load generator wrote each request after its scheduled time (its own lag). */
  sendLag: Summary;
  /** Successful streams that ended by window end + goodputGraceMs. */
  okInWindow: number;
  /** Sum of the windows' nominal durations (s) and wall time including the drain (s). */
  windowS: number; wallS: number;
  /** Time spent waiting for a quiet host before the windows (ms), and windows started on a busy host anyway. */
  quietWaitMs: number; busyStarts: number;
  /**
   * CPU seconds over the windows, by process name of `cpuPids` (`server`, `mock`, `loadgen`), plus
   * `serverMain` (the server's event-loop thread alone, part of `server`) and `others` (the rest of the host).
   */
  cpuS: Record<string, number>;
  inFlight: { mean: number; max: number }; unfinished: number; prewarmed: number;
  tcp: { listenOverflows: number; synRetrans: number; retransSegs: number };
}
export interface OpenLoopResult {
  rate: number;
  perTarget: Record<string, OpenLoopTarget>;
}
/** One target's closed-loop outcome. Times in ms (from each request's write), CPU in seconds. */
export interface ClosedLoopTarget {
  ttft: Summary; conversation: Summary;
  /** Turns sent, and those that succeeded. */
  turns: number; ok: number;
  /** Failures other than typed refusals, and typed refusals (a refused client waits 100 ms before its next turn). */
  errors: Errors; refused: number;
  /** Turns still running at the drain deadline. */
  unfinished: number;
  /** Sum of the windows' nominal durations and wall times including the drain (s). */
  windowS: number; wallS: number;
  quietWaitMs: number; busyStarts: number;
  /** As OpenLoopTarget.cpuS. */
  cpuS: Record<string, number>;
  prewarmed: number;
}
export interface ClosedLoopResult { perTarget: Record<string, ClosedLoopTarget> }
export interface StreamsResult {
  started: number; ok: number; errors: Errors; stalled: number; tokens: number; frames: number; preconnected: number;
  addedGap: Summary; maxGap: Summary; ttft: Summary; wallS: number; cpuS: number; inFlight: { mean: number; max: number };
  /** The `/metrics` text scraped at start + toMs (when asked), the ms between the two scrapes, or why it failed. */
  metricsText?: string; metricsWindowMs?: number; metricsError?: string;
}
/** `refused`: typed refusals met while opening (each retried after 1-2 s while the job's time lasts). */
export interface ConnectionsOpenResult { requested: number; idle: number; refused: number; errors: Errors; wallS: number; cpuS: number }
export interface OneShotResult { requests: number; ok: number; errors: Errors; latency: Summary; rps: number; wallS: number; cpuS: number }

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const now = () => performance.now();

function newErrors(): Errors {
  return { total: 0, server: 0, client: 0, byCode: {}, sample: '' };
}

function countError(e: Errors, r: ExchangeResult): void {
  e.total++;
  if (r.clientLimit) e.client++;
  else e.server++;
  const code = isTypedRefusal(r) ? 'refused_503_overloaded' : r.error ?? 'unknown';
  e.byCode[code] = (e.byCode[code] ?? 0) + 1;
  if (!e.sample && r.errorBody) e.sample = `${code}: ${r.errorBody.slice(0, 200)}`;
}

function cpuNow(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Fails exchanges that saw no bytes for `timeoutMs` (one sweep timer for all of them). */
class Sweeper {
  readonly active = new Map<Exchange, Conn>();
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly timeoutMs: number) {
    this.timer = setInterval(() => this.sweep(), Math.min(250, Math.max(20, timeoutMs / 4)));
  }
  track(ex: Exchange, c: Conn): void {
    this.active.set(ex, c);
    void ex.done.then(() => this.active.delete(ex));
  }
  sweep(force = false): void {
    const t = now();
    for (const [ex, c] of this.active) {
      if (force || t - ex.lastActivity > this.timeoutMs) {
        ex.fail('timeout', t);
        c.destroy();
        this.active.delete(ex);
      }
    }
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

/** Samples a gauge every 50 ms. */
class Gauge {
  private sum = 0;
  private n = 0;
  max = 0;
  private readonly timer: NodeJS.Timeout;
  constructor(read: () => number) {
    this.timer = setInterval(() => {
      const v = read();
      this.sum += v;
      this.n++;
      if (v > this.max) this.max = v;
    }, 50);
  }
  stop(): { mean: number; max: number } {
    clearInterval(this.timer);
    return { mean: this.n > 0 ? this.sum / this.n : 0, max: this.max };
  }
}

async function warmup(job: Extract<Job, { type: 'warmup' }>): Promise<{ ok: number; errors: Errors }> {
  const target = buildTarget(job.target);
  const errors = newErrors();
  let ok = 0;
  let next = 0;
  const deadline = now() + job.timeoutMs;
  const sweeper = new Sweeper(job.timeoutMs);
  const worker = async () => {
    let c: Conn | undefined;
    for (let i = 0; i < job.count && next < job.count && now() < deadline; i++) {
      next++;
      if (!c || !c.reusable) { c?.destroy(); c = new Conn(target); }
      const ex = c.send({ sse: job.sse });
      sweeper.track(ex, c);
      const r = await ex.done;
      if (r.ok) ok++;
      else countError(errors, r);
    }
    c?.destroy();
  };
  await Promise.all(Array.from({ length: Math.max(1, job.concurrency) }, worker));
  sweeper.stop();
  return { ok, errors };
}

async function sequential(job: Extract<Job, { type: 'sequential' }>): Promise<SequentialResult> {
  const cpu0 = cpuNow();
  const t0 = now();
  const targets = job.targets.map(buildTarget);
  const conns = new Map<string, Conn>();
  const ttfts = new Map<string, Samples>(targets.map((t) => [t.name, new Samples(job.samples)]));
  const convs = new Map<string, Samples>(targets.map((t) => [t.name, new Samples(job.samples)]));
  const errs = new Map<string, Errors>(targets.map((t) => [t.name, newErrors()]));
  const oks = new Map<string, number>(targets.map((t) => [t.name, 0]));
  const deadline = now() + job.deadlineMs;
  const sweeper = new Sweeper(30_000);
  for (let round = 0; round < job.samples && now() < deadline; round++) {
    // Rotate the order every round so no target always goes first.
    for (let k = 0; k < targets.length; k++) {
      const t: Target = targets[(round + k) % targets.length]!;
      let c = conns.get(t.name);
      if (!c || !c.reusable) { c?.destroy(); c = new Conn(t); conns.set(t.name, c); }
      const ex = c.send({ sse: true, expectFirstMs: job.expectFirstMs });
      sweeper.track(ex, c);
      const r = await ex.done;
      if (r.ok) {
        ttfts.get(t.name)!.push(r.ttftMs);
        if (t.flavor === 'events') convs.get(t.name)!.push(r.idleMs);
        oks.set(t.name, oks.get(t.name)! + 1);
      } else {
        countError(errs.get(t.name)!, r);
      }
    }
  }
  sweeper.stop();
  for (const c of conns.values()) c.destroy();
  const perTarget: SequentialResult['perTarget'] = {};
  for (const t of targets) perTarget[t.name] = { ttft: ttfts.get(t.name)!.summary(), conversation: convs.get(t.name)!.summary(), ok: oks.get(t.name)!, errors: errs.get(t.name)! };
  return { perTarget, cpuS: cpuNow() - cpu0, wallS: (now() - t0) / 1000 };
}

/** The `timing` job: sequential turns, targets interleaved, each body read for the server's timing. */
async function timing(job: Extract<Job, { type: 'timing' }>): Promise<TimingResult> {
  const t0 = now();
  const targets = job.targets.map(buildTarget);
  const conns = new Map<string, Conn>();
  const names = ['clientTtft', 'serverFirstToken', 'serverSetup', 'model', 'parley', 'clientMinusServer', 'clientMinusModel'] as const;
  const samples = new Map(targets.map((t) => [t.name, Object.fromEntries(names.map((n) => [n, new Samples(job.samples)])) as Record<(typeof names)[number], Samples>]));
  const counts = new Map(targets.map((t) => [t.name, { ok: 0, unreadable: 0, negative: 0, errors: newErrors() }]));
  const deadline = now() + job.deadlineMs;
  const sweeper = new Sweeper(30_000);
  for (let round = 0; round < job.samples && now() < deadline; round++) {
    for (let k = 0; k < targets.length; k++) {
      const t: Target = targets[(round + k) % targets.length]!;
      let c = conns.get(t.name);
      if (!c || !c.reusable) { c?.destroy(); c = new Conn(t); conns.set(t.name, c); }
      const ex = c.send({ sse: true, expectFirstMs: job.expectFirstMs, keepBody: 64 * 1024 });
      sweeper.track(ex, c);
      const r = await ex.done;
      const n = counts.get(t.name)!;
      if (!r.ok) { countError(n.errors, r); continue; }
      n.ok++;
      const s = samples.get(t.name)!;
      s.clientTtft.push(r.ttftMs);
      const server = timingOf(r.body);
      const split = server === undefined ? undefined : firstTokenSplit(server, r.ttftMs);
      if (server === undefined || split === undefined) { n.unreadable++; continue; }
      s.serverFirstToken.push(server.first_token_ms!);
      s.serverSetup.push(server.setup_ms!);
      s.model.push(split.model);
      s.parley.push(split.parley);
      s.clientMinusServer.push(split.clientMinusServer);
      s.clientMinusModel.push(r.ttftMs - split.model);
      if (split.clientMinusServer < 0) n.negative++;
    }
  }
  sweeper.stop();
  for (const c of conns.values()) c.destroy();
  const perTarget: Record<string, TimingTarget> = {};
  for (const t of targets) {
    const s = samples.get(t.name)!;
    perTarget[t.name] = {
      ...counts.get(t.name)!,
      clientTtft: s.clientTtft.summary(), serverFirstToken: s.serverFirstToken.summary(), serverSetup: s.serverSetup.summary(),
      model: s.model.summary(), parley: s.parley.summary(), clientMinusServer: s.clientMinusServer.summary(),
      clientMinusModel: s.clientMinusModel.summary(),
    };
  }
  return { perTarget, wallS: (now() - t0) / 1000 };
}

/**
 * One open-loop window against one target: request i is due at start + i/rate and its latency counts
 * from that due time (no coordinated omission), whatever the server does.
 */
interface OpenLoopSinks { ttft: Samples; conv: Samples; errors: Errors; refusalLat: Samples; sendLag: Samples }

async function openLoopWindow(
  target: Target, job: Extract<Job, { type: 'open-loop' }>, sinks: OpenLoopSinks,
): Promise<{ requests: number; ok: number; refused: number; okInWindow: number; wallS: number; inFlight: { mean: number; max: number }; unfinished: number; prewarmed: number }> {
  const { ttft, conv, errors } = sinks;
  const pool = new ConnPool(target, job.pick ?? 'stack');
  const prewarmed = await pool.prewarm(job.prewarm);
  const sweeper = new Sweeper(job.stallTimeoutMs);
  const total = Math.max(1, Math.round((job.rate * job.durationMs) / 1000));
  const gap = 1000 / job.rate;
  let sent = 0;
  let ok = 0;
  let refused = 0;
  let okInWindow = 0;
  let inflight = 0;
  const gauge = new Gauge(() => inflight);
  const start = now();
  const windowEnd = start + job.durationMs + (job.goodputGraceMs ?? 0);
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const t = now();
      while (sent < total && start + sent * gap <= t) {
        const due = start + sent * gap;
        sent++;
        inflight++;
        const c = pool.acquire();
        sinks.sendLag.push(now() - due);
        const ex = c.send({ sse: true, t0: due, expectFirstMs: job.expectFirstMs });
        sweeper.track(ex, c);
        void ex.done.then((r) => {
          inflight--;
          pool.release(c, ex);
          if (r.ok) {
            ok++;
            if (due + r.durationMs <= windowEnd) okInWindow++;
            ttft.push(r.ttftMs);
            if (target.flavor === 'events') conv.push(r.idleMs);
          } else if (isTypedRefusal(r)) {
            refused++;
            sinks.refusalLat.push(r.durationMs);
          } else countError(errors, r);
        });
      }
      if (sent >= total || t - start > job.durationMs * 3 + 5000) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  const drainEnd = now() + job.drainMs;
  for (let i = 0; i < 1_000_000 && inflight > 0 && now() < drainEnd; i++) await sleep(20);
  const unfinished = inflight;
  sweeper.sweep(true);
  await sleep(20);
  sweeper.stop();
  const inFlight = gauge.stop();
  pool.closeAll();
  return { requests: sent, ok, refused, okInWindow, wallS: (now() - start) / 1000, inFlight, unfinished, prewarmed };
}

/**
 * Runs `run` and measures CPU seconds over it: of every process in `pids` by name (this process is
 * `loadgen` when named so), `serverMain` (the event-loop thread of `pids.server`, part of `server`), and
 * `others` (the rest of the host: other sessions, idle rig processes). A pid named twice counts once in
 * `others`' subtraction.
 */
async function measured<T>(pids: Record<string, number>, run: () => Promise<T>): Promise<{ value: T; cpuS: Record<string, number> }> {
  const cpu0 = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, cpuSeconds(pid)]));
  const serverPid = pids.server;
  const main0 = serverPid === undefined ? Number.NaN : mainThreadCpuSeconds(serverPid);
  const host0 = hostBusySeconds();
  const value = await run();
  const cpuS: Record<string, number> = {};
  let ours = 0;
  const counted = new Set<number>();
  for (const [n, pid] of Object.entries(pids)) {
    const d = cpuSeconds(pid) - cpu0[n]!;
    cpuS[n] = d;
    if (!counted.has(pid) && Number.isFinite(d)) ours += d;
    counted.add(pid);
  }
  // The server's event-loop thread alone (part of `server`, so not added to `ours` again).
  if (serverPid !== undefined) cpuS.serverMain = mainThreadCpuSeconds(serverPid) - main0;
  // Everything else the host ran meanwhile (other sessions on a shared machine, idle rig processes).
  cpuS.others = Math.max(0, hostBusySeconds() - host0 - ours);
  return { value, cpuS };
}

/**
 * Open-loop windows for several targets, interleaved: `rounds` rounds, each running one window per
 * target (order rotated every round), so every target sees the same machine state. CPU seconds of the
 * processes in `cpuPids[target]` (and of this process) are summed over that target's windows.
 */
async function openLoop(job: Extract<Job, { type: 'open-loop' }>): Promise<OpenLoopResult> {
  const targets = job.targets.map(buildTarget);
  const perTarget: OpenLoopResult['perTarget'] = {};
  const sinks = new Map<string, OpenLoopSinks>();
  for (const t of targets) {
    const errors = newErrors();
    sinks.set(t.name, { ttft: new Samples(4096), conv: new Samples(4096), errors, refusalLat: new Samples(1024), sendLag: new Samples(4096) });
    perTarget[t.name] = {
      ttft: summarize([]), conversation: summarize([]), requests: 0, ok: 0, errors, refused: 0, refusalLatency: summarize([]), sendLag: summarize([]),
      okInWindow: 0, windowS: 0, wallS: 0, quietWaitMs: 0, busyStarts: 0, cpuS: {}, inFlight: { mean: 0, max: 0 }, unfinished: 0,
      prewarmed: 0, tcp: { listenOverflows: 0, synRetrans: 0, retransSegs: 0 },
    };
  }
  for (let round = 0; round < job.rounds; round++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(round + k) % targets.length]!;
      const pids: Record<string, number> = { ...(job.cpuPids[t.name] ?? {}), loadgen: process.pid };
      if (job.quiet) {
        const q = await waitForQuietHost(job.quiet);
        perTarget[t.name]!.quietWaitMs += q.waitedMs;
        if (!q.quiet) perTarget[t.name]!.busyStarts++;
      }
      const tcp0 = tcpCounters();
      const { value: w, cpuS } = await measured(pids, () => openLoopWindow(t, job, sinks.get(t.name)!));
      const r = perTarget[t.name]!;
      for (const [n, d] of Object.entries(cpuS)) r.cpuS[n] = (r.cpuS[n] ?? 0) + d;
      r.requests += w.requests;
      r.ok += w.ok;
      r.refused += w.refused;
      r.okInWindow += w.okInWindow;
      r.windowS += job.durationMs / 1000;
      r.wallS += w.wallS;
      r.unfinished += w.unfinished;
      r.prewarmed += w.prewarmed;
      const d = tcpDelta(tcp0, tcpCounters());
      r.tcp = { listenOverflows: r.tcp.listenOverflows + d.listenOverflows, synRetrans: r.tcp.synRetrans + d.synRetrans, retransSegs: r.tcp.retransSegs + d.retransSegs };
      r.inFlight = { mean: r.inFlight.mean + w.inFlight.mean / job.rounds, max: Math.max(r.inFlight.max, w.inFlight.max) };
      if (job.pauseMs > 0) await sleep(job.pauseMs);
    }
  }
  for (const t of targets) {
    const k = sinks.get(t.name)!;
    const r = perTarget[t.name]!;
    r.ttft = k.ttft.summary();
    r.conversation = k.conv.summary();
    r.refusalLatency = k.refusalLat.summary();
    r.sendLag = k.sendLag.summary();
  }
  return { perTarget, rate: job.rate };
}

/**
 * One closed-loop window: `clients` clients (their starts spread over `rampMs`), each sending its next turn
 * when the last one ended (over a random idle connection of a pre-opened pool), until `durationMs` after
 * the ramp; then the running turns get up to `drainMs` to end. Latencies count from each request's write;
 * those of turns sent during the ramp are not recorded.
 */
async function closedLoopWindow(target: Target, job: Extract<Job, { type: 'closed-loop' }>, sinks: { ttft: Samples; conv: Samples; errors: Errors }): Promise<{ turns: number; ok: number; refused: number; unfinished: number; wallS: number; prewarmed: number }> {
  const pool = new ConnPool(target, 'random');
  const prewarmed = await pool.prewarm(job.connections);
  const sweeper = new Sweeper(job.stallTimeoutMs);
  let turns = 0;
  let ok = 0;
  let refused = 0;
  let unfinished = 0;
  const start = now();
  const ramp = job.rampMs ?? 0;
  const measureFrom = start + ramp;
  const endAt = start + ramp + job.durationMs;
  const hardEnd = endAt + job.drainMs;
  const client = async (i: number) => {
    await sleep((ramp * i) / job.clients);
    for (let n = 0; n < 10_000_000 && now() < endAt; n++) {
      const c = pool.acquire();
      turns++;
      const measured = now() >= measureFrom;
      const ex = c.send({ sse: true, expectFirstMs: job.expectFirstMs });
      sweeper.track(ex, c);
      const r = await Promise.race([ex.done, sleep(Math.max(0, hardEnd - now())).then(() => undefined)]);
      if (r === undefined) {
        unfinished++;
        ex.fail('timeout', now());
        c.destroy();
        return;
      }
      pool.release(c, ex);
      if (r.ok) {
        ok++;
        if (measured) {
          sinks.ttft.push(r.ttftMs);
          if (target.flavor === 'events') sinks.conv.push(r.idleMs);
        }
      } else if (isTypedRefusal(r)) {
        refused++;
        await sleep(100);
      } else {
        countError(sinks.errors, r);
        await sleep(10);
      }
    }
  };
  await Promise.all(Array.from({ length: job.clients }, (_, i) => client(i)));
  sweeper.stop();
  pool.closeAll();
  return { turns, ok, refused, unfinished, wallS: (now() - start) / 1000, prewarmed };
}

/** Closed-loop windows for several targets, interleaved like {@link openLoop} (order rotated every round). */
async function closedLoop(job: Extract<Job, { type: 'closed-loop' }>): Promise<ClosedLoopResult> {
  const targets = job.targets.map(buildTarget);
  const perTarget: ClosedLoopResult['perTarget'] = {};
  const sinks = new Map<string, { ttft: Samples; conv: Samples; errors: Errors }>();
  for (const t of targets) {
    const errors = newErrors();
    sinks.set(t.name, { ttft: new Samples(1 << 16), conv: new Samples(1 << 16), errors });
    perTarget[t.name] = {
      ttft: summarize([]), conversation: summarize([]), turns: 0, ok: 0, errors, refused: 0, unfinished: 0, windowS: 0, wallS: 0,
      quietWaitMs: 0, busyStarts: 0, cpuS: {}, prewarmed: 0,
    };
  }
  for (let round = 0; round < job.rounds; round++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(round + k) % targets.length]!;
      const r = perTarget[t.name]!;
      if (job.quiet) {
        const q = await waitForQuietHost(job.quiet);
        r.quietWaitMs += q.waitedMs;
        if (!q.quiet) r.busyStarts++;
      }
      const { value: w, cpuS } = await measured({ ...(job.cpuPids[t.name] ?? {}), loadgen: process.pid }, () => closedLoopWindow(t, job, sinks.get(t.name)!));
      for (const [n, d] of Object.entries(cpuS)) r.cpuS[n] = (r.cpuS[n] ?? 0) + d;
      r.turns += w.turns;
      r.ok += w.ok;
      r.refused += w.refused;
      r.unfinished += w.unfinished;
      r.windowS += job.durationMs / 1000;
      r.wallS += w.wallS;
      r.prewarmed += w.prewarmed;
      if (job.pauseMs > 0) await sleep(job.pauseMs);
    }
  }
  for (const t of targets) {
    const k = sinks.get(t.name)!;
    perTarget[t.name]!.ttft = k.ttft.summary();
    perTarget[t.name]!.conversation = k.conv.summary();
  }
  return { perTarget };
}

/**
 * `slots` concurrent paced streams, each on its own keep-alive connection, back to back until
 * `durationMs` (slot starts spread over `rampMs`). A stream stalls when its largest silence exceeds
 * `stallMs`.
 */
async function streams(job: Extract<Job, { type: 'streams' }>): Promise<StreamsResult> {
  const cpu0 = cpuNow();
  const target = buildTarget(job.target);
  const sweeper = new Sweeper(job.stallTimeoutMs);
  const gaps = new Samples(1 << 16);
  const maxGaps = new Samples(4096);
  const ttft = new Samples(4096);
  const errors = newErrors();
  let started = 0;
  let ok = 0;
  let stalled = 0;
  let tokens = 0;
  let frames = 0;
  let inflight = 0;
  const gauge = new Gauge(() => inflight);
  // Connect every slot first (in batches): a connection burst would overflow the server's accept queue
  // and the dropped SYNs (retried after 1 s) would count as stalls of the streams.
  const pool = new ConnPool(target);
  const preconnected = await pool.prewarm(job.slots);
  const start = now();
  const endAt = start + job.durationMs;
  const hardEnd = endAt + job.drainMs;
  const scrape = job.metrics ? scrapeWindow(job.target.port, job.metrics) : undefined;
  const slot = async (i: number) => {
    await sleep((job.rampMs * i) / job.slots);
    let c: Conn | undefined = pool.acquire();
    for (let n = 0; n < 1_000_000 && now() < endAt; n++) {
      if (!c || !c.reusable) { c?.destroy(); c = new Conn(target); }
      started++;
      inflight++;
      const ex = c.send({ sse: true, gaps, intervalMs: job.intervalMs, expectFirstMs: job.expectFirstMs });
      sweeper.track(ex, c);
      const r = await Promise.race([ex.done, sleep(Math.max(0, hardEnd - now())).then(() => undefined)]);
      inflight--;
      if (r === undefined) {
        ex.fail('timeout', now());
        countError(errors, { ...emptyResult(), error: 'drain_timeout' });
        break;
      }
      tokens += r.tokens;
      frames += r.frames;
      if (r.ok) {
        ok++;
        ttft.push(r.ttftMs);
        maxGaps.push(r.maxGapMs);
        if (r.maxGapMs > job.stallMs) stalled++;
      } else {
        countError(errors, r);
        if (r.maxGapMs > job.stallMs) stalled++;
        // A typed refusal asks the client to come back later: wait 1 s (a polite client), not 10 ms.
        await sleep(isTypedRefusal(r) ? 1000 : 10);
      }
      if (ex.connClose) c.destroy();
    }
    c?.destroy();
  };
  await Promise.all(Array.from({ length: job.slots }, (_, i) => slot(i)));
  sweeper.stop();
  const wallS = (now() - start) / 1000;
  const metrics = scrape ? await scrape : undefined;
  return {
    started, ok, errors, stalled, tokens, frames, preconnected,
    addedGap: gaps.summary(), maxGap: maxGaps.summary(), ttft: ttft.summary(),
    wallS, cpuS: cpuNow() - cpu0, inFlight: gauge.stop(),
    ...(metrics ?? {}),
  };
}

function emptyResult(): ExchangeResult {
  return {
    ok: false, status: 0, error: undefined, errorBody: '', retryAfter: false, clientLimit: false, ttftMs: Number.NaN, idleMs: Number.NaN,
    durationMs: 0, tokens: 0, frames: 0, body: '', maxGapMs: 0, bodyBytes: 0,
  };
}

/** Idle streams held open between connections-open and connections-close. */
const held: { conn: Conn; ex: Exchange }[] = [];

async function connectionsOpen(job: Extract<Job, { type: 'connections-open' }>): Promise<ConnectionsOpenResult> {
  const cpu0 = cpuNow();
  const target = buildTarget(job.target);
  const errors = newErrors();
  let idle = 0;
  let sent = 0;
  let refused = 0;
  const start = now();
  const gap = 1000 / job.rate;
  const waits: Promise<void>[] = [];
  // A typed refusal (503 overloaded + Retry-After) is retried after 1-2 s (jittered, so refused clients do
  // not come back in one herd), as a visitor's client would, while the job's time lasts; any other failure
  // counts at once.
  const open = (res: () => void): void => {
    const c = new Conn(target);
    const ex = c.send({ sse: true, idleOn: job.idleOn ?? 'marker', onIdle: () => { idle++; res(); } });
    held.push({ conn: c, ex });
    void ex.done.then((r) => {
      if (!r.ok && isTypedRefusal(r)) {
        refused++;
        c.destroy();
        const wait = 1000 + Math.random() * 1000;
        if (now() + wait - start < job.timeoutMs) {
          void sleep(wait).then(() => open(res));
          return;
        }
      }
      if (!r.ok || ex.idleAt === 0) countError(errors, r.ok ? { ...r, error: 'ended_before_idle' } : r);
      res();
    });
  };
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const t = now();
      while (sent < job.count && start + sent * gap <= t) {
        sent++;
        waits.push(new Promise<void>((res) => open(res)));
      }
      if (sent >= job.count || t - start > job.timeoutMs) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  // Stop waiting for stragglers once no stream has gone live for 10 s (they then count as timeouts), so the
  // opening phase does not run on into a long idle wait.
  let settled = false;
  void Promise.all(waits).then(() => { settled = true; });
  let lastIdle = idle;
  let lastProgress = now();
  for (let i = 0; i < 1_000_000 && !settled && now() - start < job.timeoutMs; i++) {
    await sleep(250);
    if (idle !== lastIdle) { lastIdle = idle; lastProgress = now(); }
    if (sent >= job.count && now() - lastProgress > 10_000) break;
  }
  for (const h of held) {
    if (h.ex.idleAt === 0 && !h.ex.finished) {
      h.ex.fail('timeout', now());
      countError(errors, { ...emptyResult(), error: 'timeout' });
    }
  }
  return { requested: sent, idle, refused, errors, wallS: (now() - start) / 1000, cpuS: cpuNow() - cpu0 };
}

function connectionsCheck(): { open: number; closedByServer: number } {
  let open = 0;
  let closed = 0;
  for (const h of held) {
    if (h.ex.idleAt === 0) continue;
    if (h.conn.dead || h.ex.finished) closed++;
    else open++;
  }
  return { open, closedByServer: closed };
}

async function connectionsClose(): Promise<{ closed: number }> {
  const n = held.length;
  for (const h of held) h.conn.destroy();
  held.length = 0;
  await sleep(50);
  return { closed: n };
}

/** Closed loop: `connections` keep-alive connections, each sending the next request when the last ends. */
async function oneShot(job: Extract<Job, { type: 'one-shot' }>): Promise<OneShotResult> {
  const cpu0 = cpuNow();
  const target = buildTarget(job.target);
  const sweeper = new Sweeper(job.timeoutMs);
  const lat = new Samples(1 << 16);
  const errors = newErrors();
  let requests = 0;
  let ok = 0;
  const start = now();
  const endAt = start + job.durationMs;
  const worker = async () => {
    let c: Conn | undefined;
    for (let n = 0; n < 10_000_000 && now() < endAt; n++) {
      if (!c || !c.reusable) { c?.destroy(); c = new Conn(target); }
      requests++;
      const ex = c.send({ sse: false });
      sweeper.track(ex, c);
      const r = await ex.done;
      if (r.ok) { ok++; lat.push(r.durationMs); } else { countError(errors, r); await sleep(5); }
      if (ex.connClose) c.destroy();
    }
    c?.destroy();
  };
  await Promise.all(Array.from({ length: job.connections }, worker));
  sweeper.stop();
  const wallS = (now() - start) / 1000;
  return { requests, ok, errors, latency: lat.summary(), rps: ok / wallS, wallS, cpuS: cpuNow() - cpu0 };
}

export async function runJob(job: Job): Promise<unknown> {
  switch (job.type) {
    case 'warmup': return warmup(job);
    case 'sequential': return sequential(job);
    case 'timing': return timing(job);
    case 'open-loop': return openLoop(job);
    case 'closed-loop': return closedLoop(job);
    case 'streams': return streams(job);
    case 'connections-open': return connectionsOpen(job);
    case 'connections-check': return connectionsCheck();
    case 'connections-close': return connectionsClose();
    case 'one-shot': return oneShot(job);
    case 'ws-streams': return wsStreams(job);
    case 'ws-open': return wsOpen(job);
    case 'ws-check': return wsCheck();
    case 'ws-close': return wsClose();
    case 'push-listen': return pushListen(job);
    case 'push-run': return pushRun(job);
    case 'push-check': return pushCheck();
    case 'push-close': return pushClose();
  }
}

if (process.send !== undefined) {
  process.on('message', (msg: { id: number; job: Job }) => {
    runJob(msg.job).then(
      (result) => process.send!({ id: msg.id, ok: true, result }),
      (err: unknown) => process.send!({ id: msg.id, ok: false, error: err instanceof Error ? err.stack ?? err.message : String(err) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
  process.send({ ready: true });
}
