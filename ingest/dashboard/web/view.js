/* global document, location, history, URLSearchParams, AbortController */
// Which program and period are shown, and loading their figures, checklist and payments.
import { api, ApiFailure } from './api.js';
import { clearChecklist, renderChecklist } from './checklist.js';
import { renderPayments } from './payments.js';
import { clearPerformance, renderPerformance } from './performance.js';
import { sessionAlive, signOut } from './session.js';
import { $, app, state } from './state.js';

const PERIODS = ['7d', '30d', '90d', 'all'];

// ---- URL hash: which program and period (not secret; makes reload and links keep the view) ----

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const period = params.get('period');
  const program = Number(params.get('program'));
  return { period: PERIODS.includes(period) ? period : undefined, programId: Number.isSafeInteger(program) && program > 0 ? program : undefined };
}

function writeHash() {
  const params = new URLSearchParams({ program: String(state.programId), period: state.period });
  history.replaceState(null, '', `#${params}`);
}

/** After signing in: the dashboard with the program and period of the URL, else the first program. */
export function showDashboard() {
  $('sign-in').hidden = true;
  $('dashboard').hidden = false;
  $('controls').hidden = false;
  fillPrograms();
  if (state.programs.length === 0) {
    app.dataset.state = 'empty';
    $('program-name').textContent = 'No programs yet';
    $('program-domain').textContent = '';
    showAlert('This workspace has no program yet. Create one with POST /api/tracking/programs, then reload this page.');
    return;
  }
  const wanted = readHash();
  state.period = wanted.period ?? state.period;
  state.programId = state.programs.some((p) => p.id === wanted.programId) ? wanted.programId : state.programs[0].id;
  selectProgram(state.programId);
}

function fillPrograms() {
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
}

export function selectProgram(programId) {
  state.programId = programId;
  $('program').value = String(programId);
  for (const button of $('periods').querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.dataset.period === state.period));
  const program = state.programs.find((p) => p.id === programId);
  $('program-name').textContent = program.name;
  $('program-domain').textContent = program.domain;
  document.title = `${program.name} · Dashboard`;
  writeHash();
  void loadFigures();
}

export function selectPeriod(period) {
  if (period === state.period) return;
  state.period = period;
  selectProgram(state.programId);
}

/** The URL's hash changed (back, forward, an edited link): show what it names. */
export function followHash() {
  if (!state.token || state.programs.length === 0) return;
  const wanted = readHash();
  const programId = state.programs.some((p) => p.id === wanted.programId) ? wanted.programId : state.programId;
  if (programId === state.programId && (wanted.period ?? state.period) === state.period) return;
  state.period = wanted.period ?? state.period;
  selectProgram(programId);
}

function showAlert(message) {
  const alert = $('alert');
  alert.textContent = message ?? '';
  alert.hidden = !message;
}

export async function loadFigures() {
  state.controller?.abort();
  const controller = new AbortController();
  state.controller = controller;
  const load = ++state.load;
  const { programId, period } = state;
  app.dataset.state = 'loading';
  app.dataset.programId = String(programId);
  app.dataset.period = period;
  showAlert();
  const [performance, status, events] = await Promise.allSettled([
    api(`/api/tracking/performance/${programId}?period=${encodeURIComponent(period)}`, controller.signal),
    api(`/api/tracking/status/${programId}`, controller.signal),
    api(`/api/tracking/programs/${programId}/processor-events?limit=10`, controller.signal),
  ]);
  if (load !== state.load) return;
  const failures = [performance, status].filter((r) => r.status === 'rejected').map((r) => r.reason);
  if (failures.some((e) => e instanceof ApiFailure && (e.status === 401 || e.status === 403)) && !(await sessionAlive())) {
    if (load === state.load) signOut('Your session has ended. Sign in again.');
    return;
  }
  // A failed half is emptied, so no figure of another program or period stays on screen.
  if (performance.status === 'fulfilled') renderPerformance(performance.value);
  else clearPerformance();
  if (status.status === 'fulfilled') renderChecklist(status.value.data);
  else clearChecklist();
  renderPayments(status.status === 'fulfilled' ? status.value.data.statistics?.payments : null, events.status === 'fulfilled' ? events.value.data : []);
  if (failures.length) {
    const which = [performance.status === 'rejected' && 'figures', status.status === 'rejected' && 'checklist'].filter(Boolean).join(' and ');
    showAlert(`Could not load the ${which}: ${failures[0].message}`);
    app.dataset.state = 'error';
    return;
  }
  app.dataset.state = 'ready';
}
