/* global document, window, location, history, navigator, sessionStorage, fetch, URLSearchParams, AbortController,
   ResizeObserver, requestAnimationFrame, cancelAnimationFrame, setTimeout */
// The brand's dashboard: signs in with a dashboard session token, then shows a program's daily
// performance and its integration checklist. Plain DOM (textContent only, never HTML strings).
import { drawChart, SERIES } from './chart.js';

/** sessionStorage: the token lives as long as this tab, never in a cookie, a URL or localStorage. */
const TOKEN_KEY = 'ats.dashboardToken';
const PERIODS = ['7d', '30d', '90d', 'all'];
const PERIOD_NAMES = { '7d': 'the previous 7 days', '30d': 'the previous 30 days', '90d': 'the previous 90 days', all: 'the period before' };

const $ = (id) => document.getElementById(id);
const app = $('app');

const countFormat = new Intl.NumberFormat();
const percentFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const dateFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

const moneyFormats = new Map();
function moneyFormat(currency, compact) {
  const key = `${currency}:${compact}`;
  if (!moneyFormats.has(key)) {
    const options = compact ? { notation: 'compact', maximumFractionDigits: 1 } : {};
    let format;
    try {
      format = new Intl.NumberFormat(undefined, { style: 'currency', currency, ...options });
    } catch {
      format = new Intl.NumberFormat(undefined, { minimumFractionDigits: compact ? 0 : 2, maximumFractionDigits: 2, ...options });
    }
    moneyFormats.set(key, format);
  }
  return moneyFormats.get(key);
}

const formatCount = (v) => countFormat.format(v);
/** Dollar figures are in the currency the performance answer names (meta.currency). */
const formatMoney = (v, { compact = false, currency = state.currency } = {}) => moneyFormat(currency, compact && Math.abs(v) >= 1000).format(v);

const state = {
  token: null,
  programs: [],
  programId: null,
  period: '7d',
  currency: 'USD',
  hidden: new Set(),
  rows: [],
  /** Every load gets a number; an answer for an older load is dropped. */
  load: 0,
  controller: null,
};

class ApiFailure extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, signal, init = {}) {
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${state.token}`,
      accept: 'application/json',
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    cache: 'no-store',
    credentials: 'omit',
    signal,
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says enough
  }
  if (!response.ok) {
    const message = body?.error?.message ?? body?.message ?? `The server answered ${response.status}`;
    throw new ApiFailure(response.status, message);
  }
  return body;
}

// ---- URL hash: which program and period (not secret; makes reload and links keep the view) ----

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const period = params.get('period');
  const program = Number(params.get('program'));
  return { period: PERIODS.includes(period) ? period : undefined, programId: Number.isSafeInteger(program) && program > 0 ? program : undefined };
}

function writeHash() {
  const params = new URLSearchParams({ program: String(state.programId), period: state.period });
  history.replaceState(null, '', `#${params}`);
}

// ---- Signing in and out ----

function showSignIn(message) {
  app.dataset.state = 'signed-out';
  $('dashboard').hidden = true;
  $('controls').hidden = true;
  $('sign-in').hidden = false;
  const error = $('sign-in-error');
  error.textContent = message ?? '';
  error.hidden = !message;
  $('token').value = '';
  $('token').focus();
}

function signOut(message) {
  state.controller?.abort();
  state.load += 1;
  state.token = null;
  state.programs = [];
  sessionStorage.removeItem(TOKEN_KEY);
  showSignIn(message);
}

async function signIn(token) {
  state.token = token;
  app.dataset.state = 'signing-in';
  $('sign-in-button').disabled = true;
  try {
    const { data } = await api('/api/tracking/programs');
    sessionStorage.setItem(TOKEN_KEY, token);
    state.programs = data;
  } catch (error) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(
      error instanceof ApiFailure && error.status === 401
        ? 'That token was not accepted. It may have expired: ask for a new one.'
        : `Could not sign in: ${error.message}`,
    );
    return;
  } finally {
    $('sign-in-button').disabled = false;
  }
  $('sign-in').hidden = true;
  $('dashboard').hidden = false;
  $('controls').hidden = false;
  fillPrograms();
  if (state.programs.length === 0) {
    app.dataset.state = 'empty';
    $('program-name').textContent = 'No programs yet';
    $('program-domain').textContent = '';
    showAlert('This workspace has no program yet. Create one with POST /api/tracking/programs, then reload this page.');
    return;
  }
  const wanted = readHash();
  state.period = wanted.period ?? state.period;
  state.programId = state.programs.some((p) => p.id === wanted.programId) ? wanted.programId : state.programs[0].id;
  selectProgram(state.programId);
}

