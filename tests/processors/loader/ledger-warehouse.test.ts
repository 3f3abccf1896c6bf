/**
 * Issue 34, points 2 and 5: the ledger and payout events in the warehouse (chDB, and the ClickHouse
 * server when CLICKHOUSE_TEST_URL is set). analytics.ledger_entries and analytics.payouts hold what
 * Postgres holds; a redelivered batch (a Kafka redelivery) and a replay of the whole outbox write
 * no second row; the dashboard's commission figures are unchanged by the new events.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import type { Warehouse } from '../../../core/warehouse.js';
import { createAvroCodec } from '../../../processors/avro/codec.js';
import { createLoader, type BatchMessage } from '../../../processors/loader/loader.js';
import { createReplay } from '../../../processors/replay.js';
import type { OutboxRow } from '../../../schemas/event-contract.js';
import { buildTestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { moneyProgram, refund, sale, wholeMonth, type MoneyProgram } from '../../support/money.js';
import { createTestWarehouse, warehouseKinds, type TestWarehouse } from '../../support/warehouses.js';

const codec = createAvroCodec();
const outbox = sql(
  't.ledger_outbox',
  `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload FROM outbox ORDER BY id`,
);

describe.each(warehouseKinds())('ledger and payouts in the warehouse (%s)', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let w: TestWarehouse;
  let warehouse: Warehouse;
  let p: MoneyProgram;
  /** The analytics views' database: a test database's own on the server (tests/support/warehouses.ts). */
  let views = 'analytics';

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    p = await moneyProgram(app, t.db, { holdDays: 0, minimum: 100 });
    await wholeMonth(app, p);
    // A payout canceled, then one left pending (10,000 less the outstanding 5,000 clawback, plus the 200 bonus).
    await sale(app, p, 100_000);
    const post = (url: string) => app.inject({ method: 'POST', url, headers: p.owner, payload: {} });
    const [canceled] = (await post(`${p.base}/payouts`)).json().data.payouts;
    await post(`${p.base}/payouts/${canceled.id}/cancel`);
    await post(`${p.base}/payouts`);
    // After the last run: one approved (hold 0) that no payout covers yet, and one reversed by a refund.
    await sale(app, p, 20_000);
    await refund(app, p, (await sale(app, p, 40_000)).transactionId);
    w = await createTestWarehouse(kind);
    warehouse = w.warehouse;
    if (w.url) views = `${new URL(w.url).pathname.slice(1)}_analytics`;
    // Duplicates stay rows, as they may at any moment on a server: only FINAL keeps them from counting twice.
    await w.stopMerges();
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await w?.drop();
  });

  const postgresLedger = async () =>
    (await t.db.many<{ id: number; kind: string; amount_minor: number; cause: string }>(
      sql('t.pg_ledger', `SELECT id, kind, amount_minor, cause FROM ledger_entries WHERE program_id = $1 ORDER BY id`),
      [p.programId],
    )).map((r) => ({ entry_id: Number(r.id), kind: r.kind, amount_minor: Number(r.amount_minor), cause: r.cause }));
  const warehouseLedger = async () =>
    (await warehouse.query<{ entry_id: number; kind: string; amount_minor: number; cause: string }>(
      sql('t.wh_ledger', `SELECT entry_id, kind, amount_minor, cause FROM ${views}.ledger_entries WHERE program_id = {program:Int64} ORDER BY entry_id`),
      { program: p.programId },
    )).map((r) => ({ entry_id: Number(r.entry_id), kind: r.kind, amount_minor: Number(r.amount_minor), cause: r.cause }));
  const rawRows = async () =>
    Number((await warehouse.query<{ n: number }>(sql('t.wh_raw', `SELECT count() AS n FROM ledger_entry_recorded`)))[0]!.n);

  it('a batch delivered twice (a Kafka redelivery) and a replay of the outbox write the ledger once', async () => {
    const rows = await t.db.many<OutboxRow>(outbox);
    const messages: BatchMessage[] = rows.map((row, i) => ({ offset: String(i), ...codec.message(row) }));
    const loader = createLoader({ warehouse, decode: codec.decode });
    for (let delivery = 0; delivery < 2; delivery += 1) {
      const result = await loader.load({ topic: 'tracking.ledger.v1', partition: 0, messages });
      expect(result.kind).toBe('ok');
    }
    const expected = await postgresLedger();
    expect(expected.length).toBeGreaterThanOrEqual(8);
    expect(await warehouseLedger()).toEqual(expected);
    const raw = await rawRows();

    // The whole outbox replayed twice, cut into other batches: FINAL keeps one row per event.
    const replay = createReplay({ db: t.db, warehouse, codec, pageSize: 7 });
    for (let run = 0; run < 2; run += 1) expect((await replay.run()).deadLettered).toBe(0);
    expect(await warehouseLedger()).toEqual(expected);
    expect(await rawRows()).toBeGreaterThanOrEqual(raw);
  });

  it('analytics.payouts shows each payout with its current status, amount and commissions', async () => {
    const pg = await t.db.many<{ id: string; status: string; amount_minor: number; n: number }>(
      sql('t.pg_payouts', `SELECT id, status, amount_minor, cardinality(commission_ids) AS n FROM payouts WHERE program_id = $1 ORDER BY created_at, id`),
      [p.programId],
    );
    const wh = await warehouse.query<{ payout_id: string; status: string; amount_minor: number; commissions: number; reference: string | null }>(
      sql('t.wh_payouts', `SELECT payout_id, status, amount_minor, commissions, reference FROM ${views}.payouts WHERE program_id = {program:Int64} ORDER BY created_at, payout_id`),
      { program: p.programId },
    );
    expect(wh.map((r) => [r.payout_id, r.status, Number(r.amount_minor), Number(r.commissions)])).toEqual(pg.map((r) => [r.id, r.status, Number(r.amount_minor), Number(r.n)]));
    expect(wh.map((r) => r.status).sort()).toEqual(['canceled', 'paid', 'pending']);
    expect(wh.find((r) => r.status === 'paid')!.reference).toBe('WISE-BATCH-1');
  });

  it('analytics.commissions shows each commission’s state as the service reads it: approved, processing, paid, reversed', async () => {
    const pg = await t.db.many<{ id: string; status: string; payout_id: string | null }>(
      sql(
        't.pg_commission_states',
        `SELECT c.id, commission_state(c) AS status, COALESCE(c.payout_id, CASE WHEN c.status = 'approved' THEN commission_payout(c) END) AS payout_id
           FROM commissions c WHERE c.program_id = $1 ORDER BY c.id`,
      ),
      [p.programId],
    );
    const wh = await warehouse.query<{ commission_id: string; status: string; payout_id: string | null }>(
      sql('t.wh_commission_states', `SELECT commission_id, toString(status) AS status, payout_id FROM ${views}.commissions WHERE program_id = {program:Int64} ORDER BY commission_id`),
      { program: p.programId },
    );
    // Compared as sorted strings: ClickHouse orders UUIDs by their two 64-bit halves, not as text.
    const rows = (list: string[][]) => list.map((row) => row.join(' ')).sort();
    expect(rows(wh.map((r) => [r.commission_id, r.status, String(r.payout_id)]))).toEqual(rows(pg.map((r) => [r.id, r.status, String(r.payout_id)])));
    expect(new Set(pg.map((r) => r.status))).toEqual(new Set(['approved', 'paid', 'processing', 'reversed']));
  });

  it('the dashboard’s commission figure stays the commissions created that day, not reversed (the tracking spec)', async () => {
    // Sales of 30,000, 50,000, 5,000, 100,000 and 20,000 at 10 %: 3,000 + 5,000 + 500 (400 after the
    // partial refund) + 10,000 + 2,000; the chargeback after payment is a clawback and reverses
    // nothing; the sale of 40,000 refunded before payment counts nowhere.
    const [row] = await warehouse.query<{ cents: number }>(
      sql(
        't.wh_commission_fact',
        `SELECT sum(cents) AS cents FROM (SELECT argMax(cents, version) AS cents, argMax(counts, version) AS counts FROM performance_facts
          WHERE program_id = {program:Int64} AND metric = 'commissions' GROUP BY entity) WHERE counts`,
      ),
      { program: p.programId },
    );
    expect(Number(row!.cents)).toBe(3_000 + 5_000 + 400 + 10_000 + 2_000);
  });
});
