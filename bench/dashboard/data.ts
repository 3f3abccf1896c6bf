/**
 * The dashboard benchmark's data: rows generated set-based in Postgres with deterministic
 * pseudo-random columns, then copied into the warehouse by chDB reading Postgres (the
 * postgresql() table function), so both stores hold the same rows; the rollup of warehouse
 * migration 3 is then filled by its own backfill.
 */
import { performance as perf } from 'node:perf_hooks';
import { sql, type Database } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import type { Warehouse } from '../../core/warehouse.js';

const DAY_MS = 86_400_000;
export const SPAN_DAYS = 90;
// Noon today (UTC): the clock of the service and of the reference, fixed so both see the same day.
export const NOW = Math.floor(Date.now() / DAY_MS) * DAY_MS + DAY_MS / 2;
const START = new Date(NOW - SPAN_DAYS * DAY_MS);
const SPAN_SECONDS = SPAN_DAYS * 86_400;

export interface DataSettings {
  /** Events of the main program; each of the others has a 500th of it (at least 100). */
  events: number;
  otherPrograms: number;
}

/** The counts of one program's rows; commissions follow the sales (one per non-test sale). */
interface Volume {
  clicks: number;
  customers: number;
  sales: number;
  partnerPrograms: number;
}

const volumeOf = (events: number, partnerPrograms: number): Volume => ({
  clicks: Math.round(events * 0.9),
  customers: Math.max(1, Math.round(events * 0.05)),
  sales: Math.max(1, Math.round(events * 0.025)),
  partnerPrograms,
});

/*
 * Generation. h(g) is a multiplicative hash of the row number (Knuth's constant mod 2^32), so the
 * columns look random but are the same on every run. Times are START + h % SPAN seconds.
 */
const H = (salt: number) => `((g::bigint * 2654435761 + ${salt}) % 4294967296)`;

const gen = {
  partners: sql(
    'bench.dashboard.partners',
    `INSERT INTO partners (name, email) SELECT 'Partner ' || g, 'partner-' || g || '@bench.example' FROM generate_series(1, $1::int) g`,
  ),
  partnerPrograms: sql(
    'bench.dashboard.partner_programs',
    `INSERT INTO partner_programs (partner_id, program_id, status, created_at, updated_at)
     SELECT g, $1::bigint, 'approved', ts, ts
       FROM generate_series(1, $2::int) g, LATERAL (SELECT $3::timestamptz + (${H(1)} % $4::bigint) * interval '1 second' AS ts) t`,
  ),
  // One referral link per partner-program record (the console's partner list shows them).
  links: sql(
    'bench.dashboard.links',
    `INSERT INTO referral_links (aff_code, program_id, partner_id, partner_program_id)
     SELECT 'bench-' || pp.id, pp.program_id, pp.partner_id, pp.id FROM partner_programs pp`,
  ),
  clicks: sql(
    'bench.dashboard.clicks',
    `INSERT INTO clicks (click_id, program_id, partner_id, partner_program_id, referral_link_id, affiliate_url, test, created_at)
     SELECT 'c' || $1::bigint || '-' || g, $1::bigint, 1 + ${H(2)} % $5::bigint, NULL, 1 + ${H(2)} % $5::bigint, 'https://shop.bench.example/?ref=bench',
            ${H(3)} % 100 = 0, $3::timestamptz + (${H(4)} % $4::bigint) * interval '1 second'
       FROM generate_series(1, $2::int) g`,
  ),
  // 60% leads, 40% conversions; 2% provisional leads; 1% test; a twentieth of the conversions
  // bought without a lead (no signup_date); a purchase comes up to three days after the signup.
  customers: sql(
    'bench.dashboard.customers',
    `INSERT INTO customers (program_id, partner_id, customer_key, status, provisional, test, signup_date, first_purchase_date, version, created_at, updated_at)
     SELECT $1::bigint, 1 + ${H(5)} % $5::bigint, 'k' || g, s.status, s.status = 'lead' AND ${H(6)} % 50 = 0, ${H(7)} % 100 = 0,
            CASE WHEN s.status = 'conversion' AND ${H(8)} % 20 = 0 THEN NULL ELSE ts END,
            CASE WHEN s.status = 'conversion' THEN ts + (${H(9)} % 259200) * interval '1 second' END,
            CASE WHEN s.status = 'conversion' THEN 2 ELSE 1 END, ts, ts
       FROM generate_series(1, $2::int) g,
            LATERAL (SELECT $3::timestamptz + (${H(10)} % $4::bigint) * interval '1 second' AS ts,
                            CASE WHEN ${H(11)} % 10 < 6 THEN 'lead' ELSE 'conversion' END AS status) s`,
  ),
  // 90% paid, 7% refunded, 3% chargebacks; 85% USD, 10% EUR, 5% VND; 1% test.
  sales: sql(
    'bench.dashboard.sales',
    `INSERT INTO sale_events (program_id, partner_id, transaction_id, amount_cents, currency, occurred_at, test, status, created_at, updated_at)
     SELECT $1::bigint, 1 + ${H(12)} % $5::bigint, 't' || $1::bigint || '-' || g, 1000 + ${H(13)} % 49000,
            CASE WHEN ${H(14)} % 100 < 85 THEN 'USD' WHEN ${H(14)} % 100 < 95 THEN 'EUR' ELSE 'VND' END,
            ts, ${H(15)} % 100 = 0,
            CASE WHEN ${H(16)} % 100 < 90 THEN 'paid' WHEN ${H(16)} % 100 < 97 THEN 'refunded' ELSE 'chargeback' END,
            ts, ts + interval '1 day'
       FROM generate_series(1, $2::int) g, LATERAL (SELECT $3::timestamptz + (${H(17)} % $4::bigint) * interval '1 second' AS ts) t`,
  ),
  // One commission per real sale, written a minute after it; reversed when the sale was.
  commissions: sql(
    'bench.dashboard.commissions',
    `INSERT INTO commissions (sale_id, program_id, partner_id, commission_type, commission_rate, amount_cents, currency, status, created_at, available_at, reversed_at,
                             in_hold)
     SELECT id, program_id, partner_id, 'percent', 10, amount_cents / 10, currency,
            CASE WHEN status = 'paid' THEN 'pending' ELSE 'reversed' END,
            occurred_at + interval '1 minute', occurred_at + interval '1 minute', CASE WHEN status = 'paid' THEN NULL ELSE updated_at END,
            status = 'paid'
       FROM sale_events WHERE program_id = $1::bigint AND NOT test`,
  ),
  program: sql(
    'bench.dashboard.program',
    `INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate, created_at)
     VALUES ($1::bigint, $2, 'shop.bench.example', 'percent', 10, $3) RETURNING id`,
  ),
  analyze: sql('bench.dashboard.analyze', `ANALYZE`),
  counts: sql(
    'bench.dashboard.counts',
    `SELECT (SELECT count(*) FROM clicks) AS clicks, (SELECT count(*) FROM customers) AS customers,
            (SELECT count(*) FROM sale_events) AS sales, (SELECT count(*) FROM commissions) AS commissions,
            (SELECT count(*) FROM partner_programs) AS partner_programs`,
  ),
};

