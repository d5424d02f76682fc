import { describe, expect, it } from 'vitest';
import { labelsOf, loopDelayFromMetrics, parsePromText, sumBy, type LoopDelay } from '../../bench/lib/prom-text.js';

/** The delay, or a thrown Error with the reason (fails the test). */
function delay(text: string): LoopDelay {
  const d = loopDelayFromMetrics(text);
  if (typeof d === 'string') throw new Error(d);
  return d;
}

describe('bench parsePromText', () => {
  it('reads samples with and without labels, skipping comments, blanks and timestamps', () => {
    const m = parsePromText([
      '# HELP a_total Something',
      '# TYPE a_total counter',
      'a_total 3',
      '',
      'b_seconds{quantile="0.99",route="/x y"} 0.25 1700000000000',
      'c -1.5e-3',
      'not a number here',
    ].join('\n'));
    expect(m.get('a_total')).toBe(3);
    expect(m.get('b_seconds{quantile="0.99",route="/x y"}')).toBe(0.25);
    expect(m.get('c')).toBe(-0.0015);
    expect(m.size).toBe(3);
  });
});

describe('bench loopDelayFromMetrics', () => {
  it('subtracts a published resolution gauge', () => {
    const d = delay([
      'nodejs_eventloop_lag_min_seconds 0.0000026',
      'nodejs_eventloop_lag_max_seconds 0.0107',
      'nodejs_eventloop_lag_p99_seconds 0.0037',
      'bench_eventloop_resolution_seconds 0.001',
    ].join('\n'));
    expect(d.resolutionMs).toBe(1);
    expect(d.resolutionSource).toBe('gauge');
    expect(d.p99Ms).toBeCloseTo(2.7, 9);
    expect(d.maxMs).toBeCloseTo(9.7, 9);
    expect(d.rawP99Ms).toBeCloseTo(3.7, 9);
  });

  it("assumes prom-client's 10 ms default when the minimum agrees, and floors at 0", () => {
    const d = delay([
      'nodejs_eventloop_lag_min_seconds 0.00913408',
      'nodejs_eventloop_lag_max_seconds 0.023642111',
      'nodejs_eventloop_lag_p99_seconds 0.0098',
    ].join('\n'));
    expect(d.resolutionMs).toBe(10);
    expect(d.resolutionSource).toBe('prom-client default');
    expect(d.p99Ms).toBe(0);
    expect(d.maxMs).toBeCloseTo(13.642111, 6);
  });

  it('refuses to guess when no gauge is published and the minimum contradicts 10 ms', () => {
    const d = loopDelayFromMetrics([
      'nodejs_eventloop_lag_min_seconds 0.000003',
      'nodejs_eventloop_lag_max_seconds 0.004',
      'nodejs_eventloop_lag_p99_seconds 0.0026',
    ].join('\n'));
    expect(d).toBe("no resolution gauge and min reading 0.003 ms < half of prom-client's default 10 ms: resolution unknown");
  });

  it("prefers Parley's own delay summary (already beyond the sampling period)", () => {
    const d = delay([
      'parley_event_loop_delay_seconds{quantile="0.5"} 0.0002',
      'parley_event_loop_delay_seconds{quantile="0.99"} 0.0031',
      'parley_event_loop_delay_seconds{quantile="1"} 0.012',
      'parley_eventloop_resolution_seconds 0.001',
      'nodejs_eventloop_lag_min_seconds 0.00913408',
      'nodejs_eventloop_lag_max_seconds 0.0236',
      'nodejs_eventloop_lag_p99_seconds 0.0139',
    ].join('\n'));
    expect(d.resolutionSource).toBe('parley summary');
    expect(d.p99Ms).toBeCloseTo(3.1, 9);
    expect(d.maxMs).toBeCloseTo(12, 9);
    expect(d.resolutionMs).toBeCloseTo(1, 9);
  });

  it('says so when the metrics are absent', () => {
    expect(loopDelayFromMetrics('process_cpu_seconds_total 1\n')).toBe('no nodejs_eventloop_lag_p99_seconds / _max_seconds in /metrics');
  });
});

/** A group's /metrics as Parley serves it with PARLEY_PROCESSES=2 (every series labelled by its process). */
const GROUP = [
  '# HELP parley_turns_total Finished turns by outcome',
  '# TYPE parley_turns_total counter',
  'parley_turns_total{outcome="succeeded",process="0"} 812',
  'parley_turns_total{outcome="failed",process="0"} 3',
  'parley_turns_total{outcome="succeeded",process="1"} 790',
  'parley_turns_total_extra{outcome="succeeded",process="1"} 5',
  'parley_sqlite_commits_total{synchronous="full",process="0"} 100',
  'parley_sqlite_commits_total{synchronous="normal",process="0"} 7',
  'parley_sqlite_commits_total{synchronous="full",process="1"} 90',
  'parley_sqlite_commits_total{synchronous="full"} 1',
  'process_cpu_seconds_total 4',
  'parley_turns 9',
].join('\n');

describe('bench labelsOf', () => {
  it('reads the labels of a sample key, escaped quotes and backslashes included', () => {
    expect(labelsOf('a{x="1",y="two words"}')).toEqual({ x: '1', y: 'two words' });
    expect(labelsOf('a{path="say \\"hi\\"",dir="C:\\\\"}')).toEqual({ path: 'say "hi"', dir: 'C:\\' });
    expect(labelsOf('plain_metric')).toEqual({});
    expect(labelsOf('a{text="two\\nlines",empty=""}')).toEqual({ text: 'two\nlines', empty: '' });
  });
});

describe('bench sumBy', () => {
  it('sums one metric by a label, keeping only the samples that match every given label', () => {
    expect(sumBy(GROUP, 'parley_turns_total', 'process', { outcome: 'succeeded' })).toEqual({ 0: 812, 1: 790 });
    expect(sumBy(GROUP, 'parley_turns_total', 'process')).toEqual({ 0: 815, 1: 790 });
  });

  it('leaves out samples without the label and metrics whose name only starts the same', () => {
    expect(sumBy(GROUP, 'parley_sqlite_commits_total', 'process')).toEqual({ 0: 107, 1: 90 });
    expect(sumBy(GROUP, 'parley_turns_total', 'outcome', { process: '1' })).toEqual({ succeeded: 790 });
    expect(sumBy(GROUP, 'process_cpu_seconds_total', 'process')).toEqual({});
    expect(sumBy(GROUP, 'parley_turns', 'process')).toEqual({});
  });
});
