import { refused } from '../../domain/errors.js';
import { createSaleWriter, type SaleOutcome } from '../../domain/tracking/sales.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, type ZodApp } from '../http/schemas.js';
import { refusalAnswer } from '../http/surfaces.js';
import type { TrackingRouteDeps } from './route-deps.js';
import { SaleRequest, SaleResponse, trackingErrors } from './schemas.js';

function saleView(outcome: SaleOutcome) {
  const { sale, commission } = outcome;
  return {
    data: {
      sale_id: sale.id,
      transaction_id: sale.transaction_id,
      program_id: sale.program_id,
      customer_id: sale.customer_id,
      amount_cents: sale.amount_cents,
      currency: sale.currency,
      occurred_at: sale.occurred_at.toISOString(),
      status: 'paid' as const,
      conversion: outcome.converted,
      test_mode: sale.test,
      commission: commission && {
        commission_id: commission.id,
        partner_id: commission.partner_id,
        amount_cents: commission.amount_cents,
        currency: commission.currency,
      },
    },
  };
}

/** POST /sale: a payment, from a brand's server with the program key. */
export function saleRoute(app: ZodApp, deps: TrackingRouteDeps) {
  const recordSale = createSaleWriter(deps.db, deps.platformFeeBps);
  app.post(
    '/sale',
    {
      config: { surface: 'sale' },
      bodyLimit: deps.bodyLimit,
      onRequest: [deps.saleRefund.beforeAuth, deps.key('sale', false), deps.saleRefund.afterAuth],
      schema: {
        summary: 'Record a payment (sale)',
        body: SaleRequest,
        response: { 200: SaleResponse, 409: PlatformError, 422: PlatformError, ...trackingErrors },
      },
    },
    async (request) => {
      const b = request.body;
      const test = b.additional_data?.test_mode ?? false;
      if (!test) {
        if (b.transaction_id === undefined) throw badRequest(M.sale.transactionId);
        if (b.amount_cents === undefined) throw badRequest(M.sale.amount);
        if (b.customer_key === undefined && b.click_id === undefined) throw refused({ reason: 'customer_not_found' });
      }
      const outcome = await recordSale({
        programId: request.programKey!.programId,
        transactionId: b.transaction_id,
        amountCents: b.amount_cents,
        customerKey: b.customer_key,
        clickId: b.click_id,
        currency: b.currency ?? 'USD',
        occurredAt: b.occurred_at,
        provider: b.provider,
        providerPaymentId: b.provider_payment_id,
        livemode: b.livemode,
        isRecurring: b.is_recurring ?? false,
        saleType: b.sale_type,
        subscriptionId: b.subscription_id,
        test,
        promoCode: b.additional_data?.promo_code,
      });
      // Stored, yet refused: the sale stays and the answer is the refusal.
      if (outcome.refusal) throw refusalAnswer('sale', outcome.refusal);
      return saleView(outcome);
    },
  );
}
