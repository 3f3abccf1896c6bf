/**
 * Issue 30, point 4: POST .../commissions/simulate, computed in the warehouse (chDB, and the
 * ClickHouse server when CLICKHOUSE_TEST_URL is set), on PGlite and Postgres. The same sales and
 * refunds (converting sales, a renewal, a refund in full, a processor sale partly refunded) are
 * recorded on two programs: simulating a program's own terms gives its actual commissions;
 * simulating other terms gives what the second program, recording the same sales under those
 * terms, actually earned. Read-only: nothing is written; bad input is the platform envelope.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { M } from '../../../ingest/http/messages.js';
import { buildTestApp, createTestProgram, freshIp, unlimitedRateLimits, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { newClick } from '../../support/money.js';
import { embeddedDelivery } from '../../support/oracle.js';
import { charge, checkoutSession, deliver, event, id } from '../../support/processor.js';
import { createTestWarehouse, warehouseKinds, type TestWarehouse } from '../../support/warehouses.js';

const combos = databaseKinds().flatMap((db) => warehouseKinds().map((wh) => [db, wh] as const));

describe.each(combos)('commission simulation (%s, %s)', (dbKind, whKind) => {
  let t: TestDatabase;
  let w: TestWarehouse;
  let app: FastifyInstance;
  let deliverAll: (db: Database) => Promise<void>;
  let serial = 0;

  beforeAll(async () => {
    t = await createTestDatabase(dbKind);
    // Program ids of the two databases never meet in a shared warehouse.
    if (dbKind === 'postgres') await t.db.many(sql('t.sim_program_ids_apart', `ALTER SEQUENCE programs_id_seq RESTART WITH 3000000`));
    w = await createTestWarehouse(whKind);
    // A sale's rows stay rows (its sale.recorded, commission.created, refunds), as they may at any
    // moment on a server: only the query's FINAL merges them.
    await w.stopMerges();
    app = await buildTestApp(t.db, unlimitedRateLimits(), undefined, w.warehouse);
    deliverAll = embeddedDelivery(w.warehouse);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await w?.drop();
  });

  const owner = (p: TestProgram) => ({ authorization: `Bearer ${p.workspace.ownerToken}` });
  const member = (p: TestProgram) => ({ authorization: `Bearer ${p.workspace.memberToken}` });

  async function track(p: TestProgram, path: string, payload: object) {
    const res = await app.inject({ method: 'POST', url: `/api/v1/track/${path}`, headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() }, payload });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  /** The same sales and refunds on any program: two partners, at the same times. */
  async function scenario(p: TestProgram, at: Date) {
    const second = await app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/partners`, headers: owner(p), payload: { name: 'Second' } });
    const p2 = { ...p, affCode: second.json().data.aff_code as string, partnerId: second.json().data.partner_id as number };
    const txn = () => `txn-sim-${Date.now()}-${(serial += 1)}-${Math.random().toString(36).slice(2, 8)}`;
    const key = `sim-${Date.now()}-${(serial += 1)}`;
    await track(p, 'lead', { click_id: await newClick(app, p), customer_key: key });
    const occurred_at = at.toISOString();
    await track(p, 'sale', { transaction_id: txn(), amount_cents: 10_001, customer_key: key, occurred_at });
    await track(p, 'sale', { transaction_id: txn(), amount_cents: 5_005, customer_key: key, is_recurring: true, occurred_at: new Date(at.getTime() + 60_000).toISOString() });
    const refunded = txn();
    await track(p2, 'sale', { transaction_id: refunded, amount_cents: 20_000, click_id: await newClick(app, p2), occurred_at });
    await track(p2, 'refund', { transaction_id: refunded, reason: 'refund' });
    await track(p2, 'sale', { transaction_id: txn(), amount_cents: 7_777, click_id: await newClick(app, p2), occurred_at });
    // A processor sale, partly refunded (1,000 of 5,000).
    const session = checkoutSession({ metadata: { program_id: String(p.programId), svc_click_id: await newClick(app, p) } });
    expect((await deliver(app, event('checkout.session.completed', session))).statusCode).toBe(200);
    expect((await deliver(app, event('charge.refunded', charge({ id: id('ch'), payment_intent: session.payment_intent as string, amount: 5_000, amount_refunded: 1_000 })))).statusCode).toBe(200);
    // A customer whose first purchase (a processor payment) was 90 days before: its renewal now is
    // past a recurring_months of 2.
    const old = await newClick(app, p);
    const first = checkoutSession({ metadata: { program_id: String(p.programId), svc_click_id: old } });
    expect((await deliver(app, event('checkout.session.completed', first, { created: Math.floor(at.getTime() / 1000) - 90 * 86_400 }))).statusCode).toBe(200);
    const renewal = await track(p, 'sale', { transaction_id: txn(), amount_cents: 3_000, click_id: old, is_recurring: true, occurred_at });
    return { partners: [p.partnerId, p2.partnerId], renewal: renewal.data.sale_id as string };
  }

  const simulate = (p: TestProgram, body: object, headers = member(p)) =>
    app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/commissions/simulate`, headers, payload: body });
  const range = () => ({ from: new Date(Date.now() - 86_400_000).toISOString(), to: new Date(Date.now() + 86_400_000).toISOString() });
  type Totals = { partner_id: number; sales: number; totals: { currency: string; actual_minor: number; simulated_minor: number }[] };

  it('own terms give the actual commissions; other terms give what a program recording the same sales under them earned', async () => {
    const at = new Date(Date.now() - 2 * 3_600_000);
    const a = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 12.5 });
    const {
      partners: [a1, a2],
    } = await scenario(a, at);
    const other = { commission_type: 'recurring_percent', commission_rate: 7.25, recurring_months: 2 };
    const b = await createTestProgram(app, t.db, other);
    const {
      partners: [b1, b2],
      renewal,
    } = await scenario(b, at);
    await deliverAll(t.db);
    // B recorded the late renewal with its reason and no commission.
    expect(await t.db.one(sql('t.sim_skipped', `SELECT commission_skipped_reason AS reason FROM sale_events WHERE id = $1`), [renewal])).toEqual({ reason: 'recurring_limit_reached' });

    const own = await simulate(a, { terms: { commission_type: 'percent', commission_rate: 12.5 }, ...range() });
    expect(own.statusCode, own.body).toBe(200);
    const ownPartners: Totals[] = own.json().data.partners;
    expect(ownPartners.map((x) => x.partner_id)).toEqual([a1, a2]);
    for (const x of ownPartners) for (const m of x.totals) expect(m.simulated_minor).toBe(m.actual_minor);
    // Partner 1: 12.5 % of 10,001 (the converting sale; the renewal earns nothing on a one-off type)
    // and of the processor sale (625) less a fifth; partner 2: the refunded sale counts 0, then 972.
    // (The late renewal, a one-off type's non-converting payment, earns nothing either.)
    expect(ownPartners.map((x) => [x.sales, x.totals[0]!.actual_minor])).toEqual([[4, 1_250 + 500], [2, 972]]);

    const what = await simulate(a, { terms: other, ...range() });
    const whatIf: Totals[] = what.json().data.partners;
    const bActual: Totals[] = (await simulate(b, { terms: other, ...range() })).json().data.partners;
    expect(bActual.map((x) => x.partner_id)).toEqual([b1, b2]);
    expect(whatIf.map((x) => x.totals.map((m) => m.simulated_minor))).toEqual(bActual.map((x) => x.totals.map((m) => m.actual_minor)));
    expect(whatIf.map((x) => x.totals.map((m) => m.actual_minor))).toEqual(ownPartners.map((x) => x.totals.map((m) => m.actual_minor)));
    // And B's own terms reproduce B.
    for (const x of bActual) for (const m of x.totals) expect(m.simulated_minor).toBe(m.actual_minor);
    expect(what.json().data.totals).toEqual([
      { currency: 'USD', actual_minor: 1_250 + 500 + 972, simulated_minor: bActual.reduce((n, x) => n + x.totals[0]!.actual_minor, 0) },
    ]);

    // Lifetime instead of 2 months: the late renewal earns 7.25 % of 3,000 (217.5, half up).
    const lifetime = (await simulate(a, { terms: { ...other, recurring_months: null }, ...range() })).json().data.totals[0].simulated_minor;
    expect(lifetime - what.json().data.totals[0].simulated_minor).toBe(218);

    // One partner only; a range without sales.
    const one = (await simulate(a, { terms: other, ...range(), partner_id: a2 })).json().data.partners;
    expect(one.map((x: Totals) => x.partner_id)).toEqual([a2]);
    const empty = await simulate(a, { terms: other, from: '2020-01-01T00:00:00Z', to: '2020-02-01T00:00:00Z' });
    expect(empty.json().data).toMatchObject({ partners: [], totals: [] });
  });

  it('read-only; bad terms or range are the platform envelope; another workspace’s program is refused', async () => {
    const p = await createTestProgram(app, t.db);
    const stranger = await createTestProgram(app, t.db);
    const counts = sql('t.sim_counts', `SELECT (SELECT count(*) FROM commission_rule_versions)::int AS v, (SELECT count(*) FROM audit_log)::int AS a, (SELECT count(*) FROM outbox)::int AS o`);
    const before = await t.db.one(counts);
    const cases: [object, string][] = [
      [{ ...range() }, M.terms.terms],
      [{ terms: { commission_type: 'percent', commission_rate: 0 }, ...range() }, M.management.commissionRate],
      [{ terms: { commission_type: 'percent', commission_rate: 120 }, ...range() }, M.management.percentRateMax],
      [{ terms: { commission_type: 'bonus', commission_rate: 1 }, ...range() }, M.management.commissionType('bonus', ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'])],
      [{ terms: { commission_type: 'recurring_fixed', commission_rate: 1, recurring_months: 0 }, ...range() }, M.terms.recurringMonths],
      [{ terms: { commission_type: 'fixed', commission_rate: 1, recurring_months: 6 }, ...range() }, M.terms.recurringMonthsType],
      [{ terms: { commission_type: 'fixed', commission_rate: 1 }, from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, M.terms.range],
      [{ terms: { commission_type: 'fixed', commission_rate: 1 }, from: 'yesterday', to: '2026-01-01T00:00:00Z' }, M.terms.range],
    ];
    for (const [body, message] of cases) {
      const res = await simulate(p, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json()).toMatchObject({ data: null, error: { status: 400, message } });
    }
    expect((await simulate(stranger, { terms: { commission_type: 'fixed', commission_rate: 1 }, ...range() }, member(p))).statusCode).toBe(403);
    expect((await simulate(p, { terms: { commission_type: 'fixed', commission_rate: 1 }, ...range() })).statusCode).toBe(200);
    expect(await t.db.one(counts)).toEqual(before);
  });
});