function fillPrograms() {
  const select = $('program');
  const workspaces = new Set(state.programs.map((p) => p.workspace_id));
  select.replaceChildren(
    ...state.programs.map((p) => {
      const option = document.createElement('option');
      option.value = String(p.id);
      option.textContent = workspaces.size > 1 ? `${p.name} (workspace ${p.workspace_id})` : p.name;
      return option;
    }),
  );
}

function selectProgram(programId) {
  state.programId = programId;
  $('program').value = String(programId);
  for (const button of $('periods').querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.dataset.period === state.period));
  const program = state.programs.find((p) => p.id === programId);
  $('program-name').textContent = program.name;
  $('program-domain').textContent = program.domain;
  document.title = `${program.name} · Dashboard`;
  writeHash();
  void loadFigures();
}

// ---- Loading and rendering ----

/** A 403 may mean "not your program" or "no session" (the performance route answers 403 for both). */
async function sessionAlive() {
  try {
    await api('/api/tracking/programs');
    return true;
  } catch (error) {
    return !(error instanceof ApiFailure && error.status === 401);
  }
}

function showAlert(message) {
  const alert = $('alert');
  alert.textContent = message ?? '';
  alert.hidden = !message;
}

async function loadFigures() {
  state.controller?.abort();
  const controller = new AbortController();
  state.controller = controller;
  const load = ++state.load;
  const { programId, period } = state;
  app.dataset.state = 'loading';
  app.dataset.programId = String(programId);
  app.dataset.period = period;
  showAlert();
  const [performance, status, events] = await Promise.allSettled([
    api(`/api/tracking/performance/${programId}?period=${encodeURIComponent(period)}`, controller.signal),
    api(`/api/tracking/status/${programId}`, controller.signal),
    api(`/api/tracking/programs/${programId}/processor-events?limit=10`, controller.signal),
  ]);
  if (load !== state.load) return;
  const failures = [performance, status].filter((r) => r.status === 'rejected').map((r) => r.reason);
  if (failures.some((e) => e instanceof ApiFailure && (e.status === 401 || e.status === 403)) && !(await sessionAlive())) {
    if (load === state.load) signOut('Your session has ended. Sign in again.');
    return;
  }
  // A failed half is emptied, so no figure of another program or period stays on screen.
  if (performance.status === 'fulfilled') renderPerformance(performance.value);
  else clearPerformance();
  if (status.status === 'fulfilled') renderChecklist(status.value.data);
  else clearChecklist();
  renderPayments(status.status === 'fulfilled' ? status.value.data.statistics?.payments : null, events.status === 'fulfilled' ? events.value.data : []);
  if (failures.length) {
    const which = [performance.status === 'rejected' && 'figures', status.status === 'rejected' && 'checklist'].filter(Boolean).join(' and ');
    showAlert(`Could not load the ${which}: ${failures[0].message}`);
    app.dataset.state = 'error';
    return;
  }
  app.dataset.state = 'ready';
}

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

function renderPerformance(body) {
  const { metrics, meta } = body;
  state.rows = body.data;
  state.currency = meta?.currency ?? 'USD';
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
  $('range').textContent = rangeText(body.data, meta);
  const others = (meta?.otherCurrencies ?? []).filter((o) => o.revenue || o.commission);
  $('other-currencies').hidden = others.length === 0;
  $('other-currencies').textContent = others.length
    ? `Not in these totals (other currencies): ${others
        .map((o) => `${formatMoney(o.revenue, { currency: o.currency })} revenue, ${formatMoney(o.commission, { currency: o.currency })} commission`)
        .join('; ')}.`
    : '';
  redrawChart();
  const tbody = $('chart-table').tBodies[0];
  tbody.replaceChildren(
    ...body.data.map((row) => {
      const tr = document.createElement('tr');
      tr.dataset.date = row.date;
      for (const cell of [row.date, formatCount(row.clicks), formatCount(row.leads), formatCount(row.conversions), formatMoney(row.revenue)]) {
        const td = document.createElement('td');
        td.textContent = cell;
        tr.append(td);
      }
      return tr;
    }),
  );
}

