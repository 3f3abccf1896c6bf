// One partner of the partners screen, opened with its row's "Manage" button (no request: the row's
// data): owners approve, reject or ban it (a ban asks first), move it to a group, invite it to the
// portal (the one-time sign-in link shown once, with a copy button); anyone who may edit the program
// adds a link (its own code or a made-up one) or a promo code. Refusals are the API's words.
import { api } from './api.js';
import { currentGroups, groupName, wireGroups } from './groups.js';
import { $, isOwner, state } from './state.js';
import { fields, h, say, submitting, wireCopy } from './ui.js';

export const STATE_WORDS = { approved: 'Approved', pending: 'Pending', rejected: 'Rejected', banned: 'Banned', removed: 'Removed' };
const DONE = { approve: 'Approved.', reject: 'Rejected.', ban: 'Banned: their links are off, their commissions held, their portal sessions ended.' };

/** The partner shown, as its list row has it. */
let partner = null;
let reloadList = () => undefined;

const path = (rest) => `/api/tracking/programs/${state.programId}/partners/${partner.partner_id}${rest}`;
const who = () => partner.name ?? `partner ${partner.partner_id}`;

/** Shows the partner (undefined: closes the panel); `focus` moves the keyboard to its heading. */
export function openPartner(row, { focus = false } = {}) {
  if (!row) return closePartner();
  const changed = partner?.partner_id !== row.partner_id;
  partner = row;
  const panel = $('partner-panel');
  panel.hidden = false;
  panel.dataset.partnerId = String(row.partner_id);
  panel.dataset.status = row.status;
  $('partner-panel-title').textContent = who();
  $('partner-panel-facts').textContent = `${STATE_WORDS[row.status] ?? row.status} · ${groupName(row.group_id) ?? 'no group'} · ${row.links.length} link${row.links.length === 1 ? '' : 's'}${row.email ? ` · ${row.email}` : ''}`;
  $('partner-group').replaceChildren(
    h('option', { value: '', text: "No group (the program's terms)" }),
    ...currentGroups().map((g) => h('option', { value: g.id, text: g.name })),
  );
  $('partner-group').value = row.group_id === null ? '' : String(row.group_id);
  // Owners' controls are disabled for a member (the API refuses them anyway); links and promo codes are anyone's.
  const member = !isOwner();
  for (const button of $('partner-decisions').querySelectorAll('button[data-decision]')) {
    button.setAttribute('aria-label', `${button.textContent} ${who()}`);
    button.disabled = member;
  }
  for (const control of [$('portal-link-button'), $('partner-group'), $('partner-group-form').querySelector('button')]) control.disabled = member;
  if (changed) {
    $('ban-confirm').hidden = true;
    $('portal-once').hidden = true;
    say('partner-action-error');
    say('partner-action-done');
  }
  if (focus) {
    panel.scrollIntoView?.({ block: 'start' });
    $('partner-panel-title').focus();
  }
  return undefined;
}

export function closePartner() {
  partner = null;
  $('partner-panel').hidden = true;
  $('partner-panel').dataset.partnerId = '';
  $('ban-confirm').hidden = true;
  $('portal-once').hidden = true;
}

/** Runs one of the panel's requests; then the list again (the panel keeps its partner) and what happened. */
async function act(work, done) {
  say('partner-action-error');
  say('partner-action-done');
  try {
    const message = await work();
    await reloadList();
    say('partner-action-done', message ?? done);
    return true;
  } catch (error) {
    say('partner-action-error', error.message);
    return false;
  }
}

const decide = (decision) =>
  act(async () => {
    const { data } = await api(path(`/${decision}`), undefined, { method: 'POST' });
    return data.changed ? DONE[decision] : `Nothing changed: the partner is already ${data.status}.`;
  });

export function wirePartnerPanel(reload) {
  reloadList = reload;
  wireGroups(reload);
  $('partner-panel-close').addEventListener('click', () => {
    const id = partner?.partner_id;
    closePartner();
    $('partners-table').querySelector(`button[data-manage="${id}"]`)?.focus();
  });
  $('partner-decisions').addEventListener('click', (event) => {
    const button = event.target.closest('button[data-decision]');
    if (!button || !partner) return;
    if (button.dataset.decision !== 'ban') return void decide(button.dataset.decision);
    // A ban turns the links off and holds the commissions at once: asked first.
    $('ban-confirm-text').textContent = `Ban ${who()}? Their links stop working at once, their pending and approved commissions are held for review, and their portal sessions end.`;
    $('ban-confirm').hidden = false;
    $('ban-no').focus();
  });
  $('ban-no').addEventListener('click', () => {
    $('ban-confirm').hidden = true;
    $('partner-decisions').querySelector('button[data-decision="ban"]').focus();
  });
  $('ban-yes').addEventListener('click', async () => {
    $('ban-confirm').hidden = true;
    await decide('ban');
  });
  $('partner-group-form').addEventListener('submit', (event) => {
    event.preventDefault();
    if (!partner) return;
    const to = $('partner-group').value;
    const from = partner.group_id;
    if (to === String(from ?? '')) return say('partner-action-done', 'Nothing changed: the partner is already there.');
    void act(
      () =>
        to === ''
          ? api(`/api/tracking/programs/${state.programId}/groups/${from}/partners/${partner.partner_id}`, undefined, { method: 'DELETE' }).then(() => 'Taken out of its group.')
          : api(`/api/tracking/programs/${state.programId}/groups/${to}/partners/${partner.partner_id}`, undefined, { method: 'PUT' }).then(() => `Moved to ${groupName(Number(to))}.`),
    );
  });
  $('portal-link-button').addEventListener('click', async () => {
    if (!partner) return;
    say('partner-action-error');
    say('partner-action-done');
    $('portal-once').hidden = true;
    $('portal-link-button').disabled = true;
    try {
      const { data } = await api(path('/portal-link'), undefined, { method: 'POST' });
      $('portal-link').textContent = data.url;
      $('portal-once').hidden = false;
      $('portal-copy').focus();
    } catch (error) {
      say('partner-action-error', error.message);
    } finally {
      $('portal-link-button').disabled = !isOwner();
    }
  });
  wireCopy($('portal-copy'), () => $('portal-link').textContent);
  $('link-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    if (!partner) return;
    say('partner-action-done');
    void submitting(form, 'partner-action-error', async () => {
      const { data } = await api(path('/links'), undefined, { method: 'POST', body: fields(form) });
      form.reset();
      await act(async () => `Link added: ${data.referral_url}`);
    });
  });
  $('promo-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    if (!partner) return;
    say('partner-action-done');
    void submitting(form, 'partner-action-error', async () => {
      const { data } = await api(path('/promo-codes'), undefined, { method: 'POST', body: fields(form) });
      form.reset();
      await act(async () => `Promo code ${data.code} added.`);
    });
  });
}
