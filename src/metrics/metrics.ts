import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { LoopDelaySampler } from './loop-delay.js';


/** What {@link Metrics.observeTurn} reads of a turn: its agent and its step times (performance.now() ms, 0 = did not happen). */
export interface TurnSteps {
  agent: { id: string; model: { provider: string; name: string } };
  arrivedAt: number;
  modelCalledAt: number;
  firstTokenReceivedAt: number;
  firstTokenAt: number;
}

/** Buckets for sub-second latencies, seconds: 0.1 ms .. 10 s. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Parley's Prometheus metrics (served on GET /metrics in the text exposition format). One registry per
 * server instance, so tests can run several servers in one process.
 */
export class Metrics {
  readonly registry = new Registry();
  /**
   * Request arrived -> first token handed to the turn's subscribers, seconds, per agent and model (the
   * `first_token_ms` of API.md "Chat", Timing).
   */
  readonly firstToken = new Histogram({
    name: 'parley_turn_first_token_seconds', help: 'Time from the arrival of a chat request to its first token, seconds, per agent and model',
    labelNames: ['provider', 'model', 'agent_id'], buckets: LATENCY_BUCKETS, registers: [this.registry],
  });
  /**
   * Request arrived -> model called (admission, store writes, history, retrieval), seconds, per agent and
   * model (the `setup_ms` of API.md "Chat", Timing).
   */
  readonly turnSetup = new Histogram({
    name: 'parley_turn_setup_seconds', help: 'Time from the arrival of a chat request to calling the model (admission, store, history, retrieval), seconds, per agent and model',
    labelNames: ['provider', 'model', 'agent_id'], buckets: LATENCY_BUCKETS, registers: [this.registry],
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
    name: 'parley_ingest_workers', help: 'Ingestion parser processes: configured, and warmed up since start', labelNames: ['state'], registers: [this.registry],
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
   * The MongoDB store's connection pool (Store.pool): checkouts, the seconds they waited in all, and those
   * that gave up after PARLEY_MONGODB_WAIT_QUEUE_TIMEOUT_MS (the request then got 503 overloaded). Read at
   * each scrape from the source given to {@link watchPool}; absent with SQLite.
   */
  readonly mongoPool = new Counter({
    name: 'parley_mongodb_pool_checkouts_total', help: 'MongoDB connection checkouts, and the seconds they waited',
    labelNames: ['measure'], registers: [this.registry],
    collect: () => this.collectPool(),
  });
  #pool: (() => { checkouts: number; waitSeconds: number; timeouts: number }) | undefined;
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

  /**
   * Observes an ended turn's step times (src/runtime/turn/turn.ts, performance.now() ms, 0 for a step that
   * did not happen): setup and first token per agent and model, from the request's arrival; the relay of
   * the first token and the model's own time to it, per provider, when the provider stamps the arrival of
   * its bytes. Called at the turn's end, so no metric work delays its first token.
   */
  observeTurn(turn: TurnSteps): void {
    const provider = turn.agent.model.provider;
    const labels = { provider, model: turn.agent.model.name, agent_id: turn.agent.id };
    if (turn.modelCalledAt !== 0) this.turnSetup.observe(labels, (turn.modelCalledAt - turn.arrivedAt) / 1000);
    if (turn.firstTokenAt === 0) return;
    this.firstToken.observe(labels, (turn.firstTokenAt - turn.arrivedAt) / 1000);
    if (turn.firstTokenReceivedAt === 0) return;
    this.firstTokenRelay.observe({ provider }, (turn.firstTokenAt - turn.firstTokenReceivedAt) / 1000);
    this.modelFirstToken.observe({ provider }, (turn.firstTokenReceivedAt - turn.modelCalledAt) / 1000);
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

  /** Makes `parley_mongodb_pool_checkouts_total` read `source` (the store's `pool()`, monotonic) at each scrape. */
  watchPool(source: () => { checkouts: number; waitSeconds: number; timeouts: number }): void {
    this.#pool = source;
  }

  private collectPool(): void {
    if (this.#pool === undefined) return;
    const { checkouts, waitSeconds, timeouts } = this.#pool();
    this.mongoPool.reset();
    this.mongoPool.inc({ measure: 'checkouts' }, checkouts);
    this.mongoPool.inc({ measure: 'wait_seconds' }, waitSeconds);
    this.mongoPool.inc({ measure: 'timeouts' }, timeouts);
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
