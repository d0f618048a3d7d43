/**
 * The soak bench's picture: per entry point, its series over time side by side (throughput over
 * the reference's and CPU per operation per interval, RSS per sample), as an SVG rendered to PNG
 * by resvg (no browser needed).
 */
import { Resvg } from '@resvg/resvg-js';

export interface ChartSeries {
  /** Points as [seconds since the soak of this entry point began, value]. */
  points: ReadonlyArray<readonly [number, number]>;
  label: string;
  unit: string;
}

export interface ChartRow {
  title: string;
  /** One panel each, left to right. */
  panels: readonly ChartSeries[];
}

const WIDTH = 1500;
const ROW_HEIGHT = 210;
const GAP = 60;
const MARGIN = { left: 70, top: 40, bottom: 34 };
const COLOURS = ['#1f77b4', '#2ca02c', '#d62728', '#9467bd'];

export function soakChartPng(title: string, rows: readonly ChartRow[]): Buffer {
  const height = 50 + rows.length * ROW_HEIGHT;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="DejaVu Sans, sans-serif">`, `<rect width="${WIDTH}" height="${height}" fill="white"/>`];
  parts.push(`<text x="${WIDTH / 2}" y="28" font-size="18" text-anchor="middle">${escape(title)}</text>`);
  const columns = Math.max(1, ...rows.map((row) => row.panels.length));
  const panelWidth = (WIDTH - GAP * columns) / columns;
  rows.forEach((row, index) => {
    const top = 50 + index * ROW_HEIGHT;
    row.panels.forEach((series, column) => {
      const title = column === 0 ? `${row.title}: ${series.label}` : series.label;
      parts.push(panel(series, title, column * (panelWidth + GAP), top, panelWidth, COLOURS[column % COLOURS.length]));
    });
  });
  parts.push('</svg>');
  return new Resvg(parts.join(''), { font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' }, background: 'white' }).render().asPng();
}

function panel(series: ChartSeries, title: string, left: number, top: number, width: number, colour: string): string {
  const x0 = left + MARGIN.left;
  const y0 = top + MARGIN.top;
  const plotWidth = width - MARGIN.left;
  const plotHeight = ROW_HEIGHT - MARGIN.top - MARGIN.bottom;
  const xs = series.points.map(([x]) => x);
  const ys = series.points.map(([, y]) => y);
  const xMax = Math.max(1, ...xs);
  const yMax = niceCeiling(Math.max(1, ...ys) * 1.1);
  const px = (x: number) => x0 + (x / xMax) * plotWidth;
  const py = (y: number) => y0 + plotHeight - (y / yMax) * plotHeight;
  const out = [`<text x="${x0}" y="${top + 24}" font-size="13">${escape(title)}</text>`];
  out.push(`<rect x="${x0}" y="${y0}" width="${plotWidth}" height="${plotHeight}" fill="none" stroke="#999"/>`);
  for (const fraction of [0, 0.5, 1]) {
    const y = yMax * fraction;
    out.push(`<line x1="${x0}" x2="${x0 + plotWidth}" y1="${py(y)}" y2="${py(y)}" stroke="#eee"/>`);
    out.push(`<text x="${x0 - 6}" y="${py(y) + 4}" font-size="11" text-anchor="end">${format(y)}</text>`);
  }
  out.push(`<text x="${x0 - 52}" y="${y0 + plotHeight / 2}" font-size="11" transform="rotate(-90 ${x0 - 52} ${y0 + plotHeight / 2})" text-anchor="middle">${escape(series.unit)}</text>`);
  for (const fraction of [0, 0.5, 1]) out.push(`<text x="${px(xMax * fraction)}" y="${y0 + plotHeight + 15}" font-size="11" text-anchor="middle">${format(xMax * fraction)} s</text>`);
  if (series.points.length > 0) {
    out.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${series.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ')}"/>`);
    for (const [x, y] of series.points) out.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="2.5" fill="${colour}"/>`);
  }
  return out.join('');
}

function niceCeiling(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  return Math.ceil(value / magnitude) * magnitude;
}

function format(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)}k` : String(Math.round(value));
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
