/* global document */
// The daily chart, drawn as SVG by hand: counts as lines on the left axis, revenue as bars on the
// right axis. Colours come from classes in dashboard.css (the CSP allows no inline style attributes).

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

/**
 * Draws rows ({ date, clicks, leads, conversions, revenue }) into container, replacing what was
 * there. hidden: the series keys switched off in the legend. Each day carries its numbers in
 * data-* attributes on its hover target, and the tooltip shows them.
 */
export function drawChart(container, rows, { hidden = new Set(), formatMoney, formatCount }) {
  container.replaceChildren();
  const width = Math.max(320, Math.floor(container.clientWidth || 640));
  const plot = { left: MARGIN.left, top: MARGIN.top, width: width - MARGIN.left - MARGIN.right, height: HEIGHT - MARGIN.top - MARGIN.bottom };
  const bottom = plot.top + plot.height;
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

  const shown = SERIES.filter((s) => !hidden.has(s.key));
  const countMax = Math.max(0, ...rows.flatMap((r) => shown.filter((s) => s.axis === 'count').map((s) => r[s.key])));
  const moneyMax = shown.some((s) => s.axis === 'money') ? Math.max(0, ...rows.map((r) => r.revenue)) : 0;
  // Both axes share the grid lines: the same number of divisions, each with its own round step.
  const countStep = niceStep(countMax / 4, true);
  const divisions = Math.max(countMax > 0 ? 2 : 4, Math.ceil(countMax / countStep));
  const moneyStep = niceStep(moneyMax / divisions);
  const countTop = countStep * divisions;
  const moneyTop = moneyStep * divisions;
  const yCount = (v) => bottom - (v / countTop) * plot.height;
  const yMoney = (v) => bottom - (v / moneyTop) * plot.height;
  const band = rows.length ? plot.width / rows.length : plot.width;
  const xAt = (i) => plot.left + band * (i + 0.5);

  // Grid and the two axes.
  const grid = el('g', { class: 'grid' }, svg);
  for (let k = 0; k <= divisions; k++) {
    const y = yCount(k * countStep);
    el('line', { x1: plot.left, x2: plot.left + plot.width, y1: y, y2: y, class: k === 0 ? 'baseline' : 'gridline' }, grid);
    el('text', { x: plot.left - 8, y: y + 4, 'text-anchor': 'end', class: 'axis-label' }, grid).textContent = formatCount(k * countStep);
    if (shown.some((s) => s.axis === 'money')) {
      el('text', { x: plot.left + plot.width + 8, y: y + 4, 'text-anchor': 'start', class: 'axis-label money' }, grid).textContent =
        formatMoney(k * moneyStep, { compact: true });
    }
  }
  // Day labels: as many as fit, evenly spread, always the last day.
  const fit = Math.max(1, Math.floor(plot.width / 72));
  const every = Math.max(1, Math.ceil(rows.length / fit));
  const multiYear = rows.length > 0 && first.slice(0, 4) !== last.slice(0, 4);
  rows.forEach((row, i) => {
    if ((rows.length - 1 - i) % every !== 0) return;
    el('text', { x: xAt(i), y: bottom + 20, 'text-anchor': 'middle', class: 'axis-label' }, grid).textContent = (
      multiYear ? dayYearFormat : dayFormat
    ).format(utc(row.date));
  });

  // Revenue bars.
  if (!hidden.has('revenue')) {
    const bars = el('g', { class: 'series-revenue bars' }, svg);
    const barWidth = Math.max(1, Math.min(28, band * 0.62));
    rows.forEach((row, i) => {
      if (!(row.revenue > 0)) return;
      const y = yMoney(row.revenue);
      el('rect', { x: xAt(i) - barWidth / 2, y, width: barWidth, height: bottom - y, rx: Math.min(3, barWidth / 3) }, bars);
    });
  }
  // Count lines, with dots while the days are few enough to tell apart.
  for (const series of shown.filter((s) => s.kind === 'line')) {
    const group = el('g', { class: `series-${series.key} line` }, svg);
    const points = rows.map((row, i) => `${xAt(i).toFixed(1)},${yCount(row[series.key]).toFixed(1)}`);
    if (rows.length > 1) el('polyline', { points: points.join(' '), fill: 'none' }, group);
    if (rows.length <= 45) {
      rows.forEach((row, i) => el('circle', { cx: xAt(i), cy: yCount(row[series.key]), r: rows.length <= 14 ? 3.5 : 2.5 }, group));
    }
  }

  if (rows.length > 0 && countMax === 0 && moneyMax === 0) {
    el('text', { x: plot.left + plot.width / 2, y: plot.top + plot.height / 2, 'text-anchor': 'middle', class: 'empty-label' }, svg).textContent =
      'No activity in this period yet';
  }

  // Hover targets, one per day, carrying that day's numbers.
  const guide = el('line', { y1: plot.top, y2: bottom, class: 'guide', visibility: 'hidden' }, svg);
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

  const tooltip = document.createElement('div');
  tooltip.className = 'tooltip';
  tooltip.hidden = true;
  tooltip.setAttribute('aria-live', 'polite');
  container.append(tooltip);

  let selected = -1;
  function show(i) {
    if (i < 0 || i >= rows.length) return hide();
    selected = i;
    const row = rows[i];
    guide.setAttribute('x1', xAt(i));
    guide.setAttribute('x2', xAt(i));
    guide.setAttribute('visibility', 'visible');
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
    tooltip.replaceChildren(title, ...lines);
    tooltip.hidden = false;
    const scale = container.clientWidth / width || 1;
    const left = xAt(i) * scale;
    const flip = left > container.clientWidth * 0.6;
    tooltip.style.left = flip ? 'auto' : `${left + 12}px`;
    tooltip.style.right = flip ? `${container.clientWidth - left + 12}px` : 'auto';
  }
  function hide() {
    selected = -1;
    guide.setAttribute('visibility', 'hidden');
    tooltip.hidden = true;
  }
  const indexAt = (event) => {
    const box = svg.getBoundingClientRect();
    const x = ((event.clientX - box.left) / box.width) * width;
    return Math.floor((x - plot.left) / band);
  };
  svg.addEventListener('pointermove', (event) => show(indexAt(event)));
  svg.addEventListener('pointerleave', hide);
  svg.addEventListener('blur', hide);
  svg.addEventListener('focus', () => show(rows.length - 1));
  svg.addEventListener('keydown', (event) => {
    const moves = { ArrowLeft: -1, ArrowRight: 1 };
    if (event.key in moves) show(Math.min(rows.length - 1, Math.max(0, (selected < 0 ? rows.length : selected) + moves[event.key])));
    else if (event.key === 'Home') show(0);
    else if (event.key === 'End') show(rows.length - 1);
    else return;
    event.preventDefault();
  });
}
