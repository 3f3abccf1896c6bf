import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { partnerProgram } from '../../domain/partners/portal-reads.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { notFound } from '../http/errors.js';
import type { ZodApp } from '../http/schemas.js';
import { PortalSubIdQuery, SubIdBreakdown } from '../management/link-schemas.js';
import { subIdAnswer } from '../management/partner-links.js';
import { PM } from './messages.js';
import { PortalProgramParam, partnerErrors } from './schemas.js';
import { requirePortalSession } from './session.js';

/**
 * GET /api/partner/v1/programs/:programId/sub-ids (issue 31, point 3): the signed-in partner's own
 * figures per sub-id value, the brand's report (queries/sub-ids.ts) filtered to that partner; a
 * program it is not approved in is 404.
 */
export function partnerSubIdRoutes(app: ZodApp, { db, warehouse, throttle, clock }: { db: Database; warehouse: Warehouse | undefined; throttle: FailedAuthThrottle; clock: () => number }) {
  app.get(
    '/programs/:programId/sub-ids',
    {
      config: { surface: 'partner' as const },
      onRequest: requirePortalSession(db, throttle),
      schema: {
        summary: "The partner's own clicks, leads, sales and commission per value of one sub-id (sub=1..5) over UTC days (default the last 30)",
        security: [{ partnerPortalSession: [] }],
        params: PortalProgramParam,
        querystring: PortalSubIdQuery,
        response: { 200: SubIdBreakdown, ...partnerErrors, 503: partnerErrors[500] },
      },
    },
    async (request) => {
      const s = request.portalSession!;
      const program = await partnerProgram(db, s, request.params.programId);
      if (!program) throw notFound(PM.portal.programNotFound);
      return subIdAnswer(warehouse, clock, program.id, s.partnerId, request.query);
    },
  );
}
