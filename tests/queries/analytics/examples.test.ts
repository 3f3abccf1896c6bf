/**
 * The README's five analyst questions, run word for word (read from README.md) through the
 * analysts' path (guard, limits, readonly) on a warehouse filled through the real pipeline (HTTP
 * tracking calls, outbox, relay, Avro, loader, with redelivered duplicates), and each answer
 * checked against the same question asked of the Postgres state. Then `npm run export`'s writer
 * on the same warehouse.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { runExport } from '../../../queries/analytics/export.js';
import { runAnalyticsQuery, warehouseAccess } from '../../../queries/analytics/run.js';
import { localSession } from '../../../queries/analytics/target.js';
import { buildTestApp, createTestProgram, freshIp, unlimitedRateLimits, type TestProgram } from '../../support/app.js';
import { partlyRefundedProcessorSale } from '../../support/processor.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { embeddedDelivery } from '../../support/oracle.js';

const LIMITS = { maxExecutionSeconds: 60, maxMemoryBytes: 2_000_000_000 };
const SEED = Math.floor(Math.random() * 2 ** 31);

/** The SQL of each `<!-- analytics-example: name -->` block of the README. */
async function readmeExamples(): Promise<Record<string, string>> {
  const readme = await readFile(new URL('../../../README.md', import.meta.url), 'utf8');
  const examples: Record<string, string> = {};
  for (const m of readme.matchAll(/<!-- analytics-example: ([a-z-]+) -->\n```sql\n([\s\S]*?)```/g)) examples[m[1]!] = m[2]!;
  return examples;
}

