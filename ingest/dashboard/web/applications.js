// The partners screen's applications (issue 31's GET .../applications): what each applicant waiting
// for a decision sent (name, email, website, message), shown when "Applications waiting" is opened: a
// third request, made only on demand (as the terms' versions), and again after the list reloads while
// it is open. Each row's "Manage" opens the partner's panel, where owners approve or reject.
import { api } from './api.js';
import { timeFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';
import { h, say } from './ui.js';

const COLUMNS = [
  { label: 'Applied', text: (a) => timeFormat.format(new Date(a.created_at)), csv: (a) => a.created_at },
  { label: 'Applicant', text: (a) => h('span', { class: 'who' }, h('strong', { text: a.name }), h('span', { class: 'muted', text: a.email })), csv: (a) => a.name },
  { label: 'Email', text: null, csv: (a) => a.email },
  { label: 'Website', text: (a) => a.website ?? '–', csv: (a) => a.website ?? '' },
  { label: 'Message', text: (a) => a.message ?? '–', csv: (a) => a.message ?? '' },
  { label: '', text: (a) => h('button', { type: 'button', class: 'ghost small', 'data-manage': a.partner_id, 'aria-label': `Manage ${a.name}`, text: 'Manage' }), csv: null },
];
const SHOWN = COLUMNS.filter((c) => c.text !== null);

async function loadApplications() {
  const details = $('applications');
  say('applications-error');
  details.dataset.state = 'loading';
  try {
    const { data } = await api(`/api/tracking/programs/${state.programId}/applications?status=pending&limit=100`);
    renderTable($('applications-table'), 'applications', SHOWN, data, { row: (a) => ({ 'data-partner-id': a.partner_id }), csvColumns: COLUMNS });
    $('applications-empty').hidden = data.length > 0;
    details.dataset.state = 'ready';
  } catch (error) {
    renderTable($('applications-table'), 'applications', SHOWN, []);
    say('applications-error', `Could not load the applications: ${error.message}`);
    details.dataset.state = 'error';
  }
}

/** After the partner list loaded: the applications again when they are shown. */
export function refreshApplications() {
  if ($('applications').open) return loadApplications();
  return undefined;
}

/** `manage(partnerId)` opens a partner's panel from an application's row. */
export function wireApplications(manage) {
  $('applications').addEventListener('toggle', () => {
    if ($('applications').open) void loadApplications();
  });
  $('applications-table').addEventListener('click', (event) => {
    const button = event.target.closest('button[data-manage]');
    if (button) manage(button.dataset.manage);
  });
}
