/* global document, location, history, URLSearchParams, AbortController */
// Which program, screen and period are shown (the URL's hash, so a reload or a link keeps the
// view), and loading a screen. Each screen is a <section class="screen" data-screen=...> of
// dashboard.html with a module that loads it; SCREENS below names them (how to add one:
// docs/decisions/dashboard.md, "Add a console screen").
import { loadAudit } from './audit.js';
import { loadCommissions } from './commissions.js';
import { loadMoney } from './money.js';
import { loadOverview } from './overview.js';
import { loadPartners } from './partners.js';
import { loadIntegrations } from './payments.js';
import { loadSettings, showNewProgram } from './settings.js';
import { loadTeam } from './team.js';
import { loadWebhooks } from './webhooks.js';
import { $, app, currentWorkspace, state } from './state.js';

const PERIODS = ['7d', '30d', '90d', 'all'];

/** Each screen's loader: given an abort signal, it fills its section (one or two requests). */
const SCREENS = {
  overview: { load: loadOverview },
  partners: { load: loadPartners },
  money: { load: loadMoney },
  commissions: { load: loadCommissions },
  settings: { load: loadSettings },
  integrations: { load: loadIntegrations },
  webhooks: { load: loadWebhooks },
  audit: { load: loadAudit },
  team: { load: loadTeam, workspaceOnly: true },
  'new-program': { load: showNewProgram, workspaceOnly: true },
};

// ---- URL hash: which program, screen and period (not secret; makes reload and links keep the view) ----

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const period = params.get('period');
  const program = Number(params.get('program'));
  const screen = params.get('screen');
  return {
    period: PERIODS.includes(period) ? period : undefined,
    programId: Number.isSafeInteger(program) && program > 0 ? program : undefined,
    screen: Object.hasOwn(SCREENS, screen ?? '') ? screen : undefined,
  };
}

function writeHash() {
  const params = new URLSearchParams();
  if (state.programId) params.set('program', String(state.programId));
  params.set('period', state.period);
  if (state.screen !== 'overview') params.set('screen', state.screen);
  history.replaceState(null, '', `#${params}`);
}

/** After signing in: the view the URL names, else the first program's overview. */
export function showDashboard() {
  $('sign-in').hidden = true;
  $('controls').hidden = false;
  $('tabs').hidden = false;
  $('whoami').textContent = state.me?.user?.email ?? '';
  fillPrograms();
  const wanted = readHash();
  state.period = wanted.period ?? state.period;
  state.programId = state.programs.some((p) => p.id === wanted.programId) ? wanted.programId : (state.programs[0]?.id ?? null);
  const screen = wanted.screen ?? 'overview';
  show(state.programId === null && !SCREENS[screen].workspaceOnly ? 'new-program' : screen);
}

export function fillPrograms() {
  const select = $('program');
  const workspaces = new Set(state.programs.map((p) => p.workspace_id));
  select.replaceChildren(
    ...state.programs.map((p) => {
      const option = document.createElement('option');
      option.value = String(p.id);
      option.textContent = workspaces.size > 1 ? `${p.name} (workspace ${p.workspace_id})` : p.name;
      return option;
    }),
  );
  select.disabled = state.programs.length === 0;
}

/** Shows a screen of the current program and loads it; an answer for an older view is dropped. */
export function show(screen) {
  state.screen = screen;
  for (const section of document.querySelectorAll('main > .screen')) section.hidden = section.dataset.screen !== screen;
  for (const tab of $('tabs').querySelectorAll('a[data-screen]')) {
    if (tab.dataset.screen === screen) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  $('tabs').hidden = state.programId === null;
  if (state.programId !== null) $('program').value = String(state.programId);
  const program = state.programs.find((p) => p.id === state.programId);
  document.title = `${program ? `${program.name} · ` : ''}${screen === 'overview' ? 'Dashboard' : screen[0].toUpperCase() + screen.slice(1)}`;
  writeHash();
  return reload();
}

/** Loads the screen shown again (a refresh, or after a change). */
export async function reload() {
  state.controller?.abort();
  const controller = new AbortController();
  state.controller = controller;
  const load = ++state.load;
  app.dataset.state = 'loading';
  app.dataset.programId = String(state.programId ?? '');
  app.dataset.period = state.period;
  app.dataset.screen = state.screen;
  app.dataset.role = currentWorkspace()?.role ?? '';
  const outcome = await SCREENS[state.screen].load(controller.signal, () => load === state.load);
  if (load !== state.load) return;
  app.dataset.state = outcome === 'error' ? 'error' : outcome === 'signed-out' ? 'signed-out' : 'ready';
}

export function selectProgram(programId) {
  state.programId = programId;
  return show(SCREENS[state.screen].workspaceOnly && state.screen !== 'team' ? 'overview' : state.screen);
}

export function selectPeriod(period) {
  if (period === state.period) return;
  state.period = period;
  for (const button of $('periods').querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.dataset.period === period));
  return show('overview');
}

/** The URL's hash changed (back, forward, an edited link): show what it names. */
export function followHash() {
  if (!state.token) return;
  const wanted = readHash();
  const programId = state.programs.some((p) => p.id === wanted.programId) ? wanted.programId : state.programId;
  const screen = wanted.screen ?? 'overview';
  const period = wanted.period ?? state.period;
  if (programId === state.programId && period === state.period && screen === state.screen) return;
  state.programId = programId;
  state.period = period;
  void show(screen);
}
