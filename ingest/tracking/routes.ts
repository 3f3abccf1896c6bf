import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ZodApp } from '../http/schemas.js';
import { preflightRoutes } from './browser.js';
import { clickRoute } from './click.js';
import { leadRoute } from './lead.js';
import { refundRoute } from './refund.js';
import { trackingRouteDeps, type TrackDeps } from './route-deps.js';
import { saleRoute } from './sale.js';

/**
 * The tracking plugin (/api/v1/track): one module per route, built from the hooks they share
 * (./route-deps.ts: limits, key checks, the sale and refund budget, the browser's CORS). Request
 * and response bodies are the contract in ./schemas.ts.
 */
export const trackRoutes: FastifyPluginAsync<TrackDeps> = async (fastify, deps) => {
  const app: ZodApp = fastify.withTypeProvider<ZodTypeProvider>();
  const shared = trackingRouteDeps(app, deps);
  preflightRoutes(app, deps.db);
  clickRoute(app, shared);
  leadRoute(app, shared);
  saleRoute(app, shared);
  refundRoute(app, shared);
};
