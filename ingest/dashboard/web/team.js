// The team screen: the workspace's members (owners change roles and remove members, never the
// last owner) and its open invites (owners invite by email: the one-time link is shown once, with
// a copy button). One request: GET .../workspaces/:id/team.
import { api } from './api.js';
import { timeFormat } from './format.js';
import { $, currentWorkspace, state } from './state.js';
import { renderTable } from './table.js';
import { fields, h, say, submitting, wireCopy } from './ui.js';

const ROLE_WORDS = { owner: 'Owner', member: 'Member' };
let workspaceId = null;

function roleControl(m) {
  const select = h('select', { 'data-role-of': m.user_id, 'aria-label': `Role of ${m.email}` });
  for (const role of ['owner', 'member']) select.append(h('option', { value: role, text: ROLE_WORDS[role], selected: m.role === role }));
  return select;
}

const MEMBER_COLUMNS = [
  {
    label: 'Member',
    text: (m) =>
      h(
        'span',
        { class: 'who' },
        h('strong', { text: m.name ?? m.email }),
        m.name ? h('span', { class: 'muted', text: m.email }) : null,
        m.user_id === state.me?.user?.id ? h('span', { class: 'badge', text: 'you' }) : null,
        m.suspended ? h('span', { class: 'badge warn', text: 'suspended' }) : null,
      ),
    csv: (m) => m.email,
  },
  { label: 'Name', text: null, csv: (m) => m.name ?? '' },
  { label: 'Role', text: roleControl, csv: (m) => m.role },
  { label: 'Joined', text: (m) => timeFormat.format(new Date(m.joined_at)), csv: (m) => m.joined_at },
  { label: 'Suspended', text: null, csv: (m) => (m.suspended ? 'yes' : 'no') },
  {
    label: '',
    text: (m) => h('button', { type: 'button', class: 'ghost small', 'data-remove-member': m.user_id, 'aria-label': `Remove ${m.email}`, text: 'Remove' }),
    csv: null,
  },
];

const INVITE_COLUMNS = [
  { label: 'Email', text: (i) => i.email },
  { label: 'Role', text: (i) => ROLE_WORDS[i.role] ?? i.role, csv: (i) => i.role },
  { label: 'Invited by', text: (i) => i.invited_by ?? '–', csv: (i) => i.invited_by ?? '' },
  { label: 'Expires', text: (i) => timeFormat.format(new Date(i.expires_at)), csv: (i) => i.expires_at },
  {
    label: '',
    text: (i) => h('button', { type: 'button', class: 'ghost small', 'data-revoke-invite': i.id, 'aria-label': `Revoke the invite of ${i.email}`, text: 'Revoke' }),
    csv: null,
  },
];

function renderTeam(team) {
  const shown = (columns) => columns.filter((c) => c.text !== null);
  renderTable($('members-table'), 'members', shown(MEMBER_COLUMNS), team.members, { row: (m) => ({ 'data-user-id': m.user_id, 'data-role': m.role }), csvColumns: MEMBER_COLUMNS });
  renderTable($('invites-table'), 'invites', shown(INVITE_COLUMNS), team.invites, { row: (i) => ({ 'data-invite-id': i.id }), csvColumns: INVITE_COLUMNS });
  $('invites-table').hidden = team.invites.length === 0;
}

export async function loadTeam(signal, current) {
  const workspace = currentWorkspace();
  workspaceId = workspace?.id ?? null;
  say('team-alert');
  $('team-workspace').textContent = workspace ? `${workspace.name} · you are ${workspace.role === 'owner' ? 'an owner' : 'a member'}` : '';
  if (!workspace) {
    say('team-alert', 'You belong to no workspace.');
    return 'error';
  }
  try {
    const { data } = await api(`/api/tracking/workspaces/${workspaceId}/team`, signal);
    if (!current()) return 'stale';
    renderTeam(data);
    return 'ready';
  } catch (error) {
    if (!current()) return 'stale';
    say('team-alert', `Could not load the team: ${error.message}`);
    return 'error';
  }
}

/** A change of the team: its answer is the team as it is now; a refusal is shown beside the members. */
async function change(path, init) {
  say('members-error');
  try {
    const { data } = await api(`/api/tracking/workspaces/${workspaceId}${path}`, undefined, init);
    renderTeam(data);
    return true;
  } catch (error) {
    say('members-error', error.message);
    return false;
  }
}

/** The invite form, role changes, removals and revocations; `reload` shows the team again (a refused role change puts it back). */
export function wireTeam(reload) {
  $('invite-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    $('invite-once').hidden = true;
    void submitting(form, 'invite-error', async () => {
      const { data } = await api(`/api/tracking/workspaces/${workspaceId}/invites`, undefined, { method: 'POST', body: fields(form) });
      form.reset();
      $('invite-link').textContent = data.invite_url;
      $('invite-once-email').textContent = data.email;
      $('invite-once').hidden = false;
      await reload();
      $('invite-copy').focus();
    });
  });
  wireCopy($('invite-copy'), () => $('invite-link').textContent);
  $('team-screen').addEventListener('change', async (event) => {
    const select = event.target.closest('select[data-role-of]');
    if (select && !(await change(`/members/${select.dataset.roleOf}`, { method: 'PATCH', body: { role: select.value } }))) await reload();
  });
  $('team-screen').addEventListener('click', (event) => {
    const remove = event.target.closest('button[data-remove-member]');
    if (remove) void change(`/members/${remove.dataset.removeMember}`, { method: 'DELETE' });
    const revoke = event.target.closest('button[data-revoke-invite]');
    if (revoke) void change(`/invites/${revoke.dataset.revokeInvite}`, { method: 'DELETE' });
  });
}
