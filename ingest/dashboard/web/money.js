/* global fetch, document, URL, URLSearchParams, setTimeout */
// The money screen, on the ledger's API (issue 34): the program's payouts (owners create a run,
// mark one paid with its reference, cancel one, download the file for a payout provider) and a
// UTC month's statement with its digest. Two requests: GET .../payouts and .../statements/:period;
// partners are named as the payouts give them (partner_name) and the statement's answer beside it
// (meta.partners: the statement itself, and its digest, name them by id only).
// Balances per partner are on the partners screen; the commissions and their review queue on the
// commissions screen (commissions.js).
import { api } from './api.js';
import { formatCount, formatMoney, timeFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';
import { h, say, submitting } from './ui.js';

const STATUS_WORDS = { pending: 'Pending', paid: 'Paid', canceled: 'Canceled' };
/** Integer minor units and their currency, as the page shows money (two decimals). */
const money = (minor, currency) => formatMoney(minor / 100, { currency });
const major = (minor) => (minor / 100).toFixed(2);
/**
 * A partner as the money screen names it: its name (the payouts' partner_name, the statement's
 * meta.partners) with its id, as `svc payouts` does, so that two partners of one name stay apart.
 */
const partner = (id, name) => (name ? `${name} (${id})` : `Partner ${id}`);
/** The names of the statement shown, by partner id. */
let statementNames = new Map();

function payoutActions(p) {
  if (p.status !== 'pending') return '';
  const reference = h('input', { name: 'reference', required: true, maxlength: 200, 'aria-label': `Payment reference for the payout of ${partner(p.partner_id, p.partner_name)}`, placeholder: 'Reference' });
  return h(
    'form',
    { class: 'row-form', 'data-payout-id': p.id },
    reference,
    h('button', { type: 'submit', class: 'small', 'aria-label': `Mark paid: the payout of ${partner(p.partner_id, p.partner_name)}`, text: 'Mark paid' }),
    h('button', { type: 'button', class: 'ghost small', 'data-cancel-payout': p.id, 'aria-label': `Cancel the payout of ${partner(p.partner_id, p.partner_name)}`, text: 'Cancel' }),
  );
}

const PAYOUT_COLUMNS = [
  { label: 'Partner', text: (p) => partner(p.partner_id, p.partner_name), csv: (p) => p.partner_id },
  { label: 'Partner name', text: null, csv: (p) => p.partner_name ?? '' },
  { label: 'Amount', text: (p) => money(p.amount_minor, p.currency), csv: (p) => major(p.amount_minor) },
  { label: 'Currency', text: null, csv: (p) => p.currency },
  { label: 'Status', text: (p) => h('span', { class: `state state-${p.status}`, text: STATUS_WORDS[p.status] ?? p.status }), csv: (p) => p.status },
  { label: 'Cutoff', text: (p) => timeFormat.format(new Date(p.cutoff)), csv: (p) => p.cutoff },
  { label: 'Commissions', text: (p) => formatCount(p.commission_ids.length), csv: (p) => p.commission_ids.length },
  {
    label: 'Paid or canceled',
    text: (p) => (p.paid_at ? `${timeFormat.format(new Date(p.paid_at))} · ${p.reference}` : p.canceled_at ? timeFormat.format(new Date(p.canceled_at)) : '–'),
    csv: (p) => p.paid_at ?? p.canceled_at ?? '',
  },
  { label: 'Reference', text: null, csv: (p) => p.reference ?? '' },
  { label: 'Payout id', text: null, csv: (p) => p.id },
  { label: '', text: payoutActions, csv: null },
];

// Adjustments, reversals and clawbacks are one column on the screen (what partial and full refunds
// and chargebacks took back); the CSV keeps each kind, and the manual entries.
const STATEMENT_COLUMNS = [
  { label: 'Partner', text: (r) => `${partner(r.partner_id, statementNames.get(r.partner_id))} · ${r.currency}`, csv: (r) => r.partner_id },
  { label: 'Partner name', text: null, csv: (r) => statementNames.get(r.partner_id) ?? '' },
  { label: 'Currency', text: null, csv: (r) => r.currency },
  { label: 'Opening', text: (r) => money(r.opening, r.currency), csv: (r) => major(r.opening) },
  { label: 'Commissions', text: (r) => money(r.commissions, r.currency), csv: (r) => major(r.commissions) },
  { label: 'Refunds and chargebacks', text: (r) => money(r.adjustments + r.reversals + r.clawbacks, r.currency), csv: null },
  { label: 'Adjustments', text: null, csv: (r) => major(r.adjustments) },
  { label: 'Reversals', text: null, csv: (r) => major(r.reversals) },
  { label: 'Clawbacks', text: null, csv: (r) => major(r.clawbacks) },
  { label: 'Manual', text: null, csv: (r) => major(r.manual) },
  { label: 'Payouts', text: (r) => money(r.payouts, r.currency), csv: (r) => major(r.payouts) },
  { label: 'Closing', text: (r) => money(r.closing, r.currency), csv: (r) => major(r.closing) },
];
const shown = (columns) => columns.filter((c) => c.text !== null);

/** This UTC month as YYYY-MM: the statement shown first. */
const thisMonth = () => new Date().toISOString().slice(0, 7);

export async function loadMoney(signal, current) {
  say('money-alert');
  if (!$('statement-period').value) $('statement-period').value = thisMonth();
  const base = `/api/tracking/programs/${state.programId}`;
  const query = new URLSearchParams({ limit: '100' });
  if ($('payout-status').value) query.set('status', $('payout-status').value);
  try {
    const [payouts, statement] = await Promise.all([api(`${base}/payouts?${query}`, signal), api(`${base}/statements/${$('statement-period').value}`, signal)]);
    if (!current()) return 'stale';
    renderPayouts(payouts);
    renderStatement(statement.data, statement.meta);
    return 'ready';
  } catch (error) {
    if (!current()) return 'stale';
    say('money-alert', `Could not load the money screen: ${error.message}`);
    return 'error';
  }
}

function renderPayouts(page) {
  renderTable($('payouts-table'), 'payouts', shown(PAYOUT_COLUMNS), page.data, { row: (p) => ({ 'data-payout-id': p.id, 'data-status': p.status }), csvColumns: PAYOUT_COLUMNS });
  $('payouts-empty').hidden = page.data.length > 0;
  $('money-summary').textContent = `${formatCount(page.data.length)}${page.has_more ? '+' : ''} payout${page.data.length === 1 ? '' : 's'} shown, oldest first`;
}

function renderStatement(s, meta) {
  statementNames = new Map(meta.partners.map((p) => [p.partner_id, p.partner_name ?? undefined]));
  renderTable($('statement-table'), 'statement', shown(STATEMENT_COLUMNS), s.partners, { csvColumns: STATEMENT_COLUMNS });
  $('statement-empty').hidden = s.partners.length > 0;
  $('statement-totals').replaceChildren(
    ...s.totals.map((t) =>
      h(
        'li',
        { 'data-currency': t.currency },
        h('strong', { text: `${t.currency}: ` }),
        `sales ${money(t.gross_sales, t.currency)}, refunds ${money(t.refunds, t.currency)}, net ${money(t.net_sales, t.currency)}, commissions ${money(t.net_commissions, t.currency)}`,
      ),
    ),
  );
  $('statement-digest').textContent = s.digest;
}

/** The payout file: fetched with the session (a link could not carry it), saved from a Blob. */
async function downloadExport(format) {
  const response = await fetch(`/api/tracking/programs/${state.programId}/payouts/export?${new URLSearchParams({ format, status: 'pending' })}`, {
    headers: { authorization: `Bearer ${state.token}` },
    cache: 'no-store',
    credentials: 'omit',
  });
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    throw new Error(body?.error?.message ?? `The server answered ${response.status}`);
  }
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? `payouts-${format}.csv`;
  const url = URL.createObjectURL(await response.blob());
  const link = h('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
  const included = Number(response.headers.get('x-payouts-included') ?? 0);
  const omitted = Number(response.headers.get('x-payouts-omitted') ?? 0);
  return `${name}: ${included} payout${included === 1 ? '' : 's'}${omitted ? `, ${omitted} left out (no payout method of this kind)` : ''}.`;
}

async function settle(path, body, what) {
  say('payout-error');
  say('payout-done');
  try {
    await api(`/api/tracking/programs/${state.programId}/payouts/${path}`, undefined, { method: 'POST', body });
    return what;
  } catch (error) {
    say('payout-error', error.message);
    return undefined;
  }
}

export function wireMoney(reload) {
  for (const id of ['payout-filter', 'statement-form']) {
    $(id).addEventListener('submit', (event) => {
      event.preventDefault();
      void reload();
    });
  }
  $('payout-run-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    void submitting(form, 'payout-run-error', async () => {
      const cutoff = $('payout-cutoff').value;
      const { data } = await api(`/api/tracking/programs/${state.programId}/payouts`, undefined, { method: 'POST', body: cutoff ? { cutoff: new Date(cutoff).toISOString() } : {} });
      $('payout-status').value = 'pending';
      await reload();
      say('payout-done', data.payouts.length ? `${data.payouts.length} payout${data.payouts.length === 1 ? '' : 's'} created.` : 'No partner has a payable balance at or above the minimum.');
    });
  });
  $('payout-export-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    say('payout-export-done');
    void submitting(form, 'payout-export-error', async () => say('payout-export-done', await downloadExport($('payout-format').value)));
  });
  $('payouts-table').addEventListener('submit', async (event) => {
    event.preventDefault();
    const form = event.target.closest('form[data-payout-id]');
    const done = await settle(`${form.dataset.payoutId}/mark-paid`, { reference: form.elements.reference.value.trim() }, 'Marked paid.');
    if (done) await reload().then(() => say('payout-done', done));
  });
  $('payouts-table').addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-cancel-payout]');
    if (!button) return;
    const done = await settle(`${button.dataset.cancelPayout}/cancel`, {}, 'Canceled: its commissions are payable again.');
    if (done) await reload().then(() => say('payout-done', done));
  });
}
