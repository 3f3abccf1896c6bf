import type { FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import { listApplications } from '../../domain/partners/applications.js';
import { decidePartner, type PartnerDecision } from '../../domain/partners/states.js';
import { createPortalLink } from '../../domain/partners/portal-sessions.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import { ApiError, notFound } from '../http/errors.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { PartnerParams } from '../management/console-schemas.js';
import { PM } from './messages.js';
import { ApplicationView, ApplicationsQuery, PartnerDecided, PortalLinkCreated, data, partnerErrors } from './schemas.js';

const config = { surface: 'partner' as const };
const errors = { ...partnerErrors, 403: partnerErrors[401] };

/** The service's public base for the sign-in link: PUBLIC_BASE_URL, else the request's own origin. */
export function baseUrlOf(request: FastifyRequest, publicBaseUrl: () => string | undefined): string {
  return (publicBaseUrl() ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
}

/**
 * Owners' decisions on a partner of their program (partner-program.md): approve, reject, ban, and
 * the one-time portal sign-in link. A partner of another program is 404 like an unknown one.
 */
export function brandRoutes(app: ZodApp, { db, auth, publicBaseUrl }: { db: Database; auth: Auth; publicBaseUrl: () => string | undefined }) {
  const owners = auth.require('management', 'partners:manage');

  const decision = (name: PartnerDecision, summary: string) =>
    app.post(
      `/programs/:programId/partners/:partnerId/${name}`,
      { config, ...owners, schema: { summary, params: PartnerParams, response: { 200: data(PartnerDecided), ...errors } } },
      async (request) => {
        const { programId, partnerId } = request.params;
        const result = await decidePartner(db, programId, partnerId, name, auditContextOf(request));
        if (result.outcome === 'not_found') throw notFound(PM.decision.notFound);
        if (result.outcome === 'conflict') throw new ApiError(409, PM.decision.conflict(result.status, name), { details: { status: result.status } });
        return { data: { ...result.view, changed: result.changed } };
      },
    );
  app.get(
    '/programs/:programId/applications',
    {
      config,
      ...auth.require('management', 'tracking:read'),
      schema: {
        summary: "The program's applications, newest first: what each applicant sent (name, email, website, message) and its state now",
        params: programIdParam,
        querystring: ApplicationsQuery,
        response: { 200: data(ApplicationView.array()), ...errors },
      },
    },
    async (request) => {
      const rows = await listApplications(db, request.params.programId, request.query.status, request.query.limit ?? 50);
      return { data: rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() })) };
    },
  );

  decision('approve', 'Approve a partner (owners): a partner without a referral link gets its first one; partner.approved');
  decision('reject', 'Reject a pending application (owners)');
  decision('ban', "Ban a partner (owners): its links are disabled at once, its pending and approved commissions held, its portal sessions ended");

  app.post(
    '/programs/:programId/partners/:partnerId/portal-link',
    {
      config,
      ...owners,
      schema: {
        summary: 'A one-time portal sign-in link for an approved partner (owners): valid 24 hours, used once, shown once',
        params: PartnerParams,
        response: { 200: data(PortalLinkCreated), ...errors },
      },
    },
    async (request) => {
      const { programId, partnerId } = request.params;
      const result = await createPortalLink(db, programId, partnerId, auditContextOf(request));
      if (result.outcome === 'not_found') throw notFound(PM.decision.notFound);
      if (result.outcome === 'not_approved') throw new ApiError(409, PM.decision.portalNotApproved(result.status), { details: { status: result.status } });
      return {
        data: {
          partner_id: partnerId,
          program_id: programId,
          url: `${baseUrlOf(request, publicBaseUrl)}/portal/sign-in?token=${encodeURIComponent(result.token)}`,
          expires_at: result.expiresAt.toISOString(),
        },
      };
    },
  );
}
