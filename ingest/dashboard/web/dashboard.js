/* global window, addEventListener, ResizeObserver, requestAnimationFrame, cancelAnimationFrame */
// The brand's console. Signs people in through the service's OpenID provider (or an operator's
// session token), then shows one program's screens: overview, partners, money, settings, integrations,
// webhooks, audit log and the workspace's team. Plain DOM (textContent only, never HTML strings). This module wires the
// controls and starts; each concern has its module:
//   session.js      signing in and out           view.js        program, screen, period, loading
//   overview.js     figures and checklist        performance.js cards, chart, daily table
//   partners.js     the partner list             settings.js    settings, origins, key, new program
//   money.js        payouts and statements       webhooks.js    endpoints and deliveries
//   commissions.js  the commissions and the review queue
//   partner-panel.js one partner's decisions, group, portal link, links and promo codes
//   groups.js       partner groups               terms.js       versions of the terms
//   applications.js the applications waiting
//   audit.js        the audit log
//   payments.js     the processor integration    team.js        members and invites
//   chart.js        the SVG chart                table.js       tables and their CSV
//   api.js, format.js, ui.js, state.js: the API, numbers and times, DOM helpers, what is shown now
import { api } from './api.js';
import { wireAudit } from './audit.js';
import { wireCommissions } from './commissions.js';
import { wireMoney } from './money.js';
import { buildLegend, redrawChart } from './performance.js';
import { wirePartners } from './partners.js';
import { wirePayments } from './payments.js';
import {
  dropInvite, finishProviderSignIn, keepInviteFromUrl, pendingInvite, savedToken, showSignIn, signIn, signOut, signOutEverywhere, startProviderSignIn,
} from './session.js';
import { wireNewProgram, wireSettings } from './settings.js';
import { $, state } from './state.js';
import { wireCsvButtons } from './table.js';
import { wireTeam } from './team.js';
import { wireWebhooks } from './webhooks.js';
import { say } from './ui.js';
import { fillPrograms, followHash, reload, selectPeriod, selectProgram, show, showDashboard } from './view.js';

/** An invite link followed before signing in is accepted once the person is in; its outcome is shown on the first screen. */
async function acceptPendingInvite() {
  const token = pendingInvite();
  if (!token) return undefined;
  dropInvite();
  try {
    const { data } = await api('/api/tracking/invites/accept', undefined, { method: 'POST', body: { token } });
    const [me, programs] = await Promise.all([api('/api/tracking/session'), api('/api/tracking/programs')]);
    state.me = me.data;
    state.programs = programs.data;
    const workspace = state.me.workspaces.find((w) => w.id === data.workspace_id);
    return `You joined ${workspace?.name ?? 'the workspace'} as ${data.role === 'owner' ? 'an owner' : 'a member'}.`;
  } catch (error) {
    return `The invite could not be accepted: ${error.message}`;
  }
}

async function start(token) {
  if (!(await signIn(token))) return;
  const notice = await acceptPendingInvite();
  await showDashboard();
  if (notice) say('notice', notice);
}

$('oidc-button').addEventListener('click', () => void startProviderSignIn());
$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('token').value.trim();
  if (token) void start(token);
});
$('sign-out').addEventListener('click', signOutEverywhere);
addEventListener('session-ended', () => {
  if (state.token && !state.signingIn) signOut('Your session has ended. Sign in again.');
});
$('refresh').addEventListener('click', () => void reload());
$('program').addEventListener('change', (event) => void selectProgram(Number(event.target.value)));
$('new-program-button').addEventListener('click', () => void show('new-program'));
$('tabs').addEventListener('click', (event) => {
  const tab = event.target.closest('a[data-screen]');
  if (!tab) return;
  event.preventDefault();
  void show(tab.dataset.screen);
});
$('periods').addEventListener('click', (event) => {
  const button = event.target.closest('button[data-period]');
  if (button) void selectPeriod(button.dataset.period);
});
window.addEventListener('hashchange', followHash);
wirePayments(reload);
wirePartners(reload);
wireMoney(reload);
wireCommissions(reload);
wireWebhooks(reload);
wireAudit();
wireTeam(reload);
wireSettings((program) => {
  const listed = state.programs.find((p) => p.id === program.id);
  if (listed) Object.assign(listed, { name: program.name, domain: program.domain });
  fillPrograms();
  $('program').value = String(state.programId);
});
wireNewProgram(async (program) => {
  state.programs.push({ id: program.id, workspace_id: program.workspace_id, name: program.name, domain: program.domain });
  fillPrograms();
  state.programId = program.id;
  await show('settings');
});
wireCsvButtons(() => {
  const program = state.programs.find((p) => p.id === state.programId);
  return `${(program?.name ?? 'program').toLowerCase().replace(/[^a-z0-9]+/g, '-')}-`;
});
let resizing = 0;
new ResizeObserver(() => {
  cancelAnimationFrame(resizing);
  resizing = requestAnimationFrame(() => state.rows.length && redrawChart());
}).observe($('chart'));

buildLegend();
keepInviteFromUrl();
$('sign-in-button').disabled = false;
$('oidc-button').disabled = false;
const saved = savedToken();
if (saved) void start(saved);
else {
  // Back from the provider: a token, or undefined with the reason shown; null: a plain visit.
  void finishProviderSignIn().then((token) => {
    if (token) return start(token);
    if (token === null) showSignIn();
    return undefined;
  });
}
