/* global URLSearchParams, document, location */
// The settings screen: the program's settings (its commission terms are owners'), its allowed
// origins added and removed one at a time with the origins its clicks were refused from, and its
// API key generated with the full value shown once, and the payout settings of the ledger (hold
// days, payout minimum: owners'), and the partner program's settings: recurring months and when new
// terms take effect (each change a version, listed by terms.js on demand), applications open with
// the public form's link, the fraud rules (owners'). Two requests: GET /api/tracking/programs/:id and
// GET .../payout-settings. Also the new-program screen.
import { api } from './api.js';
import { formatCount, timeFormat } from './format.js';
import { $, isOwner, state } from './state.js';
import { closeVersions, refreshVersions, wireVersions } from './terms.js';
import { fields, h, say, submitting, wireCopy } from './ui.js';

let program = null;
/** The ledger's settings: { commission_hold_days, payout_minimum_minor } (issue 34's API). */
let payouts = null;

export async function loadSettings(signal, current) {
  say('settings-alert');
  say('settings-saved');
  closeVersions();
  try {
    const base = `/api/tracking/programs/${state.programId}`;
    const [{ data }, money] = await Promise.all([api(base, signal), api(`${base}/payout-settings`, signal)]);
    if (!current()) return 'stale';
    program = data;
    payouts = money.data;
    renderSettings();
    return 'ready';
  } catch (error) {
    if (!current()) return 'stale';
    say('settings-alert', `Could not load the settings: ${error.message}`);
    return 'error';
  }
}

function renderSettings() {
  $('set-name').value = program.name;
  $('set-domain').value = program.domain;
  $('set-commission-type').value = program.commission_type;
  $('set-commission-rate').value = String(program.commission_rate);
  $('set-window').value = String(program.attribution_window_days);
  $('set-lead-auth').value = program.lead_auth;
  $('set-payment-mode').value = program.paymentTrackingMode;
  $('set-reporting-currency').value = program.reporting_currency ?? 'USD';
  renderPartnerProgram();
  $('set-hold-days').value = String(payouts.commission_hold_days);
  $('set-payout-minimum').value = (payouts.payout_minimum_minor / 100).toFixed(2);
  renderOrigins();
  $('key-masked').textContent = program.api_token_masked ? `Current key: ${program.api_token_masked}` : 'No key yet.';
  $('key-button').textContent = program.api_token_masked ? 'Regenerate the key' : 'Generate a key';
}

/** Issues 30 and 31: recurring months, applications open (with the public form's link), the fraud rules. */
function renderPartnerProgram() {
  $('set-recurring-months').value = program.recurring_months === null || program.recurring_months === undefined ? '' : String(program.recurring_months);
  $('set-terms-from').value = '';
  $('set-applications').checked = program.applications_open === true;
  const apply = `${location.origin}/apply/${program.id}`;
  $('apply-link').href = apply;
  $('apply-link').textContent = apply;
  // The rules decide what gets paid: owners' (disabled for a member; the API refuses a change anyway).
  for (const box of document.querySelectorAll('input[data-fraud-rule]')) {
    box.checked = program.fraud_rules?.[box.dataset.fraudRule] === true;
    box.disabled = !isOwner();
  }
}

function renderOrigins() {
  $('origin-list').replaceChildren(
    ...program.allowed_origins.map((origin) =>
      h(
        'li',
        { 'data-origin': origin },
        h('code', { text: origin }),
        h('button', { type: 'button', class: 'ghost small', 'data-remove-origin': origin, 'aria-label': `Remove ${origin}`, text: 'Remove' }),
      ),
    ),
  );
  if (program.allowed_origins.length === 0) $('origin-list').append(h('li', { class: 'muted', text: 'No origin yet: browser clicks are refused until you add your site.' }));
  const blocked = $('blocked-origins');
  blocked.hidden = program.blocked_origins.length === 0;
  blocked.replaceChildren(
    h('p', {}, h('strong', { text: 'Clicks were refused from these origins, which are not allowed: ' }), 'add the ones that are your sites.'),
    h(
      'ul',
      {},
      ...program.blocked_origins.map((b) =>
        h(
          'li',
          { 'data-blocked-origin': b.origin },
          h('code', { text: b.origin }),
          ` ${formatCount(b.attempts)} click${b.attempts === 1 ? '' : 's'}, last ${timeFormat.format(new Date(b.last_seen_at))} `,
          h('button', { type: 'button', class: 'small', 'data-allow-origin': b.origin, 'aria-label': `Allow ${b.origin}`, text: 'Allow' }),
        ),
      ),
    ),
  );
}

/** The settings a PATCH sends: only what changed, so a member's save never touches the terms. */
function changedSettings(form) {
  const f = fields(form);
  const next = {
    name: f.name,
    domain: f.domain,
    commission_type: f.commission_type,
    commission_rate: f.commission_rate === undefined ? undefined : Number(f.commission_rate),
    attribution_window_days: f.attribution_window_days === undefined ? undefined : Number(f.attribution_window_days),
    lead_auth: f.lead_auth,
    paymentTrackingMode: f.paymentTrackingMode,
    reporting_currency: f.reporting_currency === undefined ? undefined : f.reporting_currency.trim().toUpperCase(),
    applications_open: $('set-applications').checked,
  };
  const changes = Object.fromEntries(Object.entries(next).filter(([key, value]) => value !== undefined && value !== program[key]));
  // Recurring months belong to the recurring types (empty: lifetime); a one-off type clears them on the server.
  const type = changes.commission_type ?? program.commission_type;
  if (type.startsWith('recurring')) {
    const months = f.recurring_months === undefined ? null : Number(f.recurring_months);
    if (months !== (program.recurring_months ?? null)) changes.recurring_months = months;
  }
  // A new version from this time on, when the terms change (the server refuses a time in the past).
  const termsChange = ['commission_type', 'commission_rate', 'recurring_months'].some((key) => key in changes);
  if (termsChange && f.effective_from) changes.effective_from = new Date(f.effective_from).toISOString();
  // Only the rules switched: a member's save of other settings never sends them (owners' alone).
  const rules = {};
  for (const box of document.querySelectorAll('input[data-fraud-rule]')) {
    if (box.checked !== (program.fraud_rules?.[box.dataset.fraudRule] === true)) rules[box.dataset.fraudRule] = box.checked;
  }
  if (Object.keys(rules).length > 0) changes.fraud_rules = rules;
  return changes;
}

