import type { FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import type { PayoutMethod } from '../../domain/ledger/methods.js';
import { setPayoutMethod } from '../../domain/ledger/methods.js';
import {
  partnerBalance,
  partnerCommissions,
  partnerLinks,
  partnerMe,
  partnerPayoutMethod,
  partnerPayouts,
  partnerProgram,
  partnerPrograms,
  partnerStatements,
  type PortalLink,
} from '../../domain/partners/portal-reads.js';
import { revokePortalSession, type PortalSession } from '../../domain/partners/portal-sessions.js';
import { buildPartnerLinkUrl, type LinkUrlOptions } from '../../domain/partners/links.js';
import { reportingOf } from '../../domain/fx/reporting.js';
import { performanceWithReporting } from '../../queries/reporting-totals.js';
import { PerformanceQuery, PerformanceReportingOk } from '../dashboard/schemas.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { badRequest, notFound } from '../http/errors.js';
import type { ZodApp } from '../http/schemas.js';
import { PM } from './messages.js';
import {
  LinksQuery,
  ListQuery,
  Me,
  PayoutMethodRequest,
  PayoutMethodView,
  PortalBalanceView,
  PortalCommissionView,
  PortalLinkView,
  PortalPayoutView,
  PortalPeriodParam,
  PortalProgramParam,
  PortalProgramView,
  PortalStatementView,
  SignedOut,
  data,
  partnerErrors,
} from './schemas.js';
import { clearPortalCookie, portalTokenOf, requirePortalSession } from './session.js';

const config = { surface: 'partner' as const };
const security = [{ partnerPortalSession: [] }];

export interface PartnerApiDeps {
  db: Database;
  warehouse: Warehouse | undefined;
  throttle: FailedAuthThrottle;
  clock: () => number;
}

const sessionOf = (request: FastifyRequest): PortalSession => {
  if (!request.portalSession) throw new Error('partner routes run with a portal session');
  return request.portalSession;
};

export type SubIds = LinkUrlOptions;

/** A link as the partner shares it: the links/promo builder's URL (program's site, ?aff=, the sub-ids asked for). */
export function linkView(l: PortalLink, subs: SubIds = {}) {
  const built = buildPartnerLinkUrl(l, subs);
  if (!built.ok) throw badRequest(built.problem === 'landing_url' ? PM.portal.landingUrl : PM.portal.sub(1));
  return { program_id: l.program_id, aff_code: l.aff_code, enabled: l.enabled, referral_url: built.url, created_at: l.created_at.toISOString() };
}

/** The programs a request reads: the one asked for (404 unless the partner is approved in it), or all of the session's. */
async function programsAsked(db: Database, s: PortalSession, programId: number | undefined): Promise<number[]> {
  if (programId === undefined) return (await partnerPrograms(db, s)).map((p) => p.id);
  if (!(await partnerProgram(db, s, programId))) throw notFound(PM.portal.programNotFound);
  return [programId];
}

/**
 * The partner API under /api/partner/v1/ (partner-program.md): a portal session (cookie) only; a
 * partner reads its own records in the programs it is approved in, never another partner's nor a
 * customer's personal data (customer keys masked, no emails).
 */
export function partnerApiRoutes(app: ZodApp, { db, warehouse, throttle, clock }: PartnerApiDeps) {
  const onRequest = requirePortalSession(db, throttle);
  const opts = { config, onRequest };

  app.get('/me', { ...opts, schema: { summary: 'The signed-in partner', security, response: { 200: data(Me), ...partnerErrors } } }, async (request) => {
    const s = sessionOf(request);
    const me = await partnerMe(db, s);
    return { data: { partner_id: me.id, name: me.name, email: me.email, created_at: me.created_at.toISOString(), payout_method: await partnerPayoutMethod(db, s) } };
  });

  app.get('/programs', { ...opts, schema: { summary: 'The programs the partner is approved in', security, response: { 200: data(PortalProgramView.array()), ...partnerErrors } } }, async (request) => ({
    data: (await partnerPrograms(db, sessionOf(request))).map((p) => ({
      program_id: p.id,
      name: p.name,
      domain: p.domain,
      status: p.status,
      joined_at: p.joined_at.toISOString(),
    })),
  }));

  app.get(
    '/programs/:programId/performance',
    {
      ...opts,
      schema: {
        summary: "The partner's own daily clicks, leads, conversions, sales and commission: the dashboard's periods and trends",
        security,
        params: PortalProgramParam,
        querystring: PerformanceQuery,
        response: { 200: PerformanceReportingOk, ...partnerErrors },
      },
    },
    async (request) => {
      const s = sessionOf(request);
      const program = await partnerProgram(db, s, request.params.programId);
      if (!program) throw notFound(PM.portal.programNotFound);
      if (!warehouse) throw new Error('no warehouse is configured: performance figures cannot be read');
      return performanceWithReporting(
        warehouse,
        { programId: program.id, programCreatedAt: program.created_at, query: request.query, now: clock(), partnerId: s.partnerId },
        await reportingOf(db, program.id),
      );
    },
  );

  app.get(
    '/links',
    { ...opts, schema: { summary: "The partner's referral links; sub1..sub5 build links carrying those sub-ids", security, querystring: LinksQuery, response: { 200: data(PortalLinkView.array()), ...partnerErrors } } },
    async (request) => {
      const s = sessionOf(request);
      const { program_id: programId, landing_url: landingUrl, ...subs } = request.query;
      if (programId !== undefined) await programsAsked(db, s, programId);
      return { data: (await partnerLinks(db, s, programId)).map((l) => linkView(l, { ...subs, landingUrl })) };
    },
  );

  app.get(
    '/commissions',
    { ...opts, schema: { summary: "The partner's commissions, newest first (customer keys masked)", security, querystring: ListQuery, response: { 200: data(PortalCommissionView.array()), ...partnerErrors } } },
    async (request) => {
      const s = sessionOf(request);
      const programs = await programsAsked(db, s, request.query.program_id);
      const rows = programs.length === 0 ? [] : await partnerCommissions(db, s, programs, request.query.limit ?? 50);
      return {
        data: rows.map((c) => ({
          commission_id: c.id,
          program_id: c.program_id,
          sale_id: c.sale_id,
          amount_minor: c.amount_minor,
          currency: c.currency,
          status: c.status,
          customer: c.customer,
          created_at: c.created_at.toISOString(),
          available_at: c.available_at.toISOString(),
          paid_at: c.paid_at?.toISOString() ?? null,
        })),
      };
    },
  );

  app.get(
    '/balance',
    { ...opts, schema: { summary: "The partner's balance per program and currency (the ledger's)", security, querystring: ListQuery, response: { 200: data(PortalBalanceView.array()), ...partnerErrors } } },
    async (request) => {
      const s = sessionOf(request);
      return { data: await partnerBalance(db, s, await programsAsked(db, s, request.query.program_id)) };
    },
  );

  app.get(
    '/payouts',
    { ...opts, schema: { summary: "The partner's payouts", security, querystring: ListQuery, response: { 200: data(PortalPayoutView.array()), ...partnerErrors } } },
    async (request) => {
      const s = sessionOf(request);
      const payouts = await partnerPayouts(db, s, await programsAsked(db, s, request.query.program_id), request.query.limit ?? 50);
      return {
        data: payouts.map((p) => ({
          payout_id: p.id,
          program_id: p.program_id,
          currency: p.currency,
          amount_minor: p.amount_minor,
          status: p.status,
          reference: p.reference,
          created_at: new Date(p.created_at).toISOString(),
          paid_at: p.paid_at === null ? null : new Date(p.paid_at).toISOString(),
        })),
      };
    },
  );

  app.get(
    '/statements/:period',
    {
      ...opts,
      schema: { summary: "The partner's own lines of each program's statement of a month", security, params: PortalPeriodParam, querystring: ListQuery, response: { 200: data(PortalStatementView.array()), ...partnerErrors } },
    },
    async (request) => {
      const s = sessionOf(request);
      return { data: await partnerStatements(db, s, await programsAsked(db, s, request.query.program_id), request.params.period) };
    },
  );

  app.patch(
    '/payout-method',
    { ...opts, schema: { summary: 'How the partner is paid: paypal (email), wise (email, name, receiver_type) or manual', security, body: PayoutMethodRequest, response: { 200: data(PayoutMethodView), ...partnerErrors } } },
    async (request) => {
      const s = sessionOf(request);
      const method = request.body as PayoutMethod;
      // The brand's audit log names the partner as the actor (a system actor: the log's actors are the brand's people and keys).
      const saved = await setPayoutMethod(db, s.programId, s.partnerId, method, { actor: { type: 'system', id: `partner:${s.partnerId}` }, requestId: String(request.id) });
      return { data: saved };
    },
  );

  app.delete('/session', { ...opts, schema: { summary: 'Sign out of the portal', security, response: { 200: data(SignedOut), ...partnerErrors } } }, async (request, reply) => {
    const token = portalTokenOf(request);
    if (token) await revokePortalSession(db, token);
    clearPortalCookie(request, reply);
    return { data: { signed_out: true as const } };
  });
}
