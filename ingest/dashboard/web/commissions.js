/* global URLSearchParams */
// The commissions screen (issue 33, point 5): the review queue (held commissions with what held them
// and the evidence; owners approve, or reject with a reason) and every commission, newest first,
// filtered by status and partner. Two requests: GET .../reviews and GET .../commissions; "Show more"
// follows a list's cursor.
import { api } from './api.js';
import { formatMoney, timeFormat } from './format.js';
import { $, isOwner, state } from './state.js';
import { renderTable } from './table.js';
import { h, say } from './ui.js';

const STATUS_WORDS = { pending: 'Pending', held: 'Held', approved: 'Approved', processing: 'Processing', paid: 'Paid', reversed: 'Reversed' };
const REASON_WORDS = {
  self_referral: 'Self-referral',
  click_flood: 'Click flood',
  fast_conversion: 'Fast conversion',
  partner_ip: "Partner's own address",
  partner_banned: 'Partner banned',
};
const money = (minor, currency) => formatMoney(minor / 100, { currency });
/** The partner's name as the lists give it (partner_name); its id where it has none. */
const partner = (c) => c.partner_name ?? `Partner ${c.partner_id}`;
const when = (iso) => (iso ? timeFormat.format(new Date(iso)) : '–');

/** "Fast conversion (seconds: 3, click_id: …)": the rule and its evidence as the API gives it. */
const reasonText = (r) => {
  const evidence = Object.entries(r)
    .filter(([key]) => key !== 'reason')
    .map(([key, value]) => `${key}: ${typeof value === 'object' ? JSON.stringify(value) : value}`);
  return `${REASON_WORDS[r.reason] ?? r.reason}${evidence.length ? ` (${evidence.join(', ')})` : ''}`;
};

/** A reason, approve, reject: owners' (disabled for a member, who reads the queue; the API refuses them anyway). */
function reviewActions(c) {
  const label = `the commission of ${money(c.amount_minor, c.currency)} for ${partner(c)}`;
  const member = !isOwner();
  return h(
    'form',
    { class: 'row-form', 'data-commission-id': c.id },
    h('input', { name: 'reason', maxlength: 500, placeholder: 'Reason', disabled: member, 'aria-label': `Reason for ${label}` }),
    h('button', { type: 'submit', class: 'small', disabled: member, 'data-decide': 'approve', 'aria-label': `Approve ${label}`, text: 'Approve' }),
    h('button', { type: 'submit', class: 'ghost small', disabled: member, 'data-decide': 'reject', 'aria-label': `Reject ${label}`, text: 'Reject' }),
  );
}

const REVIEW_COLUMNS = [
  { label: 'Held', text: (c) => when(c.held_at), csv: (c) => c.held_at },
  { label: 'Partner', text: partner, csv: (c) => c.partner_id },
  { label: 'Partner name', text: null, csv: (c) => c.partner_name ?? '' },
  { label: 'Commission', text: (c) => money(c.amount_minor, c.currency), csv: (c) => (c.amount_minor / 100).toFixed(2) },
  { label: 'Currency', text: null, csv: (c) => c.currency },
  { label: 'Sale', text: (c) => `${c.sale.transaction_id} · ${money(c.sale.amount_minor, c.sale.currency)} · ${when(c.sale.occurred_at)}`, csv: (c) => c.sale.transaction_id },
  { label: 'Why', text: (c) => h('ul', { class: 'plain reasons' }, ...c.reasons.map((r) => h('li', { 'data-reason': r.reason, text: reasonText(r) }))), csv: (c) => c.reasons.map(reasonText).join('; ') },
  { label: 'Commission id', text: null, csv: (c) => c.id },
  { label: '', text: reviewActions, csv: null },
];

const COMMISSION_COLUMNS = [
  { label: 'Created', text: (c) => when(c.created_at), csv: (c) => c.created_at },
  { label: 'Partner', text: partner, csv: (c) => c.partner_id },
  { label: 'Partner name', text: null, csv: (c) => c.partner_name ?? '' },
  { label: 'Amount', text: (c) => money(c.amount_minor, c.currency), csv: (c) => (c.amount_minor / 100).toFixed(2) },
  { label: 'Currency', text: null, csv: (c) => c.currency },
  { label: 'Status', text: (c) => h('span', { class: `state state-${c.status}`, text: STATUS_WORDS[c.status] ?? c.status }), csv: (c) => c.status },
  // A held commission waits for an owner, a reversed one is never payable: their hold's end means nothing.
  { label: 'Payable from', text: (c) => (c.status === 'held' ? 'After review' : c.status === 'reversed' ? '–' : when(c.available_at)), csv: (c) => c.available_at },
  { label: 'Reason', text: (c) => c.status_reason ?? '', csv: (c) => c.status_reason ?? '' },
  { label: 'Rule version', text: null, csv: (c) => c.rule_version ?? '' },
  { label: 'Commission id', text: null, csv: (c) => c.id },
];
const shown = (columns) => columns.filter((c) => c.text !== null);

