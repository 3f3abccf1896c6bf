/**
 * End-to-end pipeline support: traffic over HTTP, and the per-program, per-day figures of the
 * Postgres state and of the warehouse, which must be equal once the pipeline has caught up.
 */
import type { FastifyInstance } from 'fastify';
import { sql, type Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { freshIp, type TestProgram } from './app.js';

/**
 * The outbox's events as the warehouse's event tables count them: every row under its type, and a
 * commission.reversed that carries its reversal's ledger entry once more as a ledger_entry.recorded
 * (the loader writes that entry into ledger_entry_recorded: docs/decisions/ledger.md). Columns id, event_type.
 */
export const OUTBOX_AS_LOADED = `(SELECT o.id, t.event_type FROM outbox o,
    LATERAL (VALUES (o.event_type), (CASE WHEN o.event_type = 'commission.reversed' AND jsonb_typeof(o.payload->'ledger_entry') = 'object'
                                          THEN 'ledger_entry.recorded' END)) AS t (event_type)
   WHERE t.event_type IS NOT NULL)`;

let run = 0;

/**
 * n customer journeys per program, sent with some concurrency: a click (every 7th a test click),
 * a lead, a sale, a recurring second sale for every 4th, a refund or chargeback for every 3rd.
 */
export async function sendTraffic(app: FastifyInstance, programs: readonly TestProgram[], n: number, concurrency = 8): Promise<void> {
  run += 1;
  const tag = `${Date.now().toString(36)}-${run}`;
  const post = async (url: string, payload: object, key?: string) => {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) },
      payload,
    });
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
    return res.json();
  };
  const journey = async (program: TestProgram, i: number) => {
    const click = await post('/api/v1/track/click', {
      affiliate_url: `https://shop.test.example/?aff=${program.affCode}`,
      additional_data: { test_mode: i % 7 === 6 },
    });
    const customer = `e2e-${tag}-${program.programId}-${i}`;
    await post('/api/v1/track/lead', { click_id: click.click_id, customer_key: customer }, program.apiKey);
    const txn = `e2e-${tag}-${program.programId}-${i}`;
    await post('/api/v1/track/sale', { transaction_id: txn, amount_cents: 1_000 + i, customer_key: customer }, program.apiKey);
    if (i % 4 === 0) {
      await post('/api/v1/track/sale', { transaction_id: `${txn}-r`, amount_cents: 500 + i, customer_key: customer, is_recurring: true }, program.apiKey);
    }
    if (i % 3 === 0) await post('/api/v1/track/refund', { transaction_id: txn, reason: i % 2 ? 'refund' : 'chargeback' }, program.apiKey);
  };
  const work = programs.flatMap((program) => Array.from({ length: n }, (_, i) => () => journey(program, i)));
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < work.length) await work[next++]!();
    }),
  );
}

/** One figure per line, e.g. `clicks|12|2026-11-22|real|count=5`, sorted: two sides compare as arrays. */
export type Figures = string[];

const pg = {
  clicks: sql(
    't.e2e_pg_clicks',
    `SELECT program_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, test, count(*)::int AS n
       FROM clicks GROUP BY 1, 2, 3`,
  ),
  sales: sql(
    't.e2e_pg_sales',
    `SELECT program_id, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, status, test,
            count(*)::int AS n, sum(amount_cents)::bigint AS cents
       FROM sale_events GROUP BY 1, 2, 3, 4`,
  ),
  commissions: sql(
    't.e2e_pg_commissions',
    `SELECT program_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, status,
            count(*)::int AS n, sum(amount_cents)::bigint AS cents
       FROM commissions GROUP BY 1, 2, 3`,
  ),
  customers: sql(
    't.e2e_pg_customers',
    `SELECT program_id, to_char(signup_date AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, status, count(*)::int AS n
       FROM customers GROUP BY 1, 2, 3`,
  ),
  events: sql('t.e2e_pg_events', `SELECT event_type, count(*)::int AS n FROM ${OUTBOX_AS_LOADED} e GROUP BY 1`),
};

