/* global URLSearchParams */
// The webhooks screen, on the outgoing webhooks API (issue 32): the program's endpoints (owners
// create one, its signing secret shown once; send a test ping; rotate the secret; disable, enable,
// delete) and the delivery log of the endpoint picked, with a redeliver button per delivery. Two
// requests: GET .../webhook-endpoints and GET .../webhook-endpoints/:id/deliveries.
import { api } from './api.js';
import { timeFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';
import { h, say, submitting, wireCopy } from './ui.js';

/** The event types an endpoint can ask for (schemas/webhooks.ts; the browser test compares the two). */
export const EVENT_TYPES = [
  'lead.created', 'sale.recorded', 'sale.refunded', 'commission.created', 'commission.approved', 'commission.held',
  'commission.reversed', 'commission.paid', 'payout.created', 'payout.paid', 'partner.applied', 'partner.approved',
];
const DELIVERY_WORDS = { pending: 'Pending', delivered: 'Delivered', failed: 'Failed' };
const when = (iso) => (iso ? timeFormat.format(new Date(iso)) : '–');

/** The endpoint whose deliveries are shown (the first when none was picked). */
let picked = null;

function endpointStatus(e) {
  if (e.status === 'enabled') return e.failing_since ? `Enabled, failing since ${when(e.failing_since)}` : 'Enabled';
  return e.disabled_reason === 'failing' ? 'Disabled: failed for 5 days' : 'Disabled';
}

function endpointActions(e) {
  const act = (action, text) => h('button', { type: 'button', class: 'ghost small', 'data-endpoint-action': action, 'data-endpoint-id': e.id, 'aria-label': `${text}: ${e.url}`, text });
  return h(
    'span',
    { class: 'row-form' },
    act('deliveries', 'Deliveries'),
    act('test', 'Send test'),
    act('rotate', 'Rotate secret'),
    e.status === 'enabled' ? act('disable', 'Disable') : act('enable', 'Enable'),
    act('delete', 'Delete'),
  );
}

const ENDPOINT_COLUMNS = [
  { label: 'URL', text: (e) => h('span', { class: 'who' }, h('code', { text: e.url }), e.description ? h('span', { class: 'muted', text: e.description }) : null), csv: (e) => e.url },
  { label: 'Description', text: null, csv: (e) => e.description ?? '' },
  { label: 'Events', text: (e) => e.events.join(', '), csv: (e) => e.events.join(' ') },
  { label: 'Status', text: endpointStatus, csv: (e) => e.status },
  { label: 'Created', text: (e) => when(e.created_at), csv: (e) => e.created_at },
  { label: 'Endpoint id', text: null, csv: (e) => e.id },
  { label: '', text: endpointActions, csv: null },
];

const lastAttempt = (d) => d.attempts.at(-1);
const DELIVERY_COLUMNS = [
  { label: 'Event', text: (d) => d.event_type },
  { label: 'Status', text: (d) => DELIVERY_WORDS[d.status] ?? d.status, csv: (d) => d.status },
  { label: 'Attempts', text: (d) => String(d.attempt_count), csv: (d) => d.attempt_count },
  {
    label: 'Last answer',
    text: (d) => {
      const a = lastAttempt(d);
      return a ? `${a.status_code ?? a.error ?? 'no answer'} in ${a.duration_ms} ms` : '–';
    },
    csv: (d) => lastAttempt(d)?.status_code ?? lastAttempt(d)?.error ?? '',
  },
  { label: 'Last attempt', text: (d) => when(d.last_attempt_at), csv: (d) => d.last_attempt_at ?? '' },
  { label: 'Next attempt', text: (d) => when(d.next_attempt_at), csv: (d) => d.next_attempt_at ?? '' },
  { label: 'Event id', text: null, csv: (d) => d.event_id },
  {
    label: '',
    text: (d) => h('button', { type: 'button', class: 'ghost small', 'data-redeliver': d.id, 'aria-label': `Redeliver ${d.event_type} ${d.event_id}`, text: 'Redeliver' }),
    csv: null,
  },
];
const shown = (columns) => columns.filter((c) => c.text !== null);
const endpointsPath = () => `/api/tracking/programs/${state.programId}/webhook-endpoints`;

export async function loadWebhooks(signal, current) {
  say('webhooks-alert');
  $('endpoint-once').hidden = true;
  try {
    const endpoints = (await api(endpointsPath(), signal)).data;
    if (!current()) return 'stale';
    if (!endpoints.some((e) => e.id === picked)) picked = endpoints[0]?.id ?? null;
    renderTable($('endpoints-table'), 'webhook-endpoints', shown(ENDPOINT_COLUMNS), endpoints, {
      row: (e) => ({ 'data-endpoint-id': e.id, 'data-status': e.status, 'aria-current': e.id === picked ? 'true' : null }),
      csvColumns: ENDPOINT_COLUMNS,
    });
    $('endpoints-empty').hidden = endpoints.length > 0;
    const deliveries = picked ? (await api(`${endpointsPath()}/${picked}/deliveries?${new URLSearchParams({ limit: '50' })}`, signal)).data : [];
    if (!current()) return 'stale';
    renderTable($('deliveries-table'), 'webhook-deliveries', shown(DELIVERY_COLUMNS), deliveries, { row: (d) => ({ 'data-delivery-id': d.id, 'data-status': d.status }), csvColumns: DELIVERY_COLUMNS });
    $('deliveries-of').textContent = picked ? `of ${endpoints.find((e) => e.id === picked).url}, newest first` : '';
    $('deliveries-empty').hidden = deliveries.length > 0;
    return 'ready';
  } catch (error) {
    if (!current()) return 'stale';
    say('webhooks-alert', `Could not load the webhooks: ${error.message}`);
    return 'error';
  }
}

function showSecret(secret, what) {
  $('endpoint-secret-what').textContent = what;
  $('endpoint-secret').textContent = secret;
  $('endpoint-once').hidden = false;
  $('endpoint-secret-copy').focus();
}

/** One endpoint action: the request, then the screen again; a refusal shown above the table. */
async function act(action, id, reload) {
  say('endpoints-error');
  say('endpoints-done');
  const path = `${endpointsPath()}/${id}`;
  const requests = {
    deliveries: async () => {
      picked = id;
      return undefined;
    },
    test: async () => (await api(`${path}/test`, undefined, { method: 'POST' }), 'Test ping queued: it shows in the delivery log.'),
    rotate: async () => ({ secret: (await api(`${path}/rotate-secret`, undefined, { method: 'POST' })).data.secret }),
    disable: async () => (await api(path, undefined, { method: 'PATCH', body: { enabled: false } }), 'Disabled: nothing is sent to it until it is enabled.'),
    enable: async () => (await api(path, undefined, { method: 'PATCH', body: { enabled: true } }), 'Enabled.'),
    delete: async () => (await api(path, undefined, { method: 'DELETE' }), 'Deleted, with its delivery log.'),
  };
  try {
    const done = await requests[action]();
    if (action === 'test') picked = id;
    await reload();
    if (typeof done === 'string') say('endpoints-done', done);
    if (done?.secret) showSecret(done.secret, 'The new signing secret: the old one also signs for 24 hours.');
  } catch (error) {
    say('endpoints-error', error.message);
  }
}

export function wireWebhooks(reload) {
  $('event-choices').replaceChildren(
    ...EVENT_TYPES.map((type) => h('label', { class: 'choice' }, h('input', { type: 'checkbox', name: 'events', value: type }), ` ${type}`)),
  );
  $('endpoint-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    say('endpoints-done');
    void submitting(form, 'endpoint-error', async () => {
      const events = [...form.querySelectorAll('input[name="events"]:checked')].map((i) => i.value);
      const description = $('endpoint-description').value.trim();
      const body = { url: $('endpoint-url').value.trim(), events, ...(description ? { description } : {}) };
      const { data } = await api(endpointsPath(), undefined, { method: 'POST', body });
      form.reset();
      picked = data.id;
      await reload();
      showSecret(data.secret, `The signing secret of ${data.url}: your receiver verifies each delivery with it.`);
    });
  });
  $('endpoints-table').addEventListener('click', (event) => {
    const button = event.target.closest('button[data-endpoint-action]');
    if (button) void act(button.dataset.endpointAction, button.dataset.endpointId, reload);
  });
  $('deliveries-table').addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-redeliver]');
    if (!button) return;
    say('deliveries-error');
    try {
      await api(`${endpointsPath()}/${picked}/deliveries/${button.dataset.redeliver}/redeliver`, undefined, { method: 'POST' });
      await reload();
      say('deliveries-done', 'Sent again now, with 3 more days of retries.');
    } catch (error) {
      say('deliveries-error', error.message);
    }
  });
  $('deliveries-refresh').addEventListener('click', () => void reload());
  wireCopy($('endpoint-secret-copy'), () => $('endpoint-secret').textContent);
}