/*
 * The copy into the warehouse: chDB reads each Postgres table through the postgresql() table
 * function. Changed entities get their first version too, as the loader would have written it.
 */
const PG = (table: string) => `postgresql({address:String}, {database:String}, '${table}', {user:String}, {password:String})`;
const copy = [
  sql(
    'bench.dashboard.copy_clicks',
    `INSERT INTO click_recorded (event_id, program_id, occurred_at, test, click_id, partner_id, referral_link_id, created_at)
     SELECT generateUUIDv4(), program_id, created_at, test, click_id, partner_id, referral_link_id, created_at FROM ${PG('clicks')}`,
  ),
  sql(
    'bench.dashboard.copy_customers_first_version',
    `INSERT INTO customers_current (program_id, customer_id, partner_id, partner_program_id, click_id, status, provisional, test, signup_date, first_purchase_date, version, updated_at)
     SELECT program_id, id, partner_id, partner_program_id, click_id, 'lead', provisional, test, signup_date, NULL, 1, created_at
       FROM ${PG('customers')} WHERE version > 1 AND signup_date IS NOT NULL`,
  ),
  sql(
    'bench.dashboard.copy_customers',
    `INSERT INTO customers_current (program_id, customer_id, partner_id, partner_program_id, click_id, status, provisional, test, signup_date, first_purchase_date, version, updated_at)
     SELECT program_id, id, partner_id, partner_program_id, click_id, status, provisional, test, signup_date, first_purchase_date, version, updated_at
       FROM ${PG('customers')}`,
  ),
  sql(
    'bench.dashboard.copy_sales_recorded',
    `INSERT INTO sales_current (program_id, sale_id, transaction_id, customer_id, partner_id, amount_cents, currency, occurred_at, is_recurring, test, recorded_status, changed_status, status_changed_at)
     SELECT program_id, id, transaction_id, customer_id, partner_id, amount_cents, currency, occurred_at, is_recurring, test, 'paid', '', NULL
       FROM ${PG('sale_events')}`,
  ),
  sql(
    'bench.dashboard.copy_sales_changed',
    `INSERT INTO sales_current (program_id, sale_id, transaction_id, customer_id, partner_id, amount_cents, currency, occurred_at, is_recurring, test, recorded_status, changed_status, status_changed_at)
     SELECT program_id, id, '', NULL, NULL, 0, '', NULL, false, false, '', status, updated_at
       FROM ${PG('sale_events')} WHERE status <> 'paid'`,
  ),
  sql(
    'bench.dashboard.copy_commissions_created',
    `INSERT INTO commissions_current (program_id, commission_id, sale_id, partner_id, amount_cents, currency, status, created_at, reversed_at, state_version)
     SELECT program_id, id, sale_id, partner_id, amount_cents, currency, 'pending', created_at, NULL, 1 FROM ${PG('commissions')}`,
  ),
  sql(
    'bench.dashboard.copy_commissions_reversed',
    `INSERT INTO commissions_current (program_id, commission_id, sale_id, partner_id, amount_cents, currency, status, created_at, reversed_at, state_version)
     SELECT program_id, id, sale_id, partner_id, amount_cents, currency, status, created_at, reversed_at, 2
       FROM ${PG('commissions')} WHERE status = 'reversed'`,
  ),
  sql(
    'bench.dashboard.copy_partner_programs',
    `INSERT INTO partner_program_changed (event_id, program_id, occurred_at, test, partner_program_id, partner_id, status, created_at, updated_at)
     SELECT generateUUIDv4(), program_id, created_at, false, id, partner_id, status, created_at, updated_at FROM ${PG('partner_programs')}`,
  ),
];

