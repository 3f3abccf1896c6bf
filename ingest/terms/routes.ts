import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import type { TermsContext } from './context.js';
import { groupRoutes } from './groups.js';
import { ruleRoutes } from './rules.js';
import { simulateRoutes } from './simulate.js';

export interface TermsDeps {
  db: Database;
  authThrottle: FailedAuthThrottle;
  /** The simulation's warehouse; without it the simulation answers 503. */
  warehouse: Warehouse | undefined;
}

/**
 * The commission terms surface under /api/tracking/programs/:programId/ (issue 30): rule versions
 * (rules.ts), partner groups and their partners (groups.ts), the what-if simulation (simulate.ts).
 * The program's own terms change through the settings PATCH (ingest/management/programs.ts), which
 * appends a version the same way. docs/decisions/commission-terms.md.
 */
export const termsRoutes: FastifyPluginAsync<TermsDeps> = async (fastify, { db, authThrottle, warehouse }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const context: TermsContext = { db, warehouse, auth: createAuth({ db, throttle: authThrottle }) };
  ruleRoutes(app, context);
  groupRoutes(app, context);
  simulateRoutes(app, context);
};
