import { reviewPage, type Review as ReviewRow } from '../../domain/fraud/reviews.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { config, moneyAccess, type MoneyContext } from './context.js';
import { Review, ReviewsCursor, ReviewsQuery, moneyErrors, page } from './schemas.js';
import { commissionOut } from './views.js';

const reviewOut = ({ partner_name, held_at, reasons, sale, ...c }: ReviewRow) => ({
  ...commissionOut(c),
  partner_name,
  held_at: held_at.toISOString(),
  reasons,
  sale: { ...sale, occurred_at: sale.occurred_at.toISOString() },
});

/**
 * The review queue (partner-program.md, "Fraud review"): the program's held commissions with their
 * reasons and evidence, oldest hold first, in cursor pages. Members read; owners approve or reject
 * through POST .../commissions/:commissionId/approve|reject.
 */
export function reviewRoutes(app: ZodApp, { db, auth }: MoneyContext) {
  app.get(
    '/programs/:programId/reviews',
    {
      config,
      ...moneyAccess(auth).read,
      schema: {
        summary: 'Held commissions waiting for review, with their reasons and evidence (cursor pages; approve or reject through the commission endpoints)',
        params: programIdParam,
        querystring: ReviewsQuery,
        response: { 200: page(Review), ...moneyErrors },
      },
    },
    async (request) => {
      const { cursor, limit, partner_id: partnerId } = request.query;
      const result = await reviewPage(db, request.params.programId, { partnerId, after: cursor, limit: limit ?? 50 });
      return { data: result.items.map(reviewOut), has_more: result.next !== undefined, next_cursor: result.next ? ReviewsCursor.encode(result.next) : null };
    },
  );
}