const warehouseCounts = sql(
  'bench.dashboard.warehouse_counts',
  `SELECT (SELECT count() FROM click_recorded) AS clicks, (SELECT count() FROM customers_current FINAL) AS customers,
          (SELECT count() FROM sales_current FINAL) AS sales, (SELECT count() FROM commissions_current FINAL) AS commissions,
          (SELECT count() FROM partner_program_changed) AS partner_programs`,
);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export async function timed<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = perf.now();
  const value = await fn();
  console.log(`  ${what}: ${seconds(perf.now() - t0)}`);
  return value;
}

async function generate(db: Database, workspaceId: number, { events, otherPrograms }: DataSettings): Promise<number> {
  const main = volumeOf(events, 1_000);
  const other = volumeOf(Math.max(100, Math.floor(events / 500)), 10);
  const partners = main.partnerPrograms;
  await db.many(gen.partners, [partners]);
  const programs: { id: number; volume: Volume }[] = [];
  for (let i = 0; i <= otherPrograms; i++) {
    const row = await db.one<{ id: number }>(gen.program, [workspaceId, i === 0 ? 'Bench main program' : `Bench program ${i}`, START]);
    programs.push({ id: row!.id, volume: i === 0 ? main : other });
  }
  const kinds = ['partnerPrograms', 'clicks', 'customers', 'sales'] as const;
  const statement = { partnerPrograms: gen.partnerPrograms, clicks: gen.clicks, customers: gen.customers, sales: gen.sales };
  for (const kind of kinds) {
    await timed(`postgres ${kind}`, async () => {
      for (const p of programs) await db.many(statement[kind], [p.id, p.volume[kind], START, SPAN_SECONDS, ...(kind === 'partnerPrograms' ? [] : [partners])]);
    });
  }
  await timed('postgres referral links', () => db.many(gen.links));
  await timed('postgres commissions', async () => {
    for (const p of programs) await db.many(gen.commissions, [p.id]);
  });
  await timed('postgres analyze', () => db.many(gen.analyze));
  return programs[0]!.id;
}

/** Fills Postgres with the data set; returns the main program's id. */
export async function generateData(db: Database, workspaceId: number, settings: DataSettings): Promise<number> {
  console.log('loading Postgres:');
  return generate(db, workspaceId, settings);
}

/**
 * Copies the Postgres rows (database `dbName` at `url`) into a warehouse migrated to version 2,
 * then migrates it on (the rollup's backfill). The warehouse reads Postgres itself (postgresql()),
 * chDB in this process or the server in its own.
 */
export async function copyIntoWarehouse(db: Database, warehouse: Warehouse, target: { url: string; dbName: string }): Promise<void> {
  console.log(`loading the warehouse (${warehouse.kind === 'chdb' ? 'chDB' : 'ClickHouse over HTTP'}):`);
  const url = new URL(target.url);
  const connection = {
    address: `${url.hostname}:${url.port || '5432'}`,
    database: target.dbName,
    user: decodeURIComponent(url.username) || 'postgres',
    password: decodeURIComponent(url.password),
  };
  await timed('warehouse copy', async () => {
    for (const statement of copy) await warehouse.command(statement, connection);
  });
  await timed('warehouse rollup (migration 0003 backfill)', () => migrateWarehouse(warehouse));
  const [pgCounts] = await db.many<Record<string, number>>(gen.counts);
  const [chCounts] = await warehouse.query<Record<string, number>>(warehouseCounts);
  console.log(`  postgres rows:  ${JSON.stringify(pgCounts)}`);
  console.log(`  warehouse rows: ${JSON.stringify(chCounts)} (entities after FINAL)`);
}