/** The payout settings a PATCH of .../payout-settings sends: only what changed (owners' alone). */
function changedPayouts(form) {
  const f = fields(form);
  const next = {
    commission_hold_days: f.commission_hold_days === undefined ? undefined : Number(f.commission_hold_days),
    payout_minimum_minor: f.payout_minimum === undefined ? undefined : Math.round(Number(f.payout_minimum) * 100),
  };
  return Object.fromEntries(Object.entries(next).filter(([key, value]) => value !== undefined && value !== payouts[key]));
}

async function changeOrigins(init, query = '') {
  say('origin-error');
  try {
    const { data } = await api(`/api/tracking/programs/${state.programId}/allowed-origins${query}`, undefined, init);
    program.allowed_origins = data.allowed_origins;
    program.blocked_origins = program.blocked_origins.filter((b) => !data.allowed_origins.includes(b.origin));
    renderOrigins();
    return true;
  } catch (error) {
    say('origin-error', error.message);
    return false;
  }
}

/** The settings form, the origins and the key; `afterSave` refreshes what shows the program elsewhere. */
export function wireSettings(afterSave) {
  $('settings-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    say('settings-saved');
    void submitting(form, 'settings-error', async () => {
      const changes = changedSettings(form);
      const money = changedPayouts(form);
      if (Object.keys(changes).length === 0 && Object.keys(money).length === 0) return say('settings-saved', 'Nothing to save: no setting changed.');
      const base = `/api/tracking/programs/${state.programId}`;
      // The program's settings first, then the ledger's: a refusal of the second leaves the first saved, and says so.
      if (Object.keys(changes).length > 0) {
        const { data } = await api(base, undefined, { method: 'PATCH', body: changes });
        program = { ...program, ...data };
        afterSave(data);
        if (['commission_type', 'commission_rate', 'recurring_months', 'effective_from'].some((key) => key in changes)) void refreshVersions();
      }
      if (Object.keys(money).length > 0) {
        try {
          payouts = (await api(`${base}/payout-settings`, undefined, { method: 'PATCH', body: money })).data;
        } catch (error) {
          const saved = Object.keys(changes).length > 0 ? 'The other settings were saved; ' : '';
          throw new Error(`${saved}payout settings: ${error.message}`);
        }
      }
      renderSettings();
      say('settings-saved', 'Saved.');
    });
  });
  $('origin-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    if (await changeOrigins({ method: 'POST', body: { origin: $('origin-input').value.trim() } })) $('origin-input').value = '';
  });
  $('settings-screen').addEventListener('click', (event) => {
    const remove = event.target.closest('button[data-remove-origin]');
    if (remove) void changeOrigins({ method: 'DELETE' }, `?${new URLSearchParams({ origin: remove.dataset.removeOrigin })}`);
    const allow = event.target.closest('button[data-allow-origin]');
    if (allow) void changeOrigins({ method: 'POST', body: { origin: allow.dataset.allowOrigin } });
  });
  $('key-button').addEventListener('click', async () => {
    say('key-error');
    $('key-once').hidden = true;
    $('key-button').disabled = true;
    try {
      const { data } = await api(`/api/tracking/programs/${state.programId}/api-key`, undefined, { method: 'POST' });
      $('key-full').textContent = data.api_key;
      $('key-once').hidden = false;
      program.api_token_masked = data.api_token_masked;
      $('key-masked').textContent = `Current key: ${data.api_token_masked}`;
      $('key-copy').focus();
    } catch (error) {
      say('key-error', error.message);
    } finally {
      $('key-button').disabled = false;
    }
  });
  wireCopy($('key-copy'), () => $('key-full').textContent);
  wireVersions();
}

/** A new program: in a workspace of the signed-in person (the first, or the one picked). */
export async function showNewProgram() {
  const workspaces = state.me?.workspaces ?? [];
  $('new-workspace').replaceChildren(...workspaces.map((w) => h('option', { value: w.id, text: `${w.name} (${w.role})` })));
  say('new-program-error');
  if (workspaces.length === 0) say('new-program-error', 'You belong to no workspace yet: ask an owner for an invite.');
  $('new-name').focus();
  return 'ready';
}

/** The new-program form; `created(program)` adds it to the picker and shows it. */
export function wireNewProgram(created) {
  $('new-program-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    void submitting(form, 'new-program-error', async () => {
      const f = fields(form);
      const body = { ...f, workspace_id: Number(f.workspace_id), commission_rate: Number(f.commission_rate) };
      const { data } = await api('/api/tracking/programs', undefined, { method: 'POST', body });
      form.reset();
      await created(data);
    });
  });
}
