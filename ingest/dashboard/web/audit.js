/* global URLSearchParams */
// The audit log screen (issue 32's GET .../audit-log): who changed what in the program, newest
// first, with what changed; "Show more" follows the cursor. One request per page.
import { api } from './api.js';
import { timeFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';
import { say } from './ui.js';

let entries = [];
let next = null;

/** The fields a write changed, by name ("created" or "deleted" when there is no before or after). */
function changed(e) {
  if (!e.before) return 'created';
  if (!e.after) return 'deleted';
  const keys = new Set([...Object.keys(e.before), ...Object.keys(e.after)]);
  const names = [...keys].filter((k) => JSON.stringify(e.before[k]) !== JSON.stringify(e.after[k]) && k !== 'updated_at');
  return names.length ? names.join(', ') : '–';
}

const COLUMNS = [
  { label: 'When', text: (e) => timeFormat.format(new Date(e.created_at)), csv: (e) => e.created_at },
  { label: 'Who', text: (e) => e.actor.label ?? `${e.actor.type} ${e.actor.id}`, csv: (e) => e.actor.label ?? e.actor.id },
  { label: 'Actor type', text: null, csv: (e) => e.actor.type },
  { label: 'Action', text: (e) => e.action },
  { label: 'Target', text: (e) => `${e.target.type} ${e.target.id}` },
  { label: 'Changed', text: changed },
  { label: 'Before', text: null, csv: (e) => (e.before ? JSON.stringify(e.before) : '') },
  { label: 'After', text: null, csv: (e) => (e.after ? JSON.stringify(e.after) : '') },
  { label: 'Request id', text: null, csv: (e) => e.request_id },
];

async function page(signal, cursor) {
  const query = new URLSearchParams({ limit: '50' });
  if (cursor) query.set('cursor', cursor);
  return api(`/api/tracking/programs/${state.programId}/audit-log?${query}`, signal);
}

function render() {
  renderTable($('audit-table'), 'audit-log', COLUMNS.filter((c) => c.text !== null), entries, { row: (e) => ({ 'data-action': e.action }), csvColumns: COLUMNS });
  $('audit-empty').hidden = entries.length > 0;
  $('audit-more').hidden = next === null;
}

export async function loadAudit(signal, current) {
  say('audit-alert');
  try {
    const body = await page(signal);
    if (!current()) return 'stale';
    entries = body.data;
    next = body.next_cursor;
    render();
    return 'ready';
  } catch (error) {
    if (!current()) return 'stale';
    say('audit-alert', `Could not load the audit log: ${error.message}`);
    return 'error';
  }
}

export function wireAudit() {
  $('audit-more').addEventListener('click', async () => {
    $('audit-more').disabled = true;
    try {
      const body = await page(undefined, next);
      entries = [...entries, ...body.data];
      next = body.next_cursor;
      render();
    } catch (error) {
      say('audit-alert', `Could not load more: ${error.message}`);
    } finally {
      $('audit-more').disabled = false;
    }
  });
}
