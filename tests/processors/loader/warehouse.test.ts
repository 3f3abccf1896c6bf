import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { CLICKHOUSE_MIGRATIONS_DIR, migrateWarehouse, statements } from '../../../core/warehouse-migrate.js';
import { openWarehouse, tabSeparated, TabSeparatedWriter, type Warehouse } from '../../../core/warehouse.js';
import type { LogMessage } from '../../../processors/event-log/event-log.js';
import { createInProcessLog, type InProcessLog } from '../../../processors/event-log/in-process-log.js';
import { createLogLoader } from '../../../processors/loader/log-loader.js';
import { combineLoads } from '../../../processors/loader/kafka-loader.js';
import { createLoader, type CombiningLoader, type LoaderBatch } from '../../../processors/loader/loader.js';
import { createRelay } from '../../../processors/relay.js';
import type { DecodedEvent, OutboxRow } from '../../../schemas/event-contract.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { partlyRefundedProcessorSale } from '../../support/processor.js';
import { OUTBOX_AS_LOADED } from '../../support/pipeline.js';

// ---------------------------------------------------------------------------------------------
// The wire codec: the Avro codec when it is in the tree, else JSON in the shape its decode returns.

interface Codec {
  name: string;
  encode(row: OutboxRow): LogMessage;
  decode(value: Buffer): DecodedEvent;
}

const JSON_TOPIC = 'tracking.events.json';
const jsonCodec: Codec = {
  name: 'json',
  encode: (row) => ({
    topic: JSON_TOPIC,
    key: row.aggregate_key,
    value: Buffer.from(
      JSON.stringify({
        eventType: row.event_type,
        value: { event_id: row.event_id, program_id: row.program_id, occurred_at: row.occurred_at, test: row.test, payload: row.payload },
      }),
    ),
  }),
  decode: (value) => JSON.parse(value.toString('utf8')) as DecodedEvent,
};

interface AvroCodecLike {
  route(eventType: string): { topic: string };
  encode(eventType: string, row: OutboxRow): Buffer;
  decode(value: Buffer): DecodedEvent;
}

async function loadCodec(): Promise<Codec> {
  const path = new URL('../../../processors/avro/codec.ts', import.meta.url);
  if (!existsSync(path) || process.env.TEST_WAREHOUSE_CODEC === 'json') return jsonCodec;
  const module = (await import(path.href)) as { createAvroCodec(): AvroCodecLike };
  const avro = module.createAvroCodec();
  return {
    name: 'avro',
    encode: (row) => ({ topic: avro.route(row.event_type).topic, key: row.aggregate_key, value: avro.encode(row.event_type, row) }),
    decode: (value) => avro.decode(value),
  };
}

// ---------------------------------------------------------------------------------------------
// The dashboard's numbers, per program and UTC day, from Postgres state and from the warehouse.

type Numbers = Record<keyof typeof pg, string[]>;

