import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { reportingOf } from '../../domain/fx/reporting.js';
import { setPayoutMethod, type PayoutMethod } from '../../domain/ledger/methods.js';
import {
  partnerBalance,
  partnerCommissions,
  partnerLinks,
  partnerMe,
  partnerPayoutMethod,
  partnerPayouts,
  partnerPrograms,
  type PortalProgram,
} from '../../domain/partners/portal-reads.js';
import { revokePortalSession, signInWithLink, type PortalSession } from '../../domain/partners/portal-sessions.js';
import type { PerformanceBody } from '../../queries/metrics.js';
import { performanceWithReporting, type ReportingTotals } from '../../queries/reporting-totals.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import type { ZodApp } from '../http/schemas.js';
import { linkView, type SubIds } from './api.js';
import { PayoutMethodRequest } from './schemas.js';
import { clearPortalCookie, portalTokenOf, resolvePortalSession, setPortalCookie } from './session.js';
import { escapeHtml as e, notice, page } from './views.js';

const config = { surface: 'partner' as const };

const html = (reply: FastifyReply, status: number, body: string) =>
  reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .send(body);

const money = (minor: number, currency: string) => `${(minor / 100).toFixed(2)} ${e(currency)}`;

const SIGN_IN_HELP = '<p>Ask the brand for a new sign-in link: each link works once, for 24 hours.</p>';

export interface PortalPageDeps {
  log?: FastifyBaseLogger;
  db: Database;
  warehouse: Warehouse | undefined;
  throttle: FailedAuthThrottle;
  clock: () => number;
}

const SubQuery = z.object({
  program: z.string().regex(/^[1-9][0-9]{0,14}$/).transform(Number).optional(),
  sub1: z.string().max(100).optional(),
  sub2: z.string().max(100).optional(),
  sub3: z.string().max(100).optional(),
  sub4: z.string().max(100).optional(),
  sub5: z.string().max(100).optional(),
  saved: z.string().optional(),
});
type SubQuery = z.infer<typeof SubQuery>;

function header(name: string): string {
  return `<header><strong>Partner portal</strong><span>${e(name)}</span>
<form method="post" action="/portal/sign-out"><button type="submit" style="margin:0">Sign out</button></form></header>`;
}

/**
 * The partner's figures, the money ones in the program's reporting currency (issue 30): every sale
 * converted at the rate of its day, the rates said below, what has no rate listed apart.
 */
function figures(p: (PerformanceBody & { reporting: ReportingTotals }) | undefined): string {
  if (!p) return '<p>Figures are not available right now.</p>';
  const m = p.metrics;
  const r = p.reporting;
  const cur = e(r.reporting_currency);
  const item = (label: string, value: string) => `<div><dt>${label}</dt><dd>${value}</dd></div>`;
  const rates = r.fx.rates.map((x) => `1 ${e(x.currency)} = ${x.rate} ${cur} (${e(x.rate_date)})`).join(', ');
  const unconverted = r.unconverted.map((u) => `${u.revenue.toFixed(2)} ${e(u.currency)} of sales, ${u.commission.toFixed(2)} ${e(u.currency)} of commission`).join('; ');
  return `<dl class="figures" aria-label="Last 30 days">
${item('Clicks', String(m.totalClicks))}${item('Leads', String(m.totalLeads))}${item('Conversions', String(m.totalConversions))}
${item('Sales', String(m.totalSales))}${item(`Revenue (${cur})`, r.revenue.toFixed(2))}${item(`Commission (${cur})`, r.commission.toFixed(2))}
</dl>${rates ? `<p class="hint">Converted with ${rates}.</p>` : ''}${unconverted ? `<p class="hint">Not converted yet (no rate for their day): ${unconverted}.</p>` : ''}`;
}

function table(caption: string, head: string[], rows: string[][], numeric: number[] = []): string {
  if (rows.length === 0) return `<p>No ${caption.toLowerCase()} yet.</p>`;
  const th = head.map((h, i) => `<th scope="col"${numeric.includes(i) ? ' class="n"' : ''}>${h}</th>`).join('');
  const body = rows.map((r) => `<tr>${r.map((c, i) => `<td${numeric.includes(i) ? ' class="n"' : ''}>${c}</td>`).join('')}</tr>`).join('');
  // Focusable, so a keyboard can scroll a table wider than a phone.
  return `<div class="table" tabindex="0" role="region" aria-label="${caption}"><table><caption class="hint" style="text-align:left">${caption}</caption><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table></div>`;
}

