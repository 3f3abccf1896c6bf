/* global URLSearchParams, setTimeout */
// The partners screen: the program's partners (searchable, with their state, group, links and all-time
// clicks, paid sales and commission, and the ledger's balance), a form to add one, a "Manage" button
// per partner (partner-panel.js: decisions, group, portal invite, links, promo codes), the
// program's groups (groups.js) and, opened on demand, the applications waiting (applications.js).
// Two requests: GET .../partners and GET .../groups.
import { api } from './api.js';
import { formatCount, formatMoney, timeFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';
import { refreshApplications, wireApplications } from './applications.js';
import { groupName, loadGroups, renderGroups } from './groups.js';
import { STATE_WORDS, closePartner, openPartner, wirePartnerPanel } from './partner-panel.js';
import { fields, h, say, submitting } from './ui.js';


/** Money per currency, as "€12.00 · $3.50"; "–" when there is none. */
const moneyList = (amounts) =>
  amounts?.length ? amounts.map((a) => formatMoney(a.amount_minor / 100, { currency: a.currency })).join(' · ') : amounts ? formatMoney(0) : '–';
const moneyCsv = (amounts) => (amounts ?? []).map((a) => `${a.currency} ${(a.amount_minor / 100).toFixed(2)}`).join('; ');

function linkCell(p) {
  return h(
    'ul',
    { class: 'links' },
    ...p.links.map((l) => h('li', {}, h('code', { text: l.aff_code, title: l.referral_url }), l.enabled ? '' : h('span', { class: 'badge', text: 'off' }))),
  );
}

function actions(p) {
  if (p.partner_id === null) return '';
  return h('button', { type: 'button', class: 'ghost small', 'data-manage': p.partner_id, 'aria-label': `Manage ${p.name ?? 'this partner'}`, text: 'Manage' });
}

const COLUMNS = [
  {
    label: 'Partner',
    text: (p) => h('span', { class: 'who' }, h('strong', { text: p.name ?? '(deleted partner)' }), p.email ? h('span', { class: 'muted', text: p.email }) : null),
    csv: (p) => p.name ?? '',
  },
  { label: 'Email', text: null, csv: (p) => p.email ?? '' },
  { label: 'State', text: (p) => h('span', { class: `state state-${p.status}`, text: STATE_WORDS[p.status] ?? p.status }), csv: (p) => p.status },
  { label: 'Group', text: (p) => groupName(p.group_id) ?? '–', csv: (p) => groupName(p.group_id) ?? '' },
  { label: 'Links', text: linkCell, csv: (p) => p.links.map((l) => l.referral_url).join(' ') },
  { label: 'Clicks', text: (p) => (p.clicks === null ? '–' : formatCount(p.clicks)), csv: (p) => p.clicks ?? '' },
  { label: 'Paid sales', text: (p) => (p.sales === null ? '–' : formatCount(p.sales)), csv: (p) => p.sales ?? '' },
  { label: 'Revenue', text: null, csv: (p) => moneyCsv(p.revenue) },
  { label: 'Commission', text: (p) => moneyList(p.commission), csv: (p) => moneyCsv(p.commission) },
  { label: 'Balance', text: (p) => moneyList(p.balance), csv: (p) => moneyCsv(p.balance) },
  { label: '', text: actions, csv: null },
];
const SHOWN = COLUMNS.filter((c) => c.text !== null);

let last = [];
/** Set by wirePartners: shows the list again. */
let reloadList = () => undefined;

export async function loadPartners(signal, current) {
  // A page of 100 (the search finds the others): the balances read is per partner listed.
  const query = new URLSearchParams({ limit: '100' });
  const search = $('partner-query').value.trim();
  if (search) query.set('search', search);
  if ($('partner-status').value) query.set('status', $('partner-status').value);
  say('partners-alert');
  try {
    const [body] = await Promise.all([api(`/api/tracking/programs/${state.programId}/partners?${query}`, signal), loadGroups(signal)]);
    if (!current()) return 'stale';
    last = body.data;
    renderGroups();
    render(body.meta);
    openPartner(last.find((p) => p.partner_id !== null && String(p.partner_id) === $('partner-panel').dataset.partnerId));
    void refreshApplications();
    // The totals of a large program are computed in the background at first: ask again shortly.
    const programId = state.programId;
    if (body.meta.totals === 'computing') setTimeout(() => state.screen === 'partners' && state.programId === programId && reloadList(), 2_000);
    return 'ready';
  } catch (error) {
    if (!current()) return 'stale';
    last = [];
    render(null);
    closePartner();
    say('partners-alert', `Could not load the partners: ${error.message}`);
    return 'error';
  }
}

function render(meta) {
  const table = $('partners-table');
  // The CSV has every column (email and revenue too); the screen the ones that fit.
  renderTable(table, 'partners', SHOWN, last, { row: (p) => ({ 'data-partner-id': p.partner_id ?? '' }), csvColumns: COLUMNS });
  $('partners-empty').hidden = last.length > 0;
  const totals = {
    warehouse: () => ` · all-time totals as of ${timeFormat.format(new Date(meta.totals_as_of))}`,
    computing: () => ' · totals are being computed: refresh in a moment',
    unavailable: () => ' · totals unavailable (no warehouse)',
  };
  $('partners-summary').textContent = meta
    ? `${meta.shown === meta.total ? meta.total : `${meta.shown} of ${meta.total}`} partner${meta.total === 1 ? '' : 's'}${totals[meta.totals]?.() ?? ''}`
    : '';
}

/** The search, the new-partner form and the add-link buttons; `reload` shows the list again. */
export function wirePartners(reload) {
  reloadList = reload;
  $('partner-search').addEventListener('submit', (event) => {
    event.preventDefault();
    void reload();
  });
  $('partner-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    say('partner-created');
    void submitting(form, 'partner-error', async () => {
      const { data } = await api(`/api/tracking/programs/${state.programId}/partners`, undefined, { method: 'POST', body: fields(form) });
      form.reset();
      say('partner-created', `Added. Their referral link: ${data.referral_url}`);
      await reload();
    });
  });
  $('partners-table').addEventListener('click', (event) => {
    const button = event.target.closest('button[data-manage]');
    if (!button) return;
    openPartner(last.find((p) => String(p.partner_id) === button.dataset.manage), { focus: true });
  });
  // An applicant not on this page of the list (a search or a state filter hides it) is searched for by email first.
  wireApplications(async (partnerId) => {
    const row = last.find((p) => String(p.partner_id) === partnerId);
    if (row) return openPartner(row, { focus: true });
    $('partner-query').value = $('applications-table').querySelector(`tr[data-partner-id="${partnerId}"] .who .muted`)?.textContent ?? '';
    $('partner-status').value = '';
    $('partner-panel').dataset.partnerId = partnerId;
    await reload();
    return openPartner(last.find((p) => String(p.partner_id) === partnerId), { focus: true });
  });
  wirePartnerPanel(reload);
}
