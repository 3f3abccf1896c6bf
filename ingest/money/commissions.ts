import { decideCommission, getCommission } from '../../domain/ledger/lifecycle.js';
import { auditContextOf } from '../http/audit.js';
import type { ZodApp } from '../http/schemas.js';
import { config, type MoneyContext } from './context.js';
import { Commission, CommissionParams, DecisionRequest, data, moneyErrors } from './schemas.js';
import { commissionOut } from './views.js';

/** A commission read, approved or rejected (partner-program.md, "Commission lifecycle"): owners decide, members read. */
export function commissionRoutes(app: ZodApp, { db, auth }: MoneyContext) {
  app.get(
    '/programs/:programId/commissions/:commissionId',
    {
      config,
      ...auth.require('management', 'tracking:read'),
      schema: { summary: 'Read a commission (its state as of now)', params: CommissionParams, response: { 200: data(Commission), ...moneyErrors } },
    },
    async (request) => ({ data: commissionOut(await getCommission(db, request.params.programId, request.params.commissionId)) }),
  );

  for (const decision of ['approve', 'reject'] as const) {
    app.post(
      `/programs/:programId/commissions/:commissionId/${decision}`,
      {
        config,
        ...auth.require('management', 'money:write'),
        schema: {
          summary:
            decision === 'approve'
              ? 'Approve a pending or held commission (owners; 409 when processing, paid, approved or reversed)'
              : 'Reject a pending, held or approved commission: reversed, its ledger reversal written (owners; 409 when processing or paid)',
          params: CommissionParams,
          body: DecisionRequest,
          response: { 200: data(Commission), ...moneyErrors },
        },
      },
      async (request) => {
        const { programId, commissionId } = request.params;
        return { data: commissionOut(await decideCommission(db, programId, commissionId, decision, request.body.reason, auditContextOf(request))) };
      },
    );
  }
}
