/**
 * GET /api/tracking/performance/:programId from the warehouse: one query per request, which
 * returns the daily figures of the range and of its previous window together.
 */
import { sql } from '../core/sql.js';
import type { Warehouse } from '../core/warehouse.js';
import { buildPerformance, firstActivityDay, type DailyFigure, type PerformanceBody } from './metrics.js';
import { allTimeRange, dayOf, dayString, planRange, type Day, type RangeQuery } from './periods.js';
import { partnerDailyFiguresSql } from './partner-performance.js';

/*
 * Which timestamp each metric counts by, and what it counts (docs/decisions/dashboard.md, "Dashboard"):
 *   clicks       the click's time; real clicks only
 *   leads        the customer's signup_date; status lead or conversion; not provisional, not test
 *   conversions  the customer's first_purchase_date (the converting sale's occurred_at); status conversion; not test
 *   sales        the sale's occurred_at (may be back-dated up to 30 days); status paid now, not test;
 *                the number of sales and their amount, per currency
 *   partners     the partner-program record's creation; each record once
 *   commissions  the commission's creation (when it was written); not reversed; per currency
 * These rules are applied when the loader maps performance facts (processors/loader/mappers.ts) and
 * recomputes the hours they touch (processors/loader/rollup.ts): the latest state of each entity, each
 * entity once however often it was delivered. Here the hours of the range are summed per UTC day,
 * a few thousand rows at most for 90 days, read with FINAL so the latest computation of an hour wins.
 */
export const dailyFiguresSql = sql(
  'dashboard.performance_daily_figures',
  `SELECT toString(toDate(hour)) AS day,
          sum(clicks) AS clicks, sum(leads) AS leads, sum(conversions) AS conversions, sum(partners) AS partners,
          sumMap(sales) AS sales, sumMap(revenue) AS revenue, sumMap(commissions) AS commissions, sumMap(commission) AS commission
     FROM performance_hourly FINAL
    WHERE program_id = {programId:Int64}
      AND hour >= toDateTime({from:Date}, 'UTC') AND hour < toDateTime({to:Date}, 'UTC') + INTERVAL 1 DAY
    GROUP BY day
    ORDER BY day`,
);

type Amounts = Record<string, number | string>;

interface DayRow {
  day: string;
  clicks: number;
  leads: number;
  conversions: number;
  partners: number;
  sales: Amounts;
  revenue: Amounts;
  commissions: Amounts;
  commission: Amounts;
}

/** The daily figures of a program from the first to the last day (inclusive); a day or currency without a count has none. */
export async function dailyFigures(warehouse: Warehouse, programId: number, first: Day, last: Day, partnerId?: number): Promise<DailyFigure[]> {
  const range = { programId, from: dayString(first), to: dayString(last) };
  // The partner portal's figures: the same facts, one partner's entities (queries/partner-performance.ts).
  const rows =
    partnerId === undefined ? await warehouse.query<DayRow>(dailyFiguresSql, range) : await warehouse.query<DayRow>(partnerDailyFiguresSql, { ...range, partnerId });
  const figures: DailyFigure[] = [];
  for (const r of rows) {
    const day = dayOf(Date.parse(`${r.day}T00:00:00Z`));
    for (const metric of ['clicks', 'leads', 'conversions', 'partners'] as const) {
      const n = Number(r[metric]);
      if (n > 0) figures.push({ metric, day, currency: '', n, cents: 0 });
    }
    for (const [metric, counts, amounts] of [
      ['sales', r.sales, r.revenue],
      ['commissions', r.commissions, r.commission],
    ] as const) {
      for (const [currency, n] of Object.entries(counts)) {
        if (Number(n) > 0) figures.push({ metric, day, currency, n: Number(n), cents: Number(amounts[currency] ?? 0) });
      }
    }
  }
  return figures;
}

export interface PerformanceRequest {
  programId: number;
  /** When the program was created: `all` starts there at the latest. */
  programCreatedAt: Date;
  query: RangeQuery;
  /** Milliseconds since the epoch: today is its UTC day. */
  now: number;
  /** Only this partner's figures (the partner portal); the program's when absent. */
  partnerId?: number;
}

/** The performance response for a validated query (see rangeProblem in periods.ts). */
export async function performance(warehouse: Warehouse, r: PerformanceRequest): Promise<PerformanceBody> {
  return (await performanceAndFigures(warehouse, r)).body;
}

/** The response and the daily figures it was built from: the reporting totals (issue 30) convert the same figures. */
export async function performanceAndFigures(warehouse: Warehouse, r: PerformanceRequest): Promise<{ body: PerformanceBody; figures: DailyFigure[] }> {
  const plan = planRange(r.query, dayOf(r.now));
  const figures = await dailyFigures(warehouse, r.programId, plan.fetch.first, plan.fetch.last, r.partnerId);
  const current =
    plan.kind === 'fixed' ? plan.current : allTimeRange(dayOf(r.programCreatedAt.getTime()), firstActivityDay(figures), plan.today);
  return { body: buildPerformance(figures, current, plan.period), figures };
}