function methodForm(current: PayoutMethod | null, error?: string): string {
  const m = current?.method ?? 'paypal';
  const email = current && 'email' in current ? current.email : '';
  const name = current?.method === 'wise' ? current.name : '';
  const note = current?.method === 'manual' ? (current.note ?? '') : '';
  const opt = (v: string, label: string) => `<option value="${v}"${m === v ? ' selected' : ''}>${label}</option>`;
  return `<section class="card" aria-labelledby="payout-heading"><h2 id="payout-heading">Payout method</h2>
<p id="payout-current">${current ? `Current: <strong>${e(current.method)}</strong>${email ? ` (${e(email)})` : ''}` : 'No payout method set yet.'}</p>
${error ? `<p class="error" role="alert">${e(error)}</p>` : ''}
<form method="post" action="/portal/payout-method">
<label for="method">Method</label><select id="method" name="method">${opt('paypal', 'PayPal')}${opt('wise', 'Wise')}${opt('manual', 'Manual (agreed with the brand)')}</select>
<label for="pm-email">Email (PayPal or Wise)</label><input id="pm-email" name="email" type="email" maxlength="254" autocomplete="email" value="${e(email)}">
<label for="pm-name">Account holder name (Wise)</label><input id="pm-name" name="name" maxlength="200" autocomplete="name" value="${e(name)}">
<label for="pm-note">Note (manual)</label><input id="pm-note" name="note" maxlength="500" value="${e(note)}">
<button type="submit">Save payout method</button></form></section>`;
}

async function programSection(deps: PortalPageDeps, s: PortalSession, p: PortalProgram, subs: SubIds): Promise<string> {
  const { db, warehouse, clock } = deps;
  const [links, perf] = await Promise.all([
    partnerLinks(db, s, p.id),
    warehouse
      ? reportingOf(db, p.id)
          .then((reporting) =>
            performanceWithReporting(
              warehouse,
              { programId: p.id, programCreatedAt: p.created_at, query: { period: '30d' }, now: clock(), partnerId: s.partnerId },
              reporting,
            ),
          )
          .catch((err: unknown) => {
            // The rest of the page (Postgres) still helps the partner: the figures say they are unavailable.
            deps.log?.error({ err }, 'portal figures could not be read');
            return undefined;
          })
      : Promise.resolve(undefined),
  ]);
  const linkRows = links.map((l) => {
    const v = linkView(l, subs);
    return [`<code>${e(v.referral_url)}</code>`, v.enabled ? 'active' : 'disabled'];
  });
  const subInputs = ([1, 2, 3, 4, 5] as const)
    .map((n) => `<label for="p${p.id}-sub${n}">sub${n}</label><input id="p${p.id}-sub${n}" name="sub${n}" maxlength="100" value="${e(subs[`sub${n}`] ?? '')}">`)
    .join('');
  return `<section class="card" aria-labelledby="program-${p.id}"><h2 id="program-${p.id}">${e(p.name)}</h2>
<h3>Last 30 days</h3>${figures(perf)}
<h3>Your links</h3>${table('Links', ['Link', 'State'], linkRows)}
<details><summary>Build a link with sub-ids</summary>
<form method="get" action="/portal"><input type="hidden" name="program" value="${p.id}">${subInputs}<button type="submit">Build links</button></form></details>
</section>`;
}

/** The portal's page: the partner's programs (figures, links, the sub-id builder), balances, commissions, payouts, payout method. */
async function portalPage(deps: PortalPageDeps, s: PortalSession, query: SubQuery, error?: string): Promise<string> {
  const { db } = deps;
  const [me, programs, method] = await Promise.all([partnerMe(db, s), partnerPrograms(db, s), partnerPayoutMethod(db, s)]);
  const ids = programs.map((p) => p.id);
  const [balances, commissions, payouts] = ids.length
    ? await Promise.all([partnerBalance(db, s, ids), partnerCommissions(db, s, ids, 20), partnerPayouts(db, s, ids, 20)])
    : [[], [], []];
  const nameOf = new Map(programs.map((p) => [p.id, p.name]));
  const subsFor = (id: number): SubIds => (query.program === id ? query : {});
  const sections = await Promise.all(programs.map((p) => programSection(deps, s, p, subsFor(p.id))));
  const balanceRows = balances.flatMap((b) =>
    b.balances.map((x) => [e(nameOf.get(b.program_id) ?? ''), money(x.pending, x.currency), money(x.held, x.currency), money(x.approved, x.currency), money(x.paid, x.currency)]),
  );
  const commissionRows = commissions.map((c) => [
    e(c.created_at.toISOString().slice(0, 10)),
    e(nameOf.get(c.program_id) ?? ''),
    money(c.amount_minor, c.currency),
    e(c.status),
    c.customer === null ? '' : `<code>${e(c.customer)}</code>`,
  ]);
  const payoutRows = payouts.map((p) => [e(String(p.created_at).slice(0, 10)), e(nameOf.get(p.program_id) ?? ''), money(p.amount_minor, p.currency), e(p.status)]);
  return page(
    'Partner portal',
    `<h1>Welcome, ${e(me.name)}</h1>
${query.saved ? '<p class="ok" role="status">Your payout method was saved.</p>' : ''}
${programs.length === 0 ? '<p>You are not approved in any program of this brand yet.</p>' : sections.join('')}
<section class="card" aria-labelledby="balance-heading"><h2 id="balance-heading">Balance</h2>${table('Balances', ['Program', 'Pending', 'Held', 'Approved', 'Paid'], balanceRows, [1, 2, 3, 4])}</section>
<section class="card" aria-labelledby="commissions-heading"><h2 id="commissions-heading">Recent commissions</h2>${table('Commissions', ['Date', 'Program', 'Amount', 'Status', 'Customer'], commissionRows, [2])}</section>
<section class="card" aria-labelledby="payouts-heading"><h2 id="payouts-heading">Payouts</h2>${table('Payouts', ['Date', 'Program', 'Amount', 'Status'], payoutRows, [2])}</section>
${methodForm(method, error)}`,
    header(me.name),
  );
}

