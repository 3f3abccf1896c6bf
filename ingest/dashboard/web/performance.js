/* global document */
// The figures: the metric cards with their trends, the range shown, the chart, its legend and the
// same days as a (visually hidden) table.
import { drawChart, SERIES } from './chart.js';
import { formatCount, formatMoney, percentFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';

const PERIOD_NAMES = { '7d': 'the previous 7 days', '30d': 'the previous 30 days', '90d': 'the previous 90 days', all: 'the period before' };
const dateFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });

const CARDS = [
  { metric: 'clicks', total: 'totalClicks', trend: 'clicksTrend', format: formatCount },
  { metric: 'leads', total: 'totalLeads', trend: 'leadsTrend', format: formatCount },
  { metric: 'conversions', total: 'totalConversions', trend: 'conversionsTrend', format: formatCount },
  { metric: 'revenue', total: 'totalRevenue', trend: 'revenueTrend', format: formatMoney },
  { metric: 'conversionRate', total: 'conversionRate', format: (v) => `${percentFormat.format(v)}%` },
  { metric: 'averageOrderValue', total: 'averageOrderValue', format: formatMoney },
  { metric: 'sales', total: 'totalSales', trend: 'salesTrend', format: formatCount },
  { metric: 'commission', total: 'totalPartnersCommission', trend: 'commissionTrend', format: formatMoney },
  { metric: 'partners', total: 'totalPartners', trend: 'partnersTrend', format: formatCount },
];

const ARROWS = { up: '▲', down: '▼', stable: '▬' };
const DIRECTION_WORDS = { up: 'Up', down: 'Down', stable: 'No change' };

function trendNodes(trend, format) {
  const arrow = document.createElement('span');
  arrow.className = 'arrow';
  arrow.setAttribute('aria-hidden', 'true');
  arrow.textContent = ARROWS[trend.trendDirection] ?? '';
  const words = document.createElement('span');
  words.className = 'visually-hidden';
  words.textContent = `${DIRECTION_WORDS[trend.trendDirection] ?? ''} `;
  const change = document.createElement('span');
  change.className = 'change';
  change.textContent = trend.trend === null ? 'new' : trend.trendDirection === 'stable' ? '0%' : `${percentFormat.format(trend.trend)}%`;
  const previous = document.createElement('span');
  previous.className = 'previous';
  previous.textContent = ` vs ${format(trend.previous)} in ${PERIOD_NAMES[state.period]}`;
  return [arrow, words, change, previous];
}

function renderCards(metrics) {
  for (const card of CARDS) {
    const node = document.querySelector(`[data-metric="${card.metric}"]`);
    const value = metrics[card.total];
    node.dataset.value = String(value);
    node.querySelector('[data-value]').textContent = card.format(value);
    if (!card.trend) continue;
    const trend = metrics[card.trend];
    const slot = node.querySelector('[data-trend]');
    node.dataset.trendDirection = trend.trendDirection;
    node.dataset.trend = String(trend.trend);
    node.dataset.previous = String(trend.previous);
    slot.className = `trend ${trend.trendDirection}`;
    slot.replaceChildren(...trendNodes(trend, card.format));
  }
}

export function renderPerformance(body) {
  const { metrics, meta } = body;
  state.rows = body.data;
  state.currency = meta?.currency ?? 'USD';
  renderCards(metrics);
  $('range').textContent = rangeText(body.data, meta);
  const others = (meta?.otherCurrencies ?? []).filter((o) => o.revenue || o.commission);
  $('other-currencies').hidden = others.length === 0;
  $('other-currencies').textContent = others.length
    ? `Not in these totals (other currencies): ${others
        .map((o) => `${formatMoney(o.revenue, { currency: o.currency })} revenue, ${formatMoney(o.commission, { currency: o.currency })} commission`)
        .join('; ')}.`
    : '';
  renderReporting(body.reporting);
  redrawChart();
  renderTable($('chart-table'), 'daily', DAILY_COLUMNS, body.data, { row: (row) => ({ 'data-date': row.date }) });
}

