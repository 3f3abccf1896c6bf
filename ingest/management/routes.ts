import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { partnerRoutes } from './partners.js';
import { programRoutes } from './programs.js';
import { sessionRoutes } from './session.js';

export interface ManagementDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
}

/**
 * The management API under /api/tracking/ (dashboard session): programs (programs.ts), the
 * session's sign-out (session.ts), partners and their links (partners.ts). The processor
 * connection of a program is the payments surface's (ingest/payments/connection.ts).
 */
export const managementRoutes: FastifyPluginAsync<ManagementDeps> = async (fastify, { db, authThrottle }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const context = { db, auth: createAuth({ db, throttle: authThrottle }) };
  programRoutes(app, context);
  sessionRoutes(app, context);
  partnerRoutes(app, context);
};
