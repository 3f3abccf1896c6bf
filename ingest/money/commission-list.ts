import { z } from 'zod';
import { commissionPage } from '../../domain/ledger/commission-list.js';
import { listCursor } from '../agent/cursor.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { config, moneyAccess, type MoneyContext } from './context.js';
import { ListedCommission, limit, moneyErrors, page, unknownQuery } from './schemas.js';
import { commissionOut } from './views.js';

const COMMISSION_STATUSES = ['pending', 'held', 'approved', 'processing', 'paid', 'reversed'] as const;
export const CommissionsCursor = listCursor('commissions', 'postgres', 'uuid');

export const CommissionsQuery = z.strictObject(
  {
    status: z.enum(COMMISSION_STATUSES, { error: M.money.status(COMMISSION_STATUSES) }).optional().describe('Only commissions in this state, as reads show it'),
    partner_id: z.string({ error: M.money.partnerId }).regex(/^[1-9][0-9]{0,14}$/, M.money.partnerId).transform(Number).optional().describe("Only this partner's commissions"),
    limit,
    cursor: CommissionsCursor.schema,
  },
  unknownQuery,
);

/**
 * GET .../commissions (issue 33, point 5: the console's commission list): the program's commissions,
 * newest first, by state and partner, in cursor pages. Members read.
 */
export function commissionListRoutes(app: ZodApp, { db, auth }: MoneyContext) {
  app.get(
    '/programs/:programId/commissions',
    {
      config,
      ...moneyAccess(auth).read,
      schema: {
        summary: "The program's commissions, newest first, optionally of one state and one partner (cursor pages)",
        params: programIdParam,
        querystring: CommissionsQuery,
        response: { 200: page(ListedCommission), ...moneyErrors },
      },
    },
    async (request) => {
      const { status, partner_id: partnerId, cursor, limit: size } = request.query;
      const result = await commissionPage(db, request.params.programId, { status, partnerId, after: cursor, limit: size ?? 50 });
      return { data: result.items.map((c) => ({ ...commissionOut(c), partner_name: c.partner_name })), has_more: result.next !== undefined, next_cursor: result.next ? CommissionsCursor.encode(result.next) : null };
    },
  );
}