const pg = {
  clicks: sql(
    't.pg_clicks',
    `SELECT program_id || ' ' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || count(*) AS line
       FROM clicks WHERE NOT test GROUP BY program_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  ),
  leads: sql(
    't.pg_leads',
    `SELECT program_id || ' ' || to_char(signup_date AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || count(*) AS line
       FROM customers WHERE signup_date IS NOT NULL AND status IN ('lead', 'conversion') AND NOT provisional
      GROUP BY program_id, to_char(signup_date AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  ),
  conversions: sql(
    't.pg_conversions',
    `SELECT program_id || ' ' || to_char(first_purchase_date AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || count(*) AS line
       FROM customers WHERE first_purchase_date IS NOT NULL AND status = 'conversion'
      GROUP BY program_id, to_char(first_purchase_date AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  ),
  revenue: sql(
    't.pg_revenue',
    `SELECT program_id || ' ' || to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || currency || ' ' || sum(amount_cents - refunded_cents) AS line
       FROM sale_events WHERE status = 'paid' AND NOT test
      GROUP BY program_id, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), currency`,
  ),
  partnerPrograms: sql(
    't.pg_partner_programs',
    `SELECT program_id || ' ' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || count(*) AS line
       FROM partner_programs GROUP BY program_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  ),
  commissions: sql(
    't.pg_commissions',
    `SELECT program_id || ' ' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || currency || ' ' || count(*) || ' ' || sum(amount_cents) AS line
       FROM commissions WHERE status <> 'reversed'
      GROUP BY program_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), currency`,
  ),
  events: sql('t.pg_events', `SELECT event_type || ' ' || count(*) AS line FROM ${OUTBOX_AS_LOADED} e GROUP BY event_type`),
};

const ch = {
  clicks: sql(
    't.ch_clicks',
    `SELECT concat(toString(program_id), ' ', toString(toDate(occurred_at)), ' ', toString(count())) AS line
       FROM click_recorded FINAL WHERE NOT test GROUP BY program_id, toDate(occurred_at)`,
  ),
  leads: sql(
    't.ch_leads',
    `SELECT concat(toString(program_id), ' ', toString(toDate(signup_date)), ' ', toString(count())) AS line
       FROM customers_current FINAL
      WHERE signup_date IS NOT NULL AND status IN ('lead', 'conversion') AND NOT provisional
      GROUP BY program_id, toDate(signup_date)`,
  ),
  conversions: sql(
    't.ch_conversions',
    `SELECT concat(toString(program_id), ' ', toString(toDate(first_purchase_date)), ' ', toString(count())) AS line
       FROM customers_current FINAL WHERE first_purchase_date IS NOT NULL AND status = 'conversion'
      GROUP BY program_id, toDate(first_purchase_date)`,
  ),
  revenue: sql(
    't.ch_revenue',
    `SELECT concat(toString(program_id), ' ', toString(toDate(assumeNotNull(occurred_at))), ' ', currency, ' ', toString(sum(amount_cents - refunded_cents))) AS line
       FROM sales_current FINAL WHERE status = 'paid' AND NOT test
      GROUP BY program_id, toDate(assumeNotNull(occurred_at)), currency`,
  ),
  partnerPrograms: sql(
    't.ch_partner_programs',
    `SELECT concat(toString(program_id), ' ', toString(toDate(created_at)), ' ', toString(count(DISTINCT partner_program_id))) AS line
       FROM partner_program_changed FINAL GROUP BY program_id, toDate(created_at)`,
  ),
  commissions: sql(
    't.ch_commissions',
    `SELECT concat(toString(program_id), ' ', toString(toDate(created_at)), ' ', currency, ' ', toString(count()), ' ', toString(sum(amount_cents))) AS line
       FROM commissions_current FINAL WHERE status <> 'reversed'
      GROUP BY program_id, toDate(created_at), currency`,
  ),
  events: sql(
    't.ch_events',
    `SELECT concat(t, ' ', toString(n)) AS line FROM (
       SELECT 'click.recorded' AS t, count() AS n FROM click_recorded FINAL
       UNION ALL SELECT 'customer.changed', count() FROM customer_changed FINAL
       UNION ALL SELECT 'sale.recorded', count() FROM sale_recorded FINAL
       UNION ALL SELECT 'sale.status_changed', count() FROM sale_status_changed FINAL
       UNION ALL SELECT 'commission.created', count() FROM commission_created FINAL
       UNION ALL SELECT 'commission.reversed', count() FROM commission_reversed FINAL
       UNION ALL SELECT 'platform_fee.created', count() FROM platform_fee_created FINAL
       UNION ALL SELECT 'platform_fee.reversed', count() FROM platform_fee_reversed FINAL
       UNION ALL SELECT 'partner_program.changed', count() FROM partner_program_changed FINAL
       UNION ALL SELECT 'test_event.logged', count() FROM test_event_logged FINAL
       UNION ALL SELECT 'sale.partially_refunded', count() FROM sale_partially_refunded FINAL
       UNION ALL SELECT 'commission.adjusted', count() FROM commission_adjusted FINAL
       UNION ALL SELECT 'platform_fee.adjusted', count() FROM platform_fee_adjusted FINAL
       UNION ALL SELECT 'ledger_entry.recorded', count() FROM ledger_entry_recorded FINAL
       UNION ALL SELECT 'commission.approved', count() FROM commission_approved FINAL
       UNION ALL SELECT 'payout.created', count() FROM payout_created FINAL
       UNION ALL SELECT 'payout.paid', count() FROM payout_paid FINAL
       UNION ALL SELECT 'payout.canceled', count() FROM payout_canceled FINAL
     ) WHERE n > 0`,
  ),
  // performance_hourly is left out: every batch recomputes the hours it touches and writes them
  // again (the newest computation wins), so its raw rows grow with redelivery by design.
  rawRows: sql(
    't.ch_raw_rows',
    `SELECT table, sum(rows) AS n FROM system.parts
      WHERE active AND database = currentDatabase() AND table <> 'performance_hourly' GROUP BY table ORDER BY table`,
  ),
};

/** The same numbers from the dashboard's rollup (processors/loader/rollup.ts), summed per UTC day. */
const perDay = (columns: string) => `SELECT program_id, toDate(hour) AS day, ${columns} FROM performance_hourly FINAL GROUP BY program_id, day`;
const countLines = (column: string) =>
  sql(
    `t.rollup_${column}`,
    `SELECT concat(toString(program_id), ' ', toString(day), ' ', toString(n)) AS line FROM (${perDay(`sum(${column}) AS n`)}) WHERE n > 0`,
  );
const rollup: Record<Exclude<keyof typeof pg, 'events'>, ReturnType<typeof sql>> = {
  clicks: countLines('clicks'),
  leads: countLines('leads'),
  conversions: countLines('conversions'),
  partnerPrograms: countLines('partners'),
  revenue: sql(
    't.rollup_revenue',
    `SELECT concat(toString(program_id), ' ', toString(day), ' ', currency, ' ', toString(cents)) AS line
       FROM (${perDay('sumMap(sales) AS n, sumMap(revenue) AS m')}) ARRAY JOIN mapKeys(m) AS currency, mapValues(m) AS cents
      WHERE n[currency] > 0`,
  ),
  commissions: sql(
    't.rollup_commissions',
    `SELECT concat(toString(program_id), ' ', toString(day), ' ', currency, ' ', toString(n[currency]), ' ', toString(cents)) AS line
       FROM (${perDay('sumMap(commissions) AS n, sumMap(commission) AS m')}) ARRAY JOIN mapKeys(m) AS currency, mapValues(m) AS cents
      WHERE n[currency] > 0`,
  ),
};

const sorted = (rows: { line: string }[]) => rows.map((r) => String(r.line)).sort();

async function postgresNumbers(t: TestDatabase): Promise<Numbers> {
  const out: Partial<Numbers> = {};
  for (const name of Object.keys(pg) as (keyof typeof pg)[]) out[name] = sorted(await t.db.many<{ line: string }>(pg[name]));
  return out as Numbers;
}

async function warehouseNumbers(w: Warehouse): Promise<Numbers> {
  const out: Partial<Numbers> = {};
  for (const name of Object.keys(pg) as (keyof typeof pg)[]) out[name] = sorted(await w.query<{ line: string }>(ch[name]));
  // The rollup the dashboard reads must say the same as the event and state tables.
  for (const name of Object.keys(rollup) as (keyof typeof rollup)[]) {
    expect(sorted(await w.query<{ line: string }>(rollup[name])), `rollup ${name}`).toEqual(out[name]);
  }
  return out as Numbers;
}

// ---------------------------------------------------------------------------------------------

describe('ClickHouse warehouse on chDB', () => {
  let dir: string;
  let warehouse: Warehouse;
  let t: TestDatabase;
  let app: FastifyInstance;
  let codec: Codec;
  const log: InProcessLog = createInProcessLog();
  const DEAD = 'tracking.dead-letter';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-warehouse-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    codec = await loadCodec();
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await warehouse?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('applies the DDL, and applying it again changes nothing', async () => {
    const first = await migrateWarehouse(warehouse);
    expect(first).toEqual(['0001_event_tables.sql', '0002_current_state_tables.sql', '0003_performance_rollup.sql', '0004_analytics.sql', '0005_partial_refunds.sql', '0006_ledger.sql', '0007_commission_lifecycle.sql', '0008_simulation.sql', '0010_fx_rates.sql', '0012_partner_applications.sql', '0014_click_sub_ids.sql', '0016_commission_held.sql']);
    expect(await migrateWarehouse(warehouse)).toEqual([]);
    // Every statement runs again as is (a start that failed half-way re-applies).
    for (const file of first) {
      for (const statement of statements(await readFile(join(CLICKHOUSE_MIGRATIONS_DIR, file), 'utf8'))) {
        await warehouse.command(sql('t.reapply', statement));
      }
    }
    const tables = await warehouse.query<{ name: string }>(
      sql('t.tables', `SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name`),
    );
    expect(tables.map((r) => r.name)).toContain('customers_current');
    expect(tables).toHaveLength(29); // 27 loaded tables (0006 adds five event tables; 0010, 0012 and 0016 four more), schema_migrations, the rollup's view
    expect(await warehouse.query(sql('t.versions', `SELECT version FROM schema_migrations FINAL ORDER BY version`))).toEqual([
      { version: 1 },
      { version: 2 },
      { version: 3 },
      { version: 4 },
      { version: 5 },
      { version: 6 },
      { version: 7 },
      { version: 8 },
      { version: 10 },
      { version: 12 },
      { version: 14 },
      { version: 16 },
    ]);
    // 0004: the analysts' views live in a database of their own.
    const views = await warehouse.query<{ n: number }>(sql('t.analytics_views', `SELECT count() AS n FROM system.tables WHERE database = 'analytics' AND engine = 'View'`));
    expect(views).toEqual([{ n: 11 }]); // 0005 adds analytics.partial_refunds, 0006 analytics.ledger_entries and analytics.payouts
  });

  // A fresh PGlite with every migration, then the traffic: about 40 s alone, over 60 s on a loaded machine.
  it('the service events, relayed and loaded, give the numbers of the Postgres state', { timeout: 120_000 }, async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    const strict = await createTestProgram(app, t.db);
    const other = await createTestProgram(app, t.db);
    const post = (url: string, payload: object, key?: string) =>
      app.inject({
        method: 'POST',
        url,
        headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) },
        payload,
      });
    const click = async (p: TestProgram, test = false) => {
      const res = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}`, additional_data: { test_mode: test } });
      expect(res.statusCode).toBe(200);
      return res.json().click_id as string;
    };
    const ok = async (res: Awaited<ReturnType<typeof post>>) => {
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data;
    };

    for (let i = 0; i < 5; i++) await click(strict);
    for (let i = 0; i < 2; i++) await click(strict, true);
    for (let i = 0; i < 3; i++) await click(other);
    // A server lead, and a provisional browser lead that a server lead then settles.
    await ok(await post('/api/v1/track/lead', { click_id: await click(strict), customer_key: 'server-1' }, strict.apiKey));
    const browserClick = await click(strict);
    expect((await ok(await post('/api/v1/track/lead', { click_id: browserClick, customer_key: 'browser-1' }))).provisional).toBe(true);
    await ok(await post('/api/v1/track/lead', { click_id: browserClick, customer_key: 'settled-1' }, strict.apiKey));
    // A provisional lead that stays provisional, and a lead on the other program.
    await ok(await post('/api/v1/track/lead', { click_id: await click(strict), customer_key: 'browser-2' }));
    await ok(await post('/api/v1/track/lead', { click_id: await click(other), customer_key: 'other-1' }, other.apiKey));
    // Sales: first payments (conversions), a repeat, a test sale, one in the past, then a refund.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString();
    await ok(await post('/api/v1/track/sale', { transaction_id: 'tx-1', amount_cents: 12_345, customer_key: 'server-1', currency: 'eur' }, strict.apiKey));
    await ok(await post('/api/v1/track/sale', { transaction_id: 'tx-2', amount_cents: 5_000, customer_key: 'server-1' }, strict.apiKey));
    await ok(await post('/api/v1/track/sale', { transaction_id: 'tx-3', amount_cents: 7_000, customer_key: 'settled-1' }, strict.apiKey));
    await ok(
      await post('/api/v1/track/sale', { transaction_id: 'tx-4', amount_cents: 900, customer_key: 'other-1', occurred_at: yesterday }, other.apiKey),
    );
    await ok(
      await post('/api/v1/track/sale', { transaction_id: 'tx-test', amount_cents: 100, customer_key: 'server-1', additional_data: { test_mode: true } }, strict.apiKey),
    );
    await ok(await post('/api/v1/track/refund', { transaction_id: 'tx-1', reason: 'refund' }, strict.apiKey));
    // A processor payment of 5,000 cents refunded 2,000 in two parts: 3,000 of revenue left, and a commission reduced by the share.
    const partly = await partlyRefundedProcessorSale(app, strict.programId, await click(strict));

    const relay = createRelay({ db: t.db, log, encode: codec.encode, deadLetterTopic: DEAD, batchSize: 10 });
    while ((await relay.relayOnce()).kind === 'ok');
    expect(log.read(DEAD)).toEqual([]);

    const loader = createLogLoader({ log, loader: createLoader({ warehouse, decode: codec.decode }), topics: log.topics(), deadLetterTopic: DEAD, maxBatchMessages: 8 });
    const started = Date.now();
    const result = await loader.pollOnce();
    expect(result).toMatchObject({ kind: 'ok', deadLettered: 0 });
    console.log(`codec ${codec.name}: loaded ${result.kind === 'ok' ? result.loaded : 0} events in ${Date.now() - started} ms`);
    expect(await loader.pollOnce()).toEqual({ kind: 'idle' });

    const expected = await postgresNumbers(t);
    expect(expected.clicks.length).toBe(2);
    expect(expected.revenue).toContain(`${strict.programId} ${new Date().toISOString().slice(0, 10)} USD ${12_000 + 3_000}`);
    expect(expected.events).toEqual(expect.arrayContaining(['sale.partially_refunded 2', 'commission.adjusted 2', 'platform_fee.adjusted 2']));
    // The analysts' views show the partial refund too.
    const [sale] = await warehouse.query<{ amount_minor: number; refunded_minor: number; status: string; commission: number; reversed: number }>(
      sql(
        't.analytics_partly_refunded',
        `SELECT s.amount_minor AS amount_minor, s.refunded_minor AS refunded_minor, toString(s.status) AS status,
                c.amount_minor AS commission, c.reversed_minor AS reversed
           FROM analytics.sales AS s JOIN analytics.commissions AS c ON c.sale_id = s.sale_id
          WHERE s.transaction_id = {txn:String}`,
      ),
      { txn: partly.transactionId },
    );
    const pgCommission = (await t.db.one<{ amount_cents: number; reversed_cents: number }>(
      sql('t.pg_partly_refunded_commission', `SELECT c.amount_cents::int AS amount_cents, c.reversed_cents::int AS reversed_cents FROM commissions c JOIN sale_events s ON s.id = c.sale_id WHERE s.transaction_id = $1`),
      [partly.transactionId],
    ))!;
    expect(pgCommission.reversed_cents).toBeGreaterThan(0);
    expect(sale).toMatchObject({ amount_minor: 5_000, refunded_minor: 2_000, status: 'paid', commission: pgCommission.amount_cents, reversed: pgCommission.reversed_cents });
    expect(expected.events.some((l) => l.startsWith('commission.reversed'))).toBe(true);
    expect(await warehouseNumbers(warehouse)).toEqual(expected);
  });

  it('loading the same batches again, three times, changes no number', async () => {
    const expected = await warehouseNumbers(warehouse);
    // No background merge may collapse duplicates behind our back: what the parts hold is what was written.
    await warehouse.command(sql('t.stop_merges', 'SYSTEM STOP MERGES'));
    const rawBefore = await warehouse.query<{ table: string; n: number }>(ch.rawRows);
    const loader = createLoader({ warehouse, decode: codec.decode });
    for (let round = 0; round < 3; round++) {
      // The same cut: every insert carries a token the table has seen, and writes nothing.
      const again = createLogLoader({ log, loader, topics: log.topics().filter((x) => x !== DEAD), deadLetterTopic: DEAD, maxBatchMessages: 8 });
      expect((await again.pollOnce()).kind).toBe('ok');
    }
    expect(await warehouse.query(ch.rawRows)).toEqual(rawBefore);
    expect(await warehouseNumbers(warehouse)).toEqual(expected);
    // Another cut (a consumer that committed elsewhere): new tokens, duplicate rows, still the same numbers.
    for (const size of [3, 1000]) {
      const recut = createLogLoader({ log, loader, topics: log.topics().filter((x) => x !== DEAD), deadLetterTopic: DEAD, maxBatchMessages: size });
      expect((await recut.pollOnce()).kind).toBe('ok');
    }
    const rawAfter = await warehouse.query<{ table: string; n: number }>(ch.rawRows);
    const clickRows = (rows: { table: string; n: number }[]) => rows.find((r) => r.table === 'click_recorded')!.n;
    expect(clickRows(rawAfter)).toBe(3 * clickRows(rawBefore));
    await warehouse.command(sql('t.start_merges', 'SYSTEM START MERGES'));
    expect(await warehouseNumbers(warehouse)).toEqual(expected);
    expect(await warehouseNumbers(warehouse)).toEqual(await postgresNumbers(t));
  });

  it('a poison message becomes a dead letter with its reason, and the rest of the batch loads', async () => {
    const topic = log.topics().find((x) => x.includes('click')) ?? JSON_TOPIC;
    const clicks = log.read(topic).filter((m) => codec.decode(m.value).eventType === 'click.recorded').slice(0, 2);
    const unmappable = (() => {
      const event = codec.decode(clicks[0]!.value);
      return Buffer.from(`JSON${JSON.stringify({ ...event, value: { ...event.value, event_id: 'not-a-uuid' } })}`);
    })();
    const decode = (value: Buffer): DecodedEvent =>
      value.subarray(0, 4).toString() === 'JSON' ? (JSON.parse(value.subarray(4).toString()) as DecodedEvent) : codec.decode(value);
    const batch: LoaderBatch = {
      topic: 'poison-test',
      partition: 0,
      messages: [
        { offset: '100', value: clicks[0]!.value },
        { offset: '101', value: Buffer.from([0xff, 0x00, 0x13, 0x37]) },
        { offset: '102', value: unmappable },
        { offset: '103', value: clicks[1]!.value },
      ],
    };
    const result = await createLoader({ warehouse, decode }).load(batch);
    expect(result.kind).toBe('ok');
    if (result.kind !== 'ok') return;
    expect(result.nextOffset).toBe('104');
    expect(result.loaded).toBe(2);
    expect(result.messages.map((m) => m.outcome)).toEqual(['ok', 'dead-letter', 'dead-letter', 'ok']);
    expect(result.deadLetters.map((d) => [d.offset, d.stage])).toEqual([
      ['101', 'loader.decode'],
      ['102', 'loader.map'],
    ]);
    expect(result.deadLetters[0]!.reason).toMatch(/^undecodable: /);
    expect(result.deadLetters[1]!.reason).toBe('unmappable click.recorded event: event_id: expected a UUID, got "not-a-uuid"');
    // The two good clicks were already loaded: the numbers stay those of Postgres.
    expect(await warehouseNumbers(warehouse)).toEqual(await postgresNumbers(t));
  });

  /** The test's warehouse with its inserts replaced (a failing or recording one). */
  const withInsert = (insert: Warehouse['insert']): Warehouse => ({
    kind: warehouse.kind,
    query: (q, p) => warehouse.query(q, p),
    command: (q, p) => warehouse.command(q, p),
    close: () => warehouse.close(),
    insert,
  });

  it('a warehouse failure is a retry of the whole batch, and the retry loads it', async () => {
    let fail = true;
    const flaky = withInsert((table, rows, options) => (fail ? Promise.reject(new Error('warehouse down')) : warehouse.insert(table, rows, options)));
    const topic = log.topics().find((x) => x.includes('click')) ?? JSON_TOPIC;
    const batch: LoaderBatch = { topic: 'retry-test', partition: 0, messages: log.read(topic).slice(0, 3).map((m, i) => ({ offset: String(i), value: m.value })) };
    const loader = createLoader({ warehouse: flaky, decode: codec.decode });
    const first = await loader.load(batch);
    expect(first).toMatchObject({ kind: 'retry', error: new Error('warehouse down') });
    fail = false;
    expect(await loader.load(batch)).toMatchObject({ kind: 'ok', nextOffset: '3' });
    expect(await warehouseNumbers(warehouse)).toEqual(await postgresNumbers(t));
  });

  it('a load inserts every event table before any current state, even when an event insert fails; the retry loads the rest', async () => {
    const inserted: string[] = [];
    let failing: string | undefined = 'commission_created';
    const recording = withInsert((table, rows, options) => {
      inserted.push(table);
      return table === failing ? Promise.reject(new Error(`${table} down`)) : warehouse.insert(table, rows, options);
    });
    // Every topic's messages, each a batch: the event tables of several topics in one load.
    const batches: LoaderBatch[] = log
      .topics()
      .filter((x) => x !== DEAD)
      .map((topic) => ({ topic, partition: 0, messages: log.read(topic).map((m, i) => ({ offset: String(i), value: m.value })) }))
      .filter((b) => b.messages.length > 0);
    const loader = createLoader({ warehouse: recording, decode: codec.decode });
    const first = await loader.loadMany(batches);
    expect(first.every((r) => r.kind === 'retry')).toBe(true);
    expect(inserted).toContain('commission_created');
    expect(inserted.filter((table) => table.endsWith('_current') || table.startsWith('performance_'))).toEqual([]);
    failing = undefined;
    inserted.length = 0;
    expect((await loader.loadMany(batches)).map((r) => r.kind)).toEqual(batches.map(() => 'ok'));
    const firstState = inserted.findIndex((table) => table.endsWith('_current'));
    expect(firstState).toBeGreaterThan(0);
    expect(inserted.slice(firstState).filter((table) => !table.endsWith('_current') && !table.startsWith('performance_'))).toEqual([]);
    expect(await warehouseNumbers(warehouse)).toEqual(await postgresNumbers(t));
  });

  it('batches submitted together are loaded as one, each with its own result; the numbers stay those of Postgres', async () => {
    const loader = createLoader({ warehouse, decode: codec.decode });
    const calls: number[] = [];
    const recording: CombiningLoader = { load: loader.load, loadMany: (batches) => (calls.push(batches.length), loader.loadMany(batches)) };
    const load = combineLoads(recording);
    // Every topic's messages once more, as partitions of another consumer: three submitted in one turn.
    const batches: LoaderBatch[] = log
      .topics()
      .filter((x) => x !== DEAD)
      .map((topic, p) => ({ topic: 'combined-test', partition: p, messages: log.read(topic).map((m, i) => ({ offset: String(i), value: m.value })) }))
      .filter((b) => b.messages.length > 0);
    expect(batches.length).toBeGreaterThanOrEqual(3);
    const results = await Promise.all(batches.map((b) => load(b)));
    expect(calls).toEqual([batches.length]);
    results.forEach((result, i) => {
      expect(result).toMatchObject({ kind: 'ok', nextOffset: String(batches[i]!.messages.length), loaded: batches[i]!.messages.length });
    });
    // A batch handed over while that load runs goes into the next one.
    const [again, late] = await Promise.all([load(batches[0]!), new Promise((r) => setImmediate(r)).then(() => load(batches[1]!))]);
    expect([again.kind, late.kind]).toEqual(['ok', 'ok']);
    expect(calls).toEqual([batches.length, 1, 1]);
    expect(await warehouseNumbers(warehouse)).toEqual(await postgresNumbers(t));
  });

  it('inserts keep every string as sent (tabs, newlines, backslashes, \\N, non-ASCII) and NULL apart from the text \\N; a value of another kind is refused', async () => {
    const at = '2031-01-02 03:04:05.123456';
    const tricky = ['a\tb', 'line\nbreak\r', 'back\\slash\\', '\\N', 'Zürich, 東京 🚀', '', ' leading and trailing '];
    const rows = tricky.map((text, i) => ({
      event_id: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}`,
      program_id: 990_001,
      occurred_at: at,
      test: i % 2 === 0,
      change: 'created',
      customer_id: i,
      partner_id: i === 0 ? null : i,
      partner_program_id: null,
      // The nullable string: NULL for the first row, the text itself (even `\N`) for the others.
      click_id: i === 0 ? null : text,
      status: text,
      provisional: false,
      signup_date: null,
      first_purchase_date: i === 1 ? at : null,
      version: 1,
      updated_at: at,
    }));
    await warehouse.insert('customer_changed', rows, { dedupToken: 't.escaping' });
    const back = await warehouse.query<{ customer_id: number; click_id: string | null; status: string; test: boolean; partner_id: number | null; first_purchase_date: string | null }>(
      sql(
        't.escaping',
        `SELECT customer_id, click_id, toString(status) AS status, test, partner_id, toString(first_purchase_date) AS first_purchase_date
           FROM customer_changed WHERE program_id = 990001 ORDER BY customer_id`,
      ),
    );
    expect(back).toEqual(
      rows.map((r, i) => ({ customer_id: i, click_id: r.click_id, status: tricky[i], test: r.test, partner_id: r.partner_id, first_purchase_date: i === 1 ? at : null })),
    );
    await expect(warehouse.insert('customer_changed', [{ ...rows[0], status: { not: 'a string' } }], { dedupToken: 't.escaping.object' })).rejects.toThrow(/status/);
    await expect(warehouse.insert('customer_changed', [{ ...rows[0], customer_id: Number.NaN }], { dedupToken: 't.escaping.nan' })).rejects.toThrow(/customer_id/);
    expect(await warehouse.query(sql('t.escaping_count', `SELECT count() AS n FROM customer_changed WHERE program_id = 990001`))).toEqual([{ n: tricky.length }]);
  });

  it('rows written one by one (the loader) give the bytes of the whole list, across chunks and growth, and insert as rows do', async () => {
    const texts = ['plain', 'a\tb', 'line\nbreak\r', 'back\\slash', '\\N', 'Zürich, 東京 🚀', ''];
    const rows = Array.from({ length: 5_000 }, (_, i) => ({
      event_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      program_id: 990_002,
      occurred_at: '2031-01-02 03:04:05.123456',
      test: i % 3 === 0,
      // Every other row lists its keys in another order: columns are named, not positional.
      ...(i % 2 ? { click_id: texts[i % texts.length]!, partner_id: null } : { partner_id: i, click_id: texts[i % texts.length]! }),
      referral_link_id: i,
      created_at: '2031-01-02 03:04:05.000001',
    }));
    const writer = new TabSeparatedWriter();
    for (const row of rows) writer.add(writer.encode(row));
    const encoded = writer.finish();
    expect(encoded.count).toBe(rows.length);
    expect(encoded.columns).toEqual(Object.keys(rows[0]!));
    expect(encoded.body.equals(tabSeparated(rows, Object.keys(rows[0]!)))).toBe(true);
    await warehouse.insert('click_recorded', encoded, { dedupToken: 't.writer' });
    expect(await warehouse.query(sql('t.writer_count', `SELECT count() AS n, countIf(click_id = 'Zürich, 東京 🚀') AS z FROM click_recorded WHERE program_id = 990002`))).toEqual([
      { n: rows.length, z: rows.filter((r) => r.click_id === texts[5]).length },
    ]);
    expect(() => writer.encode({ ...rows[0], referral_link_id: Number.POSITIVE_INFINITY })).toThrow(/referral_link_id/);
  });
});
