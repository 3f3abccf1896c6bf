/* global window, ResizeObserver, requestAnimationFrame, cancelAnimationFrame */
// The brand's dashboard: signs in with a dashboard session token, then shows a program's daily
// performance, its integration checklist and its payments settings. Plain DOM (textContent only,
// never HTML strings). This module wires the controls and starts; each concern has its module:
//   session.js      signing in and out          view.js       program, period, loading
//   performance.js  cards, chart, daily table   checklist.js  the integration checklist
//   payments.js     the processor connection    api.js        the dashboard API
//   chart.js        the SVG chart               format.js     numbers, money, times
//   state.js        what the page shows now
import { buildLegend, redrawChart } from './performance.js';
import { wirePayments } from './payments.js';
import { savedToken, showSignIn, signIn, signOutEverywhere } from './session.js';
import { $, state } from './state.js';
import { followHash, loadFigures, selectPeriod, selectProgram, showDashboard } from './view.js';

async function start(token) {
  if (await signIn(token)) showDashboard();
}

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('token').value.trim();
  if (token) void start(token);
});
$('sign-out').addEventListener('click', signOutEverywhere);
$('refresh').addEventListener('click', () => void loadFigures());
$('program').addEventListener('change', (event) => selectProgram(Number(event.target.value)));
$('periods').addEventListener('click', (event) => {
  const button = event.target.closest('button[data-period]');
  if (button) selectPeriod(button.dataset.period);
});
window.addEventListener('hashchange', followHash);
wirePayments(loadFigures);
let resizing = 0;
new ResizeObserver(() => {
  cancelAnimationFrame(resizing);
  resizing = requestAnimationFrame(() => state.rows.length && redrawChart());
}).observe($('chart'));

buildLegend();
$('sign-in-button').disabled = false;
const saved = savedToken();
if (saved) void start(saved);
else showSignIn();
