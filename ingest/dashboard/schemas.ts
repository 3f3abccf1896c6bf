/**
 * The dashboard read API's schemas (/api/tracking/performance and /status): the routes validate,
 * serialize and document with them; the agent API and the CLI's status answer with the same shapes,
 * and the processor-connection routes with PaymentsStatistics.
 */
import { z } from 'zod';
import { MAX_RANGE_DAYS, PERIODS, rangeProblem, type RangeProblem } from '../../queries/periods.js';
import { M } from '../http/messages.js';

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

/** Issue 30: totals in the program's reporting currency (queries/reporting-totals.ts); the portal's answer too. */
export const ReportingTotals = z
  .object({
    reporting_currency: z.string().describe("The program's reporting_currency (ISO 4217)"),
    from: z.string().describe('First UTC day (YYYY-MM-DD)'),
    to: z.string().describe('Last UTC day (YYYY-MM-DD)'),
    sales: z.number().int().describe('Paid sales converted'),
    revenue_minor: z.number().int(),
    revenue: z.number().describe('revenue_minor / 100, in the reporting currency'),
    commissions: z.number().int().describe('Commissions (not reversed) converted'),
    commission_minor: z.number().int(),
    commission: z.number(),
    unconverted: z
      .array(
        z.object({
          currency: z.string(),
          sales: z.number().int(),
          revenue_minor: z.number().int(),
          revenue: z.number(),
          commissions: z.number().int(),
          commission_minor: z.number().int(),
          commission: z.number(),
        }),
      )
      .describe('Amounts with no rate on or before their day, per currency: listed, never in the totals'),
    fx: z.object({
      reporting_currency: z.string(),
      rates: z
        .array(z.object({ currency: z.string(), day: z.string(), rate: z.number(), rate_date: z.string() }))
        .describe('Each rate used: one unit of currency was rate units of the reporting currency for the figures of day; rate_date: the published rate (latest on or before day)'),
    }),
  })
  .describe('Totals in the reporting currency, each day converted with the latest rate on or before it');

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

/** The dashboard's and the agent's performance answer: the contract's fields and, beside them, the totals in the reporting currency. */
export const PerformanceReportingOk = PerformanceOk.extend({ reporting: ReportingTotals });

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

/** A program's integration checklist (GET /status/:programId's data; the CLI's status and the agent answer it too). */
export const IntegrationStatus = z.object({
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
});

/** The program's outgoing webhook endpoints at a glance (issue 32): the dashboard's status adds it; the CLI's and the agent's do not. */
export const WebhookHealth = z.object({
  endpoints: z.number().int(),
  enabled: z.number().int(),
  disabled_failing: z.number().int().describe('Disabled by the service: every attempt failed for 5 days'),
  disabled_manual: z.number().int(),
  failing: z.number().int().describe('Enabled, but failing since their last success'),
});

export const StatusOk = z.object({ data: IntegrationStatus });
/** The dashboard's status: the checklist and the program's webhook endpoints. */
export const DashboardStatusOk = z.object({ data: IntegrationStatus.extend({ webhooks: WebhookHealth }) });
