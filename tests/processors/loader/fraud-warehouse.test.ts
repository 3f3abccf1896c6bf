/**
 * Issue 31, point 5: commission.held in the warehouse (chDB, and the ClickHouse server when
 * CLICKHOUSE_TEST_URL is set). analytics.commissions shows each commission's state as the service
 * reads it: held when a rule flagged it, held when its partner's ban held it after its approval,
 * approved by an owner after a hold, reversed when rejected; a redelivered batch changes nothing.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import type { Warehouse } from '../../../core/warehouse.js';
import { createAvroCodec } from '../../../processors/avro/codec.js';
import { createLoader, type BatchMessage } from '../../../processors/loader/loader.js';
import type { OutboxRow } from '../../../schemas/event-contract.js';
import { buildTestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { moneyProgram, sale, type MoneyProgram } from '../../support/money.js';
import { createTestWarehouse, warehouseKinds, type TestWarehouse } from '../../support/warehouses.js';

const codec = createAvroCodec();
const outbox = sql(
  't.fraud_outbox',
  `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload FROM outbox ORDER BY id`,
);

describe.each(warehouseKinds())('held commissions in the warehouse (%s)', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let w: TestWarehouse;
  let warehouse: Warehouse;
  let p: MoneyProgram;
  let views = 'analytics';
  const ids: Record<'flagged' | 'banned' | 'approved' | 'rejected', string> = { flagged: '', banned: '', approved: '', rejected: '' };

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    p = await moneyProgram(app, t.db, { holdDays: 0, settings: { fraud_rules: { fast_conversion: true } } });
    const post = (url: string, payload: object) => app.inject({ method: 'POST', url, headers: p.owner, payload });
    // Flagged as it is created (a click and its sale a few milliseconds apart): held.
    ids.flagged = (await sale(app, p, 10_000)).commissionId;
    ids.rejected = (await sale(app, p, 20_000)).commissionId;
    await post(`${p.base}/commissions/${ids.rejected}/reject`, { reason: 'Fast conversion from a script' });
    // Then without the rules: approved at once (no hold); the partner's ban holds both.
    await app.inject({ method: 'PATCH', url: `/api/tracking/programs/${p.programId}`, headers: p.owner, payload: { fraud_rules: { fast_conversion: false } } });
    ids.banned = (await sale(app, p, 30_000)).commissionId;
    ids.approved = (await sale(app, p, 40_000)).commissionId;
    await t.db.many(sql('t.fraud_ban', `SELECT hold_partner_commissions($1, $2, 'partner_banned')`), [p.programId, p.partnerId]);
    // An owner approves one of them after review.
    await post(`${p.base}/commissions/${ids.approved}/approve`, { reason: 'Reviewed' });

    w = await createTestWarehouse(kind);
    warehouse = w.warehouse;
    if (w.url) views = `${new URL(w.url).pathname.slice(1)}_analytics`;
    await w.stopMerges();
    const rows = await t.db.many<OutboxRow>(outbox);
    const messages: BatchMessage[] = rows.map((row, i) => ({ offset: String(i), ...codec.message(row) }));
    const loader = createLoader({ warehouse, decode: codec.decode });
    // Delivered twice, as Kafka may.
    for (let delivery = 0; delivery < 2; delivery += 1) expect((await loader.load({ topic: 'tracking.sales.v1', partition: 0, messages })).kind).toBe('ok');
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await w?.drop();
  });

  it('analytics.commissions: held (flagged, or by a ban after approval), approved after review, reversed when rejected, as Postgres reads them', async () => {
    const pg = await t.db.many<{ id: string; status: string }>(
      sql('t.fraud_pg_states', `SELECT c.id, commission_state(c) AS status FROM commissions c WHERE c.program_id = $1`),
      [p.programId],
    );
    const wh = await warehouse.query<{ commission_id: string; status: string }>(
      sql('t.fraud_wh_states', `SELECT commission_id, toString(status) AS status FROM ${views}.commissions WHERE program_id = {program:Int64}`),
      { program: p.programId },
    );
    const states = (list: { status: string }[], id: (r: never) => string) => Object.fromEntries(list.map((r) => [id(r as never), r.status]));
    const expected = { [ids.flagged]: 'held', [ids.banned]: 'held', [ids.approved]: 'approved', [ids.rejected]: 'reversed' };
    expect(states(pg, (r: { id: string }) => r.id)).toEqual(expected);
    expect(states(wh, (r: { commission_id: string }) => r.commission_id)).toEqual(expected);
  });

  it('commission_held keeps each hold once, with its reasons', async () => {
    const rows = await warehouse.query<{ commission_id: string; reasons: string[] }>(
      sql('t.fraud_wh_held', `SELECT commission_id, reasons FROM commission_held FINAL WHERE program_id = {program:Int64}`),
      { program: p.programId },
    );
    const held = (list: [string, string[]][]) => list.map(([id, reasons]) => `${id} ${reasons.join(',')}`).sort();
    expect(held(rows.map((r) => [r.commission_id, r.reasons]))).toEqual(
      held([[ids.flagged, ['fast_conversion']], [ids.rejected, ['fast_conversion']], [ids.banned, ['partner_banned']], [ids.approved, ['partner_banned']]]),
    );
  });
});