const ch = {
  clicks: sql(
    't.e2e_ch_clicks',
    `SELECT program_id, toString(toDate(created_at)) AS day, test, count() AS n FROM click_recorded FINAL GROUP BY 1, 2, 3`,
  ),
  sales: sql(
    't.e2e_ch_sales',
    `SELECT program_id, toString(toDate(occurred_at)) AS day, status, test, count() AS n, sum(amount_cents) AS cents
       FROM sales_current FINAL GROUP BY 1, 2, 3, 4`,
  ),
  commissions: sql(
    't.e2e_ch_commissions',
    `SELECT program_id, toString(toDate(created_at)) AS day, status, count() AS n, sum(amount_cents) AS cents
       FROM commissions_current FINAL GROUP BY 1, 2, 3`,
  ),
  customers: sql(
    't.e2e_ch_customers',
    `SELECT program_id, if(isNull(signup_date), NULL, toString(toDate(signup_date))) AS day, status, count() AS n
       FROM customers_current FINAL GROUP BY 1, 2, 3`,
  ),
};

const EVENT_TABLES: Record<string, string> = {
  'click.recorded': 'click_recorded',
  'customer.changed': 'customer_changed',
  'sale.recorded': 'sale_recorded',
  'sale.status_changed': 'sale_status_changed',
  'commission.created': 'commission_created',
  'commission.reversed': 'commission_reversed',
  'platform_fee.created': 'platform_fee_created',
  'platform_fee.reversed': 'platform_fee_reversed',
  'partner_program.changed': 'partner_program_changed',
  'test_event.logged': 'test_event_logged',
  'sale.partially_refunded': 'sale_partially_refunded',
  'commission.adjusted': 'commission_adjusted',
  'platform_fee.adjusted': 'platform_fee_adjusted',
  // The ledger and payouts (schemas/clickhouse/0006_ledger.sql).
  'ledger_entry.recorded': 'ledger_entry_recorded',
  'commission.approved': 'commission_approved',
  'payout.created': 'payout_created',
  'payout.paid': 'payout_paid',
  'payout.canceled': 'payout_canceled',
  // Issues 30 and 31.
  'commission.held': 'commission_held',
  'fx_rate.recorded': 'fx_rate_recorded',
  'partner.applied': 'partner_applied',
  'partner.approved': 'partner_approved',
};

type Row = Record<string, unknown>;
const line = (kind: string, row: Row, keys: string[]) =>
  [kind, ...keys.map((k) => (row[k] === null || row[k] === undefined ? '-' : typeof row[k] === 'boolean' ? (row[k] ? 'test' : 'real') : String(row[k])))].join('|');

function figures(rows: { clicks: Row[]; sales: Row[]; commissions: Row[]; customers: Row[]; events: Row[] }): Figures {
  return [
    ...rows.clicks.map((r) => line('clicks', r, ['program_id', 'day', 'test', 'n'])),
    ...rows.sales.map((r) => line('sales', r, ['program_id', 'day', 'status', 'test', 'n', 'cents'])),
    ...rows.commissions.map((r) => line('commissions', r, ['program_id', 'day', 'status', 'n', 'cents'])),
    ...rows.customers.map((r) => line('customers', r, ['program_id', 'day', 'status', 'n'])),
    ...rows.events.map((r) => line('events', r, ['event_type', 'n'])),
  ].sort();
}

export async function postgresFigures(db: Database): Promise<Figures> {
  return figures({
    clicks: await db.many(pg.clicks),
    sales: await db.many(pg.sales),
    commissions: await db.many(pg.commissions),
    customers: await db.many(pg.customers),
    events: await db.many(pg.events),
  });
}

export async function warehouseFigures(warehouse: Warehouse): Promise<Figures> {
  const events: Row[] = [];
  for (const [eventType, table] of Object.entries(EVENT_TABLES)) {
    // Table names come from the fixed list above, never from input.
    const [row] = await warehouse.query<{ n: number }>(sql(`t.e2e_ch_events_${table}`, `SELECT count() AS n FROM ${table} FINAL`));
    if (row && row.n > 0) events.push({ event_type: eventType, n: row.n });
  }
  return figures({
    clicks: await warehouse.query(ch.clicks),
    sales: await warehouse.query(ch.sales),
    commissions: await warehouse.query(ch.commissions),
    customers: await warehouse.query(ch.customers),
    events,
  });
}

/** Polls until the warehouse shows the Postgres figures or the time is up; returns both for the assertion. */
export async function waitForSameFigures(db: Database, warehouse: Warehouse, timeoutMs = 60_000): Promise<{ postgres: Figures; warehouse: Figures }> {
  const postgres = await postgresFigures(db);
  const deadline = Date.now() + timeoutMs;
  let seen = await warehouseFigures(warehouse);
  while (JSON.stringify(seen) !== JSON.stringify(postgres) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    seen = await warehouseFigures(warehouse);
  }
  return { postgres, warehouse: seen };
}
