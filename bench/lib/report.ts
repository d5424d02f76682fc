/** Result rows, the printed table, and the JSON + SVG files under bench/results/. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MachineInfo } from './proc.js';
import { barChart, type ChartSeries, type Panel } from './svg.js';

/** Which direction is better for a row's values. */
export type Better = 'lower' | 'higher' | 'none';

/** One table row: a metric for each target (null or absent when it does not apply). */
export interface Row {
  bench: string;
  metric: string;
  unit: string;
  better: Better;
  parley: number | null;
  baseline: number | null;
  /** The floor: bench/floor/server.ts, a bare relay on Parley's own libraries. */
  floor?: number | null | undefined;
  /** Portkey's open-source gateway (a peer a user could run instead). */
  portkey?: number | null | undefined;
  direct: number | null;
  /**
   * A target from the issue, and whether Parley's value meets it (null: not applicable in this mode).
   * `shown`: the value the summary prints with it, when it is not the `parley` column's (rows with
   * named columns), and its unit when not the row's (a ratio of two columns).
   */
  target?: { text: string; pass: boolean | null; shown?: { label: string; value: number | null; unit?: string } } | undefined;
  /** Flags, e.g. `≈ceiling` (within 10% of what the mock + client reach directly). */
  flags?: string[] | undefined;
  /**
   * A benchmark whose columns are not the five targets (scale: arms such as "Parley x2" or "floor x1")
   * names them here; the row's values are then in `values` (by column key), its `parley`, `baseline`
   * and `direct` are null, and it has no verdict against the baseline or Portkey.
   */
  columns?: Columns | undefined;
  /** The values of a row with named `columns`, by column key (null or absent where it does not apply). */
  values?: Record<string, number | null> | undefined;
}

/**
 * Named value columns for one benchmark's rows, in print order, and the ratio columns to print
 * (`values[num] / values[den]`, null like {@link ratio}). The printed table and the JSON carry the labels.
 */
export interface Columns {
  values: { key: string; label: string }[];
  ratios: { num: string; den: string; label: string }[];
}

export interface BenchOutcome {
  name: string;
  rows: Row[];
  /** The benchmark's parameters. */
  config: Record<string, unknown>;
  /** Everything measured (all percentiles, per level, per target). */
  results: Record<string, unknown>;
  charts: Panel[];
  /** The charts' bars, when they are not the five targets (named columns): key and legend label each. */
  series?: ChartSeries[];
  notes: string[];
}

