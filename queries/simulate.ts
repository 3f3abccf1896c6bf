/**
 * The what-if simulation (issue 30, point 4; partner-program.md, "Commission rules and versions"):
 * per partner and currency, the commissions a range's sales actually earned and what other terms
 * would have made of the same sales and refunds, computed in the warehouse in one query.
 *
 * The rules are record_sale's (schemas/postgres/functions/record_sale.sql, commission_cents.sql):
 *   - one-off types (percent, fixed) pay only the payment that converted the customer: the sale whose
 *     occurred_at is the customer's first_purchase_date (the converting payment sets it to its own time);
 *   - recurring types pay every payment, but with recurring_months a payment later than that many
 *     months after the first purchase earns nothing (addMonths, like Postgres' month interval);
 *   - percent rates are percentages of the amount, fixed rates major units; rounded half up;
 *   - only sales attributed to a partner earn anything; test sales are left out.
 * Both figures are net of refunds the same way: a refunded or charged-back sale counts 0, a
 * partially refunded one loses the refunded share of its commission (refunded_share.sql's
 * rounding). The actual figure is the commission as first earned (commission.created's amount, kept
 * on the sale's row in sales_current by the loader), so owners'
 * approvals and rejections do not enter either side. docs/decisions/commission-terms.md.
 */
import { sql } from '../core/sql.js';
import type { Warehouse } from '../core/warehouse.js';

export interface SimulatedTerms {
  commission_type: 'percent' | 'fixed' | 'recurring_percent' | 'recurring_fixed';
  commission_rate: number;
  recurring_months: number | null;
}

export interface SimulationRow {
  partner_id: number;
  currency: string;
  sales: number;
  actual_minor: number;
  simulated_minor: number;
}

// A commission less the refunded share of its sale (half up), or 0 for a sale refunded in full.
// Int64 wherever the product fits (an amount under 2,000,000,000 minor units: the commission and
// the refunded part are at most the amount); Int128 only for larger sales, evaluated for those alone.
const net = (gross: string) =>
  `multiIf(gone, toInt64(0), refunded = 0, ${gross}, amount < 2000000000, ${gross} - intDiv(2 * ${gross} * refunded + amount, 2 * amount),
           ${gross} - toInt64(intDiv(2 * toInt128(${gross}) * refunded + amount, 2 * toInt128(amount))))`;

// What the terms make of one sale: rate4 is the rate in ten-thousandths (commission_rate has 4 decimals).
const SIMULATED = `multiIf(
    {type:String} IN ('percent', 'fixed') AND NOT converting, toInt64(0),
    {type:String} IN ('recurring_percent', 'recurring_fixed') AND {months:Int32} > 0 AND NOT converting
      AND ifNull(occurred_at > addMonths(first_purchase_date, {months:Int32}), false), toInt64(0),
    {type:String} IN ('percent', 'recurring_percent'), intDiv(amount * {rate4:Int64} + 500000, 1000000),
    intDiv({rate4:Int64} + 50, 100))`;

// Each sale's latest state with its commission as first earned (commission.created writes it on the
// sale's row, schemas/clickhouse/0008), merged per sale by FINAL (the table's sorted merge: about
// twice as fast as a GROUP BY of the same columns, bench/simulate.ts; the WHERE applies after the
// merge, FINAL's conditions are never moved before it), then its customer's first purchase; then
// per partner and currency.
export const simulationSql = sql(
  'terms.simulate',
  `SELECT partner_id, toString(currency) AS currency, count() AS sales,
          toInt64(sum(${net('gross')})) AS actual_minor,
          toInt64(sum(${net(SIMULATED)})) AS simulated_minor
     FROM (
       SELECT s.sale_partner AS partner_id, s.sale_currency AS currency, s.sale_amount AS amount, s.sale_refunded AS refunded,
              s.gone AS gone, s.paid_at AS occurred_at, c.first_purchase AS first_purchase_date,
              ifNull(s.paid_at = c.first_purchase, false) AS converting, s.gross AS gross
         FROM (
           SELECT sale_id, assumeNotNull(partner_id) AS sale_partner, customer_id AS sale_customer, amount_cents AS sale_amount,
                  refunded_cents AS sale_refunded, currency AS sale_currency, assumeNotNull(occurred_at) AS paid_at,
                  changed_status IN ('refunded', 'chargeback') AS gone, commission_cents AS gross
             FROM sales_current FINAL
            WHERE program_id = {programId:Int64} AND occurred_at >= {from:DateTime64(6, 'UTC')} AND occurred_at < {to:DateTime64(6, 'UTC')}
              AND NOT test AND partner_id IS NOT NULL AND ({partnerId:Int64} = 0 OR partner_id = {partnerId:Int64})
         ) AS s
         LEFT JOIN (
           SELECT customer_id, first_purchase_date AS first_purchase
             FROM customers_current FINAL WHERE program_id = {programId:Int64}
         ) AS c ON c.customer_id = s.sale_customer
     )
    GROUP BY partner_id, currency
    ORDER BY partner_id, currency`,
);

/** The simulation's figures per partner and currency, for sales paid in [from, to). */
export async function simulateCommissions(
  warehouse: Warehouse,
  programId: number,
  terms: SimulatedTerms,
  range: { from: Date; to: Date; partnerId?: number | undefined },
): Promise<SimulationRow[]> {
  const rows = await warehouse.query<SimulationRow>(simulationSql, {
    programId,
    from: range.from.toISOString().replace('T', ' ').replace('Z', ''),
    to: range.to.toISOString().replace('T', ' ').replace('Z', ''),
    partnerId: range.partnerId ?? 0,
    type: terms.commission_type,
    rate4: Math.round(terms.commission_rate * 10_000),
    months: terms.recurring_months ?? 0,
  });
  return rows.map((r) => ({
    partner_id: Number(r.partner_id),
    currency: r.currency,
    sales: Number(r.sales),
    actual_minor: Number(r.actual_minor),
    simulated_minor: Number(r.simulated_minor),
  }));
}