/** Each list's rows so far and the cursor of its next page. */
const lists = { reviews: { rows: [], next: null }, commissions: { rows: [], next: null } };

const base = () => `/api/tracking/programs/${state.programId}`;
function commissionsQuery(cursor) {
  const query = new URLSearchParams({ limit: '50' });
  if ($('commission-status').value) query.set('status', $('commission-status').value);
  const partnerId = $('commission-partner').value.trim();
  if (partnerId) query.set('partner_id', partnerId);
  if (cursor) query.set('cursor', cursor);
  return `${base()}/commissions?${query}`;
}
const reviewsQuery = (cursor) => `${base()}/reviews?${new URLSearchParams(cursor ? { limit: '50', cursor } : { limit: '50' })}`;

function render() {
  const r = lists.reviews;
  const c = lists.commissions;
  renderTable($('reviews-table'), 'reviews', shown(REVIEW_COLUMNS), r.rows, { row: (x) => ({ 'data-commission-id': x.id }), csvColumns: REVIEW_COLUMNS });
  renderTable($('commissions-table'), 'commissions', shown(COMMISSION_COLUMNS), c.rows, { row: (x) => ({ 'data-commission-id': x.id, 'data-status': x.status }), csvColumns: COMMISSION_COLUMNS });
  $('reviews-empty').hidden = r.rows.length > 0;
  $('commissions-empty').hidden = c.rows.length > 0;
  $('reviews-more').hidden = !r.next;
  $('commissions-more').hidden = !c.next;
  $('commissions-summary').textContent = `${r.rows.length}${r.next ? '+' : ''} to review · ${c.rows.length}${c.next ? '+' : ''} commission${c.rows.length === 1 ? '' : 's'} shown, newest first`;
}

export async function loadCommissions(signal, current) {
  say('commissions-alert');
  try {
    const [reviews, commissions] = await Promise.all([api(reviewsQuery(), signal), api(commissionsQuery(), signal)]);
    if (!current()) return 'stale';
    lists.reviews = { rows: reviews.data, next: reviews.next_cursor };
    lists.commissions = { rows: commissions.data, next: commissions.next_cursor };
    render();
    return 'ready';
  } catch (error) {
    if (!current()) return 'stale';
    lists.reviews = { rows: [], next: null };
    lists.commissions = { rows: [], next: null };
    render();
    say('commissions-alert', `Could not load the commissions: ${error.message}`);
    return 'error';
  }
}

async function more(name, url) {
  const button = $(`${name}-more`);
  button.disabled = true;
  try {
    const page = await api(url(lists[name].next));
    lists[name] = { rows: [...lists[name].rows, ...page.data], next: page.next_cursor };
    render();
  } catch (error) {
    say('commissions-alert', `Could not load more: ${error.message}`);
  } finally {
    button.disabled = false;
  }
}

export function wireCommissions(reload) {
  $('commission-filter').addEventListener('submit', (event) => {
    event.preventDefault();
    void reload();
  });
  $('reviews-more').addEventListener('click', () => void more('reviews', reviewsQuery));
  $('commissions-more').addEventListener('click', () => void more('commissions', commissionsQuery));
  $('reviews-table').addEventListener('submit', async (event) => {
    event.preventDefault();
    const form = event.target.closest('form[data-commission-id]');
    const decision = event.submitter?.dataset.decide ?? 'approve';
    const typed = form.elements.reason.value.trim();
    say('review-error');
    say('review-done');
    // A rejection says why (the API needs a reason for both; an approval without one gets a plain one).
    if (decision === 'reject' && !typed) {
      form.elements.reason.setAttribute('aria-invalid', 'true');
      form.elements.reason.focus();
      return say('review-error', 'Type the reason for rejecting it first.');
    }
    const reason = typed || 'Approved after review in the console';
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    try {
      await api(`${base()}/commissions/${form.dataset.commissionId}/${decision}`, undefined, { method: 'POST', body: { reason } });
      await reload();
      say('review-done', decision === 'approve' ? 'Approved: it is payable with the next payout run.' : 'Rejected: the commission is reversed.');
    } catch (error) {
      say('review-error', error.message);
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  });
}
