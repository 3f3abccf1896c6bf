import { simulateCommissions } from '../../queries/simulate.js';
import { ApiError } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { checkCommissionRate, checkRecurringMonths, data } from '../management/schemas.js';
import { config, termsAccess, termsErrors, type TermsContext } from './context.js';
import { SimulateRequest, SimulationOut } from './schemas.js';

type Money = { currency: string; actual_minor: number; simulated_minor: number };

/**
 * POST .../commissions/simulate (issue 30, point 4): read-only, computed in the warehouse
 * (queries/simulate.ts); a member may simulate, as it reads. A POST only because the terms are a body.
 */
export function simulateRoutes(app: ZodApp, { auth, warehouse }: TermsContext) {
  app.post(
    '/programs/:programId/commissions/simulate',
    {
      config,
      ...termsAccess(auth).read,
      schema: {
        summary: 'What other terms would have paid on the sales (and refunds) of a range, per partner, beside the actual commissions; writes nothing',
        params: programIdParam,
        body: SimulateRequest,
        response: { 200: data(SimulationOut), ...termsErrors },
      },
    },
    async (request) => {
      const { terms, from, to, partner_id: partnerId } = request.body;
      checkCommissionRate(terms.commission_type, terms.commission_rate);
      checkRecurringMonths(terms.commission_type, terms.recurring_months);
      if (!warehouse) throw new ApiError(503, M.terms.warehouseUnavailable);
      const months = terms.recurring_months ?? null;
      const simulated = { commission_type: terms.commission_type, commission_rate: terms.commission_rate, recurring_months: months };
      const rows = await simulateCommissions(warehouse, request.params.programId, simulated, { from, to, partnerId });
      const partners = new Map<number, { partner_id: number; sales: number; totals: Money[] }>();
      const totals = new Map<string, Money>();
      for (const r of rows) {
        const p = partners.get(r.partner_id) ?? partners.set(r.partner_id, { partner_id: r.partner_id, sales: 0, totals: [] }).get(r.partner_id)!;
        p.sales += r.sales;
        p.totals.push({ currency: r.currency, actual_minor: r.actual_minor, simulated_minor: r.simulated_minor });
        const t = totals.get(r.currency) ?? totals.set(r.currency, { currency: r.currency, actual_minor: 0, simulated_minor: 0 }).get(r.currency)!;
        t.actual_minor += r.actual_minor;
        t.simulated_minor += r.simulated_minor;
      }
      return {
        data: {
          from: from.toISOString(),
          to: to.toISOString(),
          terms: simulated,
          partners: [...partners.values()],
          totals: [...totals.values()].sort((a, b) => (a.currency < b.currency ? -1 : 1)),
        },
      };
    },
  );
}
