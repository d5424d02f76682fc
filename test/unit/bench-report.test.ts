/**
 * The bench's printed table (bench/lib/report.ts): rows of the five targets, and rows with named columns
 * (the scale benchmark's arms), each block under its own header, with its own ratio columns.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fmt, formatTable, labelledValues, versusBaseline, writeOutcome, type Columns, type Row } from '../../bench/lib/report.js';

const ARMS: Columns = {
  values: [{ key: 'one', label: 'Parley x1' }, { key: 'two', label: 'Parley x2' }, { key: 'direct', label: 'direct' }],
  ratios: [{ num: 'two', den: 'one', label: 'Px2/Px1' }],
};

const armRow = (metric: string, values: Record<string, number | null>): Row => ({
  bench: 'scale', metric, unit: 'turns/s', better: 'higher', parley: null, baseline: null, direct: null, columns: ARMS, values,
});

const targetRow: Row = { bench: 'short-turns', metric: 'short turns/s', unit: 'turns/s', better: 'higher', parley: 300, baseline: 100, floor: 600, portkey: 0, direct: 1000 };

/** The cells of the table line whose metric is `metric` (split on runs of two or more spaces). */
function cells(table: string, metric: string): string[] {
  const line = table.split('\n').find((l) => l.includes(metric));
  if (line === undefined) throw new Error(`no line for ${metric} in\n${table}`);
  return line.trim().split(/\s{2,}/);
}