/** The form's fields to the payout-method body (the API's schema validates both). */
function methodBody(form: Record<string, unknown>): Record<string, unknown> {
  const str = (k: string) => (typeof form[k] === 'string' ? (form[k] as string).trim() : undefined);
  switch (str('method')) {
    case 'paypal':
      return { method: 'paypal', email: str('email') };
    case 'wise':
      return { method: 'wise', email: str('email'), name: str('name') };
    case 'manual':
      return { method: 'manual', note: str('note') || null };
    default:
      return { method: str('method') };
  }
}

/**
 * The portal's pages (server-rendered, no script): the sign-in link, /portal, the payout-method
 * form and sign-out. A link that is expired, used or unknown answers a page that says so.
 */
export function portalPageRoutes(app: ZodApp, deps: PortalPageDeps) {
  const { db, throttle } = deps;

  const signIn = async (request: FastifyRequest, reply: FastifyReply, token: string | undefined) => {
    const result = token && /^ppl_[A-Za-z0-9_-]{32}$/.test(token) ? await signInWithLink(db, token, request.ip) : { outcome: 'unknown' as const };
    switch (result.outcome) {
      case 'signed_in':
        setPortalCookie(request, reply, result.sessionToken);
        return reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').redirect('/portal', 303);
      case 'expired':
        return html(reply, 410, notice('This sign-in link has expired', 'Sign-in links work for 24 hours.', 'error', SIGN_IN_HELP));
      case 'used':
        return html(reply, 410, notice('This sign-in link was already used', 'Each sign-in link works once.', 'error', SIGN_IN_HELP));
      default:
        return html(reply, 404, notice('This sign-in link is not valid', 'The link is unknown or no longer valid.', 'error', SIGN_IN_HELP));
    }
  };

  app.get('/portal/sign-in', { config, schema: { hide: true, querystring: z.object({ token: z.string().max(200).optional() }) } }, (request, reply) =>
    signIn(request, reply, request.query.token),
  );
  app.get('/portal/sign-in/:token', { config, schema: { hide: true, params: z.object({ token: z.string().max(200) }) } }, (request, reply) =>
    signIn(request, reply, request.params.token),
  );

  const signedOut = () => notice('Signed out', 'You are signed out of the partner portal.', 'ok', SIGN_IN_HELP.replace('Ask the brand for a new sign-in link', 'To come back, ask the brand for a new sign-in link'));

  app.get('/portal', { config, schema: { hide: true, querystring: SubQuery } }, async (request, reply) => {
    const session = await resolvePortalSession(db, throttle, request);
    if (!session) return html(reply, 401, notice('Sign in to the partner portal', 'Open the sign-in link the brand sent you.', 'error', SIGN_IN_HELP));
    return html(reply, 200, await portalPage(deps, session, request.query));
  });

  app.post('/portal/payout-method', { config, schema: { hide: true } }, async (request, reply) => {
    const session = await resolvePortalSession(db, throttle, request);
    if (!session) return html(reply, 401, notice('Sign in to the partner portal', 'Your session has ended.', 'error', SIGN_IN_HELP));
    const parsed = PayoutMethodRequest.safeParse(methodBody((request.body ?? {}) as Record<string, unknown>));
    if (!parsed.success) return html(reply, 400, await portalPage(deps, session, {}, parsed.error.issues[0]?.message));
    await setPayoutMethod(db, session.programId, session.partnerId, parsed.data as PayoutMethod, {
      actor: { type: 'system', id: `partner:${session.partnerId}` },
      requestId: String(request.id),
    });
    return reply.redirect('/portal?saved=1', 303);
  });

  app.post('/portal/sign-out', { config, schema: { hide: true } }, async (request, reply) => {
    const token = portalTokenOf(request);
    if (token) await revokePortalSession(db, token);
    clearPortalCookie(request, reply);
    return html(reply, 200, signedOut());
  });
}
