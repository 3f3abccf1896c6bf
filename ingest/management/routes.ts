import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import type { CliIdentity } from '../cli/context.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { rateLimitHook, type RateLimitStore } from '../http/rate-limit.js';
import { fxRateRoutes } from './fx-rates.js';
import { originRoutes } from './origins.js';
import { partnerLinkRoutes } from './partner-links.js';
import { partnerRoutes } from './partners.js';
import { programRoutes } from './programs.js';
import { sessionRoutes } from './session.js';
import { signInRoutes } from './sign-in.js';
import { teamRoutes } from './team.js';

export interface ManagementDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  /** The console's sign-in is limited per client address (SIGN_IN_PER_MINUTE). */
  rateLimits: RateLimitStore;
  clock: () => number;
  /** The OpenID provider of the console's sign-in (the CLI's); without it sign-in answers 503. */
  identity: CliIdentity | undefined;
  /** The partner list's totals; without it they are null. */
  warehouse: Warehouse | undefined;
  /** PUBLIC_BASE_URL for the invite links; the request's origin when undefined. */
  publicBaseUrl: () => string | undefined;
}

/** Keyless sign-in calls a minute per client address: a person needs two a sign-in. */
const SIGN_IN_PER_MINUTE = 30;

/**
 * The management API under /api/tracking/ (dashboard session): programs (programs.ts), one
 * program's settings and its origins (origins.ts), the session's sign-in and sign-out
 * (sign-in.ts, session.ts), the workspace's team (team.ts), partners and their links
 * (partners.ts). The processor connection of a program is the payments surface's
 * (ingest/payments/connection.ts).
 */
export const managementRoutes: FastifyPluginAsync<ManagementDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { db } = deps;
  const context = { db, auth: createAuth({ db, throttle: deps.authThrottle }) };
  const limit = rateLimitHook(deps.rateLimits, { bucket: 'console_sign_in', limit: SIGN_IN_PER_MINUTE, keyOf: (r) => r.clientAddress }, app.log, deps.clock);
  programRoutes(app, context);
  originRoutes(app, context);
  sessionRoutes(app, context);
  signInRoutes(app, { ...context, identity: deps.identity, limit });
  teamRoutes(app, { ...context, publicBaseUrl: deps.publicBaseUrl });
  partnerRoutes(app, { ...context, warehouse: deps.warehouse });
  partnerLinkRoutes(app, { ...context, warehouse: deps.warehouse, clock: deps.clock });
  fxRateRoutes(app, { ...context, clock: deps.clock });
};
