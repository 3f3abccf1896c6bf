import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { performanceWithReporting } from '../../queries/reporting-totals.js';
import { integrationFacts, integrationStatus } from '../../domain/programs/integration-status.js';
import { webhookHealth } from '../../domain/webhooks/endpoints.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { notFound } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, programIdParam } from '../http/schemas.js';
import { DashboardStatusOk, PerformanceQuery, PerformanceReportingOk } from './schemas.js';

export interface DashboardDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  /** The warehouse the performance figures are read from; without it that route answers 500. */
  warehouse?: Warehouse;
  /** Milliseconds since the epoch: "today" of the presets, and lastUpdated. */
  clock: () => number;
}

const security = [{ dashboardSession: [] }];

/**
 * The dashboard's read API (dashboard session only; a program key is no session). Performance is
 * read from the warehouse; the integration status from Postgres (see integrationFacts).
 */
export const dashboardRoutes: FastifyPluginAsync<DashboardDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { db, warehouse, clock } = deps;
  // Performance and status refuse differently (403 everywhere against 401/404/403): their rows
  // of the requirement table say how.
  const auth = createAuth({ db, throttle: deps.authThrottle });

  app.get(
    '/performance/:programId',
    {
      config: { surface: 'performance' },
      ...auth.require('performance', 'tracking:read'),
      schema: {
        summary: 'Daily performance of a program, totals and trends against the previous period',
        security,
        params: programIdParam,
        querystring: PerformanceQuery,
        response: { 200: PerformanceReportingOk, 400: PlatformError, 403: PlatformError, 500: PlatformError },
      },
    },
    async (request) => {
      if (!warehouse) throw new Error('no warehouse is configured: performance figures cannot be read');
      const { programId } = request.params;
      const { createdAt, workspaceId, reportingCurrency } = request.authorizedProgram!;
      return performanceWithReporting(
        warehouse,
        { programId, programCreatedAt: createdAt, query: request.query, now: clock() },
        { workspaceId, reportingCurrency },
      );
    },
  );

  app.get(
    '/status/:programId',
    {
      config: { surface: 'status' },
      ...auth.require('status', 'tracking:read'),
      schema: {
        summary: 'Integration checklist of a program (needs tracking:read)',
        security,
        params: programIdParam,
        response: { 200: DashboardStatusOk, 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 500: PlatformError },
      },
    },
    async (request) => {
      const { programId } = request.params;
      const facts = await integrationFacts(db, programId);
      if (!facts) throw notFound(M.dashboard.programNotFound);
      return { data: { ...integrationStatus(programId, facts, new Date(clock())), webhooks: await webhookHealth(db, programId) } };
    },
  );
};
