import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { performance } from '../../queries/performance.js';
import { MAX_RANGE_DAYS, PERIODS, rangeProblem, type RangeProblem } from '../../queries/periods.js';
import { integrationFacts, integrationStatus } from '../../domain/programs/integration-status.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { notFound } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, programIdParam } from '../http/schemas.js';

export interface DashboardDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  /** The warehouse the performance figures are read from; without it that route answers 500. */
  warehouse?: Warehouse;
  /** Milliseconds since the epoch: "today" of the presets, and lastUpdated. */
  clock: () => number;
}

const RANGE_MESSAGE: Record<RangeProblem, string> = {
  dateFrom: M.dashboard.date('dateFrom'),
  dateTo: M.dashboard.date('dateTo'),
  together: M.dashboard.datesTogether,
  order: M.dashboard.dateOrder,
  span: M.dashboard.dateSpan(MAX_RANGE_DAYS),
};

const dateParam = (name: 'dateFrom' | 'dateTo') =>
  z
    .string({ error: M.dashboard.date(name) })
    .optional()
    .describe('ISO 8601 date (YYYY-MM-DD, a UTC day) or date-time (its UTC day); send dateFrom and dateTo together');

export const PerformanceQuery = z
  .strictObject(
    {
      period: z
        .enum(PERIODS, { error: M.dashboard.period })
        .optional()
        .describe('7d, 30d or 90d: the last N UTC days, today included; all: from the first activity or the program creation; default 7d'),
      dateFrom: dateParam('dateFrom'),
      dateTo: dateParam('dateTo'),
    },
    { error: (issue) => (issue.code === 'unrecognized_keys' ? M.dashboard.unknownQuery(issue.keys) : M.dashboard.badQuery) },
  )
  .superRefine((query, ctx) => {
    const problem = rangeProblem(query);
    if (problem) ctx.addIssue({ code: 'custom', message: RANGE_MESSAGE[problem] });
  });

const Trend = z.object({
  trend: z.number().nullable(),
  trendDirection: z.enum(['up', 'down', 'stable']),
  previous: z.number(),
});

export const PerformanceOk = z.object({
  data: z.array(
    z.object({
      date: z.string(),
      period: z.string(),
      clicks: z.number().int(),
      leads: z.number().int(),
      conversions: z.number().int(),
      revenue: z.number(),
      partners: z.number().int(),
      sales: z.number().int(),
      commission: z.number(),
    }),
  ),
  metrics: z.object({
    totalClicks: z.number().int(),
    totalLeads: z.number().int(),
    totalConversions: z.number().int(),
    totalRevenue: z.number(),
    conversionRate: z.number(),
    averageOrderValue: z.number(),
    totalPartners: z.number().int(),
    totalSales: z.number().int(),
    totalPartnersCommission: z.number(),
    clicksTrend: Trend,
    leadsTrend: Trend,
    conversionsTrend: Trend,
    revenueTrend: Trend,
    partnersTrend: Trend,
    salesTrend: Trend,
    commissionTrend: Trend,
  }),
  meta: z.object({
    period: z.string(),
    dateFrom: z.string(),
    dateTo: z.string(),
    previousPeriod: z.object({ dateFrom: z.string(), dateTo: z.string() }),
    currency: z.string().describe('The currency of every dollar figure'),
    otherCurrencies: z
      .array(z.object({ currency: z.string(), revenue: z.number(), commission: z.number() }))
      .describe('Revenue and commission of the range in other currencies, not converted and not in the totals'),
  }),
});

/** statistics.payments of the status endpoint; also the answer of the processor-connection routes (with their webhookUrl). */
export const PaymentsStatistics = z.object({
  paymentTrackingMode: z.enum(['processor_connect', 's2s']),
  methodReady: z.boolean(),
  processorConnectionStatus: z.string(),
  isProcessorConnected: z.boolean(),
  processorAccountId: z.string().nullable(),
  chargesEnabled: z.boolean(),
  payoutsEnabled: z.boolean(),
  detailsSubmitted: z.boolean(),
  connectionDate: z.string().nullable(),
});

const TestEvents = z.object({
  testEventCount: z.number().int(),
  hasTestEvents: z.boolean(),
  latestTestEvent: z.object({ id: z.number().int(), timestamp: z.string(), createdAt: z.string() }).nullable(),
});

export const StatusOk = z.object({
  data: z.object({
    programId: z.string(),
    stepStatuses: z.object({
      pageview: z.enum(['pending', 'complete']),
      referrals: z.enum(['pending', 'complete']),
      payments: z.enum(['pending', 'complete']),
    }),
    statistics: z.object({
      pageview: TestEvents,
      referrals: TestEvents,
      payments: PaymentsStatistics,
    }),
    hasPartners: z.boolean(),
    lastUpdated: z.string(),
  }),
});

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
        response: { 200: PerformanceOk, 400: PlatformError, 403: PlatformError, 500: PlatformError },
      },
    },
    async (request) => {
      if (!warehouse) throw new Error('no warehouse is configured: performance figures cannot be read');
      return performance(warehouse, {
        programId: request.params.programId,
        programCreatedAt: request.authorizedProgram!.createdAt,
        query: request.query,
        now: clock(),
      });
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
        response: { 200: StatusOk, 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 500: PlatformError },
      },
    },
    async (request) => {
      const { programId } = request.params;
      const facts = await integrationFacts(db, programId);
      if (!facts) throw notFound(M.dashboard.programNotFound);
      return { data: integrationStatus(programId, facts, new Date(clock())) };
    },
  );
};
