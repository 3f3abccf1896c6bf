/* global document */
// The daily chart, drawn as SVG by hand: counts as lines on the left axis, revenue as bars on the
// right axis. Colours come from classes in dashboard.css (the CSP allows no inline style attributes).
import { attachTooltip } from './chart-tooltip.js';

const SVG = 'http://www.w3.org/2000/svg';
const HEIGHT = 300;
const MARGIN = { top: 16, right: 64, bottom: 30, left: 48 };

/** Series in drawing order: bars first so the lines stay on top. */
export const SERIES = [
  { key: 'revenue', label: 'Revenue', kind: 'bar', axis: 'money' },
  { key: 'clicks', label: 'Clicks', kind: 'line', axis: 'count' },
  { key: 'leads', label: 'Leads', kind: 'line', axis: 'count' },
  { key: 'conversions', label: 'Conversions', kind: 'line', axis: 'count' },
];

function el(name, attributes = {}, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  parent?.append(node);
  return node;
}

/** A round step (1, 2, 2.5, 5 x 10^n) of at least raw; whole numbers when counting. */
export function niceStep(raw, integer = false) {
  if (!(raw > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw * (1 - 1e-9)) ?? 10 * magnitude;
  return integer ? Math.max(1, Math.ceil(step)) : step;
}

const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const dayYearFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
const longDayFormat = new Intl.DateTimeFormat(undefined, { weekday: 'short', month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
const utc = (date) => new Date(`${date}T00:00:00Z`);

/** Where everything goes: the plot area, the two axes' scales (sharing grid lines) and each day's band. */
function layout(width, rows, hidden) {
  const plot = { left: MARGIN.left, top: MARGIN.top, width: width - MARGIN.left - MARGIN.right, height: HEIGHT - MARGIN.top - MARGIN.bottom };
  const bottom = plot.top + plot.height;
  const shown = SERIES.filter((s) => !hidden.has(s.key));
  const countMax = Math.max(0, ...rows.flatMap((r) => shown.filter((s) => s.axis === 'count').map((s) => r[s.key])));
  const moneyMax = shown.some((s) => s.axis === 'money') ? Math.max(0, ...rows.map((r) => r.revenue)) : 0;
  // Both axes share the grid lines: the same number of divisions, each with its own round step.
  const countStep = niceStep(countMax / 4, true);
  const divisions = Math.max(countMax > 0 ? 2 : 4, Math.ceil(countMax / countStep));
  const moneyStep = niceStep(moneyMax / divisions);
  const countTop = countStep * divisions;
  const moneyTop = moneyStep * divisions;
  const band = rows.length ? plot.width / rows.length : plot.width;
  return {
    width, plot, bottom, shown, countMax, moneyMax, countStep, moneyStep, divisions, band,
    yCount: (v) => bottom - (v / countTop) * plot.height,
    yMoney: (v) => bottom - (v / moneyTop) * plot.height,
    xAt: (i) => plot.left + band * (i + 0.5),
  };
}

/** Grid lines with both axes' labels, and as many day labels as fit, evenly spread, always the last day. */
function drawGrid(svg, frame, rows, { formatMoney, formatCount }) {
  const { plot, bottom, divisions, countStep, moneyStep, yCount, xAt } = frame;
  const grid = el('g', { class: 'grid' }, svg);
  for (let k = 0; k <= divisions; k++) {
    const y = yCount(k * countStep);
    el('line', { x1: plot.left, x2: plot.left + plot.width, y1: y, y2: y, class: k === 0 ? 'baseline' : 'gridline' }, grid);
    el('text', { x: plot.left - 8, y: y + 4, 'text-anchor': 'end', class: 'axis-label' }, grid).textContent = formatCount(k * countStep);
    if (frame.shown.some((s) => s.axis === 'money')) {
      el('text', { x: plot.left + plot.width + 8, y: y + 4, 'text-anchor': 'start', class: 'axis-label money' }, grid).textContent =
        formatMoney(k * moneyStep, { compact: true });
    }
  }
  const fit = Math.max(1, Math.floor(plot.width / 72));
  const every = Math.max(1, Math.ceil(rows.length / fit));
  const multiYear = rows.length > 0 && rows[0].date.slice(0, 4) !== rows[rows.length - 1].date.slice(0, 4);
  rows.forEach((row, i) => {
    if ((rows.length - 1 - i) % every !== 0) return;
    el('text', { x: xAt(i), y: bottom + 20, 'text-anchor': 'middle', class: 'axis-label' }, grid).textContent = (
      multiYear ? dayYearFormat : dayFormat
    ).format(utc(row.date));
  });
}

/** Revenue bars, then count lines with dots while the days are few enough to tell apart. */
function drawSeries(svg, frame, rows, hidden) {
  const { bottom, band, yCount, yMoney, xAt } = frame;
  if (!hidden.has('revenue')) {
    const bars = el('g', { class: 'series-revenue bars' }, svg);
    const barWidth = Math.max(1, Math.min(28, band * 0.62));
    rows.forEach((row, i) => {
      if (!(row.revenue > 0)) return;
      const y = yMoney(row.revenue);
      el('rect', { x: xAt(i) - barWidth / 2, y, width: barWidth, height: bottom - y, rx: Math.min(3, barWidth / 3) }, bars);
    });
  }
  for (const series of frame.shown.filter((s) => s.kind === 'line')) {
    const group = el('g', { class: `series-${series.key} line` }, svg);
    const points = rows.map((row, i) => `${xAt(i).toFixed(1)},${yCount(row[series.key]).toFixed(1)}`);
    if (rows.length > 1) el('polyline', { points: points.join(' '), fill: 'none' }, group);
    if (rows.length <= 45) {
      rows.forEach((row, i) => el('circle', { cx: xAt(i), cy: yCount(row[series.key]), r: rows.length <= 14 ? 3.5 : 2.5 }, group));
    }
  }
}

/** Hover targets, one per day, carrying that day's numbers. */
function drawDays(svg, frame, rows) {
  const { plot, band } = frame;
  const days = el('g', { class: 'days' }, svg);
  rows.forEach((row, i) => {
    el('rect', {
      x: plot.left + band * i,
      y: plot.top,
      width: band,
      height: plot.height,
      class: 'day',
      'data-date': row.date,
      'data-clicks': row.clicks,
      'data-leads': row.leads,
      'data-conversions': row.conversions,
      'data-revenue': row.revenue,
    }, days);
  });
}

/** A day's figures for the tooltip: its date, then each series (revenue last, as in the legend). */
function dayNodes(row, { formatMoney, formatCount }) {
  const title = document.createElement('strong');
  title.textContent = longDayFormat.format(utc(row.date));
  const lines = SERIES.slice(1)
    .concat(SERIES[0])
    .map((s) => {
      const line = document.createElement('span');
      line.className = `tip series-${s.key}`;
      line.textContent = `${s.label}: ${s.axis === 'money' ? formatMoney(row[s.key]) : formatCount(row[s.key])}`;
      return line;
    });
  return [title, ...lines];
}

/**
 * Draws rows ({ date, clicks, leads, conversions, revenue }) into container, replacing what was
 * there. hidden: the series keys switched off in the legend. Each day carries its numbers in
 * data-* attributes on its hover target, and the tooltip shows them.
 */
export function drawChart(container, rows, { hidden = new Set(), formatMoney, formatCount }) {
  container.replaceChildren();
  const frame = layout(Math.max(320, Math.floor(container.clientWidth || 640)), rows, hidden);
  const { width, plot, bottom } = frame;
  const first = rows[0]?.date;
  const last = rows[rows.length - 1]?.date;
  const svg = el('svg', {
    viewBox: `0 0 ${width} ${HEIGHT}`,
    width,
    height: HEIGHT,
    role: 'img',
    tabindex: 0,
    'aria-label': rows.length
      ? `Daily clicks, leads, conversions and revenue from ${longDayFormat.format(utc(first))} to ${longDayFormat.format(utc(last))}`
      : 'No days in this period',
    'data-days': rows.length,
  });
  container.append(svg);

  drawGrid(svg, frame, rows, { formatMoney, formatCount });
  drawSeries(svg, frame, rows, hidden);
  if (rows.length > 0 && frame.countMax === 0 && frame.moneyMax === 0) {
    el('text', { x: plot.left + plot.width / 2, y: plot.top + plot.height / 2, 'text-anchor': 'middle', class: 'empty-label' }, svg).textContent =
      'No activity in this period yet';
  }
  const guide = el('line', { y1: plot.top, y2: bottom, class: 'guide', visibility: 'hidden' }, svg);
  drawDays(svg, frame, rows);
  attachTooltip({
    container,
    svg,
    guide,
    width,
    days: rows.length,
    xAt: frame.xAt,
    dayAt: (x) => Math.floor((x - plot.left) / frame.band),
    content: (i) => dayNodes(rows[i], { formatMoney, formatCount }),
  });
}
