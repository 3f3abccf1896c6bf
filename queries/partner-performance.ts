/**
 * The partner portal's performance (issue 31): the dashboard's daily figures (queries/performance.ts)
 * over the same performance facts and the same counting rules, kept to one partner's entities. The
 * rollup has no partner; the facts name their entity (a click's event, a customer, a sale, a
 * commission, a partner-program record), and each entity's partner is in its event table. So a
 * partner's figures are the facts of its entities, summed per day as the rollup sums them: the
 * dashboard's numbers filtered to that partner, and the partners' figures add up to the program's.
 */
import { sql } from '../core/sql.js';

export const partnerDailyFiguresSql = sql(
  'portal.performance_daily_figures',
  `SELECT toString(toDate(hour)) AS day,
          countIf(metric = 'clicks' AND counts) AS clicks, countIf(metric = 'leads' AND counts) AS leads,
          countIf(metric = 'conversions' AND counts) AS conversions, countIf(metric = 'partners' AND counts) AS partners,
          sumMapIf(map(currency, toUInt64(1)), metric = 'sales' AND counts) AS sales,
          sumMapIf(map(currency, cents), metric = 'sales' AND counts) AS revenue,
          sumMapIf(map(currency, toUInt64(1)), metric = 'commissions' AND counts) AS commissions,
          sumMapIf(map(currency, cents), metric = 'commissions' AND counts) AS commission
     FROM performance_facts FINAL
    WHERE program_id = {programId:Int64}
      AND hour >= toDateTime({from:Date}, 'UTC') AND hour < toDateTime({to:Date}, 'UTC') + INTERVAL 1 DAY
      AND (
        (metric = 'clicks' AND entity IN (
          SELECT toString(event_id) FROM click_recorded WHERE program_id = {programId:Int64} AND partner_id = {partnerId:Int64}))
        OR (metric IN ('leads', 'conversions') AND entity IN (
          SELECT toString(customer_id) FROM customer_changed WHERE program_id = {programId:Int64} AND partner_id = {partnerId:Int64}))
        OR (metric = 'sales' AND entity IN (
          SELECT toString(sale_id) FROM sale_recorded WHERE program_id = {programId:Int64} AND partner_id = {partnerId:Int64}))
        OR (metric = 'commissions' AND entity IN (
          SELECT toString(commission_id) FROM commission_created WHERE program_id = {programId:Int64} AND partner_id = {partnerId:Int64}))
        OR (metric = 'partners' AND entity IN (
          SELECT toString(partner_program_id) FROM partner_program_changed WHERE program_id = {programId:Int64} AND partner_id = {partnerId:Int64}))
      )
    GROUP BY day
    ORDER BY day`,
);
