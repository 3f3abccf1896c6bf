/* global document */
// The overview screen: a program's figures and chart (performance) and its integration checklist
// (status): the two dashboard endpoints of the spec, read as they are.
import { api, ApiFailure } from './api.js';
import { clearChecklist, renderChecklist } from './checklist.js';
import { clearPerformance, renderPerformance } from './performance.js';
import { sessionAlive, signOut } from './session.js';
import { $, state } from './state.js';
import { say } from './ui.js';

export async function loadOverview(signal, current) {
  const { programId, period } = state;
  const program = state.programs.find((p) => p.id === programId);
  $('program-name').textContent = program?.name ?? '';
  $('program-domain').textContent = program?.domain ?? '';
  for (const button of $('periods').querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.dataset.period === period));
  say('alert');
  const [performance, status] = await Promise.allSettled([
    api(`/api/tracking/performance/${programId}?period=${encodeURIComponent(period)}`, signal),
    api(`/api/tracking/status/${programId}`, signal),
  ]);
  if (!current()) return 'stale';
  const failures = [performance, status].filter((r) => r.status === 'rejected').map((r) => r.reason);
  // Performance answers 403 for "no session" too: ask whether the session still lives.
  if (failures.some((e) => e instanceof ApiFailure && (e.status === 401 || e.status === 403)) && !(await sessionAlive())) {
    if (current()) signOut('Your session has ended. Sign in again.');
    return 'signed-out';
  }
  // A failed half is emptied, so no figure of another program or period stays on screen.
  if (performance.status === 'fulfilled') renderPerformance(performance.value);
  else clearPerformance();
  if (status.status === 'fulfilled') renderChecklist(status.value.data);
  else clearChecklist();
  if (failures.length) {
    const which = [performance.status === 'rejected' && 'figures', status.status === 'rejected' && 'checklist'].filter(Boolean).join(' and ');
    say('alert', `Could not load the ${which}: ${failures[0].message}`);
    return 'error';
  }
  document.title = `${program?.name ?? ''} · Dashboard`;
  return 'ready';
}
