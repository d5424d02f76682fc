/** A hand-written SVG grouped bar chart: one panel per measurement, one bar per target. No library. */

export type Series = 'parley' | 'baseline' | 'floor' | 'portkey' | 'direct';

export interface Panel {
  title: string;
  unit: string;
  /** Values by series key: the five targets, or the keys of the chart's own {@link ChartSeries}. */
  groups: { label: string; values: Partial<Record<string, number | null>> }[];
}

/** One bar of every group, when a chart's bars are not the five targets: its key in the values, its legend label. */
export interface ChartSeries {
  key: string;
  label: string;
}

const COLORS: Record<Series, string> = { parley: '#2563eb', baseline: '#f97316', floor: '#16a34a', portkey: '#a21caf', direct: '#6b7280' };
const TARGET_SERIES: ChartSeries[] = (['parley', 'baseline', 'floor', 'portkey', 'direct'] as const).map((s) => ({ key: s, label: s === 'direct' ? 'direct upstream' : s }));
/** Colours of named series, in order. */
const PALETTE = ['#2563eb', '#93c5fd', '#16a34a', '#86efac', '#6b7280', '#f97316', '#a21caf'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function label(v: number): string {
  const a = Math.abs(v);
  if (a >= 10_000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

/** Rough width of one character of the 11 px sans-serif axis labels, px. */
const CHAR_W = 6.2;

/**
 * Panels stacked vertically; each has its own linear axis from min(0, values) to max(0, values). Group
 * labels wider than their group (at about {@link CHAR_W} px a character) are written vertically, reading
 * upwards, and their panel grows by their length, so they overlap neither each other nor the next panel.
 */
export function barChart(title: string, panels: Panel[], series?: ChartSeries[]): string {
  const bars = series ?? TARGET_SERIES;
  const color = (i: number): string => (series === undefined ? COLORS[TARGET_SERIES[i]!.key as Series] : PALETTE[i % PALETTE.length]!);
  const width = 960;
  const panelBaseH = 260;
  const top = 40;
  const left = 70;
  const right = 20;
  const plotH = 170;
  const plotW = width - left - right;
  const layout = panels.map((p) => {
    const groupW = plotW / Math.max(1, p.groups.length);
    const longest = Math.max(0, ...p.groups.map((g) => g.label.length)) * CHAR_W;
    const vertical = longest > groupW - 6;
    return { groupW, vertical, height: panelBaseH + (vertical ? Math.ceil(longest) : 0) };
  });
  const offsets: number[] = [];
  let sum = 0;
  for (const l of layout) { offsets.push(sum); sum += l.height; }
  const height = top + sum + 30;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="100%" height="100%" fill="white"/>`);
  out.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>`);
  // Legend
  const legendW = Math.max(100, ...bars.map((s) => 24 + s.label.length * CHAR_W));
  bars.forEach((s, i) => {
    const x = width - right - bars.length * legendW + i * legendW;
    out.push(`<rect x="${x}" y="${height - 22}" width="12" height="12" fill="${color(i)}"/><text x="${x + 16}" y="${height - 12}">${esc(s.label)}</text>`);
  });
  panels.forEach((p, pi) => {
    const y0 = top + offsets[pi]!;
    const { groupW, vertical } = layout[pi]!;
    out.push(`<text x="${left}" y="${y0 + 16}" font-size="12" font-weight="bold">${esc(p.title)} (${esc(p.unit)})</text>`);
    const vals = p.groups.flatMap((g) => bars.map((s) => g.values[s.key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v)));
    const hi = Math.max(0, ...vals);
    const lo = Math.min(0, ...vals);
    const span = hi - lo || 1;
    const plotTop = y0 + 30;
    const yOf = (v: number) => plotTop + ((hi - v) / span) * plotH;
    const zeroY = yOf(0);
    out.push(`<line x1="${left}" y1="${zeroY}" x2="${width - right}" y2="${zeroY}" stroke="#111"/>`);
    out.push(`<line x1="${left}" y1="${plotTop}" x2="${left}" y2="${plotTop + plotH}" stroke="#999"/>`);
    for (const t of [lo, (lo + hi) / 2, hi]) {
      out.push(`<text x="${left - 6}" y="${yOf(t) + 4}" text-anchor="end" fill="#555">${label(t)}</text>`);
      out.push(`<line x1="${left}" y1="${yOf(t)}" x2="${width - right}" y2="${yOf(t)}" stroke="#eee"/>`);
    }
    const barW = Math.min(40, (groupW - 16) / bars.length);
    p.groups.forEach((g, gi) => {
      const gx = left + gi * groupW + (groupW - barW * bars.length) / 2;
      bars.forEach((s, si) => {
        const v = g.values[s.key];
        const x = gx + si * barW;
        if (typeof v !== 'number' || !Number.isFinite(v)) {
          if (s.key in g.values) out.push(`<text x="${x + barW / 2}" y="${zeroY - 4}" text-anchor="middle" fill="#999">n/a</text>`);
          return;
        }
        const y = Math.min(yOf(v), zeroY);
        const h = Math.max(1, Math.abs(yOf(v) - zeroY));
        out.push(`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${color(si)}"><title>${esc(`${g.label} ${s.label}: ${label(v)} ${p.unit}`)}</title></rect>`);
        const ty = v >= 0 ? y - 3 : y + h + 11;
        out.push(`<text x="${(x + barW / 2 - 1).toFixed(1)}" y="${ty.toFixed(1)}" text-anchor="middle" font-size="9">${label(v)}</text>`);
      });
      const lx = left + gi * groupW + groupW / 2;
      out.push(vertical
        ? `<text x="${(lx + 4).toFixed(1)}" y="${plotTop + plotH + 8}" text-anchor="end" transform="rotate(-90 ${(lx + 4).toFixed(1)} ${plotTop + plotH + 8})">${esc(g.label)}</text>`
        : `<text x="${lx}" y="${plotTop + plotH + 16}" text-anchor="middle">${esc(g.label)}</text>`);
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
