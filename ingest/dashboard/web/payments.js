/* global document, location */
// Program settings, payments: the processor connection (issue 12), its webhook URL and the latest
// processor events.
import { api } from './api.js';
import { timeFormat } from './format.js';
import { $, state } from './state.js';

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
    ? `In the account's processor dashboard, point its webhook endpoint at ${location.origin}/api/v1/webhooks/processor/${account} ` +
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

function renderEvents(events) {
  const table = $('processor-events');
  table.hidden = events.length === 0;
  table.tBodies[0].replaceChildren(
    ...events.map((e) => {
      const tr = document.createElement('tr');
      tr.dataset.eventId = e.event_id;
      const outcome = e.reason ? `${e.outcome} (${e.reason})` : e.outcome;
      for (const text of [timeFormat.format(new Date(e.received_at)), e.event_type, outcome, String(e.deliveries)]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    }),
  );
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