/** Issue 30: the totals converted into the reporting currency, what had no rate, and the rates used. */
function renderReporting(reporting) {
  const section = $('reporting');
  section.hidden = !reporting;
  $('fx-note').hidden = !reporting;
  if (!reporting) return;
  const currency = reporting.reporting_currency;
  for (const [key, value] of [['revenue', reporting.revenue], ['commission', reporting.commission]]) {
    const node = section.querySelector(`[data-reporting="${key}"]`);
    node.dataset.value = String(value);
    node.querySelector('[data-value]').textContent = formatMoney(value, { currency });
    node.querySelector('[data-reporting-currency]').textContent = `(${currency})`;
  }
  const parts = [];
  const unconverted = reporting.unconverted.filter((u) => u.revenue_minor || u.commission_minor);
  if (unconverted.length) {
    parts.push(
      `Without a rate, not in these totals: ${unconverted
        .map((u) => `${formatMoney(u.revenue, { currency: u.currency })} revenue (${formatCount(u.sales)} sales), ${formatMoney(u.commission, { currency: u.currency })} commission`)
        .join('; ')}.`,
    );
  }
  const rates = reporting.fx.rates;
  if (rates.length) {
    const latest = new Map(rates.map((r) => [r.currency, r]));
    parts.push(
      `Converted with ${formatCount(rates.length)} daily rate(s); latest: ${[...latest.values()]
        .map((r) => `1 ${r.currency} = ${r.rate} ${currency} (${r.rate_date})`)
        .join(', ')}.`,
    );
  }
  $('fx-note').textContent = parts.join(' ');
  $('fx-note').hidden = parts.length === 0;
  $('fx-note').dataset.unconverted = unconverted.map((u) => u.currency).join(',');
}

/** The daily table, and its CSV (money as the answer gives it: dollars of meta.currency). */
const DAILY_COLUMNS = [
  { label: 'Day', text: (r) => r.date },
  { label: 'Clicks', text: (r) => formatCount(r.clicks), csv: (r) => r.clicks },
  { label: 'Leads', text: (r) => formatCount(r.leads), csv: (r) => r.leads },
  { label: 'Conversions', text: (r) => formatCount(r.conversions), csv: (r) => r.conversions },
  { label: 'Revenue', text: (r) => formatMoney(r.revenue), csv: (r) => r.revenue },
];

export function clearPerformance() {
  state.rows = [];
  for (const node of document.querySelectorAll('[data-metric]')) {
    for (const key of ['value', 'trendDirection', 'trend', 'previous']) delete node.dataset[key];
    node.querySelector('[data-value]').textContent = '–';
    const slot = node.querySelector('[data-trend]');
    if (slot) slot.replaceChildren();
  }
  $('range').textContent = '';
  $('other-currencies').hidden = true;
  for (const node of document.querySelectorAll('[data-reporting]')) {
    delete node.dataset.value;
    node.querySelector('[data-value]').textContent = '–';
  }
  $('fx-note').hidden = true;
  $('chart').replaceChildren();
  renderTable($('chart-table'), 'daily', DAILY_COLUMNS, []);
}

const day = (iso) => dateFormat.format(new Date(`${iso.slice(0, 10)}T00:00:00Z`));

/** The shown days come from the rows; the comparison window ends the day before the first. */
function rangeText(rows, meta) {
  if (rows.length === 0) return '';
  const current = `${day(rows[0].date)} – ${day(rows[rows.length - 1].date)}`;
  const before = new Date(`${rows[0].date}T00:00:00Z`);
  before.setUTCDate(before.getUTCDate() - 1);
  const previousFrom = meta?.previousPeriod?.dateFrom;
  const previous = previousFrom ? ` · compared with ${day(previousFrom)} – ${day(before.toISOString())}` : '';
  return `${current} (UTC days)${previous}`;
}

export function redrawChart() {
  drawChart($('chart'), state.rows, { hidden: state.hidden, formatMoney, formatCount });
}

export function buildLegend() {
  $('legend').replaceChildren(
    ...[...SERIES.slice(1), SERIES[0]].map((series) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = `legend-item series-${series.key}`;
      button.dataset.series = series.key;
      button.setAttribute('aria-pressed', 'true');
      const swatch = document.createElement('span');
      swatch.className = `swatch ${series.kind}`;
      swatch.setAttribute('aria-hidden', 'true');
      button.append(swatch, series.label);
      button.addEventListener('click', () => {
        const off = !state.hidden.has(series.key);
        if (off) state.hidden.add(series.key);
        else state.hidden.delete(series.key);
        button.setAttribute('aria-pressed', String(!off));
        redrawChart();
      });
      return button;
    }),
  );
}
