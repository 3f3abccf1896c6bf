/* global document, location, navigator, setTimeout */
// The integration checklist: each step's state and, while pending, the next thing to do with the
// snippets to copy.
import { timeFormat } from './format.js';
import { $, state } from './state.js';

const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

function relative(iso) {
  const seconds = (new Date(iso).getTime() - Date.now()) / 1000;
  const units = [['day', 86400], ['hour', 3600], ['minute', 60]];
  for (const [unit, size] of units) if (Math.abs(seconds) >= size) return relativeFormat.format(Math.round(seconds / size), unit);
  return 'just now';
}

function testEventsDetail(statistics, noun) {
  if (!statistics?.hasTestEvents) return `No test ${noun} yet.`;
  const count = statistics.testEventCount >= 10 ? '10 or more' : String(statistics.testEventCount);
  const latest = statistics.latestTestEvent?.timestamp ?? statistics.latestTestEvent?.createdAt;
  const when = latest ? `, latest ${relative(latest)} (${timeFormat.format(new Date(latest))})` : '';
  return `${count} test ${noun}${statistics.testEventCount === 1 ? '' : 's'} seen${when}.`;
}

function checklistSteps(status, program) {
  const origin = location.origin;
  const payments = status.statistics?.payments ?? {};
  return [
    {
      step: 'pageview',
      title: 'Track clicks on your site',
      done: status.stepStatuses?.pageview === 'complete',
      detail: testEventsDetail(status.statistics?.pageview, 'click'),
      next: 'Add the tracker to every page, then open your site through a partner link with &svc_test=1 added (a test click). Or record a test click from your server:',
      code: [
        `<script defer src="${origin}/js/svc-tracker.js" data-svc-program-id="${program.id}"></script>`,
        `curl -X POST ${origin}/api/v1/track/click -H 'content-type: application/json' \\\n  -d '{"affiliate_url":"https://${program.domain}/?aff=<partner code>","additional_data":{"test_mode":true}}'`,
      ],
    },
    {
      step: 'referrals',
      title: 'Record signups (leads)',
      done: status.stepStatuses?.referrals === 'complete',
      detail: testEventsDetail(status.statistics?.referrals, 'lead'),
      next: 'When a referred visitor signs up, send the lead from your server with their click id and your user id. A test lead completes this step:',
      code: [
        `curl -X POST ${origin}/api/v1/track/lead -H 'authorization: Bearer <program API key>' \\\n  -H 'content-type: application/json' \\\n  -d '{"click_id":"<svc_click_id cookie>","customer_key":"<your user id>","additional_data":{"test_mode":true}}'`,
      ],
    },
    {
      step: 'payments',
      title: 'Track payments',
      done: status.stepStatuses?.payments === 'complete',
      detail:
        payments.paymentTrackingMode === 's2s'
          ? 'Payments are sent server to server (s2s).'
          : payments.isProcessorConnected
            ? `Payment processor connected${payments.processorAccountId ? ` (${payments.processorAccountId})` : ''}.`
            : `No payment processor connected (status: ${payments.processorConnectionStatus ?? 'unknown'}).`,
      next: 'Connect your payment processor under Integrations, or send each payment from your server: set Payment tracking to server to server in Settings (or with the API, below), then post sales to /api/v1/track/sale.',
      code: [
        `curl -X PATCH ${origin}/api/tracking/programs/${program.id} -H 'authorization: Bearer <dashboard token>' \\\n  -H 'content-type: application/json' -d '{"paymentTrackingMode":"s2s"}'`,
      ],
    },
    {
      step: 'partners',
      title: 'Approve a partner',
      done: status.hasPartners === true,
      detail: status.hasPartners ? 'At least one approved partner.' : 'No approved partner yet.',
      next: 'Add a partner under Partners (or with the API, below): they get a referral link to share.',
      code: [
        `curl -X POST ${origin}/api/tracking/programs/${program.id}/partners -H 'authorization: Bearer <dashboard token>' \\\n  -H 'content-type: application/json' -d '{"name":"<partner name>"}'`,
      ],
    },
  ];
}

function codeBlock(text) {
  const wrap = document.createElement('div');
  wrap.className = 'snippet';
  const pre = document.createElement('pre');
  const code = document.createElement('code');
  code.textContent = text;
  pre.append(code);
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.className = 'copy ghost';
  copy.textContent = 'Copy';
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = 'Copied';
    } catch {
      copy.textContent = 'Select and copy';
    }
    setTimeout(() => (copy.textContent = 'Copy'), 1500);
  });
  wrap.append(pre, copy);
  return wrap;
}

function stepItem(s) {
  const li = document.createElement('li');
  li.className = `step ${s.done ? 'complete' : 'pending'}`;
  li.dataset.step = s.step;
  li.dataset.status = s.done ? 'complete' : 'pending';
  const mark = document.createElement('span');
  mark.className = 'mark';
  mark.setAttribute('aria-hidden', 'true');
  mark.textContent = s.done ? '✓' : '';
  const body = document.createElement('div');
  body.className = 'step-body';
  const title = document.createElement('h3');
  const badge = document.createElement('span');
  badge.className = 'badge';
  badge.textContent = s.done ? 'Complete' : 'To do';
  title.append(s.title, ' ', badge);
  const detail = document.createElement('p');
  detail.className = 'muted';
  detail.textContent = s.detail;
  body.append(title, detail);
  if (!s.done) {
    const next = document.createElement('p');
    next.className = 'next';
    const label = document.createElement('strong');
    label.textContent = 'Next: ';
    next.append(label, s.next);
    body.append(next, ...s.code.map(codeBlock));
  }
  li.append(mark, body);
  return li;
}

export function renderChecklist(status) {
  const program = state.programs.find((p) => p.id === state.programId);
  const steps = checklistSteps(status, program);
  $('checklist').replaceChildren(...steps.map(stepItem));
  const done = steps.filter((s) => s.done).length;
  const updated = status.lastUpdated ? ` · checked ${timeFormat.format(new Date(status.lastUpdated))}` : '';
  $('checklist-summary').textContent = `${done} of ${steps.length} done${updated}`;
}

export function clearChecklist() {
  $('checklist').replaceChildren();
  $('checklist-summary').textContent = '';
}
