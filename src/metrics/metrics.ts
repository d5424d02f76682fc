import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { LoopDelaySampler } from './loop-delay.js';


/** Buckets for sub-second latencies, seconds: 0.1 ms .. 10 s. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Parley's Prometheus metrics (served on GET /metrics in the text exposition format). One registry per
 * server instance, so tests can run several servers in one process.
 */
export class Metrics {
  readonly registry = new Registry();
  /** Visitor message accepted -> first token written to the turn channel, seconds. */
  readonly firstToken = new Histogram({
    name: 'parley_turn_first_token_seconds', help: 'Time from accepting a visitor message to its first token, seconds',
    labelNames: ['provider'], buckets: LATENCY_BUCKETS, registers: [this.registry],
  });
  /** Visitor message accepted -> model called (store writes, history, retrieval), seconds. */
  readonly turnSetup = new Histogram({
    name: 'parley_turn_setup_seconds', help: 'Time from accepting a visitor message to calling the model (store, history, retrieval), seconds',
    labelNames: ['provider'], buckets: LATENCY_BUCKETS, registers: [this.registry],
  });
  /** Upstream bytes of the first token arrived -> token written to every subscriber, seconds. */
  readonly firstTokenRelay = new Histogram({
    name: 'parley_first_token_relay_seconds', help: "Time from the upstream's first token bytes arriving to the first client write, seconds",
    labelNames: ['provider'], buckets: LATENCY_BUCKETS, registers: [this.registry],
  });
  /**
   * Model called -> upstream bytes of the first token arrived, seconds: the model's own time to first
   * token (network included), so that `parley_turn_first_token_seconds` can be read against it.
   */
  readonly modelFirstToken = new Histogram({
    name: 'parley_model_first_token_seconds', help: "Time from calling the model to its first token's bytes arriving, seconds",
    labelNames: ['provider'], buckets: LATENCY_BUCKETS, registers: [this.registry],
  });
  readonly turns = new Counter({
    name: 'parley_turns_total', help: 'Finished turns by outcome', labelNames: ['outcome'], registers: [this.registry],
  });
  readonly httpRequests = new Counter({
    name: 'parley_http_requests_total', help: 'HTTP requests by method and status', labelNames: ['method', 'status'], registers: [this.registry],
  });

  /**
   * Event-loop delay since the previous scrape, seconds: quantiles 0.5, 0.9, 0.99 and 1 (the max) of how
   * late a timer ran: every 10 ms under load, every 250 ms when idle (src/metrics/loop-delay.ts). Each scrape starts a new window.
   */
  readonly loopDelay = new Gauge({
    name: 'parley_event_loop_delay_seconds', help: 'How late the event-loop timer (10 ms under load, 250 ms when idle) ran since the previous scrape, seconds',
    labelNames: ['quantile'], registers: [this.registry],
    collect: () => this.collectLoopDelay(),
  });
  readonly loopResolution = new Gauge({
    name: 'parley_eventloop_resolution_seconds', help: 'Sampling period of parley_event_loop_delay_seconds, seconds', registers: [this.registry],
  });
  /**
   * Ingestion workers: `threads` configured (PARLEY_INGEST_WORKERS) and `warm` (workers that finished their
   * warm-up since start, replacements included; src/knowledge/warm-up.ts). Read at each scrape from the
   * source given to {@link watchIngestion}; absent until then.
   */
  readonly ingestWorkers = new Gauge({
    name: 'parley_ingest_workers', help: 'Ingestion worker threads: configured, and warmed up since start', labelNames: ['state'], registers: [this.registry],
    collect: () => this.collectIngestion(),
  });
  #ingestion: (() => { threads: number; warmedUp: number }) | undefined;
  /**
   * Transactions the SQLite writer committed since start, by `synchronous` level: `full` (the WAL fsynced
   * at commit: every acknowledged write) and `normal` (no fsync: batches made only of chunk slices and
   * index merges, src/store/sqlite/knowledge-writes.ts `batchSynchronous`). Read at each scrape from the
   * source given to {@link watchCommits}; absent until then (and with MongoDB).
   */
  readonly sqliteCommits = new Counter({
    name: 'parley_sqlite_commits_total', help: 'Transactions committed by the SQLite writer, by PRAGMA synchronous level',
    labelNames: ['synchronous'], registers: [this.registry],
    collect: () => this.collectCommits(),
  });
  #commits: (() => { full: number; normal: number }) | undefined;
  /**
   * Finished turns whose events are kept for replay (API.md "Chat": resume a turn's stream), and the
   * memory the replay budget counts for them, bytes (PARLEY_TURN_REPLAY_BYTES bounds it; an estimate,
   * src/runtime/turn/turn-registry.ts `retainedBytesOf`). Read at each scrape from the source given to
   * {@link watchReplay}; absent until then.
   */
  readonly replayTurns = new Gauge({
    name: 'parley_turn_replay_turns', help: 'Finished turns whose events are kept for replay', registers: [this.registry],
    collect: () => this.collectReplay(),
  });
  readonly replayBytes = new Gauge({
    name: 'parley_turn_replay_bytes', help: 'Memory the replay budget (PARLEY_TURN_REPLAY_BYTES) counts for the finished turns kept for replay, bytes (estimated)',
    registers: [this.registry],
    collect: () => this.collectReplay(),
  });
  #replay: (() => { channels: number; bytes: number }) | undefined;
  /** The event-loop delay sampler, shared with admission control (its `lagMs`). */
  readonly loop: LoopDelaySampler;