function clearPerformance() {
  state.rows = [];
  for (const node of document.querySelectorAll('[data-metric]')) {
    for (const key of ['value', 'trendDirection', 'trend', 'previous']) delete node.dataset[key];
    node.querySelector('[data-value]').textContent = '–';
    const slot = node.querySelector('[data-trend]');
    if (slot) slot.replaceChildren();
  }
  $('range').textContent = '';
  $('other-currencies').hidden = true;
  $('chart').replaceChildren();
  $('chart-table').tBodies[0].replaceChildren();
}

function clearChecklist() {
  $('checklist').replaceChildren();
  $('checklist-summary').textContent = '';
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

function redrawChart() {
  drawChart($('chart'), state.rows, { hidden: state.hidden, formatMoney, formatCount });
}

function buildLegend() {
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

// ---- The integration checklist ----

function relative(iso) {
  const seconds = (new Date(iso).getTime() - Date.now()) / 1000;
  const units = [['day', 86400], ['hour', 3600], ['minute', 60]];
  for (const [unit, size] of units) if (Math.abs(seconds) >= size) return relativeFormat.format(Math.round(seconds / size), unit);
  return 'just now';
}

function testEventsDetail(statistics, noun) {
  if (!statistics?.hasTestEvents) return `No test ${noun} yet.`;
  const count = statistics.testEventCount >= 10 ? '10 or more' : String(statistics.testEventCount);
  const latest = statistics.latestTestEvent?.timestamp ?? statistics.latestTestEvent?.createdAt;
  const when = latest ? `, latest ${relative(latest)} (${timeFormat.format(new Date(latest))})` : '';
  return `${count} test ${noun}${statistics.testEventCount === 1 ? '' : 's'} seen${when}.`;
}

function checklistSteps(status, program) {
  const origin = location.origin;
  const payments = status.statistics?.payments ?? {};
  return [
    {
      step: 'pageview',
      title: 'Track clicks on your site',
      done: status.stepStatuses?.pageview === 'complete',
      detail: testEventsDetail(status.statistics?.pageview, 'click'),
      next: 'Add the tracker to every page, then open your site through a partner link with &svc_test=1 added (a test click). Or record a test click from your server:',
      code: [
        `<script defer src="${origin}/js/svc-tracker.js" data-svc-program-id="${program.id}"></script>`,
        `curl -X POST ${origin}/api/v1/track/click -H 'content-type: application/json' \\\n  -d '{"affiliate_url":"https://${program.domain}/?aff=<partner code>","additional_data":{"test_mode":true}}'`,
      ],
    },
    {
      step: 'referrals',
      title: 'Record signups (leads)',
      done: status.stepStatuses?.referrals === 'complete',
      detail: testEventsDetail(status.statistics?.referrals, 'lead'),
      next: 'When a referred visitor signs up, send the lead from your server with their click id and your user id. A test lead completes this step:',
      code: [
        `curl -X POST ${origin}/api/v1/track/lead -H 'authorization: Bearer <program API key>' \\\n  -H 'content-type: application/json' \\\n  -d '{"click_id":"<svc_click_id cookie>","customer_key":"<your user id>","additional_data":{"test_mode":true}}'`,
      ],
    },
    {
      step: 'payments',
      title: 'Track payments',
      done: status.stepStatuses?.payments === 'complete',
      detail:
        payments.paymentTrackingMode === 's2s'
          ? 'Payments are sent server to server (s2s).'
          : payments.isProcessorConnected
            ? `Payment processor connected${payments.processorAccountId ? ` (${payments.processorAccountId})` : ''}.`
            : `No payment processor connected (status: ${payments.processorConnectionStatus ?? 'unknown'}).`,
      next: 'Connect your payment processor in the program settings, or send each payment from your server: switch the program to server-to-server tracking, then post sales to /api/v1/track/sale.',
      code: [
        `curl -X PATCH ${origin}/api/tracking/programs/${program.id} -H 'authorization: Bearer <dashboard token>' \\\n  -H 'content-type: application/json' -d '{"paymentTrackingMode":"s2s"}'`,
      ],
    },
    {
      step: 'partners',
      title: 'Approve a partner',
      done: status.hasPartners === true,
      detail: status.hasPartners ? 'At least one approved partner.' : 'No approved partner yet.',
      next: 'Add a partner: they get a referral link to share.',
      code: [
        `curl -X POST ${origin}/api/tracking/programs/${program.id}/partners -H 'authorization: Bearer <dashboard token>' \\\n  -H 'content-type: application/json' -d '{"name":"<partner name>"}'`,
      ],
    },
  ];
}

function codeBlock(text) {
  const wrap = document.createElement('div');
  wrap.className = 'snippet';
  const pre = document.createElement('pre');
  const code = document.createElement('code');
  code.textContent = text;
  pre.append(code);
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.className = 'copy ghost';
  copy.textContent = 'Copy';
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = 'Copied';
    } catch {
      copy.textContent = 'Select and copy';
    }
    setTimeout(() => (copy.textContent = 'Copy'), 1500);
  });
  wrap.append(pre, copy);
  return wrap;
}

