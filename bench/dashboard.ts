/**
 * Dashboard benchmark (npm run bench:dashboard): GET /api/tracking/performance/:programId from the
 * warehouse (chDB) against the same answer computed from Postgres by the independent reference
 * of tests/support/oracle-reference.ts, on the same data, as a ratio Postgres / warehouse.
 *
 * Data: one main program with BENCH_EVENTS events (default 10,000,000: 90% clicks, 5% customers,
 * 2.5% sales, 2.5% commissions, plus 1,000 partner programs) spread over the last 90 days, and
 * 100 other programs with BENCH_EVENTS / 500 events each. Rows are generated set-based in a
 * throw-away Postgres database (ats_bench_dashboard*) with deterministic pseudo-random columns,
 * then copied into the warehouse tables by chDB reading Postgres (postgresql() table function),
 * so both stores hold the same rows. Customers, sales and commissions that changed are written
 * to the warehouse as two versions (as the loader does), so FINAL has work to do. The warehouse is
 * migrated to version 2 before the copy and upgraded after it, so the rollup of version 3
 * (performance_facts, performance_hourly) is filled by its migration's backfill from those rows.
 *
 * Measures per period (7d, 30d, 90d, all): BENCH_RUNS requests over inject() after a warm-up
 * (p50, p95), and BENCH_PG_RUNS reference computations (p50, p95); checks the answers are equal.
 * Target (2 cores): 90d p95 under 50 ms on the warehouse, at least 20x faster than Postgres.
 *
 * Env: BENCH_EVENTS, BENCH_RUNS (default 50), BENCH_PG_RUNS (default 3), DATABASE_URL (admin
 * connection, default postgres://postgres@127.0.0.1:5432/postgres), BENCH_KEEP=1 keeps the data.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance as perf } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { openDatabase, sql, type Database } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { migrateWarehouse } from '../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../core/warehouse.js';
import { buildApp } from '../ingest/app.js';
import { addMember, createSession, createWorkspace } from '../domain/access/workspaces.js';
import { memoryRateLimitStore } from '../ingest/http/rate-limit.js';
import { dailyFiguresSql } from '../queries/performance.js';
import { dayOf, dayString, PERIODS, planRange, type Period } from '../queries/periods.js';
import { referencePerformance } from '../tests/support/oracle-reference.js';
import { createBenchDatabase, databaseUrl, DEFAULT_ADMIN_URL, dropBenchDatabase } from './setup.js';

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}

const settings = {
  events: intEnv('BENCH_EVENTS', 10_000_000),
  runs: intEnv('BENCH_RUNS', 50),
  pgRuns: intEnv('BENCH_PG_RUNS', 3),
  warmup: 5,
  otherPrograms: 100,
  adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
  keep: process.env.BENCH_KEEP === '1',
};

const DAY_MS = 86_400_000;
const SPAN_DAYS = 90;
// Noon today (UTC): the clock of the service and of the reference, fixed so both see the same day.
const NOW = Math.floor(Date.now() / DAY_MS) * DAY_MS + DAY_MS / 2;
const START = new Date(NOW - SPAN_DAYS * DAY_MS);
const SPAN_SECONDS = SPAN_DAYS * 86_400;

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
    `INSERT INTO commissions (sale_id, program_id, partner_id, commission_type, commission_rate, amount_cents, currency, status, created_at, reversed_at)
     SELECT id, program_id, partner_id, 'percent', 10, amount_cents / 10, currency,
            CASE WHEN status = 'paid' THEN 'pending' ELSE 'reversed' END,
            occurred_at + interval '1 minute', CASE WHEN status = 'paid' THEN NULL ELSE updated_at END
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

const activeParts = sql(
  'bench.dashboard.active_parts',
  `SELECT table, toUInt64(count()) AS parts, toUInt64(sum(rows)) AS rows FROM system.parts
    WHERE active AND database = currentDatabase() AND table IN ('click_recorded', 'customers_current', 'sales_current', 'commissions_current', 'partner_program_changed', 'performance_facts', 'performance_hourly')
    GROUP BY table ORDER BY table`,
);
const selectOne = sql('bench.dashboard.select_one', `SELECT 1 AS one`);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const fmt = (n: number) => n.toLocaleString('en-US');

async function timed<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = perf.now();
  const value = await fn();
  console.log(`  ${what}: ${seconds(perf.now() - t0)}`);
  return value;
}

async function generate(db: Database, workspaceId: number): Promise<number> {
  const main = volumeOf(settings.events, 1_000);
  const other = volumeOf(Math.max(100, Math.floor(settings.events / 500)), 10);
  const partners = main.partnerPrograms;
  await db.many(gen.partners, [partners]);
  const programs: { id: number; volume: Volume }[] = [];
  for (let i = 0; i <= settings.otherPrograms; i++) {
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
  await timed('postgres commissions', async () => {
    for (const p of programs) await db.many(gen.commissions, [p.id]);
  });
  await timed('postgres analyze', () => db.many(gen.analyze));
  return programs[0]!.id;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

interface Timing {
  p50: number;
  p95: number;
  n: number;
}

async function measure(n: number, fn: () => Promise<void>): Promise<Timing> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = perf.now();
    await fn();
    ms.push(perf.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: quantile(ms, 0.5), p95: quantile(ms, 0.95), n };
}

async function main() {
  const dbName = `ats_bench_dashboard${process.pid}`;
  const dir = await mkdtemp(join(tmpdir(), 'ats-bench-dashboard-'));
  let db: Database | undefined;
  let warehouse: Warehouse | undefined;
  let mismatches = 0;
  console.log(
    `dashboard benchmark: ${fmt(settings.events)} events for the main program over ${SPAN_DAYS} days + ${settings.otherPrograms} programs of ` +
      `${fmt(Math.max(100, Math.floor(settings.events / 500)))}; ${settings.runs} warehouse runs, ${settings.pgRuns} Postgres runs per period`,
  );
  await createBenchDatabase(settings.adminUrl, dbName);
  try {
    const url = databaseUrl(settings.adminUrl, dbName);
    db = await openDatabase({ kind: 'postgres', url, poolSize: 4 });
    await migrate(db);
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    // The event and state tables first; the rollup's migration then backfills from the copied rows.
    await migrateWarehouse(warehouse, undefined, { upTo: 2 });

    const workspaceId = await createWorkspace(db, 'Bench workspace');
    const userId = await addMember(db, workspaceId, 'owner@bench.example', 'owner');
    const token = await createSession(db, userId);

    console.log('loading:');
    const programId = await generate(db, workspaceId);
    const target = new URL(url);
    const connection = {
      address: `${target.hostname}:${target.port || '5432'}`,
      database: dbName,
      user: decodeURIComponent(target.username) || 'postgres',
      password: decodeURIComponent(target.password),
    };
    await timed('warehouse copy', async () => {
      for (const statement of copy) await warehouse!.command(statement, connection);
    });
    await timed('warehouse rollup (migration 0003 backfill)', () => migrateWarehouse(warehouse!));
    const [pgCounts] = await db.many<Record<string, number>>(gen.counts);
    const [chCounts] = await warehouse.query<Record<string, number>>(warehouseCounts);
    console.log(`  postgres rows:  ${JSON.stringify(pgCounts)}`);
    console.log(`  warehouse rows: ${JSON.stringify(chCounts)} (entities after FINAL)`);

    const app = await buildApp({
      db,
      rateLimits: memoryRateLimitStore(),
      clock: () => NOW,
      warehouse,
      logger: createLogger('warn'),
      trustProxy: false,
      tracking: { platformFeeBps: 2_000, docsBaseUrl: 'https://docs.bench.example' },
    });
    await app.ready();
    try {
      const request = async (period: Period) => {
        const res = await app.inject({
          method: 'GET',
          url: `/api/tracking/performance/${programId}?period=${period}`,
          headers: { authorization: `Bearer ${token}` },
        });
        if (res.statusCode !== 200) throw new Error(`performance ${period} answered ${res.statusCode}: ${res.body}`);
        return res.json();
      };

      const rows: { period: Period; warehouse: Timing; postgres: Timing; query: Timing }[] = [];
      const parts = await warehouse.query<{ table: string; parts: number; rows: number }>(activeParts);
      console.log(`  active parts: ${parts.map((p) => `${p.table} ${p.parts}`).join(', ')}`);
      const one = await measure(settings.runs, async () => void (await warehouse!.query(selectOne)));
      console.log(`  baseline: SELECT 1 through the warehouse p50 ${one.p50.toFixed(1)} ms, p95 ${one.p95.toFixed(1)} ms`);
      for (const period of PERIODS) {
        const served = await request(period);
        const reference = await referencePerformance(db, programId, { period }, NOW);
        if (!isDeepStrictEqual(served, reference)) {
          mismatches++;
          console.error(`\n!!! MISMATCH for period=${period}: the warehouse and Postgres answers differ`);
          console.error(`  warehouse metrics: ${JSON.stringify(served.metrics)}`);
          console.error(`  postgres metrics:  ${JSON.stringify(reference.metrics)}`);
        }
        for (let i = 0; i < settings.warmup; i++) await request(period);
        const warehouseTiming = await measure(settings.runs, async () => void (await request(period)));
        const postgresTiming = await measure(settings.pgRuns, async () => void (await referencePerformance(db!, programId, { period }, NOW)));
        // Where the time goes: the one warehouse query alone (no HTTP, no Node-side shaping).
        const plan = planRange({ period }, dayOf(NOW));
        const range = { programId, from: dayString(plan.fetch.first), to: dayString(plan.fetch.last) };
        const queryTiming = await measure(settings.runs, async () => void (await warehouse!.query(dailyFiguresSql, range)));
        rows.push({ period, warehouse: warehouseTiming, postgres: postgresTiming, query: queryTiming });
        console.log(
          `  ${period}: warehouse p50 ${warehouseTiming.p50.toFixed(1)} ms, p95 ${warehouseTiming.p95.toFixed(1)} ms; ` +
            `query alone p50 ${queryTiming.p50.toFixed(1)} ms; postgres p50 ${postgresTiming.p50.toFixed(0)} ms; totalClicks ${served.metrics.totalClicks}`,
        );
      }

      console.log('\nperiod  warehouse p50/p95 (ms)   postgres reference p50/p95 (ms)   ratio postgres/warehouse p50 / p95');
      for (const r of rows) {
        console.log(
          `${r.period.padEnd(6)}  ${`${r.warehouse.p50.toFixed(1)} / ${r.warehouse.p95.toFixed(1)}`.padEnd(24)}  ` +
            `${`${r.postgres.p50.toFixed(0)} / ${r.postgres.p95.toFixed(0)}`.padEnd(32)}  ` +
            `${(r.postgres.p50 / r.warehouse.p50).toFixed(1)}x / ${(r.postgres.p95 / r.warehouse.p95).toFixed(1)}x`,
        );
      }
      const d90 = rows.find((r) => r.period === '90d')!;
      const under50 = d90.warehouse.p95 < 50;
      const ratio = d90.postgres.p95 / d90.warehouse.p95;
      console.log(
        `\ntarget 90d: warehouse p95 ${d90.warehouse.p95.toFixed(1)} ms ${under50 ? '<' : '>='} 50 ms (${under50 ? 'met' : 'NOT met'}); ` +
          `${ratio.toFixed(1)}x Postgres (${ratio >= 20 ? 'met' : 'NOT met'}, target >= 20x)`,
      );
      console.log(mismatches === 0 ? 'answers: warehouse and Postgres agree for every period' : `answers: ${mismatches} MISMATCH(ES)`);
    } finally {
      await app.close();
    }
  } finally {
    await warehouse?.close();
    await db?.close();
    if (settings.keep) {
      console.log(`kept: Postgres database ${dbName}, warehouse ${dir}`);
    } else {
      await dropBenchDatabase(settings.adminUrl, dbName);
      await rm(dir, { recursive: true, force: true });
    }
  }
  if (mismatches > 0) process.exitCode = 1;
}

await main();
