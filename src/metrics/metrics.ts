import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
