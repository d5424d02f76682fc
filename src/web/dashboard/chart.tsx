/**
 * A stacked bar chart drawn by Chartist (SVG, 7.5 KiB gzipped; chosen against the dashboard's 60 KiB
 * budget, see README "Dashboard"). Chartist writes a few inline `style` attributes; under the dashboard's
 * Content-Security-Policy (style-src 'self', no inline styles) the browser refuses those, so they are set
 * through the CSSOM instead, which the policy allows.
 */
import { BarChart, Svg } from 'chartist';
import { useEffect, useRef } from 'preact/hooks';

type Attributes = Record<string, string | number | undefined>;
const originalAttr = Svg.prototype.attr as (this: Svg, attributes: Attributes | string, ns?: string) => unknown;
(Svg.prototype as unknown as { attr: typeof originalAttr }).attr = function attr(this: Svg, attributes: Attributes | string, ns?: string) {
  if (typeof attributes === 'object' && attributes !== null && typeof attributes.style === 'string') {
    const { style, ...rest } = attributes;
    (this.getNode() as SVGElement).style.cssText += style as string;
    return originalAttr.call(this, rest, ns);
  }
  return originalAttr.call(this, attributes, ns);
};

/** One series of the chart: its name (in the legend) and a value per label. */
export interface Series {
  name: string;
  className: string;
  values: number[];
}

/**
 * Bars per label, the series stacked, in a `role="img"` box named `label` (the numbers themselves go in a
 * table beside it, for screen readers and copying). Redrawn when the data change or the box resizes.
 */
export function StackedBars({ label, labels, series, showEvery = 1 }: { label: string; labels: string[]; series: Series[]; showEvery?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<BarChart | null>(null);
  useEffect(() => {
    const data = { labels: labels.map((l, i) => (i % showEvery === 0 ? l : '')), series: series.map((s) => ({ name: s.name, className: s.className, data: s.values })) };
    const options = {
      stackBars: true, height: '260px', chartPadding: { top: 12, right: 8, bottom: 4, left: 12 },
      axisY: { onlyInteger: true, offset: 56, labelInterpolationFnc: (v: string | number) => Number(v).toLocaleString() },
      axisX: { showGrid: false },
    };
    if (chart.current === null) chart.current = new BarChart(box.current!, data, options);
    else chart.current.update(data, options);
  }, [labels, series, showEvery]);
  useEffect(() => () => { chart.current?.detach(); }, []);
  return <div ref={box} class="chart" role="img" aria-label={label} />;
}