function renderChecklist(status) {
  const program = state.programs.find((p) => p.id === state.programId);
  const steps = checklistSteps(status, program);
  $('checklist').replaceChildren(
    ...steps.map((s) => {
      const li = document.createElement('li');
      li.className = `step ${s.done ? 'complete' : 'pending'}`;
      li.dataset.step = s.step;
      li.dataset.status = s.done ? 'complete' : 'pending';
      const mark = document.createElement('span');
      mark.className = 'mark';
      mark.setAttribute('aria-hidden', 'true');
      mark.textContent = s.done ? '✓' : '';
      const body = document.createElement('div');
      body.className = 'step-body';
      const title = document.createElement('h3');
      const badge = document.createElement('span');
      badge.className = 'badge';
      badge.textContent = s.done ? 'Complete' : 'To do';
      title.append(s.title, ' ', badge);
      const detail = document.createElement('p');
      detail.className = 'muted';
      detail.textContent = s.detail;
      body.append(title, detail);
      if (!s.done) {
        const next = document.createElement('p');
        next.className = 'next';
        const label = document.createElement('strong');
        label.textContent = 'Next: ';
        next.append(label, s.next);
        body.append(next, ...s.code.map(codeBlock));
      }
      li.append(mark, body);
      return li;
    }),
  );
  const done = steps.filter((s) => s.done).length;
  const updated = status.lastUpdated ? ` · checked ${timeFormat.format(new Date(status.lastUpdated))}` : '';
  $('checklist-summary').textContent = `${done} of ${steps.length} done${updated}`;
}

// ---- Program settings: payments (the processor connection, issue 12) ----

const STATUS_WORDS = {
  connected: 'Connected',
  pending_verification: 'Waiting for the first signed event from the account',
  deauthorized: 'Deauthorized by the processor account',
  not_connected: 'Not connected',
};
const HANDLED_EVENTS =
  'checkout.session.completed, checkout.session.async_payment_succeeded, invoice.payment_succeeded, invoice_payment.paid, ' +
  'charge.refunded, charge.dispute.created, account.updated and account.application.deauthorized';
const yesNo = (v) => (v ? 'Yes' : 'No');

