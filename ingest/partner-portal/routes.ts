import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { rateLimitHook, type RateLimitStore } from '../http/rate-limit.js';
import { partnerApiRoutes } from './api.js';
import { applyRoutes } from './apply.js';
import { brandRoutes } from './brand.js';
import { portalPageRoutes } from './pages.js';
import { partnerSubIdRoutes } from './sub-ids.js';

export interface PartnerProgramDeps {
  db: Database;
  warehouse: Warehouse | undefined;
  rateLimits: RateLimitStore;
  authThrottle: FailedAuthThrottle;
  clock: () => number;
  /** PUBLIC_BASE_URL for the portal sign-in links; the request's origin when undefined. */
  publicBaseUrl: () => string | undefined;
}

/** Applications a minute per client address (ours): counted like the click, per address, in its own bucket. */
export const APPLY_PER_MINUTE = 10;
const FORM_BODY_LIMIT = 16 * 1024;

/**
 * The partner program's surface (issue 31): applications (the public form /apply/:programId and
 * POST /api/v1/partners/apply), owners' decisions and portal links under /api/tracking, the partner
 * API under /api/partner/v1 and the /portal pages. HTML forms post application/x-www-form-urlencoded,
 * parsed here only (this plugin's scope).
 */
export const partnerProgramRoutes: FastifyPluginAsync<PartnerProgramDeps> = async (fastify, deps) => {
  const { db, warehouse, authThrottle: throttle, clock } = deps;
  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, payload, done) => {
    const form: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [k, v] of new URLSearchParams(payload as string)) if (!(k in form)) form[k] = v;
    done(null, form);
  });
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const limit = rateLimitHook(deps.rateLimits, { bucket: 'partner_apply', limit: APPLY_PER_MINUTE, keyOf: (r) => r.clientAddress }, app.log, clock);
  applyRoutes(app, { db, limit });
  portalPageRoutes(app, { db, warehouse, throttle, clock, log: app.log });
  await app.register(async (scoped) => {
    brandRoutes(scoped.withTypeProvider<ZodTypeProvider>(), { db, auth: createAuth({ db, throttle }), publicBaseUrl: deps.publicBaseUrl });
  }, { prefix: '/api/tracking' });
  await app.register(async (scoped) => {
    partnerApiRoutes(scoped.withTypeProvider<ZodTypeProvider>(), { db, warehouse, throttle, clock });
    partnerSubIdRoutes(scoped.withTypeProvider<ZodTypeProvider>(), { db, warehouse, throttle, clock });
  }, { prefix: '/api/partner/v1' });
};
