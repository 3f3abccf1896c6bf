/* global document, location */
// The integrations screen: the processor connection with its ownership proof (issue 27), its own
// webhook URL and the latest processor events with what each did (amount, currency, test or live,
// the sale). Two requests: the connection and the events.
import { api } from './api.js';
import { formatMoney, timeFormat } from './format.js';
import { $, state } from './state.js';
import { renderTable } from './table.js';
import { say } from './ui.js';

export async function loadIntegrations(signal, current) {
  say('processor-error');
  const [connection, events] = await Promise.allSettled([
    api(`/api/tracking/programs/${state.programId}/processor-connection`, signal),
    api(`/api/tracking/programs/${state.programId}/processor-events?limit=50`, signal),
  ]);
  if (!current()) return 'stale';
  renderPayments(connection.status === 'fulfilled' ? connection.value.data : null, events.status === 'fulfilled' ? events.value.data : []);
  const failed = [connection, events].find((r) => r.status === 'rejected');
  if (failed) {
    say('processor-error', `Could not load the integration: ${failed.reason.message}`);
    return 'error';
  }
  return 'ready';
}

const STATUS_WORDS = {
  connected: 'Connected',
  pending_verification: 'Waiting for the first signed event from the account',
  deauthorized: 'Deauthorized by the processor account',
  not_connected: 'Not connected',
};
const HANDLED_EVENTS =
  'checkout.session.completed, checkout.session.async_payment_succeeded, invoice.payment_succeeded, invoice_payment.paid, ' +
  'charge.refunded, charge.dispute.created, account.updated and account.application.deauthorized';
const yesNo = (v) => (v ? 'Yes' : 'No');

export function renderPayments(payments, events) {
  const connected = payments?.isProcessorConnected === true;
  const status = payments?.processorConnectionStatus;
  $('payments-summary').textContent = payments
    ? payments.paymentTrackingMode === 's2s'
      ? 'Sales are reported server to server (s2s); a processor connection is optional.'
      : `Payment tracking: processor connection. ${STATUS_WORDS[status] ?? status}.`
    : '';
  renderFacts(payments, status);
  $('payments').dataset.status = status ?? '';
  $('processor-disconnect').hidden = !payments?.processorAccountId;
  $('processor-connect').textContent = payments?.processorAccountId ? 'Connect another account' : 'Connect';
  // Each account has its own URL, whose events are checked with the secret given here (issue 27).
  const account = payments?.processorAccountId;
  $('processor-webhook').textContent = account
    ? `In the account's processor dashboard, point its webhook endpoint at ${payments.webhookUrl ?? `${location.origin}/api/v1/webhooks/processor/${account}`} ` +
      `with the events ${HANDLED_EVENTS}.` +
      (connected ? '' : ' Sales are recorded once its first signed event has arrived.')
    : 'Create a webhook endpoint in the processor dashboard of the account, then connect the account here with the ' +
      "endpoint's signing secret (whsec_...): this page then shows the URL to point it at.";
  renderEvents(events);
}

function renderFacts(payments, status) {
  const facts = $('payments-facts');
  const rows = payments
    ? [
        ['Status', STATUS_WORDS[status] ?? status ?? '–'],
        ['Account', payments.processorAccountId ?? '–'],
        ['Charges enabled', yesNo(payments.chargesEnabled)],
        ['Payouts enabled', yesNo(payments.payoutsEnabled)],
        ['Details submitted', yesNo(payments.detailsSubmitted)],
        ['Connected', payments.connectionDate ? timeFormat.format(new Date(payments.connectionDate)) : '–'],
      ]
    : [];
  facts.replaceChildren(
    ...rows.flatMap(([term, value]) => {
      const dt = document.createElement('dt');
      dt.textContent = term;
      const dd = document.createElement('dd');
      dd.textContent = value;
      dd.dataset.fact = term;
      return [dt, dd];
    }),
  );
}

const OUTCOME_WORDS = { recorded: 'Recorded', skipped: 'Skipped', ignored: 'Ignored', waiting: 'Waiting for its payment' };

const EVENT_COLUMNS = [
  { label: 'Received', text: (e) => timeFormat.format(new Date(e.received_at)), csv: (e) => e.received_at },
  { label: 'Event', text: (e) => e.event_type },
  { label: 'Mode', text: (e) => (e.livemode ? 'Live' : 'Test'), csv: (e) => (e.livemode ? 'live' : 'test') },
  { label: 'Outcome', text: (e) => (e.reason ? `${OUTCOME_WORDS[e.outcome] ?? e.outcome} (${e.reason})` : (OUTCOME_WORDS[e.outcome] ?? e.outcome)), csv: (e) => e.outcome },
  { label: 'Reason', text: null, csv: (e) => e.reason ?? '' },
  { label: 'Sale', text: (e) => e.transaction_id ?? '–', csv: (e) => e.transaction_id ?? '' },
  { label: 'Sale id', text: null, csv: (e) => e.sale_id ?? '' },
  {
    label: 'Amount',
    text: (e) => (e.sale_amount_minor === null ? '–' : formatMoney(e.sale_amount_minor / 100, { currency: e.sale_currency })),
    csv: (e) => (e.sale_amount_minor === null ? '' : (e.sale_amount_minor / 100).toFixed(2)),
  },
  { label: 'Currency', text: null, csv: (e) => e.sale_currency ?? '' },
  { label: 'Deliveries', text: (e) => String(e.deliveries) },
];

function renderEvents(events) {
  renderTable($('processor-events'), 'processor-events', EVENT_COLUMNS.filter((c) => c.text !== null), events, {
    row: (e) => ({ 'data-event-id': e.event_id }),
    csvColumns: EVENT_COLUMNS,
  });
  $('processor-events').hidden = events.length === 0;
  $('processor-events-empty').hidden = events.length > 0;
}

/** The connect and disconnect buttons; `reload` shows the program again once the connection changed. */
export function wirePayments(reload) {
  const changeConnection = async (init) => {
    const error = $('processor-error');
    error.hidden = true;
    try {
      await api(`/api/tracking/programs/${state.programId}/processor-connection`, undefined, init);
      $('processor-account').value = '';
      $('processor-secret').value = '';
      await reload();
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    }
  };
  $('processor-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const accountId = $('processor-account').value.trim();
    const webhookSecret = $('processor-secret').value.trim();
    if (accountId && webhookSecret) void changeConnection({ method: 'PUT', body: { account_id: accountId, webhook_secret: webhookSecret } });
  });
  $('processor-disconnect').addEventListener('click', () => void changeConnection({ method: 'DELETE' }));
}