/** P/B, P/F, P/K or P/D; null when either side is missing, zero, or the signs differ (ratio meaningless). */
export function ratio(a: number | null | undefined, b: number | null | undefined): number | null {
  if (a === null || a === undefined || b === null || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  if (a < 0 !== b < 0) return null;
  return a / b;
}

/** Parley against another column in this row: ahead, behind or tie (null: a value missing or no direction). */
export function versus(r: Row, other: number | null | undefined): 'ahead' | 'behind' | 'tie' | null {
  if (r.columns !== undefined) return null;
  if (r.better === 'none' || r.parley === null || other === null || other === undefined) return null;
  if (!Number.isFinite(r.parley) || !Number.isFinite(other)) return null;
  if (r.parley === other) return 'tie';
  return (r.better === 'lower' ? r.parley < other : r.parley > other) ? 'ahead' : 'behind';
}

/** Parley against the baseline in this row: ahead, behind or tie (null: no baseline value or no direction). */
export function versusBaseline(r: Row): 'ahead' | 'behind' | 'tie' | null {
  return versus(r, r.baseline);
}

/** Parley against Portkey in this row (null: Portkey has no value here, or the row has no direction). */
export function versusPortkey(r: Row): 'ahead' | 'behind' | 'tie' | null {
  return versus(r, r.portkey);
}

/** Number formatting: 3-4 significant digits, thousands grouped, '—' for missing. */
export function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (!Number.isFinite(v)) return v > 0 ? '∞' : '-∞';
  const a = Math.abs(v);
  // A difference of two equal sums of floating-point readings (CPU seconds) can be -1e-17: that is 0.
  if (a < 1e-9) return '0';
  if (a >= 10_000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  if (a === 0) return '0';
  return v.toFixed(3);
}

function fmtRatio(v: number | null): string {
  return v === null ? '—' : `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)}x`;
}

const verdict = (v: 'ahead' | 'behind' | 'tie' | null): string => (v === null ? '' : v === 'behind' ? 'BEHIND' : v);

/**
 * The printed table: every row with Parley, baseline, floor, Portkey, direct, the ratios P/B (Parley /
 * baseline), P/F (Parley / floor), P/K (Parley / Portkey), P/D (Parley / direct), the verdicts against the
 * baseline and Portkey, and the target. Rows with named {@link Columns} are printed in their own blocks,
 * each under a header of its column labels and ratios (one block per run of rows with the same columns).
 */
export function formatTable(rows: Row[]): string {
  const blocks: { columns: Columns | undefined; rows: Row[] }[] = [];
  for (const r of rows) {
    const last = blocks[blocks.length - 1];
    if (last !== undefined && sameColumns(last.columns, r.columns)) last.rows.push(r);
    else blocks.push({ columns: r.columns, rows: [r] });
  }
  return blocks.map((b) => (b.columns === undefined ? targetTable(b.rows) : columnTable(b.rows, b.columns))).join('\n\n');
}

function sameColumns(a: Columns | undefined, b: Columns | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

function targetText(r: Row): string {
  return r.target ? `${r.target.pass === null ? 'n/a' : r.target.pass ? 'PASS' : 'MISS'} ${r.target.text}` : '';
}

/** Aligned lines: numeric columns right-aligned. */
function aligned(header: string[], lines: string[][], numeric: Set<number>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(line)].join('\n');
}

function targetTable(rows: Row[]): string {
  const header = ['bench', 'metric', 'unit', 'Parley', 'baseline', 'floor', 'Portkey', 'direct', 'P/B', 'P/F', 'P/K', 'P/D', 'vs baseline', 'vs Portkey', 'target', 'flags'];
  const lines = rows.map((r) => [
    r.bench, r.metric, r.unit, fmt(r.parley), fmt(r.baseline), fmt(r.floor), fmt(r.portkey), fmt(r.direct),
    fmtRatio(ratio(r.parley, r.baseline)), fmtRatio(ratio(r.parley, r.floor)), fmtRatio(ratio(r.parley, r.portkey)), fmtRatio(ratio(r.parley, r.direct)),
    verdict(versusBaseline(r)), verdict(versusPortkey(r)),
    targetText(r), (r.flags ?? []).join(' '),
  ]);
  return aligned(header, lines, new Set([3, 4, 5, 6, 7, 8, 9, 10, 11]));
}

function columnTable(rows: Row[], c: Columns): string {
  const header = ['bench', 'metric', 'unit', ...c.values.map((v) => v.label), ...c.ratios.map((x) => x.label), 'target', 'flags'];
  const lines = rows.map((r) => [
    r.bench, r.metric, r.unit,
    ...c.values.map((v) => fmt(r.values?.[v.key])),
    ...c.ratios.map((x) => fmtRatio(ratio(r.values?.[x.num], r.values?.[x.den]))),
    targetText(r), (r.flags ?? []).join(' '),
  ]);
  const n = c.values.length + c.ratios.length;
  return aligned(header, lines, new Set(Array.from({ length: n }, (_, i) => i + 3)));
}

/** A row with named columns as the JSON shows it: its values and ratios by label (see {@link Columns}). */
export function labelledValues(r: Row): { by_label: Record<string, number | null>; ratios: Record<string, number | null> } | undefined {
  const c = r.columns;
  if (c === undefined) return undefined;
  return {
    by_label: Object.fromEntries(c.values.map((v) => [v.label, r.values?.[v.key] ?? null])),
    ratios: Object.fromEntries(c.ratios.map((x) => [x.label, ratio(r.values?.[x.num], r.values?.[x.den])])),
  };
}

/** Writes `<dir>/<name>.json` and `<dir>/<name>.svg`; returns their paths. */
export function writeOutcome(dir: string, outcome: BenchOutcome, meta: {
  machine: MachineInfo; mode: 'smoke' | 'full'; startedAt: string; finishedAt: string; argv: string[];
}): { json: string; svg: string } {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, `${outcome.name}.json`);
  const svg = join(dir, `${outcome.name}.svg`);
  const rows = outcome.rows.map((r) => ({
    ...r,
    // Named columns: the values by key (the top-level `columns` maps keys to labels), and by label.
    ...(r.columns === undefined ? {} : { columns: undefined, values_by_label: labelledValues(r)!.by_label, ratios_by_label: labelledValues(r)!.ratios }),
    floor: r.floor ?? null,
    portkey: r.portkey ?? null,
    ratio_parley_baseline: ratio(r.parley, r.baseline),
    ratio_parley_floor: ratio(r.parley, r.floor),
    ratio_parley_portkey: ratio(r.parley, r.portkey),
    ratio_parley_direct: ratio(r.parley, r.direct),
    versus_baseline: versusBaseline(r),
    versus_portkey: versusPortkey(r),
  }));
  writeFileSync(json, `${JSON.stringify({
    name: outcome.name, mode: meta.mode, started_at: meta.startedAt, finished_at: meta.finishedAt, argv: meta.argv,
    machine: meta.machine, config: outcome.config, notes: outcome.notes,
    ...(outcome.rows.some((r) => r.columns !== undefined) ? { columns: outcome.rows.find((r) => r.columns !== undefined)!.columns } : {}),
    rows, results: outcome.results,
  }, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
  writeFileSync(svg, barChart(`${outcome.name} (${meta.mode}, ${meta.machine.cpus.count}x ${meta.machine.cpus.model}, node ${meta.machine.node}, ${meta.machine.git_commit})`, outcome.charts, outcome.series));
  return { json, svg };
}
