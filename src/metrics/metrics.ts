import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Sampling period of the event-loop delay monitor, ms. */
const LOOP_RESOLUTION_MS = 1;

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
  readonly turns = new Counter({
    name: 'parley_turns_total', help: 'Finished turns by outcome', labelNames: ['outcome'], registers: [this.registry],
  });
  readonly httpRequests = new Counter({
    name: 'parley_http_requests_total', help: 'HTTP requests by method and status', labelNames: ['method', 'status'], registers: [this.registry],
  });

  /**
   * Event-loop delay since the previous scrape, seconds: quantiles 0.5, 0.9, 0.99 and 1 (the max) of how
   * late a 1 ms timer ran (perf_hooks.monitorEventLoopDelay records the whole period, so the resolution
   * is subtracted). The histogram is reset at every scrape.
   */
  readonly loopDelay = new Gauge({
    name: 'parley_event_loop_delay_seconds', help: 'Event-loop delay beyond the 1 ms sampling period, since the previous scrape, seconds',
    labelNames: ['quantile'], registers: [this.registry],
    collect: () => this.collectLoopDelay(),
  });
  readonly loopResolution = new Gauge({
    name: 'parley_eventloop_resolution_seconds', help: 'Sampling period of parley_event_loop_delay_seconds, seconds', registers: [this.registry],
  });
  private readonly loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.loop.enable();
    this.loopResolution.set(LOOP_RESOLUTION_MS / 1000);
  }

  private collectLoopDelay(): void {
    const beyond = (ns: number) => Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) / 1000;
    if (this.loop.count === 0) return;
    for (const q of [50, 90, 99]) this.loopDelay.set({ quantile: String(q / 100) }, beyond(this.loop.percentile(q)));
    this.loopDelay.set({ quantile: '1' }, beyond(this.loop.max));
    this.loop.reset();
  }

  /** Stops the event-loop monitor (shutdown). */
  close(): void {
    this.loop.disable();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
