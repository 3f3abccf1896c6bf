import { programBalances } from '../../domain/ledger/balances.js';
import { payoutsPage } from '../../domain/ledger/payouts.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import type { CliRouteContext } from './context.js';
import { PayoutsResponse, cliErrors } from './schemas.js';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** `svc payouts` (issue 34): a program's latest payouts and its partners' balances, with the account login token. */
export function payoutRoutes(app: ZodApp, { deps: { db }, auth }: CliRouteContext) {
  app.get(
    '/programs/:programId/payouts',
    {
      config: { surface: 'cliPayouts' },
      ...auth.require('cliProgram', 'tracking:read'),
      schema: {
        summary: "A program's latest 50 payouts and its partners' balances (account login token)",
        params: programIdParam,
        response: { 200: PayoutsResponse, ...cliErrors },
      },
    },
    async (request) => {
      const programId = request.params.programId;
      const [payouts, balances] = await Promise.all([payoutsPage(db, programId, { limit: 50 }), programBalances(db, programId, 200)]);
      return {
        data: {
          program_id: programId,
          payouts: payouts.items.map((p) => ({
            id: p.id,
            partner_id: p.partner_id,
            partner_name: p.partner_name,
            currency: p.currency,
            amount_minor: p.amount_minor,
            status: p.status,
            commissions: p.commission_ids.length,
            created_at: iso(p.created_at)!,
            paid_at: iso(p.paid_at),
            reference: p.reference,
          })),
          balances,
        },
      };
    },
  );
}
