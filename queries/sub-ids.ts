/**
 * A program's figures per sub-id value (issue 31, point 3): clicks, leads, sales and commission
 * grouped by the value of one of sub1..sub5 of the click. Leads, sales and commissions follow the
 * customer's click (the click that attributed it); a customer with no click (a promo code made it)
 * or a click without that sub-id counts under `value: null`. The brand's answer
 * (GET /api/tracking/programs/:programId/performance/sub-ids) and the partner portal's (with the
 * partner filter) read this one function. Rules per metric are the dashboard's
 * (queries/performance.ts): real events only, each entity once (FINAL), by UTC day:
 *   clicks      the click's time
 *   leads       the customer's signup_date; status lead or conversion; not provisional
 *   sales       the sale's occurred_at; status paid now; count and amount per currency
 *   commission  the commission's creation; not reversed; per currency
 */
import { sql } from '../core/sql.js';
import type { Warehouse } from '../core/warehouse.js';

export interface SubIdQuery {
  programId: number;
  /** Only this partner's figures (the portal; a brand's filter). */
  partnerId?: number | undefined;
  /** UTC days, YYYY-MM-DD, both included. */
  from: string;
  to: string;
  /** Which sub-id: 1 to 5. */
  sub: 1 | 2 | 3 | 4 | 5;
}

export interface Amount {
  currency: string;
  amount_minor: number;
}

export interface SubIdRow {
  /** The sub-id's value; null: none (no sub-id on the click, or no click). */
  value: string | null;
  clicks: number;
  leads: number;
  sales: number;
  revenue: Amount[];
  commission: Amount[];
}

/*
 * One statement: each metric's rows by value (and currency for money), joined to the value of the
 * customer's click. The clicks of the program are read once per metric that needs them (ClickHouse
 * inlines a CTE where it is used); partner_id 0 means every partner.
 */
export const subIdBreakdownSql = sql(
  'sub_ids.breakdown',
  `WITH
     clicks AS (
       SELECT click_id, partner_id, [sub1, sub2, sub3, sub4, sub5][{sub:UInt8}] AS value, created_at
         FROM click_recorded FINAL
        WHERE program_id = {programId:Int64} AND NOT test
     ),
     customers AS (
       SELECT c.customer_id AS customer_id, c.partner_id AS partner_id, c.status AS status, c.provisional AS provisional,
              c.test AS test, c.signup_date AS signup_date, k.value AS value
         FROM (SELECT * FROM customers_current FINAL WHERE program_id = {programId:Int64}) AS c
         LEFT JOIN clicks AS k ON k.click_id = c.click_id
     ),
     sales AS (
       SELECT sale_id, partner_id, customer_id, amount_cents, currency, occurred_at, status, test
         FROM sales_current FINAL
        WHERE program_id = {programId:Int64}
     )
   SELECT value, 'clicks' AS metric, '' AS currency, count() AS n, toInt64(0) AS amount
     FROM clicks
    WHERE toDate(created_at) BETWEEN {from:Date} AND {to:Date}
      AND ({partnerId:Int64} = 0 OR partner_id = {partnerId:Int64})
    GROUP BY value
   UNION ALL
   SELECT value, 'leads', '', count(), toInt64(0)
     FROM customers
    WHERE signup_date IS NOT NULL AND toDate(signup_date) BETWEEN {from:Date} AND {to:Date}
      AND status IN ('lead', 'conversion') AND NOT provisional AND NOT test
      AND ({partnerId:Int64} = 0 OR partner_id = {partnerId:Int64})
    GROUP BY value
   UNION ALL
   SELECT c.value, 'sales', toString(s.currency), count(), toInt64(sum(s.amount_cents))
     FROM sales AS s LEFT JOIN customers AS c ON c.customer_id = s.customer_id
    WHERE s.occurred_at IS NOT NULL AND toDate(s.occurred_at) BETWEEN {from:Date} AND {to:Date}
      AND s.status = 'paid' AND NOT s.test AND s.partner_id IS NOT NULL
      AND ({partnerId:Int64} = 0 OR s.partner_id = {partnerId:Int64})
    GROUP BY c.value, s.currency
   UNION ALL
   SELECT c.value, 'commission', toString(m.currency), count(), toInt64(sum(m.amount_cents))
     FROM (SELECT * FROM commissions_current FINAL WHERE program_id = {programId:Int64}) AS m
     LEFT JOIN sales AS s ON s.sale_id = m.sale_id
     LEFT JOIN customers AS c ON c.customer_id = s.customer_id
    WHERE toDate(m.created_at) BETWEEN {from:Date} AND {to:Date} AND m.status <> 'reversed'
      AND ({partnerId:Int64} = 0 OR m.partner_id = {partnerId:Int64})
    GROUP BY c.value, m.currency
   SETTINGS join_use_nulls = 1`,
);

interface Row {
  value: string | null;
  metric: 'clicks' | 'leads' | 'sales' | 'commission';
  currency: string;
  n: number | string;
  amount: number | string;
}

const byCurrency = (a: Amount, b: Amount) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0);

/** Rows of the query into one entry per value: most clicks first, then by value (none last). */
export function combineSubIdRows(rows: readonly Row[]): SubIdRow[] {
  const out = new Map<string | null, SubIdRow>();
  for (const r of rows) {
    const value = r.value === null || r.value === undefined ? null : String(r.value);
    const row = out.get(value) ?? out.set(value, { value, clicks: 0, leads: 0, sales: 0, revenue: [], commission: [] }).get(value)!;
    const n = Number(r.n);
    if (r.metric === 'clicks') row.clicks += n;
    else if (r.metric === 'leads') row.leads += n;
    else {
      const amount = { currency: String(r.currency), amount_minor: Number(r.amount) };
      if (r.metric === 'sales') {
        row.sales += n;
        row.revenue.push(amount);
      } else row.commission.push(amount);
    }
  }
  const list = [...out.values()];
  for (const r of list) {
    r.revenue.sort(byCurrency);
    r.commission.sort(byCurrency);
  }
  return list.sort((a, b) => b.clicks - a.clicks || (a.value === null ? 1 : b.value === null ? -1 : a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
}

/** The figures per value of sub<sub> for the program (and partner) over the days from..to. */
export async function subIdBreakdown(warehouse: Warehouse, q: SubIdQuery): Promise<SubIdRow[]> {
  const rows = await warehouse.query<Row>(subIdBreakdownSql, {
    programId: q.programId,
    partnerId: q.partnerId ?? 0,
    from: q.from,
    to: q.to,
    sub: q.sub,
  });
  return combineSubIdRows(rows);
}