function renderPayments(payments, events) {
  const facts = $('payments-facts');
  const connected = payments?.isProcessorConnected === true;
  const status = payments?.processorConnectionStatus;
  $('payments-summary').textContent = payments
    ? payments.paymentTrackingMode === 's2s'
      ? 'Sales are reported server to server (s2s); a processor connection is optional.'
      : `Payment tracking: processor connection. ${STATUS_WORDS[status] ?? status}.`
    : '';
  const rows = payments
    ? [
        ['Status', STATUS_WORDS[status] ?? status ?? '–'],
        ['Account', payments.processorAccountId ?? '–'],
        ['Charges enabled', yesNo(payments.chargesEnabled)],
        ['Payouts enabled', yesNo(payments.payoutsEnabled)],
        ['Details submitted', yesNo(payments.detailsSubmitted)],
        ['Connected', payments.connectionDate ? timeFormat.format(new Date(payments.connectionDate)) : '–'],
      ]
    : [];
  facts.replaceChildren(
    ...rows.flatMap(([term, value]) => {
      const dt = document.createElement('dt');
      dt.textContent = term;
      const dd = document.createElement('dd');
      dd.textContent = value;
      dd.dataset.fact = term;
      return [dt, dd];
    }),
  );
  $('payments').dataset.status = status ?? '';
  $('processor-disconnect').hidden = !payments?.processorAccountId;
  $('processor-connect').textContent = payments?.processorAccountId ? 'Connect another account' : 'Connect';
  // Each account has its own URL, whose events are checked with the secret given here (issue 27).
  const account = payments?.processorAccountId;
  $('processor-webhook').textContent = account
    ? `In the account's processor dashboard, point its webhook endpoint at ${location.origin}/api/v1/webhooks/processor/${account} ` +
      `with the events ${HANDLED_EVENTS}.` +
      (connected ? '' : ' Sales are recorded once its first signed event has arrived.')
    : 'Create a webhook endpoint in the processor dashboard of the account, then connect the account here with the ' +
      "endpoint's signing secret (whsec_...): this page then shows the URL to point it at.";
  const table = $('processor-events');
  table.hidden = events.length === 0;
  table.tBodies[0].replaceChildren(
    ...events.map((e) => {
      const tr = document.createElement('tr');
      tr.dataset.eventId = e.event_id;
      const outcome = e.reason ? `${e.outcome} (${e.reason})` : e.outcome;
      for (const text of [timeFormat.format(new Date(e.received_at)), e.event_type, outcome, String(e.deliveries)]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    }),
  );
}

async function changeConnection(init) {
  const error = $('processor-error');
  error.hidden = true;
  try {
    await api(`/api/tracking/programs/${state.programId}/processor-connection`, undefined, init);
    $('processor-account').value = '';
    $('processor-secret').value = '';
    await loadFigures();
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
  }
}

// ---- Wiring ----

$('processor-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const accountId = $('processor-account').value.trim();
  const webhookSecret = $('processor-secret').value.trim();
  if (accountId && webhookSecret) void changeConnection({ method: 'PUT', body: { account_id: accountId, webhook_secret: webhookSecret } });
});
$('processor-disconnect').addEventListener('click', () => void changeConnection({ method: 'DELETE' }));

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('token').value.trim();
  if (token) void signIn(token);
});
$('sign-out').addEventListener('click', () => {
  // The server revokes the session, so a copy of the token (another tab, a screenshot) stops working too.
  const token = state.token;
  signOut();
  if (token) {
    void fetch('/api/tracking/session', { method: 'DELETE', headers: { authorization: `Bearer ${token}` }, cache: 'no-store', credentials: 'omit', keepalive: true }).catch(() => {});
  }
});
$('refresh').addEventListener('click', () => void loadFigures());
$('program').addEventListener('change', (event) => selectProgram(Number(event.target.value)));
$('periods').addEventListener('click', (event) => {
  const button = event.target.closest('button[data-period]');
  if (!button || button.dataset.period === state.period) return;
  state.period = button.dataset.period;
  selectProgram(state.programId);
});
window.addEventListener('hashchange', () => {
  if (!state.token || state.programs.length === 0) return;
  const wanted = readHash();
  const programId = state.programs.some((p) => p.id === wanted.programId) ? wanted.programId : state.programId;
  if (programId === state.programId && (wanted.period ?? state.period) === state.period) return;
  state.period = wanted.period ?? state.period;
  selectProgram(programId);
});
let resizing = 0;
new ResizeObserver(() => {
  cancelAnimationFrame(resizing);
  resizing = requestAnimationFrame(() => state.rows.length && redrawChart());
}).observe($('chart'));

buildLegend();
$('sign-in-button').disabled = false;
const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) void signIn(saved);
else showSignIn();
