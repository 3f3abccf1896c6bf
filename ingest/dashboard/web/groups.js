// The partners screen's groups panel (issue 30's API): the program's groups with their partner counts
// and terms; owners create one (with terms of its own or the program's), rename it in its row, delete
// it (refused while partners are in it: the API's message is shown). GET .../groups is the partners
// screen's second request; the partner panel's group picker lists the same groups.
import { api } from './api.js';
import { formatCount } from './format.js';
import { $, isOwner, state } from './state.js';
import { renderTable } from './table.js';
import { termsText } from './terms.js';
import { fields, h, say, submitting } from './ui.js';

let groups = [];

export const groupName = (id) => (id === null || id === undefined ? undefined : (groups.find((g) => g.id === id)?.name ?? `Group ${id}`));
export const currentGroups = () => groups;

export async function loadGroups(signal) {
  groups = (await api(`/api/tracking/programs/${state.programId}/groups`, signal)).data;
  return groups;
}

/** Rename and delete: owners' (disabled for a member; the API refuses them anyway). */
function rowActions(g) {
  const member = !isOwner();
  return h(
    'form',
    { class: 'row-form', 'data-group-id': g.id },
    h('input', { name: 'name', required: true, maxlength: 200, value: g.name, disabled: member, 'aria-label': `New name for the group ${g.name}` }),
    h('button', { type: 'submit', class: 'ghost small', disabled: member, 'aria-label': `Rename the group ${g.name}`, text: 'Rename' }),
    h('button', { type: 'button', class: 'ghost small', disabled: member, 'data-delete-group': g.id, 'aria-label': `Delete the group ${g.name}`, text: 'Delete' }),
  );
}

const COLUMNS = [
  { label: 'Group', text: (g) => g.name, csv: (g) => g.name },
  { label: 'Partners', text: (g) => formatCount(g.partner_count), csv: (g) => g.partner_count },
  { label: 'Terms', text: (g) => (g.terms ? termsText(g.terms) : "The program's"), csv: (g) => (g.terms ? termsText(g.terms) : 'program') },
  { label: '', text: rowActions, csv: null },
];

export function renderGroups() {
  renderTable($('groups-table'), 'groups', COLUMNS, groups, { row: (g) => ({ 'data-group-id': g.id }) });
  $('groups-empty').hidden = groups.length > 0;
  for (const control of $('group-form').elements) control.disabled = !isOwner();
}

async function change(init, path, done, reload) {
  say('groups-error');
  say('groups-done');
  try {
    await api(`/api/tracking/programs/${state.programId}/groups${path}`, undefined, init);
    await reload();
    say('groups-done', done);
  } catch (error) {
    say('groups-error', error.message);
  }
}

export function wireGroups(reload) {
  $('group-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    say('groups-done');
    void submitting(form, 'groups-error', async () => {
      const f = fields(form);
      const body = { name: f.name };
      if (f.commission_type) Object.assign(body, { commission_type: f.commission_type, commission_rate: f.commission_rate === undefined ? undefined : Number(f.commission_rate) });
      await api(`/api/tracking/programs/${state.programId}/groups`, undefined, { method: 'POST', body });
      form.reset();
      await reload();
      say('groups-done', `Group ${body.name} created.`);
    });
  });
  $('groups-table').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target.closest('form[data-group-id]');
    const name = form.elements.name.value.trim();
    void change({ method: 'PATCH', body: { name } }, `/${form.dataset.groupId}`, `Renamed to ${name}.`, reload);
  });
  $('groups-table').addEventListener('click', (event) => {
    const button = event.target.closest('button[data-delete-group]');
    if (button) void change({ method: 'DELETE' }, `/${button.dataset.deleteGroup}`, 'Group deleted.', reload);
  });
}