  constructor(loop: LoopDelaySampler = new LoopDelaySampler()) {
    collectDefaultMetrics({ register: this.registry });
    this.loop = loop;
    this.loopResolution.set(loop.resolutionMs / 1000);
  }

  /** Makes `parley_ingest_workers` read `source` (the ingestion pool's `threads` and `warmedUp`) at each scrape. */
  watchIngestion(source: () => { threads: number; warmedUp: number }): void {
    this.#ingestion = source;
  }

  /** Makes `parley_turn_replay_turns` and `parley_turn_replay_bytes` read `source` (the turn registry's `retained`) at each scrape. */
  watchReplay(source: () => { channels: number; bytes: number }): void {
    this.#replay = source;
  }

  private collectReplay(): void {
    if (this.#replay === undefined) return;
    const { channels, bytes } = this.#replay();
    this.replayTurns.set(channels);
    this.replayBytes.set(bytes);
  }

  /** Makes `parley_sqlite_commits_total` read `source` (the store's `commits()`, monotonic counts) at each scrape. */
  watchCommits(source: () => { full: number; normal: number }): void {
    this.#commits = source;
  }

  private collectCommits(): void {
    if (this.#commits === undefined) return;
    const { full, normal } = this.#commits();
    // The source counts since start; a prom-client counter only goes up, so it is set by reset + inc.
    this.sqliteCommits.reset();
    this.sqliteCommits.inc({ synchronous: 'full' }, full);
    this.sqliteCommits.inc({ synchronous: 'normal' }, normal);
  }

  private collectIngestion(): void {
    if (this.#ingestion === undefined) return;
    const { threads, warmedUp } = this.#ingestion();
    this.ingestWorkers.set({ state: 'threads' }, threads);
    this.ingestWorkers.set({ state: 'warm' }, warmedUp);
  }

  private collectLoopDelay(): void {
    const w = this.loop.takeWindow();
    if (w.count === 0) return;
    this.loopDelay.set({ quantile: '0.5' }, w.p50 / 1000);
    this.loopDelay.set({ quantile: '0.9' }, w.p90 / 1000);
    this.loopDelay.set({ quantile: '0.99' }, w.p99 / 1000);
    this.loopDelay.set({ quantile: '1' }, w.max / 1000);
  }

  /** Stops the event-loop sampler (shutdown). */
  close(): void {
    this.loop.close();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * Labels every series of this process with `process` (its index in a PARLEY_PROCESSES group, else its
   * id), so that the metrics of a group can be shown side by side (`groupText`).
   */
  labelProcess(name: string): void {
    this.registry.setDefaultLabels({ process: name });
  }

  /** This process's metrics as prom-client's JSON form (what a neighbour asks for, to show the whole group). */
  json(): Promise<MetricObjectWithValues<MetricValue<string>>[]> {
    return this.registry.getMetricsAsJSON() as Promise<MetricObjectWithValues<MetricValue<string>>[]>;
  }

  /**
   * The text exposition of this process's metrics and its neighbours' (`others`, their `json()`), one
   * family per metric name with every process's series in it (told apart by their `process` label).
   */
  async groupText(others: ReadonlyArray<MetricObjectWithValues<MetricValue<string>>[]>): Promise<string> {
    if (others.length === 0) return this.text();
    const merged = AggregatorRegistry.aggregate([await this.json(), ...others] as never);
    return merged.metrics();
  }
}