describe('bench report: named columns', () => {
  it('prints a block of named columns under its own header, with its ratio', () => {
    const table = formatTable([armRow('short turns per second', { one: 200, two: 300, direct: 1000 })]);
    const header = table.split('\n')[0]!.trim().split(/\s{2,}/);
    expect(header).toEqual(['bench', 'metric', 'unit', 'Parley x1', 'Parley x2', 'direct', 'Px2/Px1', 'target', 'flags']);
    expect(cells(table, 'short turns per second')).toEqual(['scale', 'short turns per second', 'turns/s', '200', '300', '1000', '1.50x']);
  });

  it('starts a new block, with its own header, where the columns change', () => {
    const table = formatTable([targetRow, armRow('per arm', { one: 1, two: 2, direct: null }), targetRow]);
    const headers = table.split('\n').filter((l) => l.startsWith('bench '));
    expect(headers).toHaveLength(3);
    expect(headers[0]).toContain('baseline');
    expect(headers[1]).toContain('Parley x2');
    expect(headers[1]).not.toContain('baseline');
    expect(cells(table, 'per arm')).toEqual(['scale', 'per arm', 'turns/s', '1.00', '2.00', '—', '2.00x']);
  });

  it('keeps consecutive rows with equal columns in one block', () => {
    const copy: Columns = JSON.parse(JSON.stringify(ARMS)) as Columns;
    const table = formatTable([armRow('a', { one: 1, two: 1, direct: 1 }), { ...armRow('b', { one: 1, two: 1, direct: 1 }), columns: copy }]);
    expect(table.split('\n').filter((l) => l.startsWith('bench '))).toHaveLength(1);
  });

  it('gives no verdict against the baseline for a row of named columns', () => {
    expect(versusBaseline(targetRow)).toBe('ahead');
    expect(versusBaseline({ ...armRow('x', { one: 1, two: 2, direct: 3 }), parley: 2, baseline: 1 })).toBeNull();
  });

  it('prints the target of a named-column row', () => {
    const r = armRow('short turns per second', { one: 200, two: 300, direct: 1000 });
    r.target = { text: '>= 1.3x', pass: true, shown: { label: 'Parley x2 / Parley x1', value: 1.5 } };
    expect(cells(formatTable([r]), 'short turns per second')).toContain('PASS >= 1.3x');
  });

  it('writes the values and ratios by label into the JSON, with the columns', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-report-'));
    try {
      const files = writeOutcome(dir, {
        name: 'columns-test', rows: [armRow('short turns per second', { one: 200, two: 300, direct: null })], config: {}, results: {}, charts: [], notes: [],
        series: ARMS.values.map((v) => ({ key: v.key, label: v.label })),
      }, {
        machine: { cpus: { model: 'test', count: 1 }, total_mem_bytes: 1, node: 'v20', platform: 'linux', kernel: '6', git_commit: 'abc', git_dirty: false, open_files_limit: '1024' },
        mode: 'smoke', startedAt: 'a', finishedAt: 'b', argv: [],
      });
      const json = JSON.parse(readFileSync(files.json, 'utf8')) as { columns: Columns; rows: Array<{ values_by_label: Record<string, number | null>; ratios_by_label: Record<string, number | null> }> };
      expect(json.columns).toEqual(ARMS);
      expect(json.rows[0]!.values_by_label).toEqual({ 'Parley x1': 200, 'Parley x2': 300, direct: null });
      expect(json.rows[0]!.ratios_by_label).toEqual({ 'Px2/Px1': 1.5 });
      const svg = readFileSync(files.svg, 'utf8');
      expect(svg).toContain('>Parley x2</text>');
      expect(svg).not.toContain('>baseline</text>');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bench report: layout', () => {
  it('aligns names left and numbers and ratios right, each column as wide as its widest cell', () => {
    const table = formatTable([
      armRow('a', { one: 1, two: 2000, direct: null }),
      armRow('a much longer metric', { one: 12_345, two: 3, direct: 0.5 }),
    ]);
    const lines = table.split('\n');
    expect(lines).toHaveLength(4);
    const [header, rule, first, second] = lines as [string, string, string, string];
    // Left-aligned text: the unit column starts at the same place on every line.
    expect(first.indexOf('turns/s')).toBe(header.indexOf('unit'));
    expect(second.indexOf('turns/s')).toBe(header.indexOf('unit'));
    // Right-aligned values and ratios (their headers too): every cell of a column ends where its header ends.
    const end = (line: string, cell: string) => line.indexOf(cell) + cell.length;
    expect(end(first, ' 1.00')).toBe(end(header, 'Parley x1'));
    expect(end(second, '12,345')).toBe(end(header, 'Parley x1'));
    expect(end(first, ' 2000 ')).toBe(end(header, 'Parley x2') + 1);
    expect(end(second, ' 3.00')).toBe(end(header, 'Parley x2'));
    expect(end(first, '2000x')).toBe(end(header, 'Px2/Px1'));
    expect(end(second, '0.00x')).toBe(end(header, 'Px2/Px1'));
    // The rule under the header: one run of dashes per column, as wide as the widest cell of that column.
    expect(rule.split('  ').map((d) => d.length)).toEqual([5, 20, 7, 9, 9, 6, 7, 6, 5]);
  });

  it('prints the five targets\' columns, ratios and verdicts for ordinary rows', () => {
    const table = formatTable([{ ...targetRow, target: { text: '>= 3x the baseline', pass: true }, flags: ['≈ceiling(floor)', 'host-busy(parley)'] }]);
    expect(table.split('\n')[0]!.trim().split(/\s{2,}/)).toEqual(['bench', 'metric', 'unit', 'Parley', 'baseline', 'floor', 'Portkey', 'direct', 'P/B', 'P/F', 'P/K', 'P/D', 'vs baseline', 'vs Portkey', 'target', 'flags']);
    expect(cells(table, 'short turns/s')).toEqual([
      'short-turns', 'short turns/s', 'turns/s', '300', '100', '600', '0', '1000', '3.00x', '0.50x', '—', '0.30x', 'ahead', 'ahead', 'PASS >= 3x the baseline', '≈ceiling(floor) host-busy(parley)',
    ]);
  });

  it('keeps consecutive rows without named columns in one block, and says MISS and n/a for targets', () => {
    const table = formatTable([
      { ...targetRow, metric: 'first', target: { text: 'x', pass: false } },
      { ...targetRow, metric: 'second', target: { text: 'y', pass: null } },
    ]);
    expect(table.split('\n').filter((l) => l.startsWith('bench '))).toHaveLength(1);
    expect(cells(table, 'first')).toContain('MISS x');
    expect(cells(table, 'second')).toContain('n/a y');
  });

  it('prints a row of named columns without values as missing values', () => {
    const r: Row = { ...armRow('empty', {}), values: undefined };
    expect(cells(formatTable([r]), 'empty')).toEqual(['scale', 'empty', 'turns/s', '—', '—', '—', '—']);
    expect(labelledValues(r)).toEqual({ by_label: { 'Parley x1': null, 'Parley x2': null, direct: null }, ratios: { 'Px2/Px1': null } });
    expect(labelledValues(targetRow)).toBeUndefined();
  });
});

describe('bench report: numbers', () => {
  it('prints a floating-point remainder next to zero as 0, and small values with three decimals', () => {
    expect(fmt(-1e-17)).toBe('0');
    expect(fmt(0.0004)).toBe('0.000');
    expect(fmt(-0.25)).toBe('-0.250');
  });
});
