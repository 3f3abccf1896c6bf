import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { commissionRoutes } from './commissions.js';
import { commissionListRoutes } from './commission-list.js';
import type { MoneyContext } from './context.js';
import { partnerMoneyRoutes } from './partners.js';
import { payoutRoutes } from './payouts.js';
import { reviewRoutes } from './reviews.js';
import { statementRoutes } from './statements.js';

export interface MoneyDeps {
  db: Database;
  authThrottle: FailedAuthThrottle;
  /** Milliseconds since the epoch: a cutoff or a period later than it is refused. */
  clock: () => number;
}

/**
 * The money surface under /api/tracking/programs/:programId/ (issue 34): commissions
 * (commissions.ts), a partner's ledger, balance, adjustments and payout method (partners.ts),
 * payouts and exports (payouts.ts), statements and payout settings (statements.ts), the fraud
 * review queue (reviews.ts, issue 31). A dashboard
 * session; members read, owners move money (`money:write`), through the management family's
 * refusals (ingest/http/auth/requirements.ts).
 */
export const moneyRoutes: FastifyPluginAsync<MoneyDeps> = async (fastify, { db, authThrottle, clock }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const context: MoneyContext = { db, clock, auth: createAuth({ db, throttle: authThrottle }) };
  commissionRoutes(app, context);
  partnerMoneyRoutes(app, context);
  payoutRoutes(app, context);
  statementRoutes(app, context);
  reviewRoutes(app, context);
  commissionListRoutes(app, context);
};
