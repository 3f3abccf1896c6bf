// The versions of a program's commission terms and of its groups' (issue 30's GET .../commission-rules),
// shown on the settings screen when "Versions of the terms" is opened: a third request, made only on
// demand, so the settings screen itself stays at two. Reloaded after a save that changed the terms.
import { api } from './api.js';
import { timeFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';
import { say } from './ui.js';

const TYPE_WORDS = { percent: '% of each sale', fixed: 'per sale', recurring_percent: '% of each payment', recurring_fixed: 'per payment' };

/** "10 % of each sale", "5 per payment, 12 months" (the rate as stored; fixed ones in each sale's currency). */
export const termsText = (t) =>
  `${t.commission_rate} ${TYPE_WORDS[t.commission_type] ?? t.commission_type}${t.commission_type.startsWith('recurring') ? (t.recurring_months === null ? ', lifetime' : `, ${t.recurring_months} months`) : ''}`;

const COLUMNS = [
  { label: 'Version', text: (v) => String(v.version), csv: (v) => v.version },
  { label: 'Applies to', text: (v) => (v.group_id === null ? 'The program' : `Group: ${v.group_name ?? v.group_id}`), csv: (v) => v.group_name ?? (v.group_id === null ? 'program' : v.group_id) },
  { label: 'Terms', text: termsText, csv: (v) => `${v.commission_type} ${v.commission_rate}${v.recurring_months === null ? '' : ` ${v.recurring_months}m`}` },
  { label: 'Effective from', text: (v) => timeFormat.format(new Date(v.effective_from)), csv: (v) => v.effective_from },
  { label: 'Changed by', text: (v) => v.changed_by.label ?? `${v.changed_by.type} ${v.changed_by.id}`, csv: (v) => v.changed_by.label ?? `${v.changed_by.type}:${v.changed_by.id}` },
  { label: 'Changed', text: (v) => timeFormat.format(new Date(v.created_at)), csv: (v) => v.created_at },
];

/** Newest version first. */
export async function loadVersions() {
  const details = $('terms-versions');
  say('versions-error');
  details.dataset.state = 'loading';
  try {
    const { data } = await api(`/api/tracking/programs/${state.programId}/commission-rules`);
    renderTable($('versions-table'), 'terms-versions', COLUMNS, [...data].reverse(), { row: (v) => ({ 'data-version': v.version }) });
    details.dataset.state = 'ready';
  } catch (error) {
    renderTable($('versions-table'), 'terms-versions', COLUMNS, []);
    say('versions-error', `Could not load the versions: ${error.message}`);
    details.dataset.state = 'error';
  }
}

/** Loads the versions when the list is opened; `refreshVersions` after a save reloads them if it is open. */
export function wireVersions() {
  $('terms-versions').addEventListener('toggle', () => {
    if ($('terms-versions').open) void loadVersions();
  });
}

export function refreshVersions() {
  if ($('terms-versions').open) return loadVersions();
  return undefined;
}

/** Another program shown: the list is closed and emptied. */
export function closeVersions() {
  $('terms-versions').open = false;
  delete $('terms-versions').dataset.state;
  renderTable($('versions-table'), 'terms-versions', COLUMNS, []);
}