let dir: string;
let warehouse: Warehouse;
let examples: Record<string, string>;
beforeAll(async () => {
  examples = await readmeExamples();
  dir = await mkdtemp(join(tmpdir(), 'ats-analytics-examples-'));
  warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
  await migrateWarehouse(warehouse);
  // Duplicates stay as separate rows, as they may on a real server: the views must collapse them.
  await warehouse.command(sql('t.examples_stop_merges', 'SYSTEM STOP MERGES'));
});
afterAll(async () => {
  await warehouse?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Row = Record<string, unknown>;

async function ask(name: string, params: Record<string, string>): Promise<Row[]> {
  const query = examples[name];
  if (!query) throw new Error(`README.md has no analytics example ${name}`);
  const bytes = await runAnalyticsQuery(warehouseAccess(warehouse), { query, params, format: 'jsonl' }, LIMITS);
  return bytes
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Row);
}

const CURRENCIES = ['USD', 'EUR', 'VND'] as const;

/**
 * Three partners; per journey a click (every 9th a test click), a lead (every 6th stays a lead),
 * a sale in a rotating currency, a recurring second sale for every 4th, a refund for every 5th
 * and a chargeback for every 7th; for every 8th, a processor payment partly refunded.
 */
async function traffic(app: FastifyInstance, program: TestProgram, n: number): Promise<void> {
  const auth = { authorization: `Bearer ${program.workspace.ownerToken}` };
  const codes = [program.affCode];
  for (const name of ['Second partner', 'Third partner']) {
    const res = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/partners`, headers: auth, payload: { name } });
    if (res.statusCode !== 200) throw new Error(`partner: ${res.body}`);
    codes.push(res.json().data.aff_code as string);
  }
  const post = async (url: string, payload: object, key?: string) => {
    const res = await app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload });
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
    return res.json();
  };
  const tag = `${program.programId}-${Date.now().toString(36)}`;
  for (let i = 0; i < n; i++) {
    const click = await post('/api/v1/track/click', {
      affiliate_url: `https://shop.test.example/?aff=${codes[(i * 7) % codes.length]}`,
      additional_data: { test_mode: i % 9 === 8 },
    });
    if (i % 8 === 3) {
      // A processor payment partly refunded (2,000 of 5,000 cents): revenue counts what is left.
      const paying = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${codes[i % codes.length]}` });
      await partlyRefundedProcessorSale(app, program.programId, paying.click_id as string);
    }
    const customer = `ex-${tag}-${i}`;
    await post('/api/v1/track/lead', { click_id: click.click_id, customer_key: customer }, program.apiKey);
    if (i % 6 === 5) continue;
    const txn = `ex-${tag}-${i}`;
    const currency = CURRENCIES[Math.floor(i / 2) % 3];
    await post('/api/v1/track/sale', { transaction_id: txn, amount_cents: 1_000 + i * 37, currency, customer_key: customer }, program.apiKey);
    if (i % 4 === 0) {
      await post('/api/v1/track/sale', { transaction_id: `${txn}-r`, amount_cents: 400 + i, currency, customer_key: customer, is_recurring: true }, program.apiKey);
    }
    if (i % 5 === 0) await post('/api/v1/track/refund', { transaction_id: txn, reason: 'refund' }, program.apiKey);
    else if (i % 7 === 0) await post('/api/v1/track/refund', { transaction_id: txn, reason: 'chargeback' }, program.apiKey);
  }
}

/** The same five questions asked of Postgres, in the README queries' column names and order. */
const pg = {
  topPartners: sql(
    't.examples_pg_top_partners',
    `SELECT partner_id::int AS partner_id, currency, count(*)::int AS sales, sum(amount_cents - refunded_cents)::bigint AS revenue_minor
       FROM sale_events
      WHERE program_id = $1 AND status = 'paid' AND NOT test AND partner_id IS NOT NULL
        AND date_trunc('month', occurred_at AT TIME ZONE 'UTC') = $2::date
      GROUP BY 1, 2 ORDER BY revenue_minor DESC, partner_id, currency LIMIT 10`,
  ),
  conversion: sql(
    't.examples_pg_conversion',
    `SELECT c.partner_id::int AS partner_id, c.clicks, coalesce(v.conversions, 0) AS conversions
       FROM (SELECT partner_id, count(*)::int AS clicks FROM clicks WHERE program_id = $1 AND NOT test AND partner_id IS NOT NULL GROUP BY 1) c
       LEFT JOIN (SELECT partner_id, count(*)::int AS conversions FROM customers
                   WHERE program_id = $1 AND status = 'conversion' AND NOT test AND partner_id IS NOT NULL GROUP BY 1) v
         ON v.partner_id = c.partner_id
      ORDER BY 1`,
  ),
  refunds: sql(
    't.examples_pg_refunds',
    `SELECT (SELECT count(*)::int FROM sale_events WHERE program_id = $1 AND NOT test) AS sales,
            (SELECT count(*)::int FROM refunds r JOIN sale_events s ON s.id = r.sale_id WHERE r.program_id = $1 AND NOT s.test AND r.reason = 'refund') AS refunds,
            (SELECT count(*)::int FROM refunds r JOIN sale_events s ON s.id = r.sale_id WHERE r.program_id = $1 AND NOT s.test AND r.reason = 'chargeback') AS chargebacks`,
  ),
  clickToPurchase: sql(
    't.examples_pg_click_to_purchase',
    `SELECT cu.partner_id::int AS partner_id, count(*)::int AS customers,
            avg(extract(epoch FROM cu.first_purchase_date - c.created_at))::float8 AS avg_seconds,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM cu.first_purchase_date - c.created_at))::float8 AS median_seconds
       FROM customers cu JOIN clicks c ON c.click_id = cu.click_id
      WHERE cu.program_id = $1 AND cu.first_purchase_date IS NOT NULL AND NOT cu.test
      GROUP BY 1 ORDER BY 1`,
  ),
  revenue: sql(
    't.examples_pg_revenue',
    `SELECT currency, count(*)::int AS sales, sum(amount_cents - refunded_cents)::bigint AS revenue_minor
       FROM sale_events WHERE program_id = $1 AND status = 'paid' AND NOT test GROUP BY 1 ORDER BY 1`,
  ),
  monthSales: sql(
    't.examples_pg_month_sales',
    `SELECT transaction_id FROM sale_events
      WHERE program_id = $1 AND date_trunc('month', occurred_at AT TIME ZONE 'UTC') = $2::date ORDER BY 1`,
  ),
  clicks: sql('t.examples_pg_clicks', `SELECT count(*)::int AS n FROM clicks WHERE program_id = $1`),
  refundedTransactions: sql(
    't.examples_pg_refunded',
    `SELECT s.transaction_id, r.reason FROM refunds r JOIN sale_events s ON s.id = r.sale_id WHERE r.program_id = $1 ORDER BY 1`,
  ),
};

const num = (v: unknown) => Number(v);

describe.each(databaseKinds())('the README analytics examples on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;
  let db: Database;
  let params: Record<string, string>;
  const month = new Date().toISOString().slice(0, 7) + '-01';

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    db = t.db;
    // One warehouse for the file: Postgres numbers its programs apart from PGlite's.
    if (kind === 'postgres') await db.many(sql('t.examples_program_ids_apart', `ALTER SEQUENCE programs_id_seq RESTART WITH 2000000`));
    app = await buildTestApp(db, unlimitedRateLimits());
    program = await createTestProgram(app, db);
    await traffic(app, program, 36);
    await embeddedDelivery(warehouse, { redeliverySeed: kind === 'pglite' ? SEED : SEED + 1 })(db);
    params = { program: String(program.programId), month };
  }, 300_000);
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it(`top partners by revenue in a month (seed ${SEED})`, async () => {
    const expected = await db.many<Row>(pg.topPartners, [program.programId, month]);
    const answer = await ask('top-partners', params);
    // Three partners, several currencies.
    expect(new Set(expected.map((r) => r.partner_id)).size).toBe(3);
    expect(new Set(expected.map((r) => r.currency)).size).toBe(3);
    expect(answer.map((r) => ({ partner_id: num(r.partner_id), currency: r.currency, sales: num(r.sales), revenue_minor: num(r.revenue_minor) }))).toEqual(
      expected.map((r) => ({ ...r, revenue_minor: num(r.revenue_minor) })),
    );
    for (const r of answer) expect(num(r.revenue)).toBe(num(r.revenue_minor) / 100);
  });

  it('conversion rate by partner', async () => {
    const expected = await db.many<{ partner_id: number; clicks: number; conversions: number }>(pg.conversion, [program.programId]);
    const answer = await ask('conversion-rate', params);
    expect(expected.length).toBe(3);
    expect(answer.map((r) => ({ partner_id: num(r.partner_id), clicks: num(r.clicks), conversions: num(r.conversions) }))).toEqual(expected);
    for (const [i, r] of answer.entries()) expect(num(r.conversion_rate)).toBeCloseTo(expected[i]!.conversions / expected[i]!.clicks, 3);
  });

  it('refund rate', async () => {
    const [expected] = await db.many<{ sales: number; refunds: number; chargebacks: number }>(pg.refunds, [program.programId]);
    const [answer] = await ask('refund-rate', params);
    expect(expected!.refunds).toBeGreaterThan(0);
    expect(expected!.chargebacks).toBeGreaterThan(0);
    expect({ sales: num(answer!.sales), refunds: num(answer!.refunds), chargebacks: num(answer!.chargebacks) }).toEqual(expected);
    expect(num(answer!.refund_rate)).toBeCloseTo((expected!.refunds + expected!.chargebacks) / expected!.sales, 3);
  });

  it('time from click to first purchase', async () => {
    const expected = await db.many<{ partner_id: number; customers: number; avg_seconds: number; median_seconds: number }>(pg.clickToPurchase, [program.programId]);
    const answer = await ask('click-to-purchase', params);
    expect(expected.length).toBe(3);
    expect(answer.map((r) => ({ partner_id: num(r.partner_id), customers: num(r.customers) }))).toEqual(expected.map((r) => ({ partner_id: r.partner_id, customers: r.customers })));
    for (const [i, r] of answer.entries()) {
      expect(num(r.avg_seconds)).toBeCloseTo(expected[i]!.avg_seconds, 2);
      expect(num(r.median_seconds)).toBeCloseTo(expected[i]!.median_seconds, 2);
      expect(num(r.median_seconds)).toBeGreaterThan(0);
    }
  });

  it('revenue by currency', async () => {
    const expected = await db.many<Row>(pg.revenue, [program.programId]);
    const answer = await ask('revenue-by-currency', params);
    expect(expected.map((r) => r.currency)).toEqual(['EUR', 'USD', 'VND']);
    expect(answer.map((r) => ({ currency: r.currency, sales: num(r.sales), revenue_minor: num(r.revenue_minor) }))).toEqual(
      expected.map((r) => ({ ...r, revenue_minor: num(r.revenue_minor) })),
    );
    for (const r of answer) expect(num(r.revenue)).toBe(num(r.revenue_minor) / 100);
  });

  it('npm run export writes the views for a range to CSV and Parquet: the rows of the Postgres state', async () => {
    // The file's warehouse, left open for the other kind's run.
    const shared: Warehouse = {
      kind: warehouse.kind,
      insert: (table, rows, options) => warehouse.insert(table, rows, options),
      query: (q, p) => warehouse.query(q, p),
      command: (q, p) => warehouse.command(q, p),
      readOnly: (limits) => warehouse.readOnly!(limits),
      close: async () => {},
    };
    const session = localSession({ kind: 'direct', path: join(dir, 'ch') }, shared);
    const outDir = join(dir, `export-${kind}`);
    const from = new Date(`${month}T00:00:00Z`);
    const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
    const seen: string[] = [];
    const files = await runExport(session, { what: { tables: ['sales', 'refunds'] }, range: { from, to }, format: 'csv', outDir }, LIMITS, (p) =>
      seen.push(`${p.doneRows}/${p.totalRows}`),
    );
    expect(files.map((f) => f.file)).toEqual([join(outDir, 'sales.csv'), join(outDir, 'refunds.csv')]);
    const total = files[0]!.rows + files[1]!.rows;
    expect(seen).toEqual(['0/' + total, `${files[0]!.rows}/${total}`, `${files[0]!.rows}/${total}`, `${total}/${total}`]);
    const csv = (file: string) => {
      const [header, ...lines] = readFileLines(file);
      const columns = header!.split(',').map((c) => JSON.parse(c) as string);
      return lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [columns[i], v.replace(/^"|"$/g, '')])));
    };
    const sales = csv(files[0]!.file).filter((r) => r.program_id === String(program.programId));
    expect(sales.map((r) => r.transaction_id).sort()).toEqual((await db.many<{ transaction_id: string }>(pg.monthSales, [program.programId, month])).map((r) => r.transaction_id));
    const refunds = csv(files[1]!.file).filter((r) => r.program_id === String(program.programId));
    expect(refunds.map((r) => ({ transaction_id: r.transaction_id, reason: r.reason })).sort((a, b) => (a.transaction_id! < b.transaction_id! ? -1 : 1))).toEqual(
      await db.many(pg.refundedTransactions, [program.programId]),
    );

    // A query for the range, to Parquet, read back by ClickHouse.
    const [parquet] = await runExport(
      session,
      {
        what: { query: `SELECT * FROM analytics.clicks WHERE program_id = ${program.programId} AND clicked_at >= {from:DateTime64(6, 'UTC')} AND clicked_at < {to:DateTime64(6, 'UTC')};`, name: 'clicks' },
        range: { from, to },
        format: 'parquet',
        outDir,
      },
      LIMITS,
    );
    const [clicks] = await db.many<{ n: number }>(pg.clicks, [program.programId]);
    expect(parquet!.rows).toBe(clicks!.n);
    const back = await warehouse.query<{ n: number }>(sql('t.examples_parquet_back', `SELECT count() AS n FROM file({file:String}, Parquet)`), { file: parquet!.file });
    expect(back).toEqual([{ n: clicks!.n }]);
    // An empty range writes files with no rows.
    const empty = await runExport(session, { what: { tables: ['clicks'] }, range: { from: new Date('2001-01-01T00:00:00Z'), to: new Date('2001-02-01T00:00:00Z') }, format: 'csv', outDir: join(outDir, 'empty') }, LIMITS);
    expect(empty[0]!.rows).toBe(0);
    expect(readFileLines(empty[0]!.file)).toEqual([expect.stringContaining('"click_id"')]);
  });
});

function readFileLines(file: string): string[] {
  // The CSVs here hold no quoted commas or newlines (ids, codes, numbers, times).
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}
