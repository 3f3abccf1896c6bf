/**
 * GET /api/tracking/performance/:programId from the warehouse: one query per request, which
 * returns the daily figures of the range and of its previous window together.
 */
import { sql } from '../core/db.js';
import type { Warehouse } from '../core/warehouse.js';
import { buildPerformance, firstActivityDay, type DailyFigure, type Metric, type PerformanceBody } from './metrics.js';
import { allTimeRange, dayOf, dayString, planRange, type Day, type RangeQuery } from './periods.js';

/*
 * Which timestamp each metric counts by, and what it counts (docs/decisions.md, "Dashboard"):
 *   clicks       click_recorded.occurred_at (the click's time); real clicks only
 *   leads        customers_current.signup_date; status lead or conversion; not provisional, not test
 *   conversions  customers_current.first_purchase_date (the converting sale's occurred_at); status conversion; not test
 *   sales        sales_current.occurred_at (may be back-dated up to 30 days); status paid now, not test;
 *                n is the number of sales, cents their amount, per currency
 *   partners     partner_program_changed.created_at; each partner-program record once
 *   commissions  commissions_current.created_at (when it was written); not reversed; per currency
 * The current-state tables are read with FINAL, so a customer counts in its latest version, a sale in
 * its latest status (a refund or chargeback takes it out) and a commission once reversed no more. The
 * event table is read with FINAL (clicks) or uniqExact (partner programs), so a redelivered event
 * never counts twice. FINAL applies before WHERE (optimize_move_to_prewhere_if_final is off by
 * default), so a filter on status sees the merged row, never a superseded one.
 */
export const dailyFiguresSql = sql(
  'dashboard.performance_daily_figures',
  `SELECT metric, toString(day) AS day, currency, n, cents
     FROM (
       SELECT 'clicks' AS metric, toDate(occurred_at) AS day, '' AS currency, toUInt64(count()) AS n, toInt64(0) AS cents
         FROM click_recorded FINAL
        WHERE program_id = {programId:Int64} AND toDate(occurred_at) BETWEEN {from:Date} AND {to:Date}
          AND NOT test
        GROUP BY day
       UNION ALL
       SELECT 'leads', toDate(assumeNotNull(signup_date)) AS day, '', toUInt64(count()), toInt64(0)
         FROM customers_current FINAL
        WHERE program_id = {programId:Int64} AND signup_date IS NOT NULL
          AND toDate(assumeNotNull(signup_date)) BETWEEN {from:Date} AND {to:Date}
          AND status IN ('lead', 'conversion') AND NOT provisional AND NOT test
        GROUP BY day
       UNION ALL
       SELECT 'conversions', toDate(assumeNotNull(first_purchase_date)) AS day, '', toUInt64(count()), toInt64(0)
         FROM customers_current FINAL
        WHERE program_id = {programId:Int64} AND first_purchase_date IS NOT NULL
          AND toDate(assumeNotNull(first_purchase_date)) BETWEEN {from:Date} AND {to:Date}
          AND status = 'conversion' AND NOT test
        GROUP BY day
       UNION ALL
       SELECT 'sales', toDate(assumeNotNull(occurred_at)) AS day, toString(currency) AS currency,
              toUInt64(count()), toInt64(sum(amount_cents))
         FROM sales_current FINAL
        WHERE program_id = {programId:Int64} AND occurred_at IS NOT NULL
          AND toDate(assumeNotNull(occurred_at)) BETWEEN {from:Date} AND {to:Date}
          AND status = 'paid' AND NOT test
        GROUP BY day, currency
       UNION ALL
       SELECT 'partners', toDate(created_at) AS day, '', toUInt64(uniqExact(partner_program_id)), toInt64(0)
         FROM partner_program_changed FINAL
        WHERE program_id = {programId:Int64} AND toDate(created_at) BETWEEN {from:Date} AND {to:Date}
        GROUP BY day
       UNION ALL
       SELECT 'commissions', toDate(created_at) AS day, toString(currency) AS currency,
              toUInt64(count()), toInt64(sum(amount_cents))
         FROM commissions_current FINAL
        WHERE program_id = {programId:Int64} AND toDate(created_at) BETWEEN {from:Date} AND {to:Date}
          AND status <> 'reversed'
        GROUP BY day, currency
     )
    ORDER BY metric, day, currency`,
);

interface FigureRow {
  metric: Metric;
  day: string;
  currency: string;
  n: number;
  cents: number;
}

/** The daily figures of a program from the first to the last day (inclusive). */
export async function dailyFigures(warehouse: Warehouse, programId: number, first: Day, last: Day): Promise<DailyFigure[]> {
  const rows = await warehouse.query<FigureRow>(dailyFiguresSql, { programId, from: dayString(first), to: dayString(last) });
  return rows.map((r) => ({
    metric: r.metric,
    day: dayOf(Date.parse(`${r.day}T00:00:00Z`)),
    currency: r.currency,
    n: Number(r.n),
    cents: Number(r.cents),
  }));
}

export interface PerformanceRequest {
  programId: number;
  /** When the program was created: `all` starts there at the latest. */
  programCreatedAt: Date;
  query: RangeQuery;
  /** Milliseconds since the epoch: today is its UTC day. */
  now: number;
}

/** The performance response for a validated query (see rangeProblem in periods.ts). */
export async function performance(warehouse: Warehouse, r: PerformanceRequest): Promise<PerformanceBody> {
  const plan = planRange(r.query, dayOf(r.now));
  const figures = await dailyFigures(warehouse, r.programId, plan.fetch.first, plan.fetch.last);
  const current =
    plan.kind === 'fixed' ? plan.current : allTimeRange(dayOf(r.programCreatedAt.getTime()), firstActivityDay(figures), plan.today);
  return buildPerformance(figures, current, plan.period);
}
