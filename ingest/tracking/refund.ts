import { createRefundWriter } from '../../domain/tracking/refunds.js';
import { PlatformError, type ZodApp } from '../http/schemas.js';
import type { TrackingRouteDeps } from './route-deps.js';
import { RefundRequest, RefundResponse, trackingErrors } from './schemas.js';

/** POST /refund: a refund or chargeback of a sale, from a brand's server; it shares the sale's budget. */
export function refundRoute(app: ZodApp, deps: TrackingRouteDeps) {
  const recordRefund = createRefundWriter(deps.db);
  app.post(
    '/refund',
    {
      config: { surface: 'refund' },
      bodyLimit: deps.bodyLimit,
      onRequest: [deps.saleRefund.beforeAuth, deps.key('refund', false), deps.saleRefund.afterAuth],
      schema: { summary: 'Record a refund or chargeback of a sale', body: RefundRequest, response: { 200: RefundResponse, 404: PlatformError, ...trackingErrors } },
    },
    async (request) => {
      const { transaction_id, reason, refund_reason } = request.body;
      const refund = await recordRefund({
        programId: request.programKey!.programId,
        transactionId: transaction_id,
        reason,
        refundReason: refund_reason,
      });
      return {
        data: {
          refund_id: refund.refundId,
          sale_id: refund.saleId,
          transaction_id: refund.transactionId,
          reason: refund.reason,
          sale_status: refund.saleStatus,
          commission_reversed: refund.commissionReversed,
          created_at: refund.createdAt.toISOString(),
        },
      };
    },
  );
}
